"""The upstream client alone: the gateway's HTTP client against maintained async HTTP client libraries,
one fast local upstream, CPU per request at a fixed concurrency (issue 25, item 1).

Each candidate runs in a worker process of its own (the gateway's event loop, uvloop, and its GC
settings: gc.freeze() after start-up and a young-generation threshold of 10,000), kept alive for
the whole run so its pool stays warm. The driver starts the fake model (bench/fake_backend.py), then
in every round, for every mode, asks each worker in turn (interleaved, the order rotated each round)
to run one cell: `--concurrency` closed-loop tasks sending the same request back to back for
`--duration` seconds. A cell reports requests completed, the worker's CPU time over the cell
(`time.process_time()`: every thread of the process, so the Rust clients' runtime threads count),
wall time, and for streams the time from sending the request to the first body bytes (TTFB). Every
figure printed is the median over rounds; ratios are against `gateway` (today's path).

Modes (POST /v1/chat/completions, an OpenAI-compatible chat body):
  nonstream  a small JSON completion (~300 bytes, content-length)
  stream     a streamed completion of 50 chunks (SSE, chunked), written by the fake in one write:
             the client's throughput for a stream, few reads
  paced      the same 50 chunks, 1 ms apart: every chunk is a read of its own, as from a model
             (CPU per stream counts ~50 wake-ups; TTFB without queueing)

Candidates (`--candidates`, comma list; all by default, those not installed are skipped and said so):
  gateway          hub/upstream/http.py make_client(), UpstreamClient.request_direct -> the lean
                   HTTP/1.1 client (hub/upstream/h1.py): the model calls' path, what the relay uses
  gateway-aiohttp  the same with SEARCHHUB_LEAN_HTTP=0: request_direct -> the transport's aiohttp session
  gateway-httpx    make_client() through its httpx API (client.post / client.stream): the search engines' path
  aiohttp          aiohttp.ClientSession used directly with production settings (connect and read timeouts,
                   keep-alive 4 s, pool 1000)
  aiohttp-floor    aiohttp.ClientSession as bench/bare_passthrough.py's floor uses it (no timeouts)
  pyreqwest        pyreqwest (Rust reqwest + hyper, tokio runtime on a thread of its own), connect/read timeouts
  pyreqwest-mt     pyreqwest on tokio's multi-threaded runtime (2 worker threads here)
  httpx            httpx.AsyncClient with its own transport (httpcore)
  httpcore         httpcore.AsyncConnectionPool used directly (no decoding of content-encoding)
  aiosonic         aiosonic.HTTPClient
  curl-cffi        curl_cffi.requests.AsyncSession (libcurl multi)
  rnet             rnet.Client (Rust wreq)
  niquests         niquests.AsyncSession: runs on --side-python (niquests' urllib3-future overwrites the
                   urllib3 package of the venv it is installed into, so it lives in a venv of its own)

Every answer is checked: before measuring, each candidate's body for each mode must equal, byte for
byte, what urllib reads from the fake; in the cells every body's length must match. A candidate
that fails either is reported, not measured.

  .venv/bin/python bench/clients.py                       # 5 rounds x 3 modes x all candidates, c=16, ~7 min
  .venv/bin/python bench/clients.py --quick               # 1 round, 1 s cells
  .venv/bin/python bench/clients.py --candidates gateway,aiohttp,pyreqwest --rounds 9
  .venv/bin/python bench/clients.py --concurrency 1       # latency-bound instead of CPU-bound
  .venv/bin/python bench/clients.py --side-python ~/.cache/searchhub-clients-venv/bin/python   # with niquests

Bench-only packages (not project dependencies): `.venv/bin/pip install pyreqwest aiosonic curl-cffi rnet`;
niquests in a venv of its own from the same base interpreter:
`python3.11 -m venv ~/.cache/searchhub-clients-venv && ~/.cache/searchhub-clients-venv/bin/pip install niquests uvloop msgspec`
(the driver passes the repository root to that worker on PYTHONPATH; it imports nothing of the gateway).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

PATH = "/v1/chat/completions"
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-0123456789"}
CONNECT_S, READ_S, KEEPALIVE_S, POOL = 10.0, 600.0, 4.0, 1000
MODES = ("nonstream", "stream", "paced")
ALL = ["gateway", "gateway-aiohttp", "gateway-httpx", "aiohttp", "aiohttp-floor", "pyreqwest", "pyreqwest-mt",
       "httpx", "httpcore", "aiosonic", "curl-cffi", "rnet", "niquests"]
SIDE = {"niquests"}  # run on --side-python
BASE = "gateway"


def body_for(mode: str) -> bytes:
    b: dict = {"model": "m", "messages": [{"role": "user", "content": "Say something short."}], "max_tokens": 64}
    if mode != "nonstream":
        b["stream"] = True
        b["bench"] = {"chunks": 50, **({"chunk_ms": 1} if mode == "paced" else {})}
    return json.dumps(b, separators=(",", ":")).encode()


# ----------------------------------------------------------------------------- candidates


def check(status: int) -> None:
    if status != 200:
        raise RuntimeError(f"HTTP {status}")


async def drain(chunks, first, keep: list | None) -> int:
    """Read a streamed body to its end: its length; `first()` at the first bytes, each chunk kept in
    `keep` when given. The same loop for every candidate that yields chunks with `async for`."""
    n = 0
    async for chunk in chunks:
        if not n:
            first()
        n += len(chunk)
        if keep is not None:
            keep.append(bytes(chunk))
    return n
#
# Each is an object with `nonstream(body) -> bytes-like`, `stream(body, first, keep=None) -> int` (the body's
# length; `first()` is called once, when the first body bytes arrive) and `close()`. Built inside
# the worker's running loop.


class Gateway:
    """Today's path: what hub/upstream/http.py `_exchange_direct` and `sse_batches` do with the answer
    (status check, `read()` / `content.iter_any()`, `release()`), without the JSON and SSE parsing
    every client would need alike."""

    def __init__(self, url: str, lean: bool = True) -> None:
        os.environ["SEARCHHUB_LEAN_HTTP"] = "1" if lean else "0"
        import aiohttp

        from hub.upstream.http import make_client

        self.client = make_client({})
        self.url = url
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_S, sock_read=READ_S)

    async def nonstream(self, body: bytes):
        resp = await self.client.request_direct(self.url, body, HEADERS, self.timeout)
        try:
            check(resp.status)
            return await resp.read()
        finally:
            resp.release()

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        resp = await self.client.request_direct(self.url, body, HEADERS, self.timeout)
        try:
            check(resp.status)
            n = await drain(resp.content.iter_any(), first, keep)
        finally:
            resp.release()
        return n

    async def close(self) -> None:
        await self.client.aclose()


class HttpxAPI:
    """A client with httpx's API (`client`, `url` set by the subclass)."""

    client: Any
    url: str

    async def nonstream(self, body: bytes):
        r = await self.client.post(self.url, content=body, headers=HEADERS)
        check(r.status_code)
        return r.content

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        async with self.client.stream("POST", self.url, content=body, headers=HEADERS) as r:
            check(r.status_code)
            n = await drain(r.aiter_bytes(), first, keep)
        return n

    async def close(self) -> None:
        await self.client.aclose()


