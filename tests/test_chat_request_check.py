"""The chat request check (hub/protocols/chat/request.py): msgspec Structs decode and validate in one
step, and a wrong field is a BadRequest whose param is its JSON path."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.core.errors import BadRequest
from hub.protocols.chat.request import validate_chat

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)
FIELDS = ("model", "messages", "tools", "tool_choice", "web_search_options", "stream", "max_tokens", "role",
          "content", "tool_calls", "function", "name", "type", "text", "tool_call_id", "arguments")
BODY = st.recursive(
    JSON, lambda inner: st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5) | st.lists(inner, max_size=3),
    max_leaves=20)
OK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), BODY, max_size=6))
def test_any_body_passes_or_is_a_bad_request_with_a_readable_path(body) -> None:
    try:
        validate_chat(body)
    except BadRequest as e:
        assert e.status == 400
        assert e.param is None or (e.param and "$" not in e.param and "`" not in e.param)
        return
    # what passed has the shapes the gateway reads
    assert isinstance(body["model"], str) and body["model"]
    assert isinstance(body["messages"], list) and body["messages"]
    for m in body["messages"]:
        assert isinstance(m, dict) and m["role"] in ("system", "developer", "user", "assistant", "tool", "function")
        assert m.get("content") is None or isinstance(m["content"], str | list)


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(["stream", "max_tokens", "tools", "tool_choice", "web_search_options", "model"]),
       value=JSON)
def test_a_wrong_top_level_field_names_itself(field, value) -> None:
    body = {**OK, field: value}
    try:
        validate_chat(body)
    except BadRequest as e:
        assert e.param is not None and e.param.split(".")[0].split("[")[0] == field
    else:
        assert field != "model" or (isinstance(value, str) and value)


@pytest.mark.parametrize(("body", "param", "words"), [
    ({"model": "m"}, "messages", "is required"),
    ({**OK, "messages": [{"role": "wizard"}]}, "messages[0].role", "wizard"),
    ({**OK, "messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]}, "messages[0].content[0].text", "Expected"),
    ({**OK, "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id", "required"),
    ({**OK, "tools": [{"type": "function", "function": {"name": ""}}]}, "tools[0].function.name", "length"),
    ({**OK, "tool_choice": {"type": "function", "function": {}}}, "tool_choice.function.name", "required"),
    ({**OK, "max_tokens": True}, "max_tokens", "got `bool`"),
])
def test_messages_name_the_field(body, param, words) -> None:
    with pytest.raises(BadRequest) as e:
        validate_chat(body)
    assert e.value.param == param and words in str(e.value)
