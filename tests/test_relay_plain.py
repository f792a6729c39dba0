"""hub/streams/relay.py reads two things off a chunk's bytes without decoding it: whether the normalizer
would leave it as it is (`plain`), and whether it carries usage. Both must agree with the decoded
chunk, whatever the JSON spacing."""

from __future__ import annotations

import copy
import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.backends.normalize import StreamNormalizer
from hub.streams.relay import _has_usage, plain

_delta = st.fixed_dictionaries({}, optional={
    "content": st.one_of(st.none(), st.text(max_size=8), st.sampled_from(['"role"', "finish_reason", "usage"])),
    "role": st.just("assistant"),
    "reasoning_content": st.text(max_size=4),
    "reasoning": st.text(max_size=4),
    "tool_calls": st.just([{"index": 0, "function": {"arguments": "{}"}}]),
    "function_call": st.just({"arguments": "x"}),
})
_chunk = st.fixed_dictionaries(
    {"id": st.just("c"), "object": st.just("chat.completion.chunk"),
     "choices": st.lists(st.fixed_dictionaries({"index": st.just(0), "delta": _delta,
                                                "finish_reason": st.sampled_from([None, "stop", "length"])}),
                         max_size=1)},
    optional={"usage": st.one_of(st.none(), st.just({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})),
              "error": st.just({"message": "x"})},
)


def encodings(chunk: dict) -> list[bytes]:
    """As backends write it: compact (vLLM, llama.cpp) or with spaces (Python servers)."""
    return [msgspec.json.encode(chunk), json.dumps(chunk).encode(), json.dumps(chunk, ensure_ascii=False).encode()]


@settings(max_examples=400, deadline=None)
@given(_chunk)
def test_plain_chunks_are_those_the_normalizer_leaves_alone(chunk: dict) -> None:
    for data in encodings(chunk):
        assert _has_usage(data) == isinstance(chunk.get("usage"), dict)
        if not plain(data):
            continue
        normalizer = StreamNormalizer()
        normalizer.feed({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]})
        decoded = msgspec.json.decode(data)
        fixed = normalizer.feed(copy.deepcopy(decoded))
        # unchanged, but for choices that carry nothing, which the normalizer drops (the relay
        # passes their empty delta on: harmless)
        if fixed is None:
            assert not _carried(decoded)["choices"] and decoded.get("usage") is None
        else:
            assert _carried(fixed) == _carried(decoded)


def _carried(chunk: dict) -> dict:
    return {**chunk, "choices": [c for c in chunk["choices"] if any(c["delta"].values())]}


def test_what_plain_looks_for() -> None:
    text = {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
    for data in encodings(text):
        assert plain(data)
    for delta in ({"role": "assistant"}, {"tool_calls": []}, {"reasoning_content": "r"}, {"function_call": {}}):
        for data in encodings({**text, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}):
            assert not plain(data)
    for data in encodings({**text, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}):
        assert not plain(data)
    for data in encodings({**text, "error": {"message": "x"}}):
        assert not plain(data)
