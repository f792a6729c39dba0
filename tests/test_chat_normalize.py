"""hub/backends/normalize.py: backend quirks (vLLM, Ollama, llama.cpp) normalized into OpenAI's Chat shape."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._models import construct_type
from openai.lib.streaming._deltas import accumulate_delta
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from hub.backends.normalize import StreamNormalizer, ToolCallAssembler, new_call_id, normalize_completion

CALL_ID = re.compile(r"call_[A-Za-z0-9]{24}")


def _chunk(choices: list[dict], *, model: str = "m", cid: str = "chatcmpl-1", **extra: object) -> dict:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1795359884,
        "model": model,
        "choices": choices,
        **extra,
    }


def _delta(delta: dict, finish: str | None = None, **extra: object) -> dict:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, **extra}


def _normalize(chunks: list[dict]) -> list[dict]:
    normalizer = StreamNormalizer()
    out = [normalizer.feed(copy.deepcopy(chunk)) for chunk in chunks]
    return [chunk for chunk in out if chunk is not None]


def _assemble(chunks: list[dict]) -> list[dict]:
    assembler = ToolCallAssembler()
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            assembler.add(choice["delta"].get("tool_calls") or [])
    return assembler.calls()


def _sdk_final(chunks: list[dict]):
    """What `client.chat.completions.stream()` would hand a user for this stream."""
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=chunk))
    return state.get_final_completion()


def _finish(chunks: list[dict], choice: int = 0) -> str | None:
    reasons = [c["finish_reason"] for ch in chunks for c in ch["choices"] if c["index"] == choice]
    return [r for r in reasons if r][-1]


# --- recorded-style streams ---------------------------------------------------------------------


def _sse(transcript: str) -> list[dict]:
    """Chunks from a literal SSE transcript, as a backend would send them."""
    lines = [line.removeprefix("data: ") for line in transcript.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


VLLM_ID = "chatcmpl-tool-4f0c8a1e9b2d4c6a8e0f1a2b3c4d5e6f"

VLLM_PARALLEL = _sse(
    r"""
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-4f0c8a1e9b2d4c6a8e0f1a2b3c4d5e6f","type":"function","index":0,"function":{"name":"web_search","arguments":""}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\": \"rust"}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" release\"}"}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-b","type":"function","index":1,"function":{"name":"web_search","arguments":""}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"query\": \"go"}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795359884,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" release\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}
data: [DONE]
"""
)

# Hermes parser, parameterless tool: no arguments are ever streamed
VLLM_HERMES_NO_ARGUMENTS = _sse(
    r"""
data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1795359884,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1795359884,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-4f0c8a1e9b2d4c6a8e0f1a2b3c4d5e6f","type":"function","index":0,"function":{"name":"get_time"}}]},"logprobs":null,"finish_reason":null}]}
data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1795359884,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}
data: [DONE]
"""
)

OLLAMA_TOOL_STREAM = _sse(
    r"""
data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1795359884,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me"},"finish_reason":null}]}
data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1795359884,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":" check."},"finish_reason":null}]}
data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1795359884,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_icagibop","index":0,"type":"function","function":{"name":"web_search","arguments":"{\"query\":\"paris weather\"}"}}]},"finish_reason":null}]}
data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1795359884,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}
data: [DONE]
"""
)

LLAMACPP_STREAM = _sse(
    r"""
