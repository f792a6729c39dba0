"""Token usage when the backend reports none (llama.cpp-family streams): an estimate, never zeros.

About four characters of prompt per token; a streamed answer counts one token per content chunk
(llama.cpp-family servers send one token per chunk). Every estimate is logged and counted in
`searchhub_estimated_usage_total`, so it is never mistaken for a measurement.
"""

from __future__ import annotations

import logging

import msgspec

from ..observability import metrics

log = logging.getLogger("searchhub.usage")
_encode = msgspec.json.encode


def prompt_tokens(messages: object, tools: object = None) -> int:
    size = 0
    for part in (messages, tools):
        if part:
            try:
                size += len(_encode(part))
            except (TypeError, ValueError, OverflowError):
                size += len(str(part))
    return max(1, size // 4)


def estimate(provider: str, prompt: int, completion: int) -> dict:
    """An OpenAI usage object from estimated counts, logged and counted as an estimate."""
    completion = max(completion, 0)
    metrics.ESTIMATED_USAGE.inc()
    log.info("usage estimated (the backend %s reported none): prompt %d, completion %d tokens",
             provider, prompt, completion)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def text_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def missing(usage: object) -> bool:
    """No usage, or the all-zero usage some servers send instead of none."""
    return not isinstance(usage, dict) or not any(
        isinstance(usage.get(k), int) and usage[k] > 0 for k in ("prompt_tokens", "completion_tokens"))
