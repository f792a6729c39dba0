"""Redis-backed store: state shared by every replica of the gateway.

Value format: one version byte, then the caller's bytes. Version 1 is ``b"\\x01" + value``.
Counters (``incr``) are plain Redis integers, so INCRBY works on them.
A value whose version byte this code does not know (written by a newer release, or by
something else sharing the key space) reads as a miss and is counted in ``format_errors``,
so a rolling upgrade or downgrade degrades to cache misses instead of failing requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, WatchError

from .base import StoreBusy, StoreDown, StoreUnavailable, UpdateFn

FORMAT_V1 = b"\x01"
# The default of state.timeoutMs (hub/config/engines.schema.json, docs/configuration.md): a command's answer
# includes the wait for this process's own event loop, which a loaded 2-core machine stretches past
# 250 ms (docs/deployment.md, "When Redis goes away").
DEFAULT_TIMEOUT_S = 1.0
# redis-py's retries of a command that met a connection error (or a socket timeout): each retry runs on a
# fresh connection, after 4, 8, then 16 ms, so a connection that died with a restarted Redis costs one
# reconnect, and a Redis that refuses costs ~30 ms before the call fails; well within any deadline.
RETRIES = 3
BACKOFF = ExponentialBackoff(cap=0.05, base=0.002)
DROP_EVERY_S = 0.1  # a burst of connection errors (every pooled connection died at once) drops the pool once
# INCRBY and the window's expiry in one atomic step; the expiry is set only when the counter is new.
_INCR = """
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v
"""

T = TypeVar("T")


class _Retry(Retry):
    """redis-py's Retry (ConnectionError and TimeoutError, exponential backoff); a connection error
    also tells ``on_connection_error``, which drops the pool's idle connections: when one pooled
    connection is dead (Redis restarted, a proxy cut them), the others are too."""

    def __init__(self, on_connection_error: Callable[[], Awaitable[None]]) -> None:
        super().__init__(BACKOFF, RETRIES)
        self._on_connection_error = on_connection_error

    def __deepcopy__(self, memo: dict) -> _Retry:
        return _Retry(self._on_connection_error)  # every connection copies its Retry; they share the hook

    async def call_with_retry(self, do, fail, is_retryable=None, with_failure_count=False):  # type: ignore[override]
        async def failed(error: Exception, *count: int) -> None:
            await fail(error, *count)  # redis-py's own: disconnect this connection
            if isinstance(error, RedisConnectionError):
                await self._on_connection_error()

        return await super().call_with_retry(do, failed, is_retryable, with_failure_count)


@dataclass
class _PendingUpdate:
    fn: UpdateFn
    ttl: float
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class RedisStore:
    """Store on a Redis server; every command answers or raises StoreUnavailable within ``timeout``
    (StoreDown when Redis refused or dropped the connection even after redis-py's retries).

    The wait for one of the ``max_connections`` connections is not part of a command's time: under
    load, calls queue for a connection up to ``pool_timeout`` (then StoreBusy, which says this
    process is busy, not that Redis is down) and only the command itself runs against ``timeout``.
    Concurrent updates of one key in this process are applied in order in one
    transaction, so an update's fn may run more than once and beside others' fns.
    """

    def __init__(
        self,
        url: str,
        *,
        key_prefix: str = "searchhub:",
        timeout: float = DEFAULT_TIMEOUT_S,
        max_connections: int = 256,
        pool_timeout: float = 5.0,
        max_update_attempts: int = 16,
    ) -> None:
        self._prefix = key_prefix
        self._timeout = timeout
        self._pool_timeout = pool_timeout
        self._max_connections = max_connections
        self._max_attempts = max_update_attempts
        self._safe_url, self._secrets = _mask_url(url)
        # One slot per connection: a call holding a slot always finds a free connection, so the
        # pool's own wait (bounded too, for abandoned calls still cleaning up) stays empty.
        self._slots = asyncio.Semaphore(max_connections)
        self._busy = 0
        # redis-py retries a command that met a dead connection on a fresh one (RETRIES, BACKOFF), and the
        # first connection error drops the pool's idle connections, so after a Redis restart no command
        # fails on a connection the old server left behind. The whole call stays bounded by ``timeout``
        # (_bounded), so the retries never stretch the time a dead or hung server costs a caller.
        self._dropped_at = float("-inf")
        self._pool_drops = 0
        self._pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=_Retry(self._drop_idle_connections),
        )
        self._redis = Redis(connection_pool=self._pool)
        self._incr = self._redis.register_script(_INCR)
        # Updates of one key queue here and one writer task per key applies them in
        # batches: a hot key costs one transaction per batch instead of one per caller,
        # and optimistic transactions only race against other processes.
        self._queues: dict[str, list[_PendingUpdate]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._ok = True
        self._last_error: str | None = None
        self._errors = 0
        self._update_conflicts = 0
        self._format_errors = 0

    async def get(self, key: str) -> bytes | None:
        return self._decode(await self._command(lambda: self._redis.get(self._prefix + key)))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        raw = await self._command(lambda: self._redis.mget([self._prefix + key for key in keys]))
        return [self._decode(value) for value in raw]

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        k = self._prefix + key
        if ttl <= 0:
            await self._command(lambda: self._redis.delete(k))
        else:
            await self._command(lambda: self._redis.set(k, FORMAT_V1 + value, px=_ms(ttl)))

    async def set_many(self, entries: Sequence[tuple[str, bytes]], ttl: float) -> None:
        """One MULTI/EXEC: one round trip, and no reader sees some of the keys without the others."""
        keys = [(self._prefix + key, value) for key, value in entries]
        if not keys:
            return

        async def write() -> None:
            async with self._redis.pipeline(transaction=True) as pipe:
                for k, value in keys:
                    if ttl <= 0:
                        pipe.delete(k)
                    else:
                        pipe.set(k, FORMAT_V1 + value, px=_ms(ttl))
                await pipe.execute()

        await self._command(write)

    async def delete(self, key: str) -> None:
        await self._command(lambda: self._redis.delete(self._prefix + key))

    async def incr(self, key: str, amount: int, ttl: float) -> int:
        """A plain Redis integer (no version byte), so that INCRBY can work on it."""
        return int(await self._bounded(self._incr(keys=[self._prefix + key], args=[amount, _ms(ttl)])))

    async def update(self, key: str, fn: UpdateFn, ttl: float) -> bytes | None:
        """WATCH/MULTI/EXEC with bounded retries; fn may run more than once, so keep it pure."""
        k = self._prefix + key
        pending = _PendingUpdate(fn, ttl)
        queue = self._queues.get(k)
        if queue is None:
            queue = self._queues[k] = []
            self._spawn(self._write_key(k, queue))
        queue.append(pending)
        # The writer queues for a connection like any call, then runs against the command timeout.
        return await self._bounded(pending.done, self._pool_timeout + self._timeout)

    async def ping(self) -> None:
        """PING within ``timeout``: the resilient store's health check."""
        await self._command(lambda: self._redis.ping())

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._redis.aclose()
        await self._pool.aclose()

    def health(self) -> dict:
        return {
            "backend": "redis",
            "ok": self._ok,
            "last_error": self._last_error,
            "errors": self._errors,
            "url": self._safe_url,
            "key_prefix": self._prefix,
            "timeout_ms": round(self._timeout * 1000),
            "max_connections": self._max_connections,
            "pool_timeout_ms": round(self._pool_timeout * 1000),
            "busy": self._busy,
            "retries": RETRIES,
            "pool_drops": self._pool_drops,
            "update_conflicts": self._update_conflicts,
            "format_errors": self._format_errors,
        }

    async def _write_key(self, k: str, queue: list[_PendingUpdate]) -> None:
        """Drain one key's queue, a batch per transaction, until it stays empty."""
        batch: list[_PendingUpdate] = []
        try:
            while queue:
                batch = [p for p in queue if not p.done.done()]  # skip callers that gave up
                queue.clear()
                if not batch:
                    continue
                try:
                    async with self._slot():
                        task = asyncio.ensure_future(self._transact(k, batch))
                        if not await self._answered(task, self._timeout):
                            self._abandon(task)
                            raise TimeoutError(f"no answer within {round(self._timeout * 1000)} ms")
                        outcomes = task.result()
                except Exception as exc:
                    outcomes = [exc] * len(batch)
                for pending, outcome in zip(batch, outcomes, strict=True):
                    if pending.done.done():
                        continue
                    if isinstance(outcome, Exception):
                        pending.done.set_exception(outcome)
                    else:
                        pending.done.set_result(outcome)
        finally:
            # No await between the last emptiness check and here, so no update is stranded.
            del self._queues[k]
            for pending in batch + queue:  # only unresolved when close() cancelled us
                if not pending.done.done():
                    pending.done.set_exception(RedisError("store closed"))

    async def _transact(self, k: str, batch: list[_PendingUpdate]) -> list[bytes | None | Exception]:
        """Apply the batch in order, as consecutive updates would, in one optimistic transaction."""
        async with self._redis.pipeline(transaction=True) as pipe:
            for attempt in range(self._max_attempts):
                await pipe.watch(k)
                value = self._decode(await pipe.get(k))
                outcomes: list[bytes | None | Exception] = []
                last_ttl: float | None = None
                for pending in batch:
                    try:
                        value = pending.fn(value)
                    except Exception as exc:  # the caller's bug is the caller's error alone
                        outcomes.append(exc)
                        continue
                    outcomes.append(value)
                    last_ttl = pending.ttl
                if last_ttl is None:
                    await pipe.unwatch()
                    return outcomes
                pipe.multi()
                if value is None or last_ttl <= 0:
                    pipe.delete(k)
                else:
                    pipe.set(k, FORMAT_V1 + value, px=_ms(last_ttl))
                try:
                    await pipe.execute()
                except WatchError:
                    self._update_conflicts += 1
                    # Another process wrote the key. Retrying at once would meet it again
                    # while it keeps writing; a random pause breaks the lockstep.
                    await asyncio.sleep(random.uniform(0, 0.001 * 2 ** min(attempt, 4)))
                    continue
                return outcomes
        raise RedisError(f"update gave up after {self._max_attempts} conflicting writes")

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """Hold one of the connection slots; waiting for it is queueing, never an outage."""
        try:
            async with asyncio.timeout(self._pool_timeout):
                await self._slots.acquire()
        except TimeoutError:
            self._busy += 1
            raise StoreBusy(f"redis {self._safe_url}: all {self._max_connections} connections stayed busy for "
                            f"{round(self._pool_timeout * 1000)} ms") from None
        try:
            yield
        finally:
            self._slots.release()

    async def _command(self, make: Callable[[], Awaitable[T]]) -> T:
        async with self._slot():
            return await self._bounded(make())

    async def _bounded(self, op: Awaitable[T], timeout: float | None = None) -> T:
        timeout = self._timeout if timeout is None else timeout
        # A plain wait_for waits for the cancelled operation to clean up (UNWATCH,
        # reconnect...), which a hung server can stretch past the deadline; a task we
        # stop waiting for cannot.
        task = asyncio.ensure_future(op)
        try:
            done = await self._answered(task, timeout)
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if not done:
            self._abandon(task)
            raise self._failed(f"no answer within {round(timeout * 1000)} ms")
        try:
            result = task.result()
        except (RedisError, OSError) as exc:  # OSError covers TimeoutError, refused, reset
            raise self._failed(f"{type(exc).__name__}: {exc}", down=_refused(exc)) from exc
        self._ok = True
        return result

    @staticmethod
    async def _answered(task: asyncio.Future, timeout: float) -> bool:
        done, _ = await asyncio.wait((task,), timeout=timeout)
        return bool(done)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _abandon(self, task: asyncio.Future) -> None:
        task.cancel()
        if not task.done():
            self._tasks.add(task)
            task.add_done_callback(self._reap)

    def _reap(self, task: asyncio.Future) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            task.exception()  # mark retrieved: the caller already got StoreUnavailable

    async def _drop_idle_connections(self) -> None:
        """Disconnect every idle pooled connection (redis-py's ConnectionPool.disconnect), so the next
        command opens a fresh one. Connections in use are left to their command: one on a dead
        connection fails and is retried on a fresh one, one on a live connection is not cut."""
        now = time.monotonic()
        if now - self._dropped_at < DROP_EVERY_S:
            return
        self._dropped_at = now
        self._pool_drops += 1
        with contextlib.suppress(Exception):  # closing a dead socket may complain; it is closed all the same
            await self._pool.disconnect(inuse_connections=False)

    def _failed(self, message: str, *, down: bool = False) -> StoreUnavailable:
        for secret in self._secrets:
            message = message.replace(secret, "***")
        self._ok = False
        self._errors += 1
        self._last_error = message
        return (StoreDown if down else StoreUnavailable)(f"redis {self._safe_url}: {message}")

    def _decode(self, raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        if raw[:1] == FORMAT_V1:
            return raw[1:]
        self._format_errors += 1
        return None


def _refused(exc: BaseException) -> bool:
    """Redis refused or dropped the connection (after redis-py's retries), as opposed to a timeout."""
    if isinstance(exc, RedisConnectionError):
        return True
    return isinstance(exc, OSError) and not isinstance(exc, TimeoutError)


def _ms(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def _mask_url(url: str) -> tuple[str, list[str]]:
    """The URL with its password replaced by ***, and the secrets to scrub from error text."""
    parts = urlsplit(url)
    secrets: list[str] = []
    netloc = parts.netloc
    if parts.password is not None:
        secrets += [parts.password, unquote(parts.password)]
        host = netloc.rpartition("@")[2]
        netloc = f"{parts.username or ''}:***@{host}"
    query = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name.lower() == "password" and value:
            secrets.append(value)
            value = "***"
        query.append((name, value))
    safe = urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), parts.fragment))
    return safe, [s for s in secrets if s]
