"""`searchhub search "query"`: one search with the configured engines, printed as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import textwrap

from .. import config as cfgmod
from ..backends.http import make_client
from ..dispatch import Dispatcher, Gate
from ..router import Cooldowns, Router
from ..store.memory import MemoryStore
from .base import SearchResult
from .service import SearchService

SNIPPET_CHARS = 240


def run_search(args: argparse.Namespace) -> int:
    path = cfgmod.config_path(args.config)
    cfg = cfgmod.load_or_report(path)
    if cfg is None:
        return 1
    if not cfg.web_search.engines:
        print(f"{path}: no web search engine is configured (webSearch.engines is empty)", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    result = asyncio.run(_search(cfg, args))
    if args.json:
        print(json.dumps({**result.to_payload(), **({"cached": True} if result.cached else {})},
                         ensure_ascii=False, indent=2))
    elif result.ok:
        print(render(result))
    if not result.ok:
        print(f"search failed (engine {result.engine}): {result.error}", file=sys.stderr)
        return 1
    return 0


async def _search(cfg: cfgmod.Config, args: argparse.Namespace) -> SearchResult:
    client = make_client()
    store = MemoryStore()
    try:
        router = Router(cfg, Cooldowns())
        service = SearchService(cfg, client, router, Dispatcher(client, router, Gate()), store)
        return await service.search(args.query, engine=args.engine, count=args.count, recency=args.recency)
    finally:
        await client.aclose()
        await store.close()


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