class GatewayHttpx(HttpxAPI):
    """make_client() through httpx's API (the search engines' and the fetcher's way in)."""

    def __init__(self, url: str) -> None:
        from hub.upstream.http import make_client

        self.client = make_client({})
        self.url = url



class Aiohttp:
    def __init__(self, url: str, floor: bool = False) -> None:
        import aiohttp

        if floor:  # exactly bench/bare_passthrough.py's floor
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=POOL),
                                                 timeout=aiohttp.ClientTimeout(total=None))
        else:
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=POOL, keepalive_timeout=KEEPALIVE_S),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_S, sock_read=READ_S))
        self.url = url

    async def nonstream(self, body: bytes):
        async with self.session.post(self.url, data=body, headers=HEADERS) as r:
            check(r.status)
            return await r.read()

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        async with self.session.post(self.url, data=body, headers=HEADERS) as r:
            check(r.status)
            n = await drain(r.content.iter_any(), first, keep)
        return n

    async def close(self) -> None:
        await self.session.close()


class Pyreqwest:
    def __init__(self, url: str, multithreaded: bool = False) -> None:
        from pyreqwest.client import ClientBuilder

        b = (ClientBuilder().max_connections(POOL).connect_timeout(timedelta(seconds=CONNECT_S))
             .read_timeout(timedelta(seconds=READ_S)).pool_idle_timeout(timedelta(seconds=KEEPALIVE_S)))
        if multithreaded:
            b = b.runtime_multithreaded(True)
        self.client = b.build()
        self.url = url

    async def nonstream(self, body: bytes):
        r = await self.client.post(self.url).headers(HEADERS).body_bytes(body).build().send()
        check(r.status)
        return await r.bytes()

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        n = 0
        # streamed_read_buffer_limit(0): by default (64 KiB) the response is handed over only once
        # 64 KiB of body or its end have arrived, so a model's stream would arrive whole at its end
        async with (self.client.post(self.url).headers(HEADERS).body_bytes(body).streamed_read_buffer_limit(0)
                    .build_streamed()) as r:
            check(r.status)
            reader = r.body_reader
            while (chunk := await reader.read_chunk()) is not None:
                if not n:
                    first()
                n += len(chunk)
                if keep is not None:
                    keep.append(bytes(chunk))
        return n

    async def close(self) -> None:
        await self.client.close()


