"""A/B measurement prototype, NOT production code: runs `searchhub` with candidate fixes monkeypatched in,
so their effect can be measured against the unpatched gateway in one interleaved run:

  .venv/bin/python bench/run.py --gateway-b ".venv/bin/python bench/ab_prototype.py"
  .venv/bin/python bench/run.py --only stream \
      --gateway-b "env PATCH_BATCH=1 .venv/bin/python bench/ab_prototype.py"
  .venv/bin/python bench/search_round.py --gateway-b ".venv/bin/python bench/ab_prototype.py"

Switches (environment):
  PATCH_AIOHTTP=1 (default)  model calls (openai_compat post_json/open_sse/sse_data) on one shared
                             aiohttp.ClientSession directly instead of httpx over httpx-aiohttp, with a
                             ClientTimeout built once per provider (no per-read sock_read timer).
                             Error mapping is simplified: do not use it for failover tests.
  PATCH_GC=1 (default)       gc.collect(); gc.freeze() 3 s after start.
  PATCH_BATCH=1              SSE events already produced are joined into one ASGI send
                             (routes.chat.encode_stream wrapped by a queue drained without waiting).
It patches module attributes by name, so it follows the gateway's code only as long as those names exist.
"""

import asyncio
import gc
import os
import sys
import threading
import time
from pathlib import Path

import aiohttp
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hub.backends.http as H  # noqa: E402
import hub.backends.openai_compat as OC  # noqa: E402
import routes.chat as RC  # noqa: E402
from hub.cli import main  # noqa: E402

_session: aiohttp.ClientSession | None = None
_timeouts: dict = {}


def session() -> aiohttp.ClientSession:
    global _session
    if _session is None:
        _session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000),
                                         timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False)
    return _session


def _timeout(provider, total=None) -> aiohttp.ClientTimeout:
    key = (provider.connect_timeout_s, total)
    t = _timeouts.get(key)
    if t is None:
        t = _timeouts[key] = aiohttp.ClientTimeout(total=total, sock_connect=provider.connect_timeout_s)
    return t


def _error(e: Exception) -> H.UpstreamError:
    if isinstance(e, aiohttp.ClientConnectorError):
        return H.UpstreamError("cannot connect to upstream")
    return H.UpstreamError(f"upstream connection failed ({type(e).__name__})")


async def post_json(client, provider, url, body, headers, *, retries=0, timeout=None):
    try:
        async with session().post(url, data=H._json_encode(body), headers=headers,
                                  timeout=_timeout(provider, timeout or provider.timeout_s)) as r:
            content = await r.read()
            status = r.status
    except (aiohttp.ClientError, TimeoutError) as e:
        raise _error(e) from None
    if status != 200:
        raise H.UpstreamError(f"upstream answered HTTP {status}", status=status,
                              retryable=status in (408, 429) or status >= 500, body=content[:65536])
    try:
        return H._json_decode(content)
    except msgspec.DecodeError:
        raise H.UpstreamError("upstream sent invalid JSON", status=502) from None


async def open_sse(client, provider, url, body, headers, *, retries=0):
    try:
        r = await session().post(url, data=H._json_encode(body), headers=headers, timeout=_timeout(provider))
    except (aiohttp.ClientError, TimeoutError) as e:
        raise _error(e) from None
    if r.status != 200:
        content = await r.read()
        r.release()
        raise H.UpstreamError(f"upstream answered HTTP {r.status}", status=r.status,
                              retryable=r.status >= 500, body=content)
    return r


async def sse_data(resp):
    buf = b""
    try:
        async for chunk in resp.content.iter_any():
            buf += chunk
            if b"\n" not in chunk:
                continue
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"data:"):
                    yield line[5:].strip()
        if buf.startswith(b"data:"):
            yield buf[5:].strip()
    except aiohttp.ClientError:
        raise H.UpstreamError("upstream connection failed") from None
    finally:
        resp.release()


_orig_encode_stream = RC.encode_stream
_DONE = object()


async def batched_encode_stream(items, include_usage):
    """Events the relay has already produced go out in one send instead of one send each."""
    q: asyncio.Queue = asyncio.Queue(256)

    async def pump() -> None:
        try:
            async for b in _orig_encode_stream(items, include_usage):
                await q.put(b)
        finally:
            await q.put(_DONE)

    task = asyncio.ensure_future(pump())
    try:
        while True:
            b = await q.get()
            if b is _DONE:
                return
            parts = [b]
            done = False
            while not q.empty():
                nb = q.get_nowait()
                if nb is _DONE:
                    done = True
                    break
                parts.append(nb)
            yield b"".join(parts) if len(parts) > 1 else b
            if done:
                return
    finally:
        if not task.done():
            task.cancel()


def _freeze_later() -> None:
    time.sleep(3)
    gc.collect()
    gc.freeze()


if os.environ.get("PATCH_AIOHTTP", "1") == "1":
    for mod in (OC, H):
        mod.post_json, mod.open_sse, mod.sse_data = post_json, open_sse, sse_data
if os.environ.get("PATCH_GC", "1") == "1":
    threading.Thread(target=_freeze_later, daemon=True).start()
if os.environ.get("PATCH_BATCH", "0") == "1":
    RC.encode_stream = batched_encode_stream

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
