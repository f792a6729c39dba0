"""The relay benchmark: the gateway against the bare pass-through floors, in one interleaved run.

Starts the fake backend (bench/fake_backend.py), the three bare pass-throughs
(bench/bare_passthrough.py: httpx, aiohttp, httpx over httpx-aiohttp) and the real gateway
(`searchhub serve` with a generated engines.json whose default route is the fake backend and whose
web search is off), then for non-streaming and streaming (20 chunks) chat completions at each
concurrency measures with wrk: req/s, p50/p99 latency (for streams: to the end of the stream), CPU ms
per request of the server process (/proc/<pid>/stat utime+stime delta / requests) and RSS; and for
streams, with a small asyncio raw-socket prober at the same concurrency, the time to the first
`data:` line (TTFB) on paced streams (default 2 ms between chunks, so a buffering relay would show a
TTFB close to the whole stream's time).

Targets are interleaved inside each round (direct, bare-httpx, bare-aiohttp, bare-httpx-aiohttp,
gateway, A/B gateway builds, litellm: the LiteLLM proxy, pinned, installed on first use into
bench/.litellm-venv), rounds are repeated (default 3) and every figure is the median over rounds.

  .venv/bin/python bench/run.py                 # full run (~4-5 min)
  .venv/bin/python bench/run.py --quick         # 1 round, 1 s cells (~1 min)
  .venv/bin/python bench/run.py --only stream
  .venv/bin/python bench/run.py --state redis [--redis-url redis://127.0.0.1:6379/0]   # or --state both
  .venv/bin/python bench/run.py --gateway-b "/other/checkout/.venv/bin/searchhub"      # A/B in one run
  .venv/bin/python bench/run.py --only stream --concurrency 16 --profile /tmp/prof   # py-spy each server

Needs wrk (installed with apt-get when missing and running as root).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
SEARCHHUB = str(Path(PY).parent / "searchhub")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024

ALL_TARGETS = ["direct", "bare-httpx", "bare-aiohttp", "bare-httpx-aiohttp", "gateway", "litellm"]
BARES = ["bare-httpx", "bare-aiohttp", "bare-httpx-aiohttp"]
FLOOR = "bare-aiohttp"  # the Python floor the gateway is held to
# The peer, pinned so runs compare; installed by the bench into its own venv (gitignored), never
# into the gateway's. LITELLM_VERSION overrides it for a one-off comparison.
LITELLM_VERSION = os.environ.get("LITELLM_VERSION", "1.81.13")
LITELLM_VENV = BENCH / ".litellm-venv"
EXPECTED_TEXT = "The quick brown fox jumps over the lazy dog."


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- processes


class Proc:
    def __init__(self, name: str, popen: subprocess.Popen, port: int, log_path: Path | None) -> None:
        self.name, self.popen, self.port, self.log_path = name, popen, port, log_path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu_s(self) -> float:
        """utime + stime of the process (its threads included), in seconds."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_mb(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MB."""
        rss = hwm = 0.0
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
        return rss, hwm

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


STARTED: list[Proc] = []


def stop_all() -> None:
    while STARTED:
        with contextlib.suppress(Exception):
            STARTED.pop().stop()


PIN: list[bool] = [False]  # --pin: load makers on CPU 0, each server under test on CPU 1
_LOAD_MAKERS = ("fake-backend", "redis", "wrk")


def pinned(name: str):
    """With --pin, a preexec_fn that puts `name`'s process on its CPU: the load makers (the fake, redis,
    wrk) share CPU 0 and every server under test runs alone on CPU 1, so targets measured one after
    the other get the same CPU and the scheduler cannot move them. None without --pin."""
    if not PIN[0] or (os.cpu_count() or 1) < 2:
        return None
    cpu = 0 if name in _LOAD_MAKERS else 1
    return lambda: os.sched_setaffinity(0, {cpu})


def spawn(name: str, cmd: list[str], port: int, tmp: Path, env: dict | None = None) -> Proc:
    log_path = tmp / f"{name}.log"
    out = open(log_path, "wb")
    popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=pinned(name),
                             env={**os.environ, **(env or {})}, start_new_session=True)
    p = Proc(name, popen, port, log_path)
    STARTED.append(p)
    return p


