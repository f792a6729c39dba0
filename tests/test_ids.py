"""Random ids: shape, alphabet, and every character equally likely."""

from __future__ import annotations

import string
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from hub.core.ids import new_id, random_alnum

ALNUM = set(string.ascii_letters + string.digits)


@given(st.integers(min_value=0, max_value=300))
def test_length_and_alphabet(n: int) -> None:
    s = random_alnum(n)
    assert len(s) == n
    assert set(s) <= ALNUM


def test_prefix_shape() -> None:
    rid = new_id("req")
    assert rid.startswith("req_") and len(rid) == 28 and set(rid[4:]) <= ALNUM
    assert new_id("req") != rid


def test_characters_are_uniform() -> None:
    # 62,000 characters: each of the 62 is expected 1,000 times (sd ~31); a biased map (b % 62 over
    # all 256 byte values) would give the first 8 characters ~1,290 each.
    counts = Counter(random_alnum(62_000))
    assert set(counts) == ALNUM
    assert max(counts.values()) < 1150 and min(counts.values()) > 850


def test_a_forked_worker_does_not_repeat_its_parents_characters() -> None:
    # ids come from a pool of random characters (hub/core/ids.py): a worker forked with the pool
    # half used must draw fresh ones, or two workers would hand out the same ids
    import os

    random_alnum(10)  # the pool is filled and partly used
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, back through the pipe
        os.write(write, random_alnum(64).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    assert len(child) == 64 and child != random_alnum(64)


def test_ids_never_repeat_across_pool_refills() -> None:
    ids = [new_id("req") for _ in range(20_000)]  # ~120 refills of the pool
    assert len(set(ids)) == len(ids)
