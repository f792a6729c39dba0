"""How bytes move upstream: one pooled httpx client per process over a fast transport, the model
calls' direct path onto its aiohttp session, and the errors every backend family shares.

`_transport_error` is the one place a transport failure (aiohttp's or httpx's) becomes ours."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator, Callable, Mapping

import aiohttp
import httpx
import msgspec

from ..config.settings import Provider
from ..core.redaction import redact_bytes
from .failures import error_message, request_kind, scrub
from .h1 import ConnectFailed, ConnectTimedOut
from .proxy import ProxyPolicy
from .transport import LeanAiohttpTransport, Streamed, UpstreamClient

_json_decode = msgspec.json.decode
_json_encode = msgspec.json.encode


class UpstreamError(Exception):
    """An upstream call that failed. `reason` is short and never contains secrets or raw bodies."""

    def __init__(
        self, reason: str, *, status: int | None = None, retryable: bool = True, body: bytes | None = None,
        retry_after: str | None = None, message: str = "", kind: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retryable = retryable
        self.body = body
        self.retry_after = retry_after
        self.message = message  # the backend's own words, scrubbed and bounded
        self.kind = kind  # "validation" | "context_overflow": about the request, whatever the status


def make_client(env: Mapping[str, str] | None = None) -> UpstreamClient:
    """The process-wide upstream client: httpx's API over aiohttp, several times faster under
    concurrency than httpx's own pool (see bench/). The environment's proxy settings
    (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY) are read here, once."""
    policy = ProxyPolicy.from_env(os.environ if env is None else env)
    return UpstreamClient(LeanAiohttpTransport(proxies=policy))


def _status_error(status: int, body: bytes, headers: httpx.Headers, provider: Provider) -> UpstreamError:
    body = redacted(body[:65536], provider)
    text, err = error_message(body)
    message = scrub(text)
    kind = request_kind(status, text, err)
    # 401/403 mean our provider credentials are wrong, not the client's: another target may work.
    # An error about the request would fail the same way anywhere.
    retryable = kind is None and (status in (401, 403, 408, 429) or status >= 500)
    return UpstreamError(
        f"upstream answered HTTP {status}" + (f": {message}" if message else ""),
        status=status,
        retryable=retryable,
        body=body,
        retry_after=headers.get("retry-after"),
        message=message,
        kind=kind,
    )


def stream_error(data: bytes, provider: Provider) -> UpstreamError:
    """An error the backend sent as a stream event; a context overflow is the client's 400."""
    text, err = error_message(redacted(data[:65536], provider))
    message = scrub(text)
    kind = request_kind(None, text, err)
    return UpstreamError(f"upstream error mid-stream: {message}", status=400 if kind else 502, retryable=False,
                         body=redacted(data[:65536], provider) if kind else None, message=message, kind=kind)


def redacted(body: bytes, provider: Provider) -> bytes:
    """An error body without the credentials we sent: some services quote a rejected key back, and a
    4xx body is relayed to the client as it is."""
    # shorter values are not keys, and would match ordinary text; so would fragments of header values
    secrets = [s for s in (provider.api_key, *provider.headers.values()) if s and len(s) >= 8]
    return redact_bytes(body, secrets, fragments=False) if secrets else body


def _transport_error(e: Exception) -> UpstreamError:
    if isinstance(e, aiohttp.ConnectionTimeoutError | aiohttp.ClientConnectorError | httpx.ConnectError
                  | httpx.ConnectTimeout | ConnectFailed | ConnectTimedOut):
        return UpstreamError("cannot connect to upstream")
    if isinstance(e, httpx.TimeoutException | TimeoutError):  # aiohttp's read timeouts are TimeoutErrors
        return UpstreamError("upstream timed out", status=504)
    return UpstreamError(f"upstream connection failed ({type(e).__name__})")


_TRANSPORT_ERRORS = (httpx.HTTPError, aiohttp.ClientError, OSError, TimeoutError)
_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, aiohttp.ClientConnectorError,
                   aiohttp.ConnectionTimeoutError, ConnectFailed, ConnectTimedOut)


def _backoff(attempt: int) -> float:
    """Seconds before connect attempt `attempt + 1`: 50 ms doubling, at most 1 s, jittered."""
    return min(0.05 * 2**attempt, 1.0) * (0.5 + random.random())


_TIMEOUTS: dict[tuple[float, float], aiohttp.ClientTimeout] = {}


def _aiohttp_timeout(provider: Provider, total: float | None) -> aiohttp.ClientTimeout:
    """httpx's semantics on aiohttp: `read` bounds each wait for bytes, `connect` the connection;
    built once per provider (a deadline-derived `total` is not cached)."""
    read = provider.timeout_s if total is None else min(total, provider.timeout_s)
    key = (read, provider.connect_timeout_s)
    t = _TIMEOUTS.get(key)
    if t is None:
        t = aiohttp.ClientTimeout(total=None, sock_connect=provider.connect_timeout_s, sock_read=read)
        if total is None and len(_TIMEOUTS) < 256:
            _TIMEOUTS[key] = t
    return t


