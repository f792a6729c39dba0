"""Sticky per-chain state: once a chain searched, its follow-up requests keep the tool.

A chain is one user turn and everything the model and client do until the final answer. It is
identified without client cooperation by a hash of the caller's key and the conversation's user
texts up to the latest one (client tool rounds append assistant/tool messages, never user text,
so every request of the chain hashes the same), or explicitly by the `x-searchhub-chain` header.
"""

from __future__ import annotations

import hashlib
import logging

import msgspec

from ..core.text import text_of
from ..store import Store, StoreUnavailable

log = logging.getLogger("searchhub.chain")
_VERSION = 1


class Hidden(msgspec.Struct):
    """A mixed turn: the server tool calls that ran beside client tool calls, kept until the client answers."""

    client_call_ids: list[str]
    assistant: dict  # the full assistant message: the client's calls and ours
    results: list[dict]  # our tool messages


class ChainState(msgspec.Struct):
    v: int = _VERSION
    sticky: bool = False
    google: bool = False
    hidden: list[Hidden] = msgspec.field(default_factory=list)


_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(ChainState)


def chain_key(client_key: str, messages: list[dict], explicit: str | None = None) -> str:
    h = hashlib.blake2b(digest_size=16)
    if explicit:
        h.update(b"x:" + client_key.encode() + b"\0" + explicit.encode())
        return "chain:" + h.hexdigest()
    h.update(client_key.encode() + b"\0")
    last_user = -1
    for i, m in enumerate(messages):
        if m.get("role") == "user" and text_of(m.get("content"), "\n").strip():
            last_user = i
    for m in messages[: last_user + 1]:
        if m.get("role") == "user":
            h.update(text_of(m.get("content"), "\n").encode() + b"\0")
    return "chain:" + h.hexdigest()


async def load(store: Store, key: str) -> ChainState | None:
    try:
        raw = await store.get(key)
    except StoreUnavailable:
        return None
    if raw is None:
        return None
    try:
        state = _dec.decode(raw)
    except msgspec.DecodeError:
        return None  # a value from an incompatible version: start afresh
    return state if state.v == _VERSION else None


async def save(store: Store, key: str, ttl: float, *, sticky: bool, google: bool,
               hidden: Hidden | None = None) -> None:
    """Merge into the stored state atomically (two requests of one chain must not lose each other's update)."""

    def merge(old: bytes | None) -> bytes:
        state = None
        if old is not None:
            try:
                state = _dec.decode(old)
            except msgspec.DecodeError:
                state = None
        state = state or ChainState()
        state.sticky = state.sticky or sticky
        state.google = state.google or google
        if hidden is not None:
            state.hidden = [*state.hidden[-7:], hidden]  # bounded: a chain rarely has more than a few
        return _enc.encode(state)

    try:
        await store.update(key, merge, ttl)
    except StoreUnavailable:
        log.warning("chain state not saved: state store unavailable")


async def drop(store: Store, key: str) -> None:
    try:
        await store.delete(key)
    except StoreUnavailable:
        pass


def splice(messages: list[dict], state: ChainState) -> list[dict]:
    """Put hidden server tool calls and results back where they happened, so the model sees a
    consistent conversation: the assistant message regains our calls and their results follow it."""
    if not state.hidden:
        return messages
    out: list[dict] = []
    by_ids = {frozenset(h.client_call_ids): h for h in state.hidden}
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            ids = frozenset(tc.get("id") for tc in m["tool_calls"] if isinstance(tc, dict))
            h = by_ids.get(ids)
            if h is not None:
                merged = dict(h.assistant)
                # Keep the client's own version of its calls (it may have edited nothing, but it is theirs).
                ours = [tc for tc in merged.get("tool_calls", []) if tc.get("id") not in ids]
                merged["tool_calls"] = [*m["tool_calls"], *ours]
                out.append(merged)
                out.extend(h.results)
                continue
        out.append(m)
    return out


class ChainSession(msgspec.Struct):
    """One request's view of its chain: the key (computed once), load, save and finish."""

    store: Store
    ttl: float
    client_key: str
    messages: list[dict]  # the request's messages as the client sent them (the key reads their user texts)
    explicit: str | None = None  # x-searchhub-chain
    _key: str | None = None
    had_state: bool = False

    @property
    def key(self) -> str:
        if self._key is None:
            self._key = chain_key(self.client_key, self.messages, self.explicit)
        return self._key

    @property
    def continues(self) -> bool:
        """Worth a lookup: the client names the chain, or it is answering tool calls."""
        return bool(self.explicit) or bool(self.messages and self.messages[-1].get("role") == "tool")

    async def load(self) -> ChainState | None:
        state = await load(self.store, self.key)
        self.had_state = state is not None
        return state

    async def hide(self, hidden: Hidden, *, google: bool) -> None:
        """A mixed turn: the client gets only its own calls; ours wait here for the splice."""
        await save(self.store, self.key, self.ttl, sticky=True, google=google, hidden=hidden)

    async def finish(self, finish: str | None, *, searching: bool, google: bool) -> None:
        """Sticky until the final answer: keep state while the client runs tools, drop it at the end."""
        if finish == "tool_calls" and searching:
            await save(self.store, self.key, self.ttl, sticky=True, google=google)
        elif finish != "tool_calls" and self.had_state:
            await drop(self.store, self.key)
