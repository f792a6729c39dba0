"""What a backend's error says: its message (scrubbed, bounded) and whether it is about the request.

An error about the request (validation, context overflow) would fail the same way on every target:
it is answered to the client, never failed over and never a reason to cool the target. llama-cpp-
python answers a validation error with HTTP 500, so the text decides as much as the status.
"""

from __future__ import annotations

import json
import re

MAX_MESSAGE = 300

# Credential-looking tokens a backend may quote back (our own keys are replaced before this runs).
_SECRETS = re.compile(
    r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}|\b(?:sk|pk|rk|tvly|gsk|xai|key)-[A-Za-z0-9_-]{8,}"
    r"|(?<=[?&]key=)[^&\s\"']+|(?<=[?&]token=)[^&\s\"']+|(?<=[?&]api_key=)[^&\s\"']+"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")
_VALIDATION = re.compile(
    r"(?i)input should be|validation error|field required|extra inputs are not permitted|"
    r"value is not a valid|is not of type|invalid (?:type|value|request)|unprocessable|"
    r"must be (?:a |an |one of)|unsupported (?:parameter|value)|unknown (?:field|parameter)|"
    r"messages?\b.*\b(?:invalid|required|expected)|expected .* got"
)
_OVERFLOW = re.compile(
    r"(?i)context (?:length|size|window)|maximum context|exceeds? (?:the )?(?:available )?context|"
    r"too many tokens|prompt is too long|requested tokens .* exceed|n_ctx|context_length_exceeded|"
    r"exceed_context_size"
)

# How vLLM, llama.cpp and OpenAI word a context overflow, with the numbers they give.
_CONTEXT_MAX = re.compile(r"maximum context length is (\d+) tokens", re.I)
_CONTEXT_INPUT = re.compile(r"(?:request has|you requested) (\d+) (?:input )?tokens", re.I)
_CONTEXT_SPLIT = re.compile(r"(\d+) in the messages, (\d+) in the completion", re.I)
_COMPLETION_TOO_LARGE = re.compile(r"max_(?:completion_)?tokens'?.{0,40}too large", re.I | re.S)
_CONTEXT_WORDS = re.compile(r"context (?:length|size|window)|too many tokens|prompt is too long", re.I)


def error_message(body: bytes | None) -> tuple[str, dict]:
    """The message of an error body (OpenAI, vLLM, llama.cpp, llama-cpp-python/FastAPI, Ollama shapes)
    and its error object; the message is unscrubbed: pass it through `scrub`."""
    if not body:
        return "", {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", errors="replace").strip()
        return ("" if text.startswith("<") else text), {}  # an HTML error page says nothing useful
    if isinstance(data, str):
        return data, {}
    if not isinstance(data, dict):
        return "", {}
    err = data.get("error", data)
    if isinstance(err, str):
        return err, data
    if not isinstance(err, dict):
        return "", {}
    message = err.get("message") or err.get("detail") or err.get("msg") or ""
    if isinstance(message, list):  # FastAPI/pydantic: [{"loc": [...], "msg": "...", "type": ...}]
        parts = []
        for d in message[:3]:
            if isinstance(d, dict):
                loc = ".".join(str(x) for x in d.get("loc", ()) if x != "body")
                parts.append(f"{loc}: {d.get('msg', '')}" if loc else str(d.get("msg", "")))
        message = "; ".join(parts)
    return str(message), err


def scrub(message: str) -> str:
    """Bounded, single-line, without control characters or credential-looking tokens."""
    message = _SECRETS.sub(lambda m: (m.group(1) or "") + "****", message)
    message = _CONTROL.sub(" ", message).replace("\n", " ").strip()
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return message


def request_kind(status: int | None, message: str, err: dict) -> str | None:
    """"context_overflow" or "validation" when the error is about the request, else None."""
    if isinstance(err.get("n_prompt_tokens"), int) and isinstance(err.get("n_ctx"), int):
        return "context_overflow"
    code = str(err.get("code") or err.get("type") or "")
    if _OVERFLOW.search(message) or _OVERFLOW.search(code):
        return "context_overflow"
    if status in (400, 413, 422):
        return "validation"
    if status is not None and status >= 500 and _VALIDATION.search(message):
        return "validation"  # llama-cpp-python answers pydantic errors with 500
    return None


def context_overflow(status: int | None, body: bytes | None) -> tuple[str, int | None, int | None] | None:
    """("prompt" | "completion", prompt tokens, context length) when a backend's 4xx says the context
    is exceeded; "completion" means the prompt fits and only max_tokens does not (vLLM)."""
    if status not in (400, 413, 422):
        return None
    message, err = error_message(body)
    if isinstance(err.get("n_prompt_tokens"), int) and isinstance(err.get("n_ctx"), int):  # llama.cpp
        return "prompt", err["n_prompt_tokens"], err["n_ctx"]
    limit = int(m.group(1)) if (m := _CONTEXT_MAX.search(message)) else None
    if (m := _CONTEXT_SPLIT.search(message)) is not None:  # older vLLM: prompt + completion requested
        prompt = int(m.group(1))
        return ("prompt" if limit is not None and prompt >= limit else "completion"), prompt, limit
    prompt = int(m.group(1)) if (m := _CONTEXT_INPUT.search(message)) else None
    if _COMPLETION_TOO_LARGE.search(message):
        return "completion", prompt, limit
    if limit is not None or err.get("code") == "context_length_exceeded" or _CONTEXT_WORDS.search(message):
        return "prompt", prompt, limit
    return None
