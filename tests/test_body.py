"""routes/body.py: a request body's bytes -> a JSON object or a BadRequest, nesting capped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.core.errors import BadRequest
from routes.body import MAX_DEPTH, decode_body, too_deep

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=60,
)


def depth(value: object) -> int:
    """Containers on the longest path (a scalar: 0), the plain recursive way."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def nested(levels: int, leaf: object = 1) -> object:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


@given(JSON, st.integers(min_value=0, max_value=12))
def test_too_deep_agrees_with_the_recursive_depth(value: object, limit: int) -> None:
    assert too_deep(value, limit) == (depth(value) > limit)


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 5000])
def test_nesting_beyond_the_limit_is_a_bad_request(levels: int) -> None:
    raw = json.dumps({"model": "m", "messages": nested(levels - 1)}).encode() if levels < 900 else \
        b'{"model": "m", "messages": ' + b"[" * levels + b"]" * levels + b"}"
    if levels <= MAX_DEPTH:
        assert decode_body(raw)["model"] == "m"
        return
    with pytest.raises(BadRequest, match="nests deeper"):
        decode_body(raw)


def test_deep_branch_beside_wide_shallow_ones_is_found() -> None:
    """The deep path is one among many short ones (tools with small schemas, long histories)."""
    body = {"model": "m", "tools": [{"a": {"b": [1, 2, 3]}} for _ in range(200)], "x": nested(MAX_DEPTH + 3)}
    assert too_deep(body, MAX_DEPTH)
    body["x"] = nested(MAX_DEPTH - 2)
    assert not too_deep(body, MAX_DEPTH)