class Httpx(HttpxAPI):
    def __init__(self, url: str) -> None:
        import httpx

        self.client = httpx.AsyncClient(limits=httpx.Limits(max_connections=POOL, max_keepalive_connections=200,
                                                            keepalive_expiry=KEEPALIVE_S),
                                        timeout=httpx.Timeout(READ_S, connect=CONNECT_S))
        self.url = url



class Httpcore:
    def __init__(self, url: str) -> None:
        import httpcore

        self.pool = httpcore.AsyncConnectionPool(max_connections=POOL, keepalive_expiry=KEEPALIVE_S)
        self.url = url
        self.headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]
        self.ext = {"timeout": {"connect": CONNECT_S, "read": READ_S, "write": READ_S, "pool": CONNECT_S}}

    async def nonstream(self, body: bytes):
        r = await self.pool.request("POST", self.url, headers=self.headers, content=body, extensions=self.ext)
        check(r.status)
        return r.content

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        async with self.pool.stream("POST", self.url, headers=self.headers, content=body, extensions=self.ext) as r:
            check(r.status)
            n = await drain(r.aiter_stream(), first, keep)
        return n

    async def close(self) -> None:
        await self.pool.aclose()


class Aiosonic:
    def __init__(self, url: str) -> None:
        import aiosonic
        from aiosonic.timeout import Timeouts

        self.timeouts = Timeouts(sock_connect=CONNECT_S, sock_read=READ_S, request_timeout=None)
        self.client = aiosonic.HTTPClient(connector=aiosonic.TCPConnector(
            pool_configs={":default": {"size": POOL, "max_conn_idle_ms": int(KEEPALIVE_S * 1000)}},
            timeouts=self.timeouts))
        self.url = url

    async def nonstream(self, body: bytes):
        r = await self.client.post(self.url, data=body, headers=HEADERS)
        check(r.status_code)
        return await r.content()

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        r = await self.client.request(self.url, "POST", headers=HEADERS, data=body, stream=True)
        check(r.status_code)
        n = await drain(r.read_chunks(), first, keep)
        return n

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.connector.cleanup()


class CurlCffi:
    def __init__(self, url: str) -> None:
        from curl_cffi.requests import AsyncSession

        self.session = AsyncSession(max_clients=POOL, timeout=(CONNECT_S, READ_S))
        self.url = url

    async def nonstream(self, body: bytes):
        r = await self.session.post(self.url, data=body, headers=HEADERS)
        check(r.status_code)
        return r.content

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        r = await self.session.post(self.url, data=body, headers=HEADERS, stream=True)
        try:
            check(r.status_code)
            n = await drain(r.aiter_content(), first, keep)
        finally:
            await r.aclose()
        return n

    async def close(self) -> None:
        await self.session.close()


class Rnet:
    def __init__(self, url: str) -> None:
        import rnet

        self.client = rnet.Client(connect_timeout=int(CONNECT_S), read_timeout=int(READ_S),
                                  pool_idle_timeout=int(KEEPALIVE_S), pool_max_size=POOL)
        self.url = url

    async def nonstream(self, body: bytes):
        r = await self.client.post(self.url, body=body, headers=HEADERS)
        check(r.status_code.as_int())
        return await r.bytes()

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        r = await self.client.post(self.url, body=body, headers=HEADERS)
        check(r.status_code.as_int())
        async with r.stream() as s:
            n = await drain(s, first, keep)
        return n

    async def close(self) -> None:
        pass


