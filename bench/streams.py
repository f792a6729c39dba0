"""Streams at scale: hundreds of slow, model-paced streams open at once, through the gateway vs the floor.

The fake model (bench/fake_backend.py) answers every stream like a model would: headers at once,
the first token after `--ttft-ms` (100), then `--chunks` (20) content chunks `--chunk-ms` (50) apart
and `[DONE]`, so one stream lasts ~1.1 s. For each level of open streams (`--levels 100,500`) and
each target (`direct` = straight at the fake, `bare-aiohttp` = the 40-line floor, `gateway`),
interleaved, `L` closed-loop clients each run streams back to back on one keep-alive connection for
`--duration` seconds, their starts spread over one stream's length so that about `L` streams are
open at every moment (the steady state of real traffic, not a burst of `L` simultaneous requests).

Measured per target and level (streams that started after the ramp and ended before the stop):
  * TTFT: request written -> first `data:` line; added = target p50/p99 - direct p50/p99;
  * chunk inter-arrival: gaps between consecutive content chunks; jitter = |gap - chunk-ms|,
    added = target p50/p99 jitter - direct's;
  * RSS of the server (VmRSS) idle before the first level ("0 open") and the peak while each level
    ran; MB per open stream = (RSS at the top level - RSS at 0) / level;
  * CPU of the server per stream-second (utime+stime over the level / the summed stream durations);
  * starvation: a stream that did not complete (all chunks and the end of the body), or whose
    largest gap exceeded `--starve-ms` (250), or whose TTFT exceeded ttft-ms + 1 s.

Bounded and self-stopping: every level stops starting streams after `--duration` and waits at most
30 s for the ones in flight; loopback only.

  .venv/bin/python bench/streams.py                      # 2 rounds x levels 100,500 x 3 targets, ~1.5 min
  .venv/bin/python bench/streams.py --quick              # 1 round, 3 s per level
  .venv/bin/python bench/streams.py --gateway-b "/other/checkout/.venv/bin/searchhub"   # A/B in one run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shlex
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as harness  # noqa: E402  (bench/run.py: process management)

pc = time.perf_counter
END = b"\r\n0\r\n\r\n"


class StreamClient(asyncio.Protocol):
    """One keep-alive connection running streams one after the other; records when each `data:`
    line arrives (one timestamp per line, so a read carrying two lines records two)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future | None = None
        self.lost = asyncio.get_running_loop().create_future()
        self.times: list[float] = []
        self.tail = b""
        self.status = 0
        self.t0 = 0.0

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(False)
        if not self.lost.done():
            self.lost.set_result(None)

    def start(self, request: bytes) -> asyncio.Future:
        self.done = asyncio.get_running_loop().create_future()
        self.times, self.tail, self.status = [], b"", 0
        self.t0 = pc()
        self.transport.write(request)
        return self.done

    def data_received(self, data: bytes) -> None:
        now = pc()
        if not self.status and data.startswith(b"HTTP/1.1 "):
            self.status = int(data[9:12])
        joined = self.tail + data
        n = joined.count(b"data: ") - self.tail.count(b"data: ")
        if n:
            self.times.extend([now] * n)
        self.tail = joined[-8:]
        if joined.endswith(END) and self.done is not None and not self.done.done():
            self.done.set_result(True)


def request_bytes(port: int) -> bytes:
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 64,
                       "messages": [{"role": "user", "content": "Say something short."}]}).encode()
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


