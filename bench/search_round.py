"""The search-round benchmark: what one server-side web-search round costs the gateway itself.

A round: the client asks "search the web for X"; the gateway offers the model the web_search tool
(`injectPolicy: "always"`); the fake model (bench/fake_backend.py) answers with a web_search call
(two parallel calls in the `parallel` variant) after `--model-ms`; the gateway runs the search(es) on
the fake SearXNG provider (`--search-ms` each, `cacheTtlMs: 0` so every search reaches it), feeds the
results back, and the fake model, seeing a tool result last, answers text after `--model-ms` again.

N sequential requests with distinct X per variant (single/parallel x non-stream/stream x protocol:
Chat Completions, Anthropic Messages, Responses; `--protocols`). Interleaved
with them, the bench client plays the gateway's part itself against the same fakes (model call,
search call(s) concurrently, model call): that is the floor, the fakes' real latency including timer
slack. Reported per round:
  * total (p50) and total minus the fakes' nominal latency (model x 2 + search);
  * gateway's own time = gateway total - floor total (p50 of the pairs; target <= 2 ms);
  * gateway CPU ms per round (/proc utime+stime delta / N; the steadiest number);
  * for the parallel variant: total vs model x 2 + max(search) (concurrent) and + sum (serial).

  .venv/bin/python bench/search_round.py [--requests 30] [--model-ms 50] [--search-ms 100]
  .venv/bin/python bench/search_round.py --protocols chat,messages,responses   # all three (default: chat)
  .venv/bin/python bench/search_round.py --state redis [--redis-url redis://...]   # or --state both
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as harness  # noqa: E402  (bench/run.py: process management)

EXPECTED = "The quick brown fox jumps over the lazy dog."


PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def body(i: int, variant: str, stream: bool) -> dict:
    """The floor's request (Chat Completions; the fake reads the `bench` field)."""
    b: dict = {"model": "m", "messages": [{"role": "user", "content": f"search the web for topic {i} news"}],
               "bench": {"tool_calls": 2 if variant == "parallel" else 1}}
    if stream:
        b["stream"] = True
    return b


def gateway_body(i: int, variant: str, stream: bool, protocol: str) -> dict:
    """The same request in the client's protocol. Messages and Responses carry no `bench` field
    upstream, so the parallel variant pins the target `fake.m-x2` (the fake reads "-x2" from the
    model name as two calls)."""
    model = "fake.m-x2" if variant == "parallel" else "m"
    text = f"search the web for topic {i} news"
    if protocol == "chat":
        b = body(i, variant, stream)
        b["model"] = model
        return b
    if protocol == "messages":
        b = {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}
    else:
        b = {"model": model, "input": text, "store": False}
    if stream:
        b["stream"] = True
    return b


def _events(raw: bytes):
    for line in raw.decode().splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            yield json.loads(line[5:])


def answer_text(raw: bytes, stream: bool, protocol: str) -> str:
    if protocol == "chat":
        if not stream:
            return json.loads(raw)["choices"][0]["message"]["content"] or ""
        return "".join((ch["choices"][0]["delta"].get("content") or "") for ch in _events(raw) if ch.get("choices"))
    if protocol == "messages":
        if not stream:
            return "".join(b.get("text", "") for b in json.loads(raw)["content"] if b.get("type") == "text")
        return "".join(e["delta"].get("text", "") for e in _events(raw)
                       if e.get("type") == "content_block_delta" and e["delta"].get("type") == "text_delta")
    if not stream:
        return "".join(c.get("text", "") for item in json.loads(raw)["output"] if item.get("type") == "message"
                       for c in item.get("content") or () if c.get("type") == "output_text")
    return "".join(e.get("delta", "") for e in _events(raw) if e.get("type") == "response.output_text.delta")


def checked_text(status: int, raw: bytes, stream: bool, protocol: str = "chat") -> str:
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {raw[:300]!r}")
    return answer_text(raw, stream, protocol)


async def gateway_round(session, url: str, b: dict, stream: bool, protocol: str = "chat") -> float:
    """The time until the whole answer is in; reading it (JSON, events) is the client's work and
    comes after the clock stops, as for the floor (its protocol's events cost more to parse)."""
    t0 = time.perf_counter()
    async with session.post(url + PATHS[protocol], json=b) as resp:
        raw, status = await resp.read(), resp.status
    dt = time.perf_counter() - t0
    answer = checked_text(status, raw, stream, protocol)
    if EXPECTED not in answer:
        raise RuntimeError(f"unexpected answer through the gateway: {answer[:300]!r}")
    return dt