data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1795359884,"id":"chatcmpl-x7","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abc","object":"chat.completion.chunk"}
data: {"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"Y3n2Zk8pQ1","type":"function","function":{"name":"web_search","arguments":"{\""}}]}}],"created":1795359884,"id":"chatcmpl-x7","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abc","object":"chat.completion.chunk"}
data: {"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"query\":\"llama"}}]}}],"created":1795359884,"id":"chatcmpl-x7","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abc","object":"chat.completion.chunk"}
data: {"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":".cpp\"}"}}]}}],"created":1795359884,"id":"chatcmpl-x7","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abc","object":"chat.completion.chunk"}
data: {"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}],"created":1795359884,"id":"chatcmpl-x7","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abc","object":"chat.completion.chunk","usage":{"completion_tokens":12,"prompt_tokens":80,"total_tokens":92},"timings":{"prompt_n":80,"predicted_n":12}}
data: [DONE]
"""
)


def _web_search_call(call_id: str, arguments: str) -> dict:
    """A whole web_search tool call, as the assembled stream holds it."""
    return {"id": call_id, "type": "function", "function": {"name": "web_search", "arguments": arguments}}


def test_vllm_fragments_pass_through_and_reassemble():
    out = _normalize(VLLM_PARALLEL)
    assert len(out) == len(VLLM_PARALLEL)
    calls = _assemble(out)
    assert [c["id"] for c in calls] == [VLLM_ID, "chatcmpl-tool-b"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"query": "rust release"},
        {"query": "go release"},
    ]
    assert "stop_reason" not in out[-1]["choices"][0]
    assert _finish(out) == "tool_calls"


def test_vllm_last_fragment_in_finish_chunk_is_kept():
    out = _normalize(VLLM_PARALLEL)
    last = out[-1]["choices"][0]
    assert last["finish_reason"] == "tool_calls"
    assert last["delta"]["tool_calls"] == [{"index": 1, "function": {"arguments": ' release"}'}}]
    final = _sdk_final(out)
    assert [t.function.arguments for t in final.choices[0].message.tool_calls] == [
        '{"query": "rust release"}',
        '{"query": "go release"}',
    ]


def test_vllm_hermes_missing_arguments_become_empty_object():
    out = _normalize(VLLM_HERMES_NO_ARGUMENTS)
    assert _assemble(out)[0]["function"] == {"name": "get_time", "arguments": "{}"}
    final = _sdk_final(out).choices[0]
    assert final.finish_reason == "tool_calls"
    assert final.message.tool_calls[0].function.arguments == "{}"
    assert final.message.tool_calls[0].id == VLLM_ID


def test_vllm_stop_with_streamed_tool_calls_becomes_tool_calls():
    chunks = copy.deepcopy(VLLM_PARALLEL)
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    assert _finish(_normalize(chunks)) == "tool_calls"


def test_text_stream_keeps_stop_and_usage_chunk_passes():
    chunks = [
        _chunk([_delta({"role": "assistant", "content": ""})]),
        _chunk([_delta({"content": "Rust 1.91.0 "})]),
        _chunk([_delta({}, "stop")]),
        _chunk([], usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
    ]
    out = _normalize(chunks)
    assert out == chunks
    assert _finish(out) == "stop"


def test_length_finish_is_kept_even_with_tool_calls():
    chunks = copy.deepcopy(VLLM_PARALLEL)
    chunks[-1]["choices"][0]["finish_reason"] = "length"
    assert _finish(_normalize(chunks)) == "length"


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "boom", "type": "server_error", "param": None, "code": 500}},
        {"object": "error", "message": "bad", "type": "BadRequestError", "param": None, "code": 400},
    ],
)
def test_stream_errors_pass_untouched(body):
    assert StreamNormalizer().feed(copy.deepcopy(body)) == body


def test_reasoning_is_renamed_in_deltas():
    out = _normalize(
        [
            _chunk([_delta({"role": "assistant", "reasoning": "Think"})]),
            _chunk([_delta({"reasoning": "ing", "reasoning_content": "ing"})]),
            _chunk([_delta({"reasoning_content": "!"})]),
        ]
    )
    deltas = [c["choices"][0]["delta"] for c in out]
    assert deltas == [
        {"role": "assistant", "reasoning_content": "Think"},
        {"reasoning_content": "ing"},
        {"reasoning_content": "!"},
    ]


def test_ollama_repeated_role_is_sent_once():
    out = _normalize(OLLAMA_TOOL_STREAM)
    roles = [c["choices"][0]["delta"].get("role") for c in out]
    assert roles == ["assistant", None, None, None]
    final = _sdk_final(out)
    assert final.choices[0].message.role == "assistant"
    assert final.choices[0].message.content == "Let me check."


def test_raw_ollama_stream_would_break_the_sdk():
    """Why the normalizer exists: the SDK concatenates the repeated role."""
    assert _sdk_final(copy.deepcopy(OLLAMA_TOOL_STREAM)).choices[0].message.role != "assistant"


def test_ollama_whole_tool_call_in_one_chunk():
    out = _normalize(OLLAMA_TOOL_STREAM)
    calls = _assemble(out)
    assert calls == [_web_search_call("call_icagibop", '{"query":"paris weather"}')]
    assert _finish(out) == "tool_calls"
    final = _sdk_final(out).choices[0].message.tool_calls
    assert [(t.id, t.function.name) for t in final] == [("call_icagibop", "web_search")]


def test_old_ollama_stop_after_tool_calls_becomes_tool_calls():
    chunks = copy.deepcopy(OLLAMA_TOOL_STREAM)
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    assert _finish(_normalize(chunks)) == "tool_calls"


def _ollama_whole_calls(index_of: list[int | None]) -> list[dict]:
    chunks = [_chunk([_delta({"role": "assistant", "content": ""})])]
    for n, index in enumerate(index_of):
        call = _web_search_call(f"call_{n}abcdefg", json.dumps({"query": f"q{n}"}))
        if index is not None:
            call["index"] = index
        chunks.append(_chunk([_delta({"role": "assistant", "content": "", "tool_calls": [call]})]))
    chunks.append(_chunk([_delta({"role": "assistant", "content": ""}, "tool_calls")]))
    return chunks


@pytest.mark.parametrize("indexes", [[0, 1, 2], [0, 0, 0], [None, None, None], [2, 5, 9]])
def test_several_whole_calls_get_distinct_dense_indexes(indexes):
    out = _normalize(_ollama_whole_calls(indexes))
    sent = [f["index"] for c in out for f in c["choices"][0]["delta"].get("tool_calls", [])]
    assert sent == [0, 1, 2]
    calls = _assemble(out)
    assert [c["id"] for c in calls] == ["call_0abcdefg", "call_1abcdefg", "call_2abcdefg"]
    assert [json.loads(c["function"]["arguments"])["query"] for c in calls] == ["q0", "q1", "q2"]
    final = _sdk_final(out).choices[0].message.tool_calls
    assert [t.id for t in final] == ["call_0abcdefg", "call_1abcdefg", "call_2abcdefg"]
    assert [t.function.name for t in final] == ["web_search"] * 3


def test_arguments_object_and_index_inside_function_native_ollama():
    chunks = [
        _chunk([_delta({"role": "assistant", "content": ""})]),
        _chunk(
            [
                _delta(
                    {
                        "tool_calls": [
                            {
                                "id": "call_x",
                                "function": {
                                    "index": 0,
                                    "name": "web_search",
                                    "arguments": {"query": "Paris", "count": 3},
                                },
                            }
                        ]
                    }
                )
            ]
        ),
        _chunk([_delta({}, "stop")]),
    ]
    out = _normalize(chunks)
    fragment = out[1]["choices"][0]["delta"]["tool_calls"][0]
    assert fragment == {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "web_search", "arguments": '{"query": "Paris", "count": 3}'},
    }
    assert _finish(out) == "tool_calls"


def test_only_role_chunk_is_dropped():
    normalizer = StreamNormalizer()
    assert normalizer.feed(_chunk([_delta({"role": "assistant", "content": "hi"})])) is not None
    assert normalizer.feed(_chunk([_delta({"role": "assistant"})])) is None
    assert normalizer.feed(_chunk([_delta({"role": "assistant", "content": ""})])) is not None


def test_first_chunk_gets_a_role_when_the_backend_omits_it():
    out = _normalize([_chunk([_delta({"content": "hi"})]), _chunk([_delta({"content": "!"}, "stop")])])
    assert out[0]["choices"][0]["delta"] == {"role": "assistant", "content": "hi"}
    assert _sdk_final(out).choices[0].message.role == "assistant"


def test_llamacpp_stream():
    out = _normalize(LLAMACPP_STREAM)
    calls = _assemble(out)
    assert calls == [_web_search_call("Y3n2Zk8pQ1", '{"query":"llama.cpp"}')]
    assert out[-1]["usage"]["total_tokens"] == 92
    assert _finish(out) == "tool_calls"
    assert _sdk_final(out).choices[0].message.tool_calls[0].id == "Y3n2Zk8pQ1"


def test_missing_ids_are_synthesized_once_per_index():
    chunks = copy.deepcopy(LLAMACPP_STREAM)
    del chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"]
    out = _normalize(chunks)
    ids = [f.get("id") for c in out for f in c["choices"][0]["delta"].get("tool_calls", [])]
    assert CALL_ID.fullmatch(ids[0]) and ids[1:] == [None, None]
    assert _assemble(out)[0]["id"] == ids[0]
    assert _sdk_final(out).choices[0].message.tool_calls[0].id == ids[0]


def test_empty_id_and_missing_type_are_fixed():
    chunks = copy.deepcopy(LLAMACPP_STREAM)
    first = chunks[1]["choices"][0]["delta"]["tool_calls"][0]
    first["id"] = ""
    del first["type"]
    fragment = _normalize(chunks)[1]["choices"][0]["delta"]["tool_calls"][0]
    assert CALL_ID.fullmatch(fragment["id"]) and fragment["type"] == "function"


def test_ids_and_names_repeated_on_every_fragment_are_sent_once():
    chunks = [_chunk([_delta({"role": "assistant"})])]
    for part in ['{"query":', ' "x"', "}"]:
        chunks.append(
            _chunk(
                [
                    _delta(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_same",
                                    "type": "function",
                                    "function": {"name": "web_search", "arguments": part},
                                }
                            ]
                        }
                    )
                ]
            )
        )
    chunks.append(_chunk([_delta({}, "tool_calls")]))
    out = _normalize(chunks)
    later = [c["choices"][0]["delta"]["tool_calls"][0] for c in out[2:4]]
    assert all(set(f) == {"index", "function"} and set(f["function"]) == {"arguments"} for f in later)
    tool_call = _sdk_final(out).choices[0].message.tool_calls[0]
    assert (tool_call.id, tool_call.function.name) == ("call_same", "web_search")
    assert tool_call.function.arguments == '{"query": "x"}'


def test_missing_fragment_index_continues_the_last_call():
    chunks = [
        _chunk([_delta({"role": "assistant"})]),
        _chunk(
            [
                _delta(
                    {"tool_calls": [{"id": "call_a", "function": {"name": "web_search", "arguments": '{"q'}}]}
                )
            ]
        ),
        _chunk([_delta({"tool_calls": [{"function": {"arguments": '": "a"}'}}]})]),
        _chunk([_delta({"tool_calls": [{"id": "call_b", "function": {"name": "web_search"}}]})]),
        _chunk([_delta({"tool_calls": [{"function": {"arguments": '{"q": "b"}'}}]})]),
        _chunk([_delta({}, "tool_calls")]),
    ]
    out = _normalize(chunks)
    assert all("index" in f for c in out for f in c["choices"][0]["delta"].get("tool_calls", []))
    assert [(c["id"], c["function"]["arguments"]) for c in _assemble(out)] == [
        ("call_a", '{"q": "a"}'),
        ("call_b", '{"q": "b"}'),
    ]


def test_choices_are_tracked_separately():
    normalizer = StreamNormalizer()
    first = normalizer.feed(
        _chunk(
            [
                {"index": 0, "delta": {"role": "assistant", "content": "a"}, "finish_reason": None},
                {
                    "index": 1,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [{"index": 0, "function": {"name": "web_search", "arguments": "{}"}}],
                    },
                    "finish_reason": None,
                },
            ]
        )
    )
    assert [c["delta"]["role"] for c in first["choices"]] == ["assistant", "assistant"]
    last = normalizer.feed(
        _chunk(
            [
                {"index": 0, "delta": {}, "finish_reason": "stop"},
                {"index": 1, "delta": {}, "finish_reason": "stop"},
            ]
        )
    )
    assert [c["finish_reason"] for c in last["choices"]] == ["stop", "tool_calls"]


# --- non-streaming ------------------------------------------------------------------------------


def _completion(message: dict, finish: str | None = "stop", **choice_extra: object) -> dict:
    return {
        "id": "chatcmpl-9f1c",
        "object": "chat.completion",
        "created": 1795359884,
        "model": "qwen3-32b",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "logprobs": None,
                "finish_reason": finish,
                **choice_extra,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def test_new_call_id_format():
    ids = {new_call_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(CALL_ID.fullmatch(i) for i in ids)


def test_completion_tool_call_fixes():
    resp = _completion(
        {
            "content": "",
            "tool_calls": [
                {"function": {"name": "web_search", "arguments": {"query": "x"}}},
                {
                    "id": "",
                    "type": "function",
                    "function": {"name": "web_search", "arguments": '{"query": "y"}'},
                },
                {"id": "call_dup", "function": {"name": "get_time"}},
                {"id": "call_dup", "function": {"name": "get_time", "arguments": None}},
            ],
        },
        finish="stop",
    )
    out = normalize_completion(resp)
    choice = out["choices"][0]
    calls = choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert calls[0]["function"]["arguments"] == '{"query": "x"}'
    assert all(c["type"] == "function" for c in calls)
    assert CALL_ID.fullmatch(calls[0]["id"]) and CALL_ID.fullmatch(calls[1]["id"])
    assert calls[2]["id"] == "call_dup" and CALL_ID.fullmatch(calls[3]["id"])
    assert [c["function"]["arguments"] for c in calls[2:]] == ["{}", "{}"]
    assert len({c["id"] for c in calls}) == 4


@pytest.mark.parametrize("finish", [None, "stop"])
def test_completion_finish_reason_follows_tool_calls(finish):
    resp = _completion(
        {
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{}"}}
            ]
        },
        finish,
    )
    assert normalize_completion(resp)["choices"][0]["finish_reason"] == "tool_calls"


def test_completion_without_tool_calls_is_left_alone():
    resp = _completion({"content": "hello", "tool_calls": []})  # vLLM always sends the list
    expected = copy.deepcopy(resp)
    assert normalize_completion(resp) == expected
    resp = _completion({"content": "cut"}, finish="length")
    assert normalize_completion(resp)["choices"][0]["finish_reason"] == "length"


def test_completion_vllm_extras_and_reasoning():
    resp = _completion({"content": "4", "reasoning": "2+2", "tool_calls": []}, stop_reason=None)
    resp.update(prompt_logprobs=None, kv_transfer_params=None)
    out = normalize_completion(resp)
    assert "prompt_logprobs" not in out and "kv_transfer_params" not in out
    assert "stop_reason" not in out["choices"][0]
    assert out["choices"][0]["message"]["reasoning_content"] == "2+2"
    assert "reasoning" not in out["choices"][0]["message"]


def test_completion_reasoning_content_wins_over_reasoning():
    resp = _completion({"content": "4", "reasoning": "old", "reasoning_content": "kept"})
    assert normalize_completion(resp)["choices"][0]["message"]["reasoning_content"] == "kept"


@pytest.mark.parametrize(
    "body",
    [
        {
            "object": "error",
            "message": '"auto" tool choice requires --enable-auto-tool-choice',
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        {"error": {"message": "model not found", "type": "not_found_error", "param": None, "code": None}},
    ],
)
def test_error_bodies_are_not_completions(body):
    expected = copy.deepcopy(body)
    assert normalize_completion(body) == expected


def test_ollama_completion_is_valid_for_the_sdk():
    from openai.types.chat import ChatCompletion

    resp = normalize_completion(
        _completion(
            {
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_o",
                        "index": 0,
                        "type": "function",
                        "function": {"name": "web_search", "arguments": {"query": "x"}},
                    }
                ],
            },
            finish="stop",
        )
    )
    parsed = ChatCompletion.model_validate(resp)
    assert parsed.choices[0].finish_reason == "tool_calls"
    assert json.loads(parsed.choices[0].message.tool_calls[0].function.arguments) == {"query": "x"}


# --- properties ---------------------------------------------------------------------------------


@st.composite
def _fragmented_calls(draw):
    """1-3 calls, each with its arguments text cut into fragments, interleaved as a backend might."""
    n_calls = draw(st.integers(min_value=1, max_value=3))
    calls = []
    for n in range(n_calls):
        text = draw(
            st.one_of(
                st.text(max_size=60),
                st.dictionaries(st.text(max_size=6), st.text(max_size=10) | st.integers(), max_size=4).map(
                    json.dumps
                ),
            )
        )
        cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=6)))
        bounds = [0, *cuts, len(text)]
        pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        call_id = draw(st.sampled_from([f"call_{n}x", "", None]))
        calls.append({"text": text, "pieces": pieces, "id": call_id, "name": f"tool_{n}"})
    # interleave: a merge of the per-call fragment queues, order drawn by hypothesis
    queues = [[(n, k) for k in range(len(c["pieces"]) + 1)] for n, c in enumerate(calls)]
    order = []
    while any(queues):
        live = [q for q in queues if q]
        order.append(draw(st.sampled_from(live)).pop(0))
    tail_in_finish = draw(st.booleans())
    return calls, order, tail_in_finish


def _fragment_stream(calls: list[dict], order: list[tuple[int, int]], tail_in_finish: bool) -> list[dict]:
    chunks = [_chunk([_delta({"role": "assistant", "content": ""})])]
    for n, k in order:
        call = calls[n]
        if k == 0:
            frag = {"index": n, "type": "function", "function": {"name": call["name"], "arguments": ""}}
            if call["id"] is not None:
                frag["id"] = call["id"]
        else:
            frag = {"index": n, "function": {"arguments": call["pieces"][k - 1]}}
        chunks.append(_chunk([_delta({"tool_calls": [frag]})]))
    finish = _delta({}, "tool_calls")
    if tail_in_finish and len(chunks) > 2:
        finish["delta"] = chunks.pop()["choices"][0]["delta"]
    chunks.append(_chunk([finish]))
    return chunks


@given(_fragmented_calls())
def test_fragments_always_reassemble(case):
    calls, order, tail_in_finish = case
    out = _normalize(_fragment_stream(calls, order, tail_in_finish))
    assembled = {c["function"]["name"]: c for c in _assemble(out)}
    assert len(assembled) == len(calls)
    for call in calls:
        got = assembled[call["name"]]
        if call["text"].strip(" \t\r\n"):
            assert got["function"]["arguments"] == call["text"]
        else:  # blank arguments end as an empty object
            assert json.loads(got["function"]["arguments"]) == {}
        if call["id"]:
            assert got["id"] == call["id"]
        else:
            assert CALL_ID.fullmatch(got["id"])
    assert _finish(out) == "tool_calls"


@given(_fragmented_calls())
def test_sdk_accumulator_sees_each_id_and_name_once(case):
    calls, order, tail_in_finish = case
    out = _normalize(_fragment_stream(calls, order, tail_in_finish))
    message: dict = {}
    for chunk in out:
        accumulate_delta(message, copy.deepcopy(chunk["choices"][0]["delta"]))
    assert message["role"] == "assistant"
    assert len(message["tool_calls"]) == len(calls)
    ids = [t["id"] for t in message["tool_calls"]]
    assert len(set(ids)) == len(ids)
    assembled = _assemble(out)
    assert ids == [c["id"] for c in assembled]
    for tool_call, call in zip(message["tool_calls"], assembled, strict=True):
        assert tool_call["type"] == "function"
        assert tool_call["function"]["name"] == call["function"]["name"]
        assert tool_call["function"]["arguments"] == call["function"]["arguments"]
    final = _sdk_final(out).choices[0].message.tool_calls
    assert [t.id for t in final] == ids


@given(st.lists(st.sampled_from(["call_a", "call_b", ""]), min_size=1, max_size=6))
def test_whole_calls_never_merge_in_the_sdk(ids):
    """Ollama-style whole calls, all on index 0: distinct backend ids must stay distinct calls."""
    chunks = [_chunk([_delta({"role": "assistant", "content": ""})])]
    for call_id in ids:
        chunks.append(
            _chunk(
                [
                    _delta(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": "web_search", "arguments": "{}"},
                                }
                            ],
                        }
                    )
                ]
            )
        )
    chunks.append(_chunk([_delta({}, "stop")]))
    out = _normalize(chunks)
    final = _sdk_final(out).choices[0].message.tool_calls
    got = [t.id for t in final]
    assert len(set(got)) == len(got)
    assert all(t.function.name == "web_search" for t in final)
    assert all(re.fullmatch(r"call_[ab]|call_[A-Za-z0-9]{24}", i) for i in got)


def test_missing_index_with_the_same_id_repeated_is_one_call():
    chunks = [_chunk([_delta({"role": "assistant"})])]
    for part in ['{"query": ', '"x"}']:
        fragment = {"id": "call_same", "function": {"name": "web_search", "arguments": part}}
        chunks.append(_chunk([_delta({"tool_calls": [fragment]})]))
    chunks.append(_chunk([_delta({}, "stop")]))
    out = _normalize(chunks)
    assert _assemble(out) == [
        {
            "id": "call_same",
            "type": "function",
            "function": {"name": "web_search", "arguments": '{"query": "x"}'},
        }
    ]
    assert _finish(out) == "tool_calls"