async def run_level(proc: harness.Proc, level: int, duration: float, stream_s: float, chunks: int) -> dict:
    """`level` closed-loop clients for `duration` s; returns the per-stream records and the peaks."""
    loop = asyncio.get_running_loop()
    request = request_bytes(proc.port)
    records: list[tuple[float, float, list[float], bool]] = []  # (t0, t_end, data times, ok)
    open_now = 0
    peak_open = 0
    t_start = pc()
    stop_at = t_start + duration

    async def client(i: int) -> None:
        nonlocal open_now, peak_open
        await asyncio.sleep(stream_s * i / level)  # spread the starts over one stream's length
        conn = None
        while pc() < stop_at:
            if conn is None:
                _, conn = await loop.create_connection(StreamClient, "127.0.0.1", proc.port)
            fut = conn.start(request)
            open_now += 1
            peak_open = max(peak_open, open_now)
            try:
                ok = await asyncio.wait_for(fut, 30)
            except TimeoutError:
                ok = False
            open_now -= 1
            ok = ok and conn.status == 200 and len(conn.times) >= chunks + 1
            records.append((conn.t0, pc(), conn.times, ok))
            if not ok:
                conn.transport.close()
                conn = None
        if conn is not None:
            conn.transport.close()

    rss_peak = 0.0
    sampling = True

    async def sample() -> None:
        nonlocal rss_peak
        while sampling:
            rss_peak = max(rss_peak, proc.rss_mb()[0])
            await asyncio.sleep(0.05)

    cpu0 = proc.cpu_s()
    sampler = asyncio.ensure_future(sample())
    await asyncio.gather(*(client(i) for i in range(level)))
    cpu = proc.cpu_s() - cpu0
    sampling = False
    await sampler
    # measure only the steady state: streams that began after the ramp
    steady = [r for r in records if r[0] >= t_start + stream_s]
    return {"records": steady, "all": len(records), "cpu_s": cpu, "rss_peak_mb": rss_peak, "peak_open": peak_open,
            "stream_seconds": sum(r[1] - r[0] for r in records)}


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summarize(res: dict, chunks: int, ttft_ms: float, chunk_ms: float, starve_ms: float) -> dict:
    ttft, jitter, gaps = [], [], []
    starved = incomplete = 0
    worst_gap = 0.0
    for t0, _t1, times, ok in res["records"]:
        if not ok:
            incomplete += 1
            continue
        first = (times[0] - t0) * 1000
        ttft.append(first)
        g = [(b - a) * 1000 for a, b in zip(times[:chunks - 1], times[1:chunks], strict=True)]
        gaps.extend(g)
        jitter.extend(abs(x - chunk_ms) for x in g)
        worst = max(g, default=0.0)
        worst_gap = max(worst_gap, worst)
        if worst > starve_ms or first > ttft_ms + 1000:
            starved += 1
    return {
        "streams": len(res["records"]), "incomplete": incomplete, "starved": starved, "worst_gap_ms": worst_gap,
        "ttft_p50": pct(ttft, 0.5), "ttft_p99": pct(ttft, 0.99),
        "gap_p50": pct(gaps, 0.5), "gap_p99": pct(gaps, 0.99),
        "jitter_p50": pct(jitter, 0.5), "jitter_p99": pct(jitter, 0.99),
        "rss_peak_mb": res["rss_peak_mb"], "peak_open": res["peak_open"],
        "cpu_ms_per_stream_s": 1000 * res["cpu_s"] / res["stream_seconds"] if res["stream_seconds"] else float("nan"),
        "cpu_ms_per_stream": 1000 * res["cpu_s"] / res["all"] if res["all"] else float("nan"),
    }