async def floor_round(session, fake: str, b: dict, stream: bool) -> float:
    """The same three (four) calls, made by the bench client itself."""
    k = b["bench"]["tool_calls"]
    tool = {"type": "function", "function": {"name": "web_search", "parameters": {"type": "object"}}}
    first = {**b, "tools": [tool]}
    t0 = time.perf_counter()
    async with session.post(fake + "/v1/chat/completions", json=first) as resp:
        await resp.read()

    async def one(q: str) -> None:
        async with session.get(fake + "/search", params={"q": q, "format": "json"}) as r:
            await r.read()

    await asyncio.gather(*(one(f"{b['messages'][0]['content']} part {j}") for j in range(k)))
    second = {**first, "messages": [*b["messages"], {"role": "assistant", "content": None, "tool_calls": []},
                                    *({"role": "tool", "tool_call_id": f"call_{j}", "content": "r"} for j in range(k))]}
    async with session.post(fake + "/v1/chat/completions", json=second) as resp:
        raw, status = await resp.read(), resp.status
    dt = time.perf_counter() - t0
    answer = checked_text(status, raw, stream)
    if EXPECTED not in answer:
        raise RuntimeError(f"unexpected answer from the fake: {answer[:300]!r}")
    return dt


async def fake_stats(session, fake: str) -> dict:
    async with session.get(fake + "/stats") as r:
        return await r.json()


async def measure(fake: str, gateways: dict, protocols: list[str], variants: list[str], modes: list[str],
                  n: int) -> dict:
    import aiohttp

    out: dict = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        for protocol in protocols:
            for variant in variants:
                for mode in modes:
                    out.update(await measure_one(session, fake, gateways, protocol, variant, mode, n))
    return out


async def measure_one(session, fake: str, gateways: dict, protocol: str, variant: str, mode: str, n: int) -> dict:
    stream = mode == "stream"
    for _proc, url in gateways.values():  # warm-up: pools, lazy imports
        for i in range(3):
            await gateway_round(session, url, gateway_body(10_000 + i, variant, stream, protocol), stream, protocol)
            await floor_round(session, fake, body(10_000 + i, variant, stream), stream)
    totals: dict = {name: [] for name in gateways}
    floors = []
    cpu = {name: proc.cpu_s() for name, (proc, _) in gateways.items()}
    before = await fake_stats(session, fake)
    for i in range(n):
        floors.append(await floor_round(session, fake, body(i, variant, stream), stream))
        for name, (_, url) in gateways.items():
            totals[name].append(await gateway_round(session, url, gateway_body(i, variant, stream, protocol),
                                                    stream, protocol))
    after = await fake_stats(session, fake)
    k = 2 if variant == "parallel" else 1
    searches = after["search"] - before["search"]
    want = n * k * (len(gateways) + 1)
    if searches != want:
        raise RuntimeError(f"{protocol}/{variant}/{mode}: the fake provider saw {searches} searches, want {want} "
                           "(is the search cache on, or did the gateway not search?)")
    out = {}
    for name, (proc, _) in gateways.items():
        cpu_ms = (proc.cpu_s() - cpu[name]) * 1000 / n
        # pair each gateway round with the floor round measured right before it
        own = [t - f for t, f in zip(totals[name], floors, strict=True)]
        out[(name, protocol, variant, mode)] = {
            "total_ms": statistics.median(totals[name]) * 1000,
            "floor_ms": statistics.median(floors) * 1000,
            "own_ms": statistics.median(own) * 1000,
            "own_p90_ms": sorted(own)[int(0.9 * len(own))] * 1000,
            "cpu_ms": cpu_ms,
        }
    return out