class Niquests:
    def __init__(self, url: str) -> None:
        import niquests

        self.session = niquests.AsyncSession(pool_connections=4, pool_maxsize=POOL, disable_http2=True,
                                             disable_http3=True, timeout=(CONNECT_S, READ_S))
        self.url = url

    async def nonstream(self, body: bytes):
        r = await self.session.post(self.url, data=body, headers=HEADERS)
        check(r.status_code)
        return r.content

    async def stream(self, body: bytes, first, keep: list | None = None) -> int:
        r = await self.session.post(self.url, data=body, headers=HEADERS, stream=True)
        try:
            check(r.status_code)
            n = await drain(await r.iter_content(), first, keep)
        finally:
            await r.close()
        return n

    async def close(self) -> None:
        await self.session.close()


def build(name: str, url: str):
    return {
        "gateway": lambda: Gateway(url),
        "gateway-aiohttp": lambda: Gateway(url, lean=False),
        "gateway-httpx": lambda: GatewayHttpx(url),
        "aiohttp": lambda: Aiohttp(url),
        "aiohttp-floor": lambda: Aiohttp(url, floor=True),
        "pyreqwest": lambda: Pyreqwest(url),
        "pyreqwest-mt": lambda: Pyreqwest(url, multithreaded=True),
        "httpx": lambda: Httpx(url),
        "httpcore": lambda: Httpcore(url),
        "aiosonic": lambda: Aiosonic(url),
        "curl-cffi": lambda: CurlCffi(url),
        "rnet": lambda: Rnet(url),
        "niquests": lambda: Niquests(url),
    }[name]()


# ----------------------------------------------------------------------------- the worker


