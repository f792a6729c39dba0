"""Random ids in the shapes the protocols use: one generator, the prefixes in their modules."""

from __future__ import annotations

import os
import string
import threading

_ALNUM = string.ascii_letters + string.digits
# One random byte -> one character: the 248 values below 4 x 62 map evenly onto the alphabet, the
# other 8 are dropped, so every character is equally likely (one urandom read per id, not one per
# character: the request id is made on every request).
_KEEP = 4 * len(_ALNUM)
_TABLE = bytes(ord(_ALNUM[b % len(_ALNUM)]) if b < _KEEP else 0 for b in range(256))
_DROP = bytes(range(_KEEP, 256))


_POOL_BYTES = 4096  # one urandom read makes ~3,900 characters: ~160 request ids


class _Pool:
    """Random alphanumerics from the OS's CSPRNG, read 4 KiB at a time: an id is a slice, not a
    system call (os.urandom per id was ~10 % of the request middleware's own time, bench/README.md)."""

    def __init__(self) -> None:
        self.chars, self.at = "", 0
        self.lock = threading.Lock()  # ids are made on worker threads too

    def take(self, n: int) -> str:
        with self.lock:
            at = self.at
            if at + n > len(self.chars):
                fresh = ""
                while len(fresh) < n:
                    fresh += os.urandom(_POOL_BYTES).translate(_TABLE, _DROP).decode("ascii")
                self.chars, at = fresh, 0
            self.at = at + n
            return self.chars[at:at + n]


_pool = _Pool()


def _forked() -> None:
    global _pool
    _pool = _Pool()  # a forked worker must not hand out its parent's characters


os.register_at_fork(after_in_child=_forked)


def random_alnum(n: int) -> str:
    return _pool.take(n)


def new_id(prefix: str, n: int = 24, sep: str = "_") -> str:
    """prefix + sep + n random alphanumerics: OpenAI's "call_…", "resp_…", "msg_…" ids."""
    return prefix + sep + random_alnum(n)
