"""Stored responses: `store: true` keeps a finished Response and the chat history that continues it
under "resp:<id>" in the state store, for GET/DELETE /v1/responses/{id} and `previous_response_id`,
and each of its output items by id under "resp:item:<item id>", for `item_reference` input items.
All of them are written in one step with one TTL, so the items live and expire with their response."""

from __future__ import annotations

import logging
from dataclasses import replace

import msgspec

from ...core.errors import BadRequest, GatewayError, Unavailable
from ...store import Store, StoreUnavailable
from . import ResponsesContext, items_to_messages
from .wire import ItemReference, Request, decode_item

log = logging.getLogger("searchhub.responses")
KEY_PREFIX = "resp:"
ITEM_PREFIX = KEY_PREFIX + "item:"  # under the response's namespace: same TTL, same lifetime
_encode = msgspec.json.encode
_decode = msgspec.json.decode


class Stored(msgspec.Struct):
    """What `store` keeps: the Response for GET, the chat conversation for previous_response_id."""

    response: dict
    messages: list[dict]


class StoredItem(msgspec.Struct):
    """One output item of a stored response, as the client received it, for `item_reference`."""

    response_id: str
    item: dict


def _unavailable() -> Unavailable:
    return Unavailable("stored responses are unavailable right now", code="store_unavailable")


async def load(store: Store, response_id: str) -> Stored | None:
    if ":" in response_id:
        return None  # never one of our ids ("resp_…"); keeps GET /v1/responses/item:… off the item keys
    try:
        raw = await store.get(KEY_PREFIX + response_id)
    except StoreUnavailable:
        raise _unavailable() from None
    if raw is None:
        return None
    try:
        return _decode(raw, type=Stored)
    except msgspec.DecodeError:
        log.warning("stored response %s is unreadable; treated as missing", response_id)
        return None


def _items(response: dict) -> list[dict]:
    """The output items a reference can name: every one with an id (msg_, ws_, rs_, fc_, ctc_)."""
    output = response.get("output")
    if not isinstance(output, list):
        return []
    return [item for item in output if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]]


async def save(store: Store, ttl: float, response: dict, ctx: ResponsesContext) -> None:
    """Keep a finished response and its output items; a store failure costs the continuation, never the answer."""
    messages = [*ctx.history, *items_to_messages(response["output"], ctx)]
    response_id = response["id"]
    entries = [(KEY_PREFIX + response_id, _encode(Stored(response, messages)))]
    entries += [(ITEM_PREFIX + item["id"], _encode(StoredItem(response_id, item))) for item in _items(response)]
    try:
        await store.set_many(entries, ttl)
    except Exception as e:  # StoreUnavailable or a bug in a backend: log it and answer anyway
        log.warning("response %s was not stored: %s", response_id, type(e).__name__)


async def history(store: Store, previous: str | None) -> list[dict] | None:
    """The chat history a request's `previous_response_id` continues; None without one."""
    if not previous:
        return None
    stored = await load(store, previous)
    if stored is None:
        raise GatewayError(f"Previous response with id '{previous}' not found.", status=404,
                           type="invalid_request_error", param="previous_response_id",
                           code="previous_response_not_found")
    return stored.messages


async def resolve_references(store: Store, request: Request, ttl: float) -> Request:
    """The request with each `item_reference` in `input` replaced by the stored output item it names,
    at the same index, so the translator handles it exactly like the item sent by value. An id that
    is unknown, expired or deleted is a 400 naming it, with `param` the reference's `input[i]`."""
    refs = {i: item.id for i, item in enumerate(request.items) if isinstance(item, ItemReference)}
    if not refs:
        return request
    wanted = list(dict.fromkeys(refs.values()))
    try:
        raw = await store.get_many([ITEM_PREFIX + ref for ref in wanted])
    except StoreUnavailable:
        raise _unavailable() from None
    found: dict[str, dict] = {}
    for ref, value in zip(wanted, raw, strict=True):
        if value is None:
            continue
        try:
            found[ref] = _decode(value, type=StoredItem).item
        except msgspec.DecodeError:
            log.warning("stored item %s is unreadable; treated as missing", ref[:120])
    resolved = list(request.items)
    for i, ref in refs.items():
        item = found.get(ref)
        if item is None:
            raise BadRequest(
                f"Item with id '{ref[:120]}' not found. Items are kept by id only with their stored response "
                f"(store not false), for {_duration(ttl)}, until it is deleted; send the item itself instead.",
                param=f"input[{i}]")
        resolved[i] = decode_item(item, at=f"input[{i}]")
    return replace(request, items=resolved)


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


async def delete(store: Store, response_id: str, stored: Stored | None = None) -> None:
    """Forget a response and, when `stored` (its loaded value) is given, its items by id too: the
    items first, so a failure leaves the response there for the client to delete again."""
    keys = [ITEM_PREFIX + item["id"] for item in _items(stored.response)] if stored is not None else []
    keys.append(KEY_PREFIX + response_id)
    try:
        for key in keys:
            await store.delete(key)
    except StoreUnavailable:
        raise _unavailable() from None
