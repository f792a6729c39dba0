"""Stored responses: `store: true` keeps a finished Response and the chat history that continues it
under "resp:<id>" in the state store, for GET/DELETE /v1/responses/{id} and `previous_response_id`."""

from __future__ import annotations

import logging

import msgspec

from .errors import GatewayError, Unavailable
from .protocols.responses import ResponsesContext, items_to_messages
from .store import Store, StoreUnavailable

log = logging.getLogger("searchhub.responses")
KEY_PREFIX = "resp:"
_encode = msgspec.json.encode
_decode = msgspec.json.decode


class Stored(msgspec.Struct):
    """What `store` keeps: the Response for GET, the chat conversation for previous_response_id."""

    response: dict
    messages: list[dict]


async def load(store: Store, response_id: str) -> Stored | None:
    try:
        raw = await store.get(KEY_PREFIX + response_id)
    except StoreUnavailable:
        raise Unavailable("stored responses are unavailable right now", code="store_unavailable") from None
    if raw is None:
        return None
    try:
        return _decode(raw, type=Stored)
    except msgspec.DecodeError:
        log.warning("stored response %s is unreadable; treated as missing", response_id)
        return None


async def save(store: Store, ttl: float, response: dict, ctx: ResponsesContext) -> None:
    """Keep a finished response; a store failure costs the continuation, never the answer."""
    messages = [*ctx.history, *items_to_messages(response["output"], ctx)]
    try:
        await store.set(KEY_PREFIX + response["id"], _encode(Stored(response, messages)), ttl)
    except Exception as e:  # StoreUnavailable or a bug in a backend: log it and answer anyway
        log.warning("response %s was not stored: %s", response["id"], type(e).__name__)


async def history(store: Store, body: dict) -> list[dict] | None:
    """The chat history a request's `previous_response_id` continues; None without one."""
    previous = body.get("previous_response_id")
    if not isinstance(previous, str) or not previous:
        return None
    stored = await load(store, previous)
    if stored is None:
        raise GatewayError(f"Previous response with id '{previous}' not found.", status=404,
                           type="invalid_request_error", param="previous_response_id",
                           code="previous_response_not_found")
    return stored.messages


async def delete(store: Store, response_id: str) -> None:
    try:
        await store.delete(KEY_PREFIX + response_id)
    except StoreUnavailable:
        raise Unavailable("stored responses are unavailable right now", code="store_unavailable") from None