async def _exchange_direct(client: UpstreamClient, provider: Provider, url: str, body: dict,
                           headers: dict[str, str], *, retries: int, total: float | None) -> aiohttp.ClientResponse:
    """Send with retries (the model calls' path: aiohttp or the lean client straight, no httpx
    objects); any transport failure or non-200 answer becomes an UpstreamError."""
    data = _json_encode(body)
    timeout = _aiohttp_timeout(provider, total)
    attempt = 0
    while True:  # retried only what is safe to retry: the request never reached the server
        try:
            resp = await client.request_direct(url, data, headers, timeout, provider.proxy)
            break
        except _CONNECT_ERRORS as e:
            if attempt >= retries:
                raise _transport_error(e) from None
        except _TRANSPORT_ERRORS as e:
            raise _transport_error(e) from None
        await asyncio.sleep(_backoff(attempt))
        attempt += 1
    if resp.status != 200:
        content = b""
        try:
            content = await resp.read()
        except _TRANSPORT_ERRORS:
            pass
        finally:
            resp.release()
        raise _status_error(resp.status, content, resp.headers, provider)
    return resp


def _json_object(raw: bytes) -> dict:
    try:
        data = _json_decode(raw)
    except msgspec.DecodeError:
        raise UpstreamError("upstream sent invalid JSON", status=502) from None
    if not isinstance(data, dict):
        raise UpstreamError("upstream sent a non-object JSON body", status=502)
    return data


async def post_json(
    client: UpstreamClient, provider: Provider, url: str, body: dict, headers: dict[str, str],
    *, retries: int = 0, timeout: float | None = None,
) -> dict:
    resp = await _exchange_direct(client, provider, url, body, headers, retries=retries, total=timeout)
    try:
        raw = await resp.read()
    except _TRANSPORT_ERRORS as e:
        raise _transport_error(e) from None
    finally:
        resp.release()
    return _json_object(raw)


async def open_sse(
    client: UpstreamClient, provider: Provider, url: str, body: dict, headers: dict[str, str],
    *, retries: int = 0,
) -> Streamed:
    """Send a streaming request; raise UpstreamError unless the upstream answered 200."""
    return Streamed(await _exchange_direct(client, provider, url, body, headers, retries=retries, total=None))


async def sse_batches(resp: Streamed,
                      rename: Callable[[bytes], bytes] | None = None) -> AsyncIterator[list[bytes]]:
    """The payloads of the `data:` lines that each network read completed, as they arrive (one
    list per read, so a relay can forward them in one write). `rename` rewrites each read's bytes
    before they are split (hub/backends/normalize.py `ModelName`: once per read, not per chunk; a
    line the read leaves unfinished is rewritten again with the next read, so it must change
    nothing it already changed). An error a backend sends as an `error:` line or an `event: error`
    comes as an error object, as if it were sent in a data line (`_payloads`). Closes the response
    at the end."""
    buf = b""
    error_event = False  # an `event: error` line came, its data not yet
    chunks = resp.raw.content.iter_any()
    try:
        async for chunk in chunks:
            buf += chunk
            if chunk.find(b"\n") < 0:  # not `in`: see hub/streams/relay.py
                continue
            if rename is not None:
                buf = rename(buf)
            text = buf
            *lines, buf = text.split(b"\n")
            if error_event or text.find(b"error") >= 0:  # rare: maybe an error said another way
                batch, error_event = _payloads(lines, error_event)
            else:
                batch = [line[5:].strip() for line in lines if line.startswith(b"data:")]
            if batch:
                yield batch
        if buf.startswith((b"data:", b"error:")):
            batch, _ = _payloads([rename(buf) if rename is not None else buf], error_event)
            yield batch
    except _TRANSPORT_ERRORS as e:
        raise _transport_error(e) from None
    finally:
        aclose = getattr(chunks, "aclose", None)  # an async generator (the lean client's): close it
        if aclose is not None:  # here, or the event loop finalizes it later, with a task of its own
            await aclose()
        await resp.aclose()


def _payloads(lines: list[bytes], error_event: bool) -> tuple[list[bytes], bool]:
    """The `data:` payloads of these lines, with the errors a backend sends other than as an error
    object in a data line made one (`{"error": …}`, which openai_compat.decode_chunk raises on):
    llama.cpp's server writes an `error: {…}` line, other servers an `event: error` whose data may be
    a bare `{"message": …}`. Also: whether an `event: error` still waits for its data."""
    out = []
    for line in lines:
        if line.startswith(b"data:"):
            data = line[5:].strip()
            out.append(_as_error(data) if error_event and data and data != b"[DONE]" else data)
        elif line.startswith(b"error:"):
            out.append(_as_error(line[6:].strip()))
        elif line.startswith(b"event:"):
            error_event = line[6:].strip() == b"error"
        elif not line.strip():  # the blank line that ends an event
            error_event = False
    return out, error_event


def _as_error(data: bytes) -> bytes:
    """An error event's payload as an error chunk: as it is when it already is one."""
    try:
        value = _json_decode(data)
    except msgspec.DecodeError:
        value = data.decode("utf-8", errors="replace")
    if isinstance(value, dict) and ("error" in value or value.get("object") == "error"):
        return data
    return _json_encode({"error": value if value else "error event without a message"})
