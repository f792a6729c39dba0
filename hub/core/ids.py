"""Random ids in the shapes the protocols use: one generator, the prefixes in their modules."""

from __future__ import annotations

import secrets
import string

_ALNUM = string.ascii_letters + string.digits
# One random byte -> one character: the 248 values below 4 x 62 map evenly onto the alphabet, the
# other 8 are dropped, so every character is equally likely (one urandom read per id, not one per
# character: the request id is made on every request).
_KEEP = 4 * len(_ALNUM)
_TABLE = bytes(ord(_ALNUM[b % len(_ALNUM)]) if b < _KEEP else 0 for b in range(256))
_DROP = bytes(range(_KEEP, 256))


def random_alnum(n: int) -> str:
    out = b""
    while len(out) < n:
        out += secrets.token_bytes(n + 8).translate(_TABLE, _DROP)
    return out[:n].decode("ascii")


def new_id(prefix: str, n: int = 24, sep: str = "_") -> str:
    """prefix + sep + n random alphanumerics: OpenAI's "call_…", "resp_…", "msg_…" ids."""
    return prefix + sep + random_alnum(n)
