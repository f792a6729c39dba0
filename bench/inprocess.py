"""The gateway's own CPU per request, without an HTTP server in front: its ASGI app called directly.

Starts the fake backend (bench/fake_backend.py, answering at once), builds the app from a generated
engines.json (webSearch off, or with `--search` a SearXNG engine on the fake and injectPolicy
"always"), and calls it like uvicorn would, request after request in one process. Reports CPU
(`time.process_time`) and wall time per request, per round. What remains per request is the
gateway's own work plus the aiohttp client's; uvicorn, wrk and the socket writes to the client are
out of the picture, so a change to the gateway's code shows here with little noise.

  .venv/bin/python bench/inprocess.py                      # plain relay, non-stream
  .venv/bin/python bench/inprocess.py --stream             # 20-chunk relayed stream
  .venv/bin/python bench/inprocess.py --concurrency 16     # 16 requests in flight at once
  .venv/bin/python bench/inprocess.py --search             # a search round (model, search, model)
  .venv/bin/python bench/inprocess.py --search --idle 0.05 # each request after 50 ms idle: cold caches
  .venv/bin/python bench/inprocess.py --search --stream --protocol messages   # or responses (default chat)
  .venv/bin/python bench/inprocess.py --search --parallel  # two parallel searches in the round
  .venv/bin/python bench/inprocess.py --profile            # then a cProfile of the gateway's functions
  .venv/bin/python bench/inprocess.py --floor              # the same for the aiohttp floor's app
  .venv/bin/python bench/inprocess.py --set trace.enabled=false   # with a key of engines.json changed
  .venv/bin/python bench/inprocess.py --fixture tests/fixtures/claude-code/ws-direct-003-POST-main-final-after-tool-result-sse.json
                                                           # a recorded client request (path, headers, body)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from run import free_port  # noqa: E402  (bench/run.py)


def config(fake: str, search: bool, read_pages: bool = False) -> dict:
    cfg: dict = {
        "providers": {"fake": {"type": "vllm", "baseURL": fake + "/v1"}},
        "virtualrouter": {"routing": {"default": [{"id": "fake", "priority": 100, "targets": ["fake.m"]}]}},
        "webSearch": {"enabled": False},
    }
    if search:
        cfg["webSearch"] = {"injectPolicy": "always", "cacheTtlMs": 0, "readPages": {"enabled": read_pages},
                            "engines": [{"id": "searxng", "type": "searxng", "baseURL": fake, "default": True}]}
    return cfg


def override(cfg: dict, item: str) -> None:
    """`--set a.b=JSON`: cfg["a"]["b"] = the value (a bare word is a string)."""
    path, sep, raw = item.partition("=")
    if not sep or not path:
        raise SystemExit(f"--set wants PATH=JSON, got {item!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    *parents, last = path.split(".")
    node = cfg
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


class Request:
    """What to send: a path, headers and a body."""

    def __init__(self, body: bytes, path: str = "/v1/chat/completions",
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.body, self.path = body, path
        base = headers or [(b"host", b"127.0.0.1"), (b"user-agent", b"bench"), (b"content-type", b"application/json")]
        self.headers = [(k, v) for k, v in base if k != b"content-length"] + [
            (b"content-length", str(len(body)).encode())]

    @classmethod
    def recorded(cls, path: Path) -> Request:
        """A request from a fixture file ({"request": {"path", "headers": [[name, value]], "body"}})."""
        req = json.loads(path.read_text())["request"]
        skip = {"authorization", "x-api-key", "content-length", "transfer-encoding"}
        headers = [(k.lower().encode(), str(v).encode()) for k, v in req["headers"] if k.lower() not in skip]
        return cls(json.dumps(req["body"]).encode(), req["path"], headers)


def client_request(protocol: str, text: str, stream: bool, model: str = "m") -> Request:
    if protocol == "messages":
        b: dict = {"model": model, "max_tokens": 256, "stream": stream, "messages": [{"role": "user", "content": text}]}
        return Request(json.dumps(b).encode(), "/v1/messages")
    if protocol == "responses":
        return Request(json.dumps({"model": model, "stream": stream, "input": text, "store": False}).encode(),
                       "/v1/responses")
    b = {"model": model, "stream": stream, "messages": [{"role": "user", "content": text}]}
    return Request(json.dumps(b).encode())


def scope_for(req: Request) -> dict:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": req.path, "raw_path": req.path.encode(),
            "query_string": b"", "root_path": "", "headers": req.headers,
            "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 80), "state": {}}


async def call(app, req: Request) -> int:
    """One request through the ASGI app; the status it answered."""
    sent: list[dict] = []
    done = asyncio.Event()
    pending = [{"type": "http.request", "body": req.body, "more_body": False}]

    async def receive() -> dict:
        if pending:
            return pending.pop()
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await app(scope_for(req), receive, send)
    done.set()
    return sent[0]["status"]


async def concurrently(app, body: Request, requests: int, concurrency: int) -> None:
    """`requests` calls by `concurrency` loops at once."""
    async def loop(n: int) -> None:
        for _ in range(n):
            status = await call(app, body)
            if status != 200:
                raise SystemExit(f"the gateway answered {status}")

    share, extra = divmod(requests, concurrency)
    await asyncio.gather(*(loop(share + (i < extra)) for i in range(concurrency)))


async def measure(app, body: Request, args) -> None:
    for _ in range(100):  # warm up (and wait for the fake)
        try:
            if await call(app, body) == 200:
                break
        except OSError:
            pass
        await asyncio.sleep(0.1)
    cpus: list[float] = []
    for r in range(args.rounds):
        for _ in range(min(200, args.requests)):
            await call(app, body)
        cpu, wall, idle = time.process_time(), time.perf_counter(), 0.0
        if args.concurrency > 1:  # N clients at once, as wrk -cN: what only shows under load
            await concurrently(app, body, args.requests, args.concurrency)
        for _ in range(args.requests if args.concurrency == 1 else 0):
            status = await call(app, body)
            if status != 200:
                raise SystemExit(f"the gateway answered {status}")
            if args.idle:
                t = time.perf_counter()
                await asyncio.sleep(args.idle)
                idle += time.perf_counter() - t
        n = args.requests
        cpus.append((time.process_time() - cpu) / n * 1e6)
        print(f"round {r + 1}: CPU {cpus[-1]:7.1f} µs/request, "
              f"wall {(time.perf_counter() - wall - idle) / n * 1e6:7.1f} µs/request")
    print(f"best CPU {min(cpus):7.1f} µs/request")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.requests):
            await call(app, body)
        prof.disable()
        if os.environ.get("BENCH_PSTATS"):  # for pstats / a diff of two profiles
            prof.dump_stats(os.environ["BENCH_PSTATS"])
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(r"(hub|routes)/", 40)
        if os.environ.get("BENCH_OWN"):
            stats.sort_stats("tottime").print_stats(r"(hub|routes)/", 60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stream", action="store_true", help="a streamed completion (20 chunks)")
    ap.add_argument("--search", action="store_true", help="a search round: model call, search, model call")
    ap.add_argument("--parallel", action="store_true",
                    help="with --search: the model calls web_search twice in the round (target fake.m-x2)")
    ap.add_argument("--protocol", choices=["chat", "messages", "responses"], default="chat",
                    help="the client's protocol: Chat Completions, Anthropic Messages or Responses")
    ap.add_argument("--requests", type=int, default=2000, help="requests per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=1,
                    help="requests in flight at once, as wrk -cN (not with --idle)")
    ap.add_argument("--read-pages", choices=["off", "on"], default="off",
                    help="with --search: webSearch.readPages (off, as bench/search_round.py: the fake's hits "
                         "point at hosts that do not resolve, and a resolver that answers late makes the "
                         "round wait for the reading's deadline; bench/grounding.py measures reading)")
    ap.add_argument("--idle", type=float, default=0.0, help="seconds of idle after each request (cold caches)")
    ap.add_argument("--profile", action="store_true", help="then cProfile one more round")
    ap.add_argument("--fixture", type=Path, help="replay this recorded request (its path, headers and body)")
    ap.add_argument("--floor", action="store_true",
                    help="call the aiohttp floor (bench/bare_passthrough.py) instead of the gateway")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=JSON",
                    help="set a key of the generated engines.json, e.g. --set trace.enabled=false "
                         "(what one feature costs)")
    args = ap.parse_args(argv)

    import uvloop

    from routes.app import create_app
    from routes.serve import setup_logging

    port = free_port()
    fake = subprocess.Popen([sys.executable, str(BENCH / "fake_backend.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL)
    tmp = Path(tempfile.mkdtemp(prefix="searchhub-inprocess-"))
    try:
        cfg = config(f"http://127.0.0.1:{port}", args.search, args.read_pages == "on")
        for item in args.set:
            override(cfg, item)
        (tmp / "engines.json").write_text(json.dumps(cfg))
        setup_logging("info", "json")
        logging.getLogger().handlers[0].setStream(open(os.devnull, "w"))  # noqa: SIM115 (for the process)
        if args.floor:
            from bare_passthrough import build_app

            app = build_app("aiohttp", f"http://127.0.0.1:{port}")
        else:
            app = create_app(str(tmp / "engines.json"))
        text = "search the web for topic 7 news" if args.search else "Say something short."
        body = Request.recorded(args.fixture) if args.fixture else client_request(args.protocol, text, args.stream,
                                                                                  "fake.m-x2" if args.parallel else "m")

        async def run() -> None:
            async with app.router.lifespan_context(app):  # as uvicorn runs it (the GC settings too)
                await measure(app, body, args)

        uvloop.run(run())
    finally:
        fake.terminate()
        fake.wait(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