async def run_cell(cand, body: bytes, mode: str, expected: int, c: int, duration: float) -> dict:
    loop = asyncio.get_running_loop()
    done = errors = 0
    ttfb: list[float] = []
    first_error = ""
    deadline = loop.time() + duration
    perf = time.perf_counter

    async def closed_loop() -> None:
        nonlocal done, errors, first_error
        while loop.time() < deadline:
            t0 = perf()
            try:
                if mode == "nonstream":
                    n = len(await cand.nonstream(body))
                else:
                    mark = [True]

                    def first(t0=t0, mark=mark) -> None:
                        if mark:
                            mark.clear()
                            ttfb.append(perf() - t0)

                    n = await cand.stream(body, first)
            except Exception as e:  # counted, reported; the loop goes on
                errors += 1
                first_error = first_error or f"{type(e).__name__}: {e}"[:300]
                await asyncio.sleep(0.001)
                continue
            if n != expected:
                errors += 1
                first_error = first_error or f"body of {n} bytes, want {expected}"
                continue
            done += 1

    cpu0, wall0 = time.process_time(), perf()
    await asyncio.gather(*(closed_loop() for _ in range(c)))
    cpu, wall = time.process_time() - cpu0, perf() - wall0
    out = {"requests": done, "errors": errors, "cpu_s": cpu, "wall_s": wall, "first_error": first_error}
    if ttfb:
        ttfb.sort()
        out["ttfb_p50_ms"] = ttfb[len(ttfb) // 2] * 1000
        out["ttfb_p99_ms"] = ttfb[min(len(ttfb) - 1, int(len(ttfb) * 0.99))] * 1000
    return out


def reference(url: str, body: bytes) -> bytes:
    req = urllib.request.Request(url, data=body, headers=HEADERS)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def worker(name: str, url: str, default_gc: bool) -> int:
    import uvloop

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing a library prints may reach the driver's pipe
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    bodies = {m: body_for(m) for m in MODES}
    expected = {}
    try:
        cand = loop.run_until_complete(_make(name, url))
        for m in MODES:  # byte for byte against urllib's read of the same answer
            ref = reference(url, bodies[m])
            if m == "nonstream":
                got = bytes(loop.run_until_complete(cand.nonstream(bodies[m])))
            else:
                got = loop.run_until_complete(_collect(cand, bodies[m]))
            if got != ref:
                raise RuntimeError(f"{m}: {len(got)} bytes differ from the reference's {len(ref)}")
            expected[m] = len(ref)
    except Exception as e:
        out.write(json.dumps({"ready": False, "error": f"{type(e).__name__}: {e}"[:500]}) + "\n")
        out.flush()
        return 1
    if not default_gc:  # the gateway's settings (routes/app.py create_app)
        gc.collect()
        gc.freeze()
        gc.set_threshold(10_000, *gc.get_threshold()[1:])
    out.write(json.dumps({"ready": True, "threads": threading_count()}) + "\n")
    out.flush()
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        res = loop.run_until_complete(run_cell(cand, bodies[cmd["mode"]], cmd["mode"], expected[cmd["mode"]],
                                               cmd["c"], cmd["duration"]))
        res["threads"] = threading_count()
        out.write(json.dumps(res) + "\n")
        out.flush()
    with contextlib.suppress(Exception):
        loop.run_until_complete(asyncio.wait_for(cand.close(), 5))
    return 0


def threading_count() -> int:
    return len(os.listdir("/proc/self/task"))


async def _make(name: str, url: str):
    return build(name, url)


async def _collect(cand, body: bytes) -> bytes:
    """A stream's whole body, for the check: through the candidate's own `stream`, keeping the bytes."""
    parts: list[bytes] = []
    await cand.stream(body, lambda: None, parts)
    return b"".join(parts)


# ----------------------------------------------------------------------------- the driver


class Worker:
    def __init__(self, name: str, python: str, url: str, default_gc: bool, log_dir: Path) -> None:
        self.name = name
        self.log = open(log_dir / f"{name}.log", "wb")  # noqa: SIM115 (lives as long as the worker)
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", name, "--url", url,
             *(["--default-gc"] if default_gc else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, text=True, bufsize=1)
        self.ready: dict = {}

    def hello(self) -> dict:
        line = self.proc.stdout.readline()
        self.ready = json.loads(line) if line else {"ready": False, "error": "worker exited; see its log"}
        return self.ready

    def cell(self, mode: str, c: int, duration: float) -> dict:
        self.proc.stdin.write(json.dumps({"mode": mode, "c": c, "duration": duration}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} exited; see {self.log.name}")
        return json.loads(line)

    def rss_mb(self) -> tuple[float, float]:
        rss = hwm = 0.0
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
        return rss, hwm

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self.proc.stdin.flush()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def med(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def report(results: dict, names: list[str], modes: list[str], c: int, rss: dict, meta: dict) -> str:
    out = [f"# Upstream clients alone, c={c} ({meta['when']}, {meta['rounds']} rounds x {meta['duration']} s "
           f"cells, load before {meta['load']})", ""]

    def cpu_us(cell: dict) -> float:
        return cell["cpu_s"] / cell["requests"] * 1e6 if cell["requests"] else float("nan")

    def rps(cell: dict) -> float:
        return cell["requests"] / cell["wall_s"] if cell["wall_s"] else float("nan")

    for mode in modes:
        out += [f"## {mode}", "",
                "| client | CPU µs/req | × gateway (median of per-round ratios) | req/s | × gateway | "
                "TTFB p50 ms | TTFB p99 ms | errors |",
                "|---|---|---|---|---|---|---|---|"]
        base = results.get((BASE, mode), [])
        for name in names:
            cells = results.get((name, mode))
            if not cells:
                continue
            cpu = med([cpu_us(x) for x in cells])
            r = med([rps(x) for x in cells])
            ratio = ratio_rps = float("nan")
            if base:
                ratio = med([cpu_us(a) / cpu_us(b) for a, b in zip(cells, base, strict=False)])
                ratio_rps = med([rps(a) / rps(b) for a, b in zip(cells, base, strict=False)])
            t50 = med([x.get("ttfb_p50_ms", float("nan")) for x in cells])
            t99 = med([x.get("ttfb_p99_ms", float("nan")) for x in cells])
            errs = sum(x["errors"] for x in cells)
            ttfb = f"{t50:.2f} | {t99:.2f}" if mode != "nonstream" else "– | –"
            out.append(f"| {name} | {cpu:.1f} | ×{ratio:.2f} | {r:,.0f} | ×{ratio_rps:.2f} | {ttfb} | {errs} |")
        out.append("")
    out += ["## RSS and threads (end of run)", "", "| client | RSS MB | peak MB | threads |", "|---|---|---|---|"]
    for name in names:
        if name in rss:
            r, h, t = rss[name]
            out.append(f"| {name} | {r:.0f} | {h:.0f} | {t} |")
    out.append("")
    # the decision rule of issue 25 item 1: a library within 10 % of today's CPU per request at c=16
    libs = [n for n in names if not n.startswith("gateway")]
    lines = []
    for mode in modes:
        base = results.get((BASE, mode), [])
        if not base:
            continue
        for name in libs:
            cells = results.get((name, mode))
            if cells:
                ratio = med([cpu_us(a) / cpu_us(b) for a, b in zip(cells, base, strict=False)])
                lines.append((mode, name, ratio))
    if lines:
        out += ["## Decision rule: a library within 10 % of the gateway's CPU per request", ""]
        for mode in modes:
            best = sorted((r, n) for m, n, r in lines if m == mode)
            if best:
                r, n = best[0]
                verdict = "within 10 %" if r <= 1.10 else "not within 10 %"
                out.append(f"- {mode}: closest library {n} at ×{r:.2f} → {verdict}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--candidates", default=",".join(ALL), help="comma list of " + ", ".join(ALL))
    ap.add_argument("--modes", default=",".join(MODES), help="comma list of " + ", ".join(MODES))
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=1.5, help="seconds per cell")
    ap.add_argument("--quick", action="store_true", help="1 round, 1 s cells")
    ap.add_argument("--side-python", default=os.environ.get("BENCH_SIDE_PYTHON",
                                                            str(Path.home() / ".cache/searchhub-clients-venv/bin/python")),
                    help="interpreter for the niquests worker (a venv of its own; see above)")
    ap.add_argument("--default-gc", action="store_true", help="leave Python's GC settings in the workers")
    ap.add_argument("--json", help="write every per-round cell here")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.url, args.default_gc)
    if args.quick:
        args.rounds, args.duration = 1, 1.0
    names = [n.strip() for n in args.candidates.split(",") if n.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(names) - set(ALL) or set(modes) - set(MODES):
        ap.error("unknown candidate or mode")

    sys.path.insert(0, str(BENCH))
    from run import start_fake, stop_all  # bench/run.py

    tmp = Path(tempfile.mkdtemp(prefix="searchhub-clients-"))
    workers: dict[str, Worker] = {}
    try:
        fake = start_fake(tmp, chunks=50, ttfb_ms=0.0, chunk_ms=0.0)
        url = f"http://127.0.0.1:{fake.port}{PATH}"
        for name in names:
            python = sys.executable
            if name in SIDE:
                if not Path(args.side_python).exists():
                    log(f"skipped {name}: no interpreter at {args.side_python} (--side-python)")
                    continue
                python = args.side_python
            w = Worker(name, python, url, args.default_gc, tmp)
            hello = w.hello()
            if not hello.get("ready"):
                log(f"skipped {name}: {hello.get('error')}")
                w.stop()
                continue
            workers[name] = w
        names = [n for n in names if n in workers]
        log(f"candidates: {', '.join(names)}; logs in {tmp}")
        for name in names:  # warm-up: pools, lazy imports, caches
            for mode in modes:
                workers[name].cell(mode, args.concurrency, 0.3)
        load = os.getloadavg()[0]
        results: dict[tuple[str, str], list[dict]] = {}
        for rnd in range(args.rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]  # rotated: no fixed neighbour
            for mode in modes:
                for name in order:
                    cell = workers[name].cell(mode, args.concurrency, args.duration)
                    results.setdefault((name, mode), []).append(cell)
                    cpu = cell["cpu_s"] / cell["requests"] * 1e6 if cell["requests"] else float("nan")
                    log(f"round {rnd + 1} {mode:9s} {name:16s} {cell['requests'] / cell['wall_s']:8.0f} req/s "
                        f"cpu {cpu:7.1f} µs/req" + (f" ttfb p50 {cell['ttfb_p50_ms']:.2f} ms" if "ttfb_p50_ms" in cell
                                                   else "")
                        + (f" ERRORS {cell['errors']} ({cell['first_error']})" if cell["errors"] else ""))
        rss = {n: (*workers[n].rss_mb(), results[(n, modes[-1])][-1].get("threads", 0)) for n in names}
        meta = {"when": time.strftime("%Y-%m-%d %H:%M"), "rounds": args.rounds, "duration": args.duration,
                "load": f"{load:.2f}", "c": args.concurrency}
        if args.json:
            Path(args.json).write_text(json.dumps({"meta": meta, "cells": [
                {"client": n, "mode": m, "round": i, **cell}
                for (n, m), cells in results.items() for i, cell in enumerate(cells)]}, indent=1))
        print(report(results, names, modes, args.concurrency, rss, meta))
    finally:
        for w in workers.values():
            w.stop()
        stop_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