def report(res: dict, gateways: list[str], protocols: list[str], variants: list[str], modes: list[str],
           args) -> str:
    nominal = 2 * args.model_ms + args.search_ms
    lines = [
        f"Search rounds: {args.requests} sequential requests per variant; fake model {args.model_ms:g} ms per call, "
        f"fake SearXNG {args.search_ms:g} ms per search, cacheTtlMs {args.cache_ttl_ms}; nominal fakes' time per "
        f"round = {nominal:g} ms. p50 over requests.",
        "",
        "| gateway | protocol | variant | mode | total ms | total − nominal ms | floor ms "
        "| gateway's own ms (p50 / p90) | gateway CPU ms/round | target own ≤ 2 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in gateways:
        for protocol in protocols:
            for variant in variants:
                for mode in modes:
                    r = res[(name, protocol, variant, mode)]
                    ok = "PASS" if r["own_ms"] <= 2.0 else "MISS"
                    lines.append(f"| {name} | {protocol} | {variant} | {mode} | {r['total_ms']:.1f} "
                                 f"| {r['total_ms'] - nominal:+.2f} | {r['floor_ms']:.1f} "
                                 f"| {r['own_ms']:.2f} / {r['own_p90_ms']:.2f} | {r['cpu_ms']:.2f} | {ok} |")
    if "parallel" in variants:
        lines.append("")
        conc = 2 * args.model_ms + args.search_ms
        serial = 2 * args.model_ms + 2 * args.search_ms
        for name in gateways:
            for protocol in protocols:
                for mode in modes:
                    t = res[(name, protocol, "parallel", mode)]["total_ms"]
                    verdict = "concurrent (PASS)" if t < (conc + serial) / 2 else "serial (MISS)"
                    lines.append(f"- {name}, {protocol}, two parallel searches, {mode}: total {t:.1f} ms vs model×2 "
                                 f"+ max(search) = {conc:g} ms, model×2 + sum(search) = {serial:g} ms → {verdict}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=30, help="sequential requests per variant")
    ap.add_argument("--model-ms", type=float, default=50.0)
    ap.add_argument("--search-ms", type=float, default=100.0)
    ap.add_argument("--cache-ttl-ms", type=int, default=0,
                    help="webSearch.cacheTtlMs (0: every search reaches the provider; >0 adds a store write per search)")
    ap.add_argument("--read-pages", choices=["off", "on"], default="off",
                    help="webSearch.readPages on the gateway (off: the round's own time without reading the "
                         "hits' pages, which bench/grounding.py measures; A/B builds older than readPages "
                         "never read)")
    ap.add_argument("--only", choices=["single", "parallel"])
    ap.add_argument("--modes", default="nonstream,stream")
    ap.add_argument("--protocols", default="chat", help="any of chat,messages,responses (comma-separated)")
    ap.add_argument("--state", choices=["memory", "redis", "both"], default="memory")
    ap.add_argument("--redis-url", help="with --state redis/both; default: start a local redis-server")
    ap.add_argument("--quick", action="store_true", help="10 requests per variant")
    ap.add_argument("--gateway-b", metavar="CMD", action="append", default=[],
                    help="A/B: also measure the gateway started as `CMD serve ...` (memory state) as gateway-b, ...")
    ap.add_argument("--profile", metavar="DIR", help="record each gateway with py-spy into DIR/<name>.txt "
                                                     "(bench/profile_summary.py); perturbs timings")
    args = ap.parse_args(argv)
    if args.quick:
        args.requests = 10
    variants = [args.only] if args.only else ["single", "parallel"]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if unknown := set(protocols) - set(PATHS):
        ap.error(f"unknown protocol(s): {', '.join(sorted(unknown))}")

    tmp = Path(tempfile.mkdtemp(prefix="searchhub-search-bench-"))
    try:
        fake = harness.start_fake(tmp, chunks=20, ttfb_ms=args.model_ms, chunk_ms=0.0, search_ms=args.search_ms)
        fake_url = f"http://127.0.0.1:{fake.port}"
        states = ["memory", "redis"] if args.state == "both" else [args.state]
        redis_url = args.redis_url
        if "redis" in states and not redis_url:
            _, redis_url = harness.start_redis(tmp)
        gateways = {}
        for st in states:
            cfg = harness.gateway_config(fake_url, state=st, redis_url=redis_url, search_url=fake_url)
            cfg["webSearch"]["cacheTtlMs"] = args.cache_ttl_ms
            cfg["webSearch"]["readPages"] = {"enabled": args.read_pages == "on"}
            name = "gateway" if st == "memory" else "gateway-redis"
            p = harness.start_gateway(tmp, cfg, name)
            gateways[name] = (p, f"http://127.0.0.1:{p.port}")
        for i, cmd in enumerate(args.gateway_b):
            cfg = harness.gateway_config(fake_url, search_url=fake_url)
            cfg["webSearch"]["cacheTtlMs"] = args.cache_ttl_ms
            cfg["webSearch"]["readPages"] = {"enabled": args.read_pages == "on"}
            name = f"gateway-{'bcdefgh'[i]}"
            try:  # the same reading setting as the gateway's, or an A/B would compare reading with not
                p = harness.start_gateway(tmp, cfg, name, shlex.split(cmd))
            except SystemExit as e:
                if "readPages" not in str(e):
                    raise
                del cfg["webSearch"]["readPages"]  # a build older than readPages: it never reads
                p = harness.start_gateway(tmp, cfg, name, shlex.split(cmd))
            gateways[name] = (p, f"http://127.0.0.1:{p.port}")
        harness.log(f"fake backend {fake_url}, gateways {[g[1] for g in gateways.values()]}, logs in {tmp}")
        profilers = [harness.start_profiler(p, Path(args.profile) / f"{name}.txt")
                     for name, (p, _) in gateways.items()] if args.profile else []
        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        try:
            res = asyncio.run(measure(fake_url, gateways, protocols, variants, modes, args.requests))
        finally:
            harness.stop_profilers(profilers)
        print(report(res, list(gateways), protocols, variants, modes, args))
        for name, (p, _) in gateways.items():
            rss, hwm = p.rss_mb()
            print(f"{name} RSS {rss:.0f} MB (peak {hwm:.0f} MB)")
    finally:
        harness.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
