"""Wire types decoded with msgspec: a validation error becomes a BadRequest whose param is the JSON path.

msgspec says what is wrong and where (`Expected `str`, got `int` - at `$.messages[0].role``); the
protocols' request checks (hub/protocols/*/request.py) turn that into the 400 each protocol answers
with, `param` naming the field as the client wrote it (`messages[0].role`, `input[2].call_id`).
A value a `dec_hook` decodes with its own convert (a content block by its `type`) adds its location
to the message once more (`... - at `$.text` - at `$.messages[1].content[0]``): `located` joins them.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from .errors import BadRequest

T = TypeVar("T")

_AT = re.compile(r" - at `\$\.?([^`]*)`$")
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
    inner, text = located(message)
    path = join(at, inner)
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


def located(message: str) -> tuple[str, str]:
    """(path, problem) of msgspec's error: the path as msgspec writes it, without `$` ("" for the
    root); its locations, innermost first in the message, are read from the end, outermost first."""
    path = ""
    while found := _AT.search(message):
        path = join(path, found.group(1))
        message = message[: found.start()]
    return path, message


def missing_field(problem: str) -> str | None:
    """The field msgspec says is missing ("Object missing required field `x`"), else None."""
    found = _MISSING.match(problem)
    return found.group(1) if found else None
