"""Random ids in the shapes the protocols use: one generator, the prefixes in their modules."""

from __future__ import annotations

import secrets
import string

_ALNUM = string.ascii_letters + string.digits


def random_alnum(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def new_id(prefix: str, n: int = 24, sep: str = "_") -> str:
    """prefix + sep + n random alphanumerics: OpenAI's "call_…", "resp_…", "msg_…" ids."""
    return prefix + sep + random_alnum(n)