def start_fake(tmp: Path, *, chunks: int, ttfb_ms: float, chunk_ms: float, search_ms: float = 0.0,
               tool_calls: int = 1) -> Proc:
    port = free_port()
    p = spawn("fake-backend", [PY, str(BENCH / "fake_backend.py"), "--port", str(port), "--chunks", str(chunks),
                               "--ttfb-ms", str(ttfb_ms), "--chunk-ms", str(chunk_ms),
                               "--search-ms", str(search_ms), "--tool-calls", str(tool_calls)], port, tmp)
    wait_http(p, f"http://127.0.0.1:{port}/health")
    return p


def start_bare(tmp: Path, kind: str, upstream: str) -> Proc:
    port = free_port()
    p = spawn(f"bare-{kind}", [PY, str(BENCH / "bare_passthrough.py"), "--client", kind, "--upstream", upstream,
                                "--port", str(port)], port, tmp)
    wait_http(p, f"http://127.0.0.1:{port}/v1/chat/completions", post=True)
    return p


def ensure_litellm() -> Path:
    """bench/.litellm-venv with litellm[proxy]==LITELLM_VERSION, created on first use."""
    py = LITELLM_VENV / "bin" / "python"
    probe = "import importlib.metadata as m; print(m.version('litellm'))"
    if py.exists():
        have = subprocess.run([str(py), "-c", probe], capture_output=True, text=True).stdout.strip()
        if have == LITELLM_VERSION:
            return LITELLM_VENV / "bin" / "litellm"
    log(f"installing litellm[proxy]=={LITELLM_VERSION} into {LITELLM_VENV} (first run only, a few minutes)")
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", f"litellm[proxy]=={LITELLM_VERSION}"], check=True)
    return LITELLM_VENV / "bin" / "litellm"


