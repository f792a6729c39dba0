"""`searchhub search "query"`: one search with the configured engines, printed as a table or JSON.
`searchhub engines [--probe]`: the configured engines, and optionally a live search on each."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .. import config as cfgmod
from ..config.proxy import mask_proxy
from ..runtime import running
from ..search import fetch
from ..search.base import UNAVAILABLE, SearchRequest, SearchResult, failure
from ..search.registry import ENGINE_KINDS, kind_of
from ..store.memory import MemoryStore

SNIPPET_CHARS = 240


MESSAGE_CAP = 2000  # a provider's error message, for a person (a model reads fetch.MESSAGE_CAP of it)


def run_search(args: argparse.Namespace, cfg: cfgmod.Config, path: str) -> int:
    """The search's hits, or its failure said once (on stdout with --json, else on stderr), whole."""
    if not cfg.web_search.engines:
        print(f"{path}: no web search engine is configured (webSearch.engines is empty)", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    with _whole_messages(), _held(logging.getLogger("searchhub.search")) as failures:
        result = asyncio.run(_search(cfg, args))
    if result.ok:  # another engine answered: which failed is not in the answer, so its warning is said
        for record in failures:
            logging.getLogger().handle(record)
    if args.json:
        print(json.dumps({**result.to_payload(), **({"cached": True} if result.cached else {})},
                         ensure_ascii=False, indent=2))
    elif result.ok:
        print(render(result))
    else:  # every engine's error is in it (hub/search/service.py): their warnings would say it twice
        print(f"search failed (engine {result.engine}): {result.error}", file=sys.stderr)
    return 0 if result.ok else 1


@contextmanager
def _whole_messages() -> Iterator[None]:
    """A provider's error message up to MESSAGE_CAP characters, not cut to the few a model is given
    (still redacted: hub/search/fetch.py `upstream_message` redacts before it cuts)."""
    token = fetch.message_cap.set(max(fetch.MESSAGE_CAP, MESSAGE_CAP))
    try:
        yield
    finally:
        fetch.message_cap.reset(token)


class _Holder(logging.Handler):
    """Keeps the records below ERROR; errors (an engine that crashed: its traceback) go on at once."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            logging.getLogger().handle(record)
        else:
            self.records.append(record)


@contextmanager
def _held(logger: logging.Logger) -> Iterator[list[logging.LogRecord]]:
    """The logger's warnings, held back (not printed) while the block runs."""
    holder = _Holder()
    propagate = logger.propagate
    logger.addHandler(holder)
    logger.propagate = False
    try:
        yield holder.records
    finally:
        logger.removeHandler(holder)
        logger.propagate = propagate


async def _search(cfg: cfgmod.Config, args: argparse.Namespace) -> SearchResult:
    async with running(cfg, MemoryStore()) as runtime:
        return await runtime.search.search(
            SearchRequest(args.query, args.count, args.recency, engine=args.engine))


def render(result: SearchResult) -> str:
    """A numbered table for people: title, URL, shortened snippet, source and date."""
    head = f"engine {result.engine} · {len(result.hits)} result{'s' if len(result.hits) != 1 else ''}"
    lines = [head + (" (cached)" if result.cached else ""), ""]
    if result.summary:
        lines += textwrap.wrap("Summary: " + result.summary, 100, subsequent_indent="  ") + [""]
    width = len(str(len(result.hits)))
    pad = " " * (width + 3)
    for n, hit in enumerate(result.hits, 1):
        lines.append(f"[{n:>{width}}] {hit.title}")
        lines.append(pad + hit.url)
        if hit.snippet:
            snippet = textwrap.shorten(hit.snippet, SNIPPET_CHARS, placeholder=" …")
            lines += textwrap.wrap(snippet, 100, initial_indent=pad, subsequent_indent=pad)
        meta = " · ".join(x for x in (hit.source, hit.published) if x)
        if meta:
            lines.append(pad + meta)
        lines.append("")
    return "\n".join(lines).rstrip()


def describe_engines(cfg: cfgmod.Config) -> list[dict]:
    """One row per engine: kind, whether a key is set (never the key), Google-backed or not."""
    rows = []
    for e in cfg.web_search.engines:
        if e.provider_key:
            target = cfg.target(e.provider_key)
            has_key = bool(target and target.provider.api_key)
            key = "set" if has_key else "not set"
            kind = f"{kind_of(e, cfg)} model ({e.provider_key})"
        else:
            key = "set" if e.api_key else ("not needed" if ENGINE_KINDS.api[e.type or ""].keyless else "not set")
            kind = kind_of(e, cfg) + (f" ({', '.join(e.members)})" if e.members else "")
        rows.append({"id": e.id, "kind": kind, "key": key, "google": e.google, "baidu": e.baidu,
                     "default": e is cfg.web_search.default_engine,
                     **({"proxy": mask_proxy(e.proxy)} if e.proxy else {})})
    return rows


def run_engines(args: argparse.Namespace, cfg: cfgmod.Config, path: str) -> int:
    rows = describe_engines(cfg)
    if not rows:
        print(f"{path}: no web search engine is configured (webSearch.engines is empty)", file=sys.stderr)
        return 1
    failed = False
    if args.probe:
        logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        probes = asyncio.run(probe_engines(cfg, args.query))
        for row in rows:
            result, seconds = probes[row["id"]]
            row["probe"] = {"ok": result.ok, "seconds": round(seconds, 2),
                            **({"hits": len(result.hits)} if result.ok else {"error": result.error})}
            failed = failed or not result.ok
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        print(render_engines(rows))
    return 1 if failed else 0


async def probe_engines(cfg: cfgmod.Config, query: str,
                        timeout_s: float | None = None) -> dict[str, tuple[SearchResult, float]]:
    """One live search on every engine at once (`engines --probe`, `doctor`), each within `timeout_s`."""
    async with running(cfg, MemoryStore()) as runtime:
        service = runtime.search

        async def one(engine_id: str) -> tuple[str, tuple[SearchResult, float]]:
            started = time.perf_counter()
            try:
                result = await asyncio.wait_for(service.probe(engine_id, query), timeout_s)
            except TimeoutError:
                result = failure(engine_id, query, f"no answer within {timeout_s:g} s", UNAVAILABLE)
            return engine_id, (result, time.perf_counter() - started)

        return dict(await asyncio.gather(*(one(e.id) for e in cfg.web_search.engines)))


def render_engines(rows: list[dict]) -> str:
    header = ["id", "kind", "key", "google", "default", "proxy"] + (["probe"] if rows and "probe" in rows[0] else [])
    table = [header]
    for r in rows:
        line = [r["id"], r["kind"], r["key"], "yes" if r["google"] else "no", "yes" if r["default"] else "",
                r.get("proxy", "")]
        if "probe" in r:
            p = r["probe"]
            line.append(f"ok, {p['hits']} hit(s) in {p['seconds']:g} s" if p["ok"]
                        else f"FAILED in {p['seconds']:g} s: {p['error']}")
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    return "\n".join("  ".join([c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)] + [row[-1]]).rstrip()
                     for row in table)
