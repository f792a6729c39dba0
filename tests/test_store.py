"""hub.store: one behavioural suite for the memory and Redis stores, plus Redis faults and degradation."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable

import anyio
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.store import MemoryStore, Store, StoreBusy, StoreUnavailable, open_store
from hub.store.redis import RedisStore
from hub.store.resilient import ResilientStore
from tests.fakes.redis_server import RedisServer, SilentListener
from tests.helpers import start_redis

pytestmark = pytest.mark.anyio

FAST = 1.0  # seconds: the bound on any failing call when the timeout is 250 ms


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _prefix() -> str:
    return f"test:{uuid.uuid4().hex[:8]}:"


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        s: Store = MemoryStore()
    else:
        s = RedisStore(request.getfixturevalue("redis_server").url, key_prefix=_prefix())
    yield s
    await s.close()


def incr(old: bytes | None) -> bytes:
    return str(int(old or b"0") + 1).encode()


async def unavailable_within(op: Awaitable[object], limit: float = FAST) -> float:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await op
    elapsed = time.monotonic() - started
    assert elapsed < limit, f"took {elapsed:.2f}s to give up"
    return elapsed


# ---------------------------------------------------------------- the shared contract


async def test_get_set_delete(store: Store) -> None:
    assert await store.get("k") is None
    await store.set("k", b"v1", ttl=60)
    assert await store.get("k") == b"v1"
    await store.set("k", b"v2", ttl=60)
    assert await store.get("k") == b"v2"
    await store.delete("k")
    assert await store.get("k") is None
    await store.delete("never-there")


async def test_ttl_expiry(store: Store) -> None:
    await store.set("short", b"x", ttl=0.2)
    await store.set("long", b"y", ttl=60)
    assert await store.get("short") == b"x"
    await anyio.sleep(0.3)
    assert await store.get("short") is None
    assert await store.get("long") == b"y"


async def test_set_again_renews_ttl(store: Store) -> None:
    await store.set("k", b"x", ttl=0.2)
    await store.set("k", b"x", ttl=60)
    await anyio.sleep(0.3)
    assert await store.get("k") == b"x"


async def test_update_creates_modifies_and_deletes(store: Store) -> None:
    seen: list[bytes | None] = []

    def append(suffix: bytes):
        def fn(old: bytes | None) -> bytes:
            seen.append(old)
            return (old or b"") + suffix

        return fn

    assert await store.update("k", append(b"a"), ttl=60) == b"a"
    assert await store.update("k", append(b"b"), ttl=60) == b"ab"
    assert await store.get("k") == b"ab"
    assert seen == [None, b"a"]
    assert await store.update("k", lambda old: None, ttl=60) is None
    assert await store.get("k") is None
    assert await store.update("absent", lambda old: None, ttl=60) is None
    assert await store.get("absent") is None


async def test_update_applies_its_ttl(store: Store) -> None:
    await store.update("k", incr, ttl=0.2)
    await anyio.sleep(0.3)
    assert await store.update("k", incr, ttl=60) == b"1"


async def test_update_fn_error_reaches_caller_and_changes_nothing(store: Store) -> None:
    await store.set("k", b"1", ttl=60)

    def broken(old: bytes | None) -> bytes:
        raise ValueError("bug in caller")

    with pytest.raises(ValueError, match="bug in caller"):
        await store.update("k", broken, ttl=60)
    assert await store.get("k") == b"1"


async def test_a_failing_update_does_not_spoil_concurrent_ones(store: Store) -> None:
    def broken(old: bytes | None) -> bytes:
        raise ValueError("bug in caller")

    fns = [incr, broken, incr]
    results = await asyncio.gather(*(store.update("n", fn, 60) for fn in fns), return_exceptions=True)
    assert sorted(r for r in results if isinstance(r, bytes)) == [b"1", b"2"]
    assert sum(isinstance(r, ValueError) for r in results) == 1
    assert await store.get("n") == b"2"


async def test_concurrent_updates_lose_nothing(store: Store) -> None:
    async with anyio.create_task_group() as tg:
        for _ in range(200):
            tg.start_soon(store.update, "n", incr, 60)
    assert await store.get("n") == b"200"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.text(min_size=1, max_size=40), value=st.binary(max_size=2048))
async def test_arbitrary_bytes_round_trip(store: Store, key: str, value: bytes) -> None:
    await store.set(key, value, ttl=60)
    assert await store.get(key) == value
    assert await store.update(key, lambda old: old + b"\x00\xff" if old is not None else None, 60) == (
        value + b"\x00\xff"
    )
    assert await store.get(key) == value + b"\x00\xff"
    await store.delete(key)


# ---------------------------------------------------------------- redis specifics


async def test_values_carry_a_version_byte_under_the_key_prefix(redis_server: RedisServer) -> None:
    prefix = _prefix()
    store = RedisStore(redis_server.url, key_prefix=prefix)
    raw = redis.Redis.from_url(redis_server.url)
    try:
        await store.set("chain:1", b"{}", ttl=60)
        assert raw.get(prefix + "chain:1") == b"\x01{}"
        assert 0 < raw.pttl(prefix + "chain:1") <= 60_000
        raw.set(prefix + "future", b"\x07from a newer release")
        assert await store.get("future") is None
        assert store.health()["format_errors"] == 1
    finally:
        raw.close()
        await store.close()


async def test_two_replicas_lose_no_concurrent_increment(redis_server: RedisServer) -> None:
    prefix = _prefix()
    # Atomicity is the subject here, so a loaded CI machine gets a generous deadline;
    # the deadline itself is tested by the fault tests below.
    replicas = [RedisStore(redis_server.url, key_prefix=prefix, timeout=2.0) for _ in range(2)]

    async def bump(replica: RedisStore) -> None:
        await anyio.sleep(random.random() * 0.05)  # interleave the replicas' transactions
        await replica.update("n", incr, 60)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(bump, replicas[i % 2])
        assert await replicas[0].get("n") == b"200"
        assert all(r.health()["errors"] == 0 for r in replicas)
    finally:
        for r in replicas:
            await r.close()


async def test_incr_counts_from_zero_and_keeps_the_first_expiry(store: Store) -> None:
    assert await store.incr("c", 1, 0.3) == 1
    assert await store.incr("c", 2, 60) == 3  # a later ttl does not stretch the window
    assert await store.incr("c", -1, 60) == 2
    await asyncio.sleep(0.45)
    assert await store.incr("c", 5, 60) == 5  # a new window
    assert await store.incr("other", 1, 60) == 1


async def test_two_replicas_lose_no_concurrent_incr(redis_server: RedisServer) -> None:
    prefix = _prefix()
    replicas = [RedisStore(redis_server.url, key_prefix=prefix, timeout=2.0) for _ in range(2)]
    seen: list[int] = []

    async def bump(replica: RedisStore) -> None:
        await anyio.sleep(random.random() * 0.05)
        seen.append(await replica.incr("n", 1, 60))

    try:
        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(bump, replicas[i % 2])
        assert sorted(seen) == list(range(1, 201))  # every caller saw its own count: no two the same
        ttl = redis.Redis.from_url(redis_server.url).pttl(prefix + "n")
        assert 0 < ttl <= 60_000
    finally:
        for r in replicas:
            await r.close()


async def test_resilient_counts_in_memory_while_redis_is_down(own_redis: RedisServer) -> None:
    store = ResilientStore(RedisStore(own_redis.url, key_prefix=_prefix()), MemoryStore(), retry_after=0.2)
    try:
        assert await store.incr("c", 1, 60) == 1
        own_redis.stop()
        assert await store.incr("c", 1, 60) == 1  # the fallback's own count, not an error
        assert store.degraded
    finally:
        await store.close()


async def test_write_between_watch_and_exec_is_retried(redis_server: RedisServer) -> None:
    prefix = _prefix()
    store = RedisStore(redis_server.url, key_prefix=prefix)
    other_process = redis.Redis.from_url(redis_server.url)
    seen: list[bytes | None] = []

    def add_one_racing(old: bytes | None) -> bytes:
        seen.append(old)
        if len(seen) == 1:  # another replica writes after our WATCH, before our EXEC
            other_process.set(prefix + "n", b"\x0110")
        return incr(old)

    try:
        await store.set("n", b"1", ttl=60)
        assert await store.update("n", add_one_racing, ttl=60) == b"11"
        assert seen == [b"1", b"10"]
        assert await store.get("n") == b"11"
        assert store.health()["update_conflicts"] == 1
    finally:
        other_process.close()
        await store.close()


async def test_update_retries_are_bounded(redis_server: RedisServer) -> None:
    prefix = _prefix()
    store = RedisStore(redis_server.url, key_prefix=prefix, max_update_attempts=3, timeout=5.0)  # deadline out of the way: this tests the retry bound
    other_process = redis.Redis.from_url(redis_server.url)
    calls = 0

    def always_raced(old: bytes | None) -> bytes:
        nonlocal calls
        calls += 1
        other_process.set(prefix + "n", b"\x01" + str(calls).encode())
        return b"mine"

    try:
        with pytest.raises(StoreUnavailable, match="3 conflicting writes"):
            await store.update("n", always_raced, ttl=60)
        assert calls == 3
        assert await store.get("n") == b"3"
    finally:
        other_process.close()
        await store.close()


async def test_stopped_redis_fails_fast_and_reconnects_after_restart(own_redis: RedisServer) -> None:
    store = RedisStore(own_redis.url, key_prefix=_prefix(), timeout=0.25)
    try:
        await store.set("k", b"v", ttl=60)
        own_redis.stop()
        await unavailable_within(store.get("k"))
        await unavailable_within(store.set("k", b"v", 60))
        await unavailable_within(store.delete("k"))
        await unavailable_within(store.update("k", incr, 60))
        health = store.health()
        assert health["ok"] is False and health["errors"] == 4 and health["last_error"]
        own_redis.start()
        assert await store.get("k") is None  # no persistence: the restarted server is empty
        await store.set("k", b"back", ttl=60)
        assert await store.get("k") == b"back"
        assert store.health()["ok"] is True
    finally:
        await store.close()


async def test_redis_that_never_answers_times_out() -> None:
    with SilentListener() as silent:
        store = RedisStore(silent.url, timeout=0.25)
        try:
            for op in (store.get("k"), store.set("k", b"v", 60), store.update("k", incr, 60)):
                assert 0.2 < await unavailable_within(op) < FAST
            assert "250 ms" in store.health()["last_error"]
        finally:
            await store.close()


async def test_frozen_redis_times_out_on_open_connections(own_redis: RedisServer) -> None:
    store = RedisStore(own_redis.url, key_prefix=_prefix(), timeout=0.25)
    try:
        await store.set("k", b"1", ttl=60)  # the pool now holds a live connection
        own_redis.pause()
        await unavailable_within(store.get("k"))
        await unavailable_within(store.update("k", incr, 60))
        own_redis.resume()
        assert await store.update("k", incr, 60) == b"2"
    finally:
        own_redis.resume()
        await store.close()


# ---------------------------------------------------------------- degrading to memory


async def test_resilient_degrades_to_memory_and_recovers_by_itself(own_redis: RedisServer) -> None:
    primary = RedisStore(own_redis.url, key_prefix=_prefix(), timeout=0.25)
    store = ResilientStore(primary, MemoryStore(), retry_after=0.3)
    try:
        await store.set("k", b"shared", ttl=60)
        assert store.health()["degraded"] is False and await store.get("k") == b"shared"

        own_redis.stop()
        started = time.monotonic()
        assert await store.get("k") is None  # served by the (empty) per-process fallback
        assert time.monotonic() - started < FAST
        assert store.degraded and store.errors_total == 1
        await store.set("k", b"local", ttl=60)
        assert await store.update("k", lambda old: old + b"!", 60) == b"local!"
        health = store.health()
        assert health["degraded"] is True and health["since"] is not None and health["errors"] == 1
        assert primary.health()["errors"] == 1, "a dead primary must not be asked on every call"

        await anyio.sleep(0.35)
        assert await store.get("k") == b"local!"  # the probe fails: still degraded, probed once
        assert store.degraded and store.errors_total == 2

        own_redis.start()
        await anyio.sleep(0.35)
        await store.set("k", b"shared again", ttl=60)  # this call is the probe, and it succeeds
        assert not store.degraded
        assert store.health()["degraded"] is False and store.health()["since"] is None
        assert await primary.get("k") == b"shared again"
    finally:
        await store.close()


async def test_resilient_probes_a_hung_primary_once_at_a_time(own_redis: RedisServer) -> None:
    primary = RedisStore(own_redis.url, key_prefix=_prefix(), timeout=0.25)
    store = ResilientStore(primary, MemoryStore(), retry_after=0.2)
    try:
        await store.set("k", b"v", ttl=60)
        own_redis.pause()
        assert await store.get("k") is None
        # A timeout alone is not an outage: one PING decides (hub/store/resilient.py), within its timeout.
        deadline = time.monotonic() + FAST
        while not store.health()["degraded"]:
            assert time.monotonic() < deadline, "a hung primary was never found out"
            await anyio.sleep(0.02)
        errors = primary.health()["errors"]
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(store.get, "k")
        assert time.monotonic() - started < FAST
        # Degraded, the 20 reads never wait on the hung primary: at most the background PING failed meanwhile.
        assert primary.health()["errors"] - errors <= 1
    finally:
        own_redis.resume()
        await store.close()


async def test_resilient_passes_through_while_healthy(redis_server: RedisServer) -> None:
    fallback = MemoryStore()
    store = ResilientStore(RedisStore(redis_server.url, key_prefix=_prefix()), fallback)
    try:
        await store.set("k", b"v", ttl=60)
        assert await store.update("k", lambda old: old + b"2", 60) == b"v2"
        assert await fallback.get("k") is None
        assert store.health()["primary"]["backend"] == "redis"
    finally:
        await store.close()


# ---------------------------------------------------------------- credentials


async def test_password_never_appears_in_health_or_errors() -> None:
    secret = "s3cr3t-pa55"
    server = start_redis(password=secret)
    good = RedisStore(server.url, key_prefix=_prefix())
    wrong = ResilientStore(
        RedisStore(server.url.replace(secret, "nope-" + secret), key_prefix="x:"), MemoryStore()
    )
    try:
        await good.set("k", b"v", ttl=60)
        assert await good.get("k") == b"v"
        assert await wrong.get("k") is None  # authentication fails: degraded, served from memory
        assert wrong.degraded
        server.stop()
        with pytest.raises(StoreUnavailable) as caught:
            await good.get("k")
        for shown in (good.health(), wrong.health()):
            text = json.dumps(shown)
            assert secret not in text, text
            assert ":***@127.0.0.1" in text
        assert secret not in str(caught.value)
        assert wrong.health()["primary"]["last_error"]
    finally:
        await good.close()
        await wrong.close()
        server.close()


async def test_password_in_query_string_is_masked_too() -> None:
    store = RedisStore("redis://user:p%40ss@127.0.0.1:1/0?password=q-secret&db=0")
    try:
        url = store.health()["url"]
        assert "p%40ss" not in url and "p@ss" not in url and "q-secret" not in url
        assert url.startswith("redis://user:***@127.0.0.1:1/0?")
    finally:
        await store.close()


# ---------------------------------------------------------------- configuration


async def test_open_store_follows_the_state_section(redis_server: RedisServer) -> None:
    assert isinstance(open_store(None), MemoryStore)
    assert isinstance(open_store({"backend": "memory"}), MemoryStore)
    store = open_store({"backend": "redis", "url": redis_server.url, "keyPrefix": "cfg:", "timeoutMs": 100})
    try:
        assert isinstance(store, ResilientStore)
        primary = store.health()["primary"]
        assert primary["key_prefix"] == "cfg:" and primary["timeout_ms"] == 100
        await store.set("k", b"v", ttl=60)
        assert await store.get("k") == b"v"
    finally:
        await store.close()
    with pytest.raises(ValueError, match="unknown state.backend"):
        open_store({"backend": "etcd"})
    with pytest.raises(ValueError, match="url"):
        open_store({"backend": "redis"})


# ---------------------------------------------------------------- queueing for connections


async def test_queueing_for_a_connection_is_not_an_outage(redis_server) -> None:
    """Far more concurrent calls than connections: they queue, and the wait never counts against
    the command timeout, so nothing fails and the store stays healthy."""
    prefix = _prefix()
    store = RedisStore(redis_server.url, key_prefix=prefix, timeout=0.25, max_connections=2, pool_timeout=10)
    try:
        async def one(i: int) -> bytes | None:
            await store.set(f"k{i}", str(i).encode(), ttl=60)
            await store.update(f"n{i % 7}", incr, ttl=60)
            return await store.get(f"k{i}")

        # 600 calls queue on 2 connections; the queue is long, each command is quick
        got = await asyncio.gather(*(one(i) for i in range(200)))
        assert got == [str(i).encode() for i in range(200)]
        counts = [int(await store.get(f"n{j}")) for j in range(7)]
        assert sum(counts) == 200
        health = store.health()
        assert health["ok"] and health["errors"] == 0 and health["busy"] == 0
        assert health["max_connections"] == 2
    finally:
        await store.close()


async def test_a_pool_busy_past_its_wait_is_busy_not_down() -> None:
    with SilentListener() as silent:
        primary = RedisStore(silent.url, timeout=0.5, max_connections=1, pool_timeout=0.05)
        resilient = ResilientStore(primary, MemoryStore())
        try:
            hog = asyncio.ensure_future(primary.get("a"))  # holds the only connection for 0.5 s
            await asyncio.sleep(0.01)
            with pytest.raises(StoreBusy):
                await resilient.get("b")
            assert not resilient.degraded and resilient.health()["errors"] == 0
            assert primary.health()["busy"] == 1
            with pytest.raises(StoreUnavailable):
                await hog  # the silent server itself is a real failure
            await resilient.get("c")
            assert resilient.degraded  # ...and only that degrades
        finally:
            await resilient.close()


def test_open_store_sizes_the_pool() -> None:
    store = open_store({"backend": "redis", "url": "redis://127.0.0.1:1/0", "maxConnections": 12,
                        "poolTimeoutMs": 1500})
    primary = store.health()["primary"]
    assert primary["max_connections"] == 12 and primary["pool_timeout_ms"] == 1500


async def test_our_own_loop_lag_is_not_an_outage(redis_server) -> None:
    """The event loop is blocked past the command timeout while Redis's answer waits in the socket:
    the command still succeeds and the store stays healthy; a silent Redis still fails in time."""
    store = RedisStore(redis_server.url, key_prefix=_prefix(), timeout=0.1)
    try:
        await store.set("k", b"v", ttl=60)  # connected

        async def hog() -> None:
            await asyncio.sleep(0.005)
            time.sleep(0.4)  # a congested loop: nothing else runs

        blocker = asyncio.ensure_future(hog())
        assert await store.get("k") == b"v"
        await blocker
        assert store.health()["errors"] == 0
    finally:
        await store.close()
    with SilentListener() as silent:
        store = RedisStore(silent.url, timeout=0.1)
        try:
            assert await unavailable_within(store.get("k"), limit=0.5) >= 0.1
        finally:
            await store.close()