def start_litellm(tmp: Path, upstream: str) -> Proc:
    """The LiteLLM proxy (1 worker, its defaults) with one model `m` on the fake backend."""
    exe = ensure_litellm()
    cfg = {"model_list": [{"model_name": "m", "litellm_params": {
        "model": "openai/bench-model", "api_base": upstream.rstrip("/") + "/v1", "api_key": "sk-bench"}}],
        "litellm_settings": {"telemetry": False}}
    path = tmp / "litellm.yaml"
    path.write_text(json.dumps(cfg, indent=2))  # JSON is YAML
    port = free_port()
    p = spawn("litellm", [str(exe), "--config", str(path), "--host", "127.0.0.1", "--port", str(port),
                          "--num_workers", "1"], port, tmp,
              env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"})
    wait_http(p, f"http://127.0.0.1:{port}/v1/chat/completions", post=True, timeout=120)
    return p


def gateway_config(upstream: str, *, state: str = "memory", redis_url: str | None = None,
                   search_url: str | None = None) -> dict:
    cfg: dict = {
        "providers": {"fake": {"type": "vllm", "baseURL": upstream.rstrip("/") + "/v1"}},
        "virtualrouter": {"routing": {"default": [{"id": "fake", "priority": 100, "targets": ["fake.m"]}]}},
        "webSearch": {"enabled": False},
    }
    if search_url:
        cfg["webSearch"] = {
            "injectPolicy": "always",
            "cacheTtlMs": 0,
            "engines": [{"id": "searxng", "type": "searxng", "baseURL": search_url, "default": True}],
        }
    if state == "redis":
        cfg["state"] = {"backend": "redis", "url": redis_url}
    return cfg


def start_gateway(tmp: Path, cfg: dict, name: str = "gateway", cmd: list[str] | None = None) -> Proc:
    """`searchhub serve` (or `cmd` + `serve ...`, e.g. another checkout's build) on a generated config."""
    path = tmp / f"{name}.engines.json"
    path.write_text(json.dumps(cfg, indent=2))
    port = free_port()
    p = spawn(name, [*(cmd or [SEARCHHUB]), "serve", "--config", str(path), "--port", str(port)], port, tmp)
    wait_http(p, f"http://127.0.0.1:{port}/health", timeout=60)
    return p


def start_redis(tmp: Path) -> tuple[Proc, str]:
    exe = shutil.which("redis-server")
    if not exe:
        raise SystemExit("--state redis without --redis-url needs redis-server (apt-get install -y redis-server)")
    port = free_port()
    p = spawn("redis", [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
              port, tmp)
    deadline = time.time() + 10
    while time.time() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return p, f"redis://127.0.0.1:{port}/0"
        time.sleep(0.05)
    raise SystemExit("redis-server did not start")


def wait_http(p: Proc, url: str, *, post: bool = False, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode() if post else None
    while time.time() < deadline:
        if p.popen.poll() is not None:
            raise SystemExit(f"{p.name} exited with {p.popen.returncode}; log:\n{p.log_path.read_text()[-3000:]}")
        try:
            req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{p.name} not ready at {url}; log:\n{p.log_path.read_text()[-3000:]}")


def start_profiler(p: Proc, out: Path, gil: bool = False) -> subprocess.Popen:
    """py-spy (bench-only: `.venv/bin/pip install py-spy`) sampling p's stacks at 250 Hz; with gil,
    only while it holds the GIL (closer to on-CPU time: without it a thread preempted inside a
    system call counts as busy there)."""
    pyspy = shutil.which("py-spy") or str(Path(PY).parent / "py-spy")
    if not Path(pyspy).exists():
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    out.parent.mkdir(parents=True, exist_ok=True)
    prof = subprocess.Popen([pyspy, "record", "--pid", str(p.pid), "--rate", "250", "--format", "raw",
                             "--output", str(out), "--nonblocking", *(["--gil"] if gil else [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    return prof


def stop_profilers(profilers: list[subprocess.Popen]) -> None:
    for prof in profilers:
        if prof.poll() is None:
            prof.send_signal(signal.SIGINT)
    for prof in profilers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            prof.wait(30)


# ----------------------------------------------------------------------------- checks, wrk, prober


def chat_body(stream: bool, extra: dict | None = None) -> dict:
    b: dict = {"model": "m", "messages": [{"role": "user", "content": "Say something short."}],
               "max_tokens": 64}
    if stream:
        b["stream"] = True
    if extra:
        b.update(extra)
    return b


def validate(name: str, url: str, chunks: int) -> None:
    """One request of each kind before measuring: a target that answers wrongly is not measured."""
    req = urllib.request.Request(url, data=json.dumps(chat_body(False)).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        data = json.loads(r.read())
    content = data["choices"][0]["message"]["content"]
    if EXPECTED_TEXT not in content:
        raise SystemExit(f"{name}: unexpected non-stream answer {content!r}")
    req = urllib.request.Request(url, data=json.dumps(chat_body(True)).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        raw = r.read().decode()
    events = [ln[5:].strip() for ln in raw.splitlines() if ln.startswith("data:")]
    payload = [json.loads(e) for e in events if e != "[DONE]"]
    content_chunks = [c for c in payload if c.get("choices") and c["choices"][0]["delta"].get("content")]
    if len(content_chunks) != chunks or events[-1] != "[DONE]":
        raise SystemExit(f"{name}: stream relayed {len(content_chunks)} content chunks (want {chunks}), "
                         f"last event {events[-1] if events else None!r}")


def ensure_wrk() -> str:
    exe = shutil.which("wrk")
    if exe:
        return exe
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log("wrk not found: installing it with apt-get")
        cmd = ["apt-get", "install", "-y", "-qq", "wrk"]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL)
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        exe = shutil.which("wrk")
    if not exe:
        raise SystemExit("wrk is required: apt-get install -y wrk")
    return exe


LUA = """wrk.method = "POST"
wrk.body = [==[%s]==]
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKJSON {\\"requests\\":%%d,\\"duration_us\\":%%d,\\"errors\\":%%d,\\"non2xx\\":%%d,\\"p50_us\\":%%d,\\"p90_us\\":%%d,\\"p99_us\\":%%d,\\"mean_us\\":%%f}\\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean))
end
"""


def lua_script(tmp: Path, name: str, body: dict) -> Path:
    path = tmp / f"{name}.lua"
    path.write_text(LUA % json.dumps(body, separators=(",", ":")))
    return path


def run_wrk(wrk: str, url: str, script: Path, conns: int, duration: int) -> dict:
    cmd = [wrk, "-t1", f"-c{conns}", f"-d{duration}s", "--timeout", "10s", "-s", str(script), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60, preexec_fn=pinned("wrk"))
    for line in out.stdout.splitlines():
        if line.startswith("WRKJSON "):
            r = json.loads(line[8:])
            secs = r["duration_us"] / 1e6
            return {"requests": r["requests"], "rps": r["requests"] / secs if secs else 0.0,
                    "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000, "mean_ms": r["mean_us"] / 1000,
                    "errors": r["errors"] + r["non2xx"]}
    raise RuntimeError(f"wrk failed: {out.stdout}\n{out.stderr}")


async def _probe(port: int, path: str, body: bytes, conns: int, duration: float) -> dict:
    """Closed-loop streams on `conns` keep-alive connections; per stream the time from sending the
    request to the first `data:` line (TTFB) and to the end of the chunked body."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    request = head + body
    ttfb: list[float] = []
    total: list[float] = []
    errors = 0
    pc = time.perf_counter

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        nonlocal errors
        t0 = pc()
        writer.write(request)
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = await reader.read(65536)
            if not data:
                return False
            buf += data
        header, _, rest = buf.partition(b"\r\n\r\n")
        lower = header.lower()
        status = int(header[9:12])
        chunked = b"transfer-encoding: chunked" in lower
        clen = None
        if not chunked:
            for line in lower.split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    clen = int(line.split(b":", 1)[1])
        first = None
        scan = 0
        while True:
            if first is None:
                i = rest.find(b"data:", max(0, scan - 5))
                scan = len(rest)
                if i >= 0:
                    first = pc()
            if chunked and rest.endswith(b"\r\n0\r\n\r\n"):
                break
            if clen is not None and len(rest) >= clen:
                break
            data = await reader.read(65536)
            if not data:
                return False
            rest += data
        t1 = pc()
        if status != 200 or first is None:
            errors += 1
        else:
            ttfb.append(first - t0)
            total.append(t1 - t0)
        return True

    async def worker(deadline: float) -> None:
        nonlocal errors
        conn = None
        while pc() < deadline:
            if conn is None:
                conn = await asyncio.open_connection("127.0.0.1", port)
            try:
                ok = await asyncio.wait_for(one(*conn), 30)
            except (TimeoutError, OSError):
                ok = False
            if not ok:
                errors += 1
                conn[1].close()
                conn = None
        if conn is not None:
            conn[1].close()

    deadline = pc() + duration
    await asyncio.gather(*(worker(deadline) for _ in range(conns)))

    def pct(xs: list[float], q: float) -> float:
        if not xs:
            return float("nan")
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    return {"ttfb_p50_ms": pct(ttfb, 0.5), "ttfb_p99_ms": pct(ttfb, 0.99), "stream_p50_ms": pct(total, 0.5),
            "streams": len(ttfb), "probe_errors": errors}


def ttfb_probe(port: int, path: str, body: dict, conns: int, duration: float) -> dict:
    raw = json.dumps(body, separators=(",", ":")).encode()
    return asyncio.run(_probe(port, path, raw, conns, duration))


# ----------------------------------------------------------------------------- report


def div(a: float, b: float) -> float:
    """a / b, or NaN when b is 0 or NaN (a target that completed nothing in a cell)."""
    return a / b if b and b == b else float("nan")


def med(cells: list[dict], key: str) -> float:
    xs = [c[key] for c in cells if key in c and c[key] == c[key]]
    return statistics.median(xs) if xs else float("nan")


# c=16 req/s against the floor (bench/README.md, "Targets"): issue 25 raised non-stream to 0.9x
RPS_TARGET = {"nonstream": 0.9, "stream": 0.8}


def paired(results: dict, g: str, floor: str, mode: str, c: int) -> str:
    """The ratio round by round: a round runs the targets' cells one after the other, seconds apart,
    so a host that slows down between rounds moves both sides of each ratio; '; rounds ×a–×b,
    median ×m', or '' for one round."""
    ours, theirs = results.get((g, mode, c), []), results.get((floor, mode, c), [])
    ratios = sorted(div(a.get("rps", float("nan")), b.get("rps", float("nan"))) for a, b in zip(ours, theirs, strict=False))
    ratios = [r for r in ratios if r == r]
    if len(ratios) < 2:
        return ""
    return f"; rounds ×{ratios[0]:.2f}–×{ratios[-1]:.2f}, median ×{statistics.median(ratios):.2f}"


def fmt(x: float, nd: int = 2) -> str:
    if x != x:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{nd}f}"


def report(results: dict, rss: dict, targets: list[str], modes: list[str], concs: list[int], meta: dict) -> str:
    """results[(target, mode, c)] = list of per-round cells."""
    out: list[str] = []

    def m(t: str, mode: str, c: int, key: str) -> float:
        return med(results.get((t, mode, c), []), key)

    out.append(f"Run: {meta['when']}, {meta['rounds']} round(s), {meta['duration']} s per wrk cell, "
               f"{meta['ttfb_duration']} s per TTFB cell, state={meta['state']}, fake backend: {meta['chunks']} "
               f"chunks, ttfb {meta['ttfb_ms']} ms, {meta['chunk_ms']} ms between chunks; TTFB probe streams paced "
               f"at {meta['probe_chunk_ms']} ms between chunks. Medians over rounds. CPU = server process only "
               f"(for `direct`: the fake backend).")
    out.append("")
    for mode in modes:
        title = "Non-streaming" if mode == "nonstream" else f"Streaming ({meta['chunks']} chunks; latency = whole stream)"
        out.append(f"### {title}")
        out.append("")
        cols = ["target"] + [f"req/s c={c}" for c in concs] + [f"p50 ms c={c}" for c in concs] + \
            [f"p99 ms c={c}" for c in concs] + [f"CPU ms/req c={c}" for c in concs]
        if mode == "stream":
            cols += [f"TTFB p50 ms c={c}" for c in concs] + [f"TTFB p99 ms c={c}" for c in concs]
        cols += ["RSS MB (end/peak)"]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "---|" * len(cols))
        for t in targets:
            row = [t]
            row += [fmt(m(t, mode, c, "rps"), 0) for c in concs]
            row += [fmt(m(t, mode, c, "p50_ms")) for c in concs]
            row += [fmt(m(t, mode, c, "p99_ms")) for c in concs]
            row += [fmt(m(t, mode, c, "cpu_ms"), 3) for c in concs]
            if mode == "stream":
                row += [fmt(m(t, mode, c, "ttfb_p50_ms")) for c in concs]
                row += [fmt(m(t, mode, c, "ttfb_p99_ms")) for c in concs]
            r = rss.get(t)
            row.append(f"{r[0]:.0f} / {r[1]:.0f}" if r else "–")
            errs = sum(cell.get("errors", 0) + cell.get("probe_errors", 0)
                       for c in concs for cell in results.get((t, mode, c), []))
            if errs:
                row[0] += f" ({errs} errors!)"
            out.append("| " + " | ".join(row) + " |")
        out.append("")

    if "gateway" not in targets:
        return "\n".join(out)
    out.append("### Gateway vs targets")
    out.append("")
    out.append("| check | measured | target | result |")
    out.append("|---|---|---|---|")
    bares = [b for b in BARES if b in targets]
    floor = FLOOR if FLOOR in targets else None

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("PASS" if ok else "MISS")

    c_lo = concs[0]
    c_mid = 16 if 16 in concs else concs[len(concs) // 2]
    for g in (t for t in targets if t.startswith("gateway")):
        for mode in modes:
            label = "non-stream" if mode == "nonstream" else "stream"
            if "direct" in targets and c_lo == 1 and floor:
                added = m(g, mode, c_lo, "p50_ms") - m("direct", mode, c_lo, "p50_ms")
                fl = m(floor, mode, c_lo, "p50_ms") - m("direct", mode, c_lo, "p50_ms")
                others = ", ".join(f"{b} +{m(b, mode, c_lo, 'p50_ms') - m('direct', mode, c_lo, 'p50_ms'):.2f}"
                                   for b in bares if b != floor)
                out.append(f"| {g}: added p50 over direct, c={c_lo}, {label} | +{added:.2f} vs {floor} +{fl:.2f} ms "
                           f"(×{div(added, fl):.2f}{'; ' + others if others else ''}) | ≤ 1.2× {floor} | "
                           f"{verdict(added <= 1.2 * fl if added == added else None)} |")
            if floor:
                want = RPS_TARGET[mode]
                for c in sorted({c_mid, concs[-1]}):
                    ratio = div(m(g, mode, c, "rps"), m(floor, mode, c, "rps"))
                    tgt = f"≥ {want}×" if c == c_mid else "(info)"
                    out.append(f"| {g}: req/s vs {floor}, c={c}, {label} | ×{ratio:.2f} "
                               f"({fmt(m(g, mode, c, 'rps'), 0)} vs {fmt(m(floor, mode, c, 'rps'), 0)}"
                               f"{paired(results, g, floor, mode, c)}) | {tgt} | "
                               f"{verdict(ratio >= want) if c == c_mid else '–'} |")
                for c in concs:
                    a, b = m(g, mode, c, "cpu_ms"), m(floor, mode, c, "cpu_ms")
                    out.append(f"| {g}: CPU ms/req vs {floor}, c={c}, {label} | {a:.3f} vs {b:.3f} (×{div(a, b):.2f}) "
                               f"| ≤ 1.1× | {verdict(a <= 1.1 * b)} |")
            if "litellm" in targets:
                for c in sorted({c_mid, concs[-1]}):
                    ratio = div(m(g, mode, c, "rps"), m("litellm", mode, c, "rps"))
                    cpu = div(m("litellm", mode, c, "cpu_ms"), m(g, mode, c, "cpu_ms"))
                    out.append(f"| {g}: req/s vs litellm, c={c}, {label} | ×{ratio:.1f} "
                               f"({fmt(m(g, mode, c, 'rps'), 0)} vs {fmt(m('litellm', mode, c, 'rps'), 0)}; litellm "
                               f"CPU/req ×{cpu:.1f}) | {'≥ 30×' if c == c_mid else '(info)'} | "
                               f"{verdict(ratio >= 30) if c == c_mid else '–'} |")
    if "stream" in modes and bares:
        for c in concs:
            best = min(bares, key=lambda b: m(b, "stream", c, "ttfb_p50_ms"))
            g = m("gateway", "stream", c, "ttfb_p50_ms")
            b = m(best, "stream", c, "ttfb_p50_ms")
            ok = g <= 1.25 * b + 1.0
            out.append(f"| TTFB p50, c={c}: gateway vs best bare ({best}) | {g:.2f} vs {b:.2f} ms | "
                       f"≈ bare (≤ 1.25× + 1 ms) | {verdict(ok)} |")
        c = concs[0]
        g = m("gateway", "stream", c, "ttfb_p50_ms")
        whole = m("gateway", "stream", c, "stream_p50_ms")
        if meta["probe_chunk_ms"] > 0:
            out.append(f"| not buffered: gateway TTFB vs whole paced stream, c={c} | {g:.2f} vs {whole:.2f} ms | "
                       f"TTFB ≪ stream | {verdict(g < 0.5 * whole)} |")
    if "gateway" in rss:
        out.append(f"| gateway RSS (end / peak) | {rss['gateway'][0]:.0f} / {rss['gateway'][1]:.0f} MB | < 100 MB | "
                   f"{verdict(rss['gateway'][1] < 100)} |")
    if "gateway-redis" in targets:
        for mode in modes:
            label = "non-stream" if mode == "nonstream" else "stream"
            for c in concs:
                g, o = m("gateway", mode, c, "cpu_ms"), m("gateway-redis", mode, c, "cpu_ms")
                gr, orps = m("gateway", mode, c, "rps"), m("gateway-redis", mode, c, "rps")
                out.append(f"| gateway-redis vs gateway, c={c}, {label}: CPU ms/req, req/s | {o:.3f} vs {g:.3f} "
                           f"(×{div(o, g):.2f}); {fmt(orps, 0)} vs {fmt(gr, 0)} (×{div(orps, gr):.2f}) | (info) | – |")
    out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 round, 1 s cells")
    ap.add_argument("--pin", action="store_true",
                    help="load makers (fake, redis, wrk) on CPU 0, each server under test alone on CPU 1")
    ap.add_argument("--only", choices=["nonstream", "stream"])
    ap.add_argument("--targets", default=",".join(ALL_TARGETS), help="comma list of " + ", ".join(ALL_TARGETS))
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=2, help="seconds per wrk cell (whole seconds: wrk's unit)")
    ap.add_argument("--litellm-duration", type=int, default=5, help="seconds per wrk cell for the litellm target")
    ap.add_argument("--ttfb-duration", type=float, default=1.0, help="seconds per TTFB probe cell")
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--ttfb-ms", type=float, default=0.0, help="fake model delay before the first byte")
    ap.add_argument("--chunk-ms", type=float, default=0.0, help="fake model delay between chunks")
    ap.add_argument("--probe-chunk-ms", type=float, default=2.0,
                    help="chunk pacing asked for by the TTFB prober's streams (0 = unpaced)")
    ap.add_argument("--state", choices=["memory", "redis", "both"], default="memory",
                    help="the gateway's state store; both = a second gateway target, gateway-redis")
    ap.add_argument("--redis-url", help="with --state redis/both; default: start a local redis-server")
    ap.add_argument("--gateway-b", metavar="CMD", action="append", default=[],
                    help="A/B: also measure the gateway started as `CMD serve --config .. --port ..` (e.g. another "
                         "checkout's .venv/bin/searchhub) as target gateway-b (repeat: gateway-c, ...), "
                         "interleaved with the others")
    ap.add_argument("--json", help="write the raw per-round cells here")
    ap.add_argument("--profile", metavar="DIR",
                    help="record every server under test with py-spy (collapsed stacks) into DIR/<target>.txt; "
                         "summarize with bench/profile_summary.py. Profiles perturb timings: measure without it")
    ap.add_argument("--profile-gil", action="store_true", help="with --profile: sample only while the GIL is held")
    args = ap.parse_args(argv)
    if args.pin and (os.cpu_count() or 1) >= 2:
        PIN[0] = True
        os.sched_setaffinity(0, {0})  # this process (its TTFB prober) is a load maker too
    if args.quick:
        args.rounds, args.duration, args.ttfb_duration = 1, 1, 0.5
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(targets) - set(ALL_TARGETS)
    if unknown:
        ap.error(f"unknown targets {sorted(unknown)}")
    modes = [args.only] if args.only else ["nonstream", "stream"]
    concs = [int(c) for c in args.concurrency.split(",")]
    wrk = ensure_wrk()

    tmp = Path(tempfile.mkdtemp(prefix="searchhub-bench-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    profilers: list[subprocess.Popen] = []
    try:
        fake = start_fake(tmp, chunks=args.chunks, ttfb_ms=args.ttfb_ms, chunk_ms=args.chunk_ms)
        upstream = f"http://127.0.0.1:{fake.port}"
        procs: dict[str, Proc] = {"direct": fake}
        for t in targets:
            if t.startswith("bare-"):
                procs[t] = start_bare(tmp, t.removeprefix("bare-"), upstream)
        if "gateway" in targets:
            redis_url = args.redis_url
            if args.state != "memory" and not redis_url:
                _, redis_url = start_redis(tmp)
            first = "redis" if args.state == "redis" else "memory"
            procs["gateway"] = start_gateway(tmp, gateway_config(upstream, state=first, redis_url=redis_url))
            if args.state == "both":
                targets.append("gateway-redis")
                procs["gateway-redis"] = start_gateway(
                    tmp, gateway_config(upstream, state="redis", redis_url=redis_url), "gateway-redis")
            for i, cmd in enumerate(args.gateway_b):
                name = f"gateway-{'bcdefgh'[i]}"
                targets.append(name)
                procs[name] = start_gateway(
                    tmp, gateway_config(upstream, state=first, redis_url=redis_url), name, shlex.split(cmd))
        if "litellm" in targets:
            procs["litellm"] = start_litellm(tmp, upstream)
            targets.remove("litellm")
            targets.append("litellm")  # last in each interleaved cell: it is the slowest
        urls = {t: f"http://127.0.0.1:{procs[t].port}/v1/chat/completions" for t in targets}
        for t in targets:
            validate(t, urls[t], args.chunks)
        log(f"all targets answer correctly; logs in {tmp}")
        if args.profile:
            profilers = [start_profiler(procs[t], Path(args.profile) / f"{t}.txt", args.profile_gil)
                         for t in targets if t != "direct"]

        scripts = {mode: lua_script(tmp, mode, chat_body(mode == "stream")) for mode in modes}
        probe_body = chat_body(True, {"bench": {"chunk_ms": args.probe_chunk_ms}} if args.probe_chunk_ms else None)
        # warm every target (connection pools, lazy imports) before the first measured round
        for t in targets:
            for mode in modes:
                run_wrk(wrk, urls[t], scripts[mode], 4, 1)
        results: dict[tuple[str, str, int], list[dict]] = {}
        peak_rss: dict[str, tuple[float, float]] = {}
        started = time.time()
        for rnd in range(args.rounds):
            for mode in modes:
                for c in concs:
                    for t in targets:
                        p = procs[t]
                        cpu0 = p.cpu_s()
                        # the slow peer gets longer cells, so that a few of its streams complete in each
                        dur = max(args.duration, args.litellm_duration) if t == "litellm" else args.duration
                        cell = run_wrk(wrk, urls[t], scripts[mode], c, dur)
                        cell["cpu_ms"] = ((p.cpu_s() - cpu0) * 1000 / cell["requests"] if cell["requests"]
                                          else float("nan"))
                        if mode == "stream":
                            cell.update(ttfb_probe(p.port, "/v1/chat/completions", probe_body, c, args.ttfb_duration))
                        cell["rss_mb"] = p.rss_mb()[0]
                        results.setdefault((t, mode, c), []).append(cell)
                        extra = (f" ttfb p50 {cell['ttfb_p50_ms']:.2f} ms" if mode == "stream" else "")
                        log(f"round {rnd + 1} {mode:9s} c={c:<3d} {t:20s} {cell['rps']:9.0f} req/s "
                            f"p50 {cell['p50_ms']:7.2f} ms cpu {cell['cpu_ms']:.3f} ms/req{extra}"
                            + (f" ERRORS {cell['errors']}" if cell["errors"] else ""))
        for t in targets:
            rss, hwm = procs[t].rss_mb()
            peak_rss[t] = (rss, hwm)
        log(f"measured in {time.time() - started:.0f} s")
        meta = {"when": time.strftime("%Y-%m-%d %H:%M"), "rounds": args.rounds, "duration": args.duration,
                "ttfb_duration": args.ttfb_duration, "state": args.state, "chunks": args.chunks,
                "ttfb_ms": args.ttfb_ms, "chunk_ms": args.chunk_ms, "probe_chunk_ms": args.probe_chunk_ms}
        if args.json:  # first: a report that fails must not lose the run
            Path(args.json).write_text(json.dumps({"meta": meta, "rss_mb": peak_rss, "cells": [
                {"target": t, "mode": mode, "c": c, "round": i, **cell}
                for (t, mode, c), cells in results.items() for i, cell in enumerate(cells)]}, indent=1))
        print(report(results, peak_rss, targets, modes, concs, meta))
    finally:
        stop_profilers(profilers)
        stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
