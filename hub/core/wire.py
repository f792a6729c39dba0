"""Wire types decoded with msgspec: a validation error becomes a BadRequest whose param is the JSON path.

msgspec says what is wrong and where (`Expected `str`, got `int` - at `$.messages[0].role``); the
protocols' request checks (hub/protocols/*/request.py) turn that into the 400 each protocol answers
with, `param` naming the field as the client wrote it (`messages[0].role`, `input[2].call_id`).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from .errors import BadRequest

T = TypeVar("T")

_AT = re.compile(r" - at `\$\.?(.*)`$")
_MISSING = re.compile(r"^Object missing required field `([^`]+)`")


def convert(value: Any, kind: type[T], *, at: str = "", what: str = "request") -> T:
    """`value` decoded as `kind`, or a BadRequest naming the path; `at` is where `value` sits in the body."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as e:
        raise bad_request(str(e), at=at, what=what) from None


def bad_request(message: str, *, at: str = "", what: str = "request") -> BadRequest:
    """msgspec's error ("Expected `str`, got `int` - at `$.messages[0].role`") with its path, under
    `at`, as the param; `what` names the request in a message about the body as a whole."""
    found = _AT.search(message)
    path = join(at, found.group(1)) if found else at
    text = message[: found.start()] if found else message
    missing = _MISSING.match(text)
    if missing:
        path = join(path, missing.group(1))
        return BadRequest(f"'{path}' is required", param=path)
    if not path:
        return BadRequest(f"invalid {what}: {text}")
    return BadRequest(f"'{path}': {text}", param=path)


def join(path: str, inner: str) -> str:
    """A JSON path under another: join("input[2]", "call_id") is "input[2].call_id", join("tools", "[0]") "tools[0]"."""
    if not path or not inner:
        return path or inner
    return f"{path}{inner}" if inner.startswith("[") else f"{path}.{inner}"