def report(cells: dict, rss0: dict, targets: list[str], levels: list[int], args) -> str:
    def m(t: str, lv: int, key: str) -> float:
        xs = [c[key] for c in cells.get((t, lv), []) if c[key] == c[key]]
        return statistics.median(xs) if xs else float("nan")

    def tot(t: str, lv: int, key: str) -> int:
        return sum(c[key] for c in cells.get((t, lv), []))

    out = [f"Streams at scale: {args.rounds} round(s), {args.duration:g} s per level and target; fake model "
           f"{args.ttft_ms:g} ms to first token, {args.chunks} chunks {args.chunk_ms:g} ms apart (a stream lasts "
           f"~{(args.ttft_ms + args.chunks * args.chunk_ms) / 1000:.2f} s); closed-loop clients with starts spread "
           f"over one stream's length. Medians over rounds; 'added' = target − direct in the same round.", "",
           "| target | open streams (peak) | streams measured | TTFT p50 / p99 ms | TTFT added p50 / p99 ms "
           "| gap p50 / p99 ms | jitter added p50 / p99 ms | CPU ms per stream-s | CPU ms per stream "
           "| RSS MB (0 open → this level) | incomplete / starved (worst gap ms) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for lv in levels:
        for t in targets:
            if (t, lv) not in cells:
                continue
            added = (m(t, lv, "ttft_p50") - m("direct", lv, "ttft_p50"), m(t, lv, "ttft_p99") - m("direct", lv, "ttft_p99"))
            jit = (m(t, lv, "jitter_p50") - m("direct", lv, "jitter_p50"),
                   m(t, lv, "jitter_p99") - m("direct", lv, "jitter_p99"))
            worst = max(c["worst_gap_ms"] for c in cells[(t, lv)])
            out.append(
                f"| {t} | {lv} ({m(t, lv, 'peak_open'):.0f}) | {tot(t, lv, 'streams')} | {m(t, lv, 'ttft_p50'):.1f} / "
                f"{m(t, lv, 'ttft_p99'):.1f} | {added[0]:+.1f} / {added[1]:+.1f} | {m(t, lv, 'gap_p50'):.1f} / "
                f"{m(t, lv, 'gap_p99'):.1f} | {jit[0]:+.1f} / {jit[1]:+.1f} | {m(t, lv, 'cpu_ms_per_stream_s'):.2f} | "
                f"{m(t, lv, 'cpu_ms_per_stream'):.2f} | {rss0[t]:.0f} → {m(t, lv, 'rss_peak_mb'):.0f} | "
                f"{tot(t, lv, 'incomplete')} / {tot(t, lv, 'starved')} ({worst:.0f}) |")
    top = levels[-1]
    out += ["", "| check | measured | target | result |", "|---|---|---|---|"]
    for t in (t for t in targets if t != "direct"):
        added = m(t, top, "ttft_p50") - m("direct", top, "ttft_p50")
        rss = m(t, top, "rss_peak_mb")
        per = (rss - rss0[t]) / top
        bad = tot(t, top, "incomplete") + tot(t, top, "starved")
        out.append(f"| {t}: TTFT added p50 at {top} streams | {added:+.1f} ms | ≤ 5 ms | "
                   f"{'PASS' if added <= 5 else 'MISS'} |")
        out.append(f"| {t}: RSS at {top} streams (MB per open stream) | {rss:.0f} MB ({per * 1000:.0f} kB) | ≤ 150 MB | "
                   f"{'PASS' if rss <= 150 else 'MISS'} |")
        out.append(f"| {t}: streams starved or incomplete at any level | "
                   f"{sum(tot(t, lv, 'incomplete') + tot(t, lv, 'starved') for lv in levels)} (at {top}: {bad}) | 0 | "
                   f"{'PASS' if not any(tot(t, lv, 'incomplete') + tot(t, lv, 'starved') for lv in levels) else 'MISS'} |")
    if "bare-aiohttp" in targets:
        for t in (t for t in targets if t.startswith("gateway")):
            g, b = m(t, top, "cpu_ms_per_stream_s"), m("bare-aiohttp", top, "cpu_ms_per_stream_s")
            out.append(f"| {t} vs bare-aiohttp: CPU per stream-second at {top} | {g:.2f} vs {b:.2f} ms (×{g / b:.2f}) "
                       f"| (info) | – |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="100,500", help="open streams per level, ascending")
    ap.add_argument("--targets", default="direct,bare-aiohttp,gateway")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=4.0, help="seconds each level runs per target")
    ap.add_argument("--ttft-ms", type=float, default=100.0)
    ap.add_argument("--chunk-ms", type=float, default=50.0)
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--starve-ms", type=float, default=250.0, help="a gap longer than this counts as starved")
    ap.add_argument("--gateway-b", metavar="CMD", action="append", default=[],
                    help="A/B: also measure the gateway started as `CMD serve ...` as gateway-b, ...")
    ap.add_argument("--json", help="write the per-round summaries here")
    ap.add_argument("--quick", action="store_true", help="1 round, 3 s per level")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.duration = 1, 3.0
    levels = sorted(int(x) for x in args.levels.split(","))
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    stream_s = (args.ttft_ms + args.chunks * args.chunk_ms) / 1000
    # 500 streams through a relay hold ~1000 sockets in it and 500 here; children inherit the limit
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))

    tmp = Path(tempfile.mkdtemp(prefix="searchhub-streams-bench-"))
    try:
        fake = harness.start_fake(tmp, chunks=args.chunks, ttfb_ms=args.ttft_ms, chunk_ms=args.chunk_ms)
        upstream = f"http://127.0.0.1:{fake.port}"
        procs: dict[str, harness.Proc] = {}
        for t in targets:
            if t == "direct":
                procs[t] = fake
            elif t.startswith("bare-"):
                procs[t] = harness.start_bare(tmp, t.removeprefix("bare-"), upstream)
            elif t == "gateway":
                procs[t] = harness.start_gateway(tmp, harness.gateway_config(upstream))
            else:
                raise SystemExit(f"unknown target {t}")
        for i, cmd in enumerate(args.gateway_b):
            name = f"gateway-{'bcdefgh'[i]}"
            targets.append(name)
            procs[name] = harness.start_gateway(tmp, harness.gateway_config(upstream), name, shlex.split(cmd))
        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        harness.log(f"targets {targets}, logs in {tmp}")
        # warm every target (pools, lazy imports) with a few short streams before the idle RSS reading
        for t in targets:
            asyncio.run(run_level(procs[t], 4, 0.5, 0.1, args.chunks))
        rss0 = {t: procs[t].rss_mb()[0] for t in targets}
        cells: dict = {}
        started = time.time()
        for rnd in range(args.rounds):
            for lv in levels:
                for t in targets:
                    res = asyncio.run(run_level(procs[t], lv, args.duration, stream_s, args.chunks))
                    s = summarize(res, args.chunks, args.ttft_ms, args.chunk_ms, args.starve_ms)
                    cells.setdefault((t, lv), []).append(s)
                    harness.log(f"round {rnd + 1} level {lv:4d} {t:14s} streams {s['streams']:5d} ttft p50 "
                                f"{s['ttft_p50']:.1f} p99 {s['ttft_p99']:.1f} ms gap p99 {s['gap_p99']:.1f} ms "
                                f"rss {s['rss_peak_mb']:.0f} MB cpu/stream-s {s['cpu_ms_per_stream_s']:.2f} ms "
                                f"incomplete {s['incomplete']} starved {s['starved']}")
        harness.log(f"measured in {time.time() - started:.0f} s")
        print(report(cells, rss0, targets, levels, args))
        if args.json:
            Path(args.json).write_text(json.dumps({"rss0": rss0, "cells": [
                {"target": t, "level": lv, "round": i, **c}
                for (t, lv), cs in cells.items() for i, c in enumerate(cs)]}, indent=1))
    finally:
        harness.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
