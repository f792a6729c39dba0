"""Ref ids per Codex thread, in the state store so they work on every replica and expire.

Call N of a thread (N = how many calls the thread made before it, counted atomically in the store)
names its search results `turn{N}search{M}` and the pages it opens `turn{N}fetch{M}`; a later call
resolves them to URLs, and `click` to the links of a page it opened. The thread's entry is keyed
by the caller's API key and the thread id together (another key cannot read or extend it), lives
`ttl` seconds after its last call, and is bounded: the newest MAX_REFS ref ids, the link lists of
the newest MAX_PAGES opened pages.
"""

from __future__ import annotations

import hashlib
import logging
import re

import msgspec

from ...store.base import Store, StoreUnavailable

log = logging.getLogger("searchhub.codex")

PREFIX = "codex:"
MAX_REFS = 400
MAX_PAGES = 20
MAX_TITLE = 200
_VERSION = 1
REF_ID = re.compile(r"^turn(\d{1,9})(search|fetch)(\d{1,9})$")


class Ref(msgspec.Struct, array_like=True):
    url: str
    title: str = ""


class Thread(msgspec.Struct):
    v: int = _VERSION
    turns: int = 0
    refs: dict[str, Ref] = {}
    links: dict[str, list[str]] = {}  # ref id of an opened page -> its links, in number order


_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(Thread)


def thread_key(key_name: str, thread: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(key_name.encode() + b"\0" + thread.encode())
    return PREFIX + h.hexdigest()


def _load(raw: bytes | None) -> Thread:
    if raw is None:
        return Thread()
    try:
        state = _dec.decode(raw)
    except msgspec.DecodeError:
        return Thread()  # a value from an incompatible version: start afresh
    return state if state.v == _VERSION else Thread()


async def begin(store: Store, key: str, ttl: float) -> Thread:
    """The thread as it was before this call, its call count taken one up in the same step (two
    concurrent calls of one thread get different turn numbers)."""
    before: list[Thread] = []

    def step(old: bytes | None) -> bytes:
        state = _load(old)
        before.append(msgspec.structs.replace(state))
        state.turns += 1
        return _enc.encode(state)

    try:
        await store.update(key, step, ttl)
    except StoreUnavailable:
        log.warning("codex search thread not read: state store unavailable")
        return Thread()
    return before[-1] if before else Thread()


async def commit(store: Store, key: str, ttl: float, refs: dict[str, Ref], links: dict[str, list[str]]) -> None:
    """Add this call's ref ids and opened pages' links to the thread (merged atomically)."""
    if not refs and not links:
        return

    def merge(old: bytes | None) -> bytes:
        state = _load(old)
        state.refs.update(refs)
        if len(state.refs) > MAX_REFS:
            state.refs = dict(list(state.refs.items())[-MAX_REFS:])
        state.links.update(links)
        if len(state.links) > MAX_PAGES:
            state.links = dict(list(state.links.items())[-MAX_PAGES:])
        return _enc.encode(state)

    try:
        await store.update(key, merge, ttl)
    except StoreUnavailable:
        log.warning("codex search thread not saved: state store unavailable")


def ref(url: str, title: str | None) -> Ref:
    return Ref(url, (title or "")[:MAX_TITLE])
