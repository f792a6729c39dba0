"""What the hub pipeline hands to the protocol encoders besides OpenAI chat chunks.

The internal form is OpenAI Chat Completions: requests are chat request dicts, streams are
`chat.completion.chunk` dicts. Server-side search activity, which chat cannot express, travels
beside the chunks as these events, so the Responses and Messages encoders can show it as
`web_search_call` items or `server_tool_use` / `web_search_tool_result` blocks.

A pipeline stream yields: a chunk (`dict`); a `list` of chunks, in order (what one upstream read
brought: the encoders handle a read in one go, not chunk by chunk); `bytes` of framed chat SSE
(only for a plain relay the encoder asked for, hub/streams/relay.py `Frames`); and the events below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from .base import ToolCall

if TYPE_CHECKING:
    from ..config.keys import ApiKey
    from ..observability.trace import Trace
    from ..search.metered import SearchBill


def chunks_in(item: object) -> list[dict]:
    """The chat chunks a pipeline stream item carries: one for a chunk, several for a list of
    them, none for anything else."""
    if isinstance(item, dict):
        return [item]
    return item if isinstance(item, list) else []


@dataclass(slots=True)
class ToolStarted:
    """A server tool call began (its arguments are known, its result is not)."""

    call: ToolCall


@dataclass(slots=True)
class ToolFinished:
    """A server tool call ended; `call.result` is set (a failure is a result too)."""

    call: ToolCall


@dataclass(slots=True)
class Keepalive:
    """Nothing to say yet (searches running): encoders emit an SSE comment / ping."""


class Options(msgspec.Struct):
    """Per-request knobs the protocol endpoints pass to the pipeline."""

    force_search: bool | None = None  # True/False: client override; None: policy decides
    force_call: bool = False  # the client's tool_choice forces its hosted search: the model must call it
    hosted: dict[str, Any] = msgspec.field(default_factory=dict)  # the client's hosted tool offers, by tool name (ToolRequest.hosted)
    chain_id: str | None = None  # client-supplied (x-searchhub-chain)
    client_key: str = ""  # identifies the caller for chain hashing (never logged)
    client_agent: str = ""  # the User-Agent: with the key, which client a side request comes from
    frames: bool = False  # the encoder takes pre-framed chat SSE (`bytes` items) for a plain relay
    trace: Trace | None = None  # filled as the request runs (hub/observability/trace.py); None when nothing records
    key: ApiKey | None = None  # the gateway key that called: its search budget and cost
    bill: SearchBill | None = None  # what this request's searches cost (reported by routes/app.py)
    citation_content: bool = False  # url_citation annotations carry the cited source's text (OpenRouter's shape)


class Outcome(msgspec.Struct):
    """A non-streaming pipeline result: the final chat completion (usage summed over rounds,
    `message.annotations` with url_citations) and the server tool calls that ran, in order."""

    response: dict
    calls: list[ToolCall] = msgspec.field(default_factory=list)
    target: str = ""
