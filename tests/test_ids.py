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
