"""hub/tools/arguments.py and hub/tools/kinds/web_search.py: the web_search schema, defensive argument
parsing and argument repair."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.backends.normalize import ToolCallAssembler
from hub.search.base import SearchRequest
from hub.tools.arguments import ArgumentError, parse_arguments
from hub.tools.kinds.web_search import MAX_COUNT, RECENCY, WEB_SEARCH, search_args, web_search_tool

ENGINES = [("glm", "GLM 4.7, better for Chinese / domestic news"), ("google", "Gemini, global coverage")]


# --- schema -------------------------------------------------------------------------------------


def _parameters(tool: dict) -> dict:
    return tool["function"]["parameters"]


def test_tool_shape_is_seed_004_schema():
    tool = web_search_tool(ENGINES, engine_required=False)
    assert tool["type"] == "function"
    assert tool["function"]["name"] == WEB_SEARCH
    params = _parameters(tool)
    assert params["type"] == "object"
    assert list(params["properties"]) == ["engine", "query", "recency", "count"]
    assert params["properties"]["engine"]["enum"] == ["glm", "google"]
    assert params["properties"]["query"]["type"] == "string"
    assert params["properties"]["recency"]["enum"] == list(RECENCY)
    assert params["properties"]["count"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "description": "Number of results to retrieve.",
    }
    assert params["required"] == ["query"]
    json.dumps(tool)  # plain JSON, sendable as is


def test_tool_parameters_are_a_valid_json_schema():
    for required in (False, True):
        params = _parameters(web_search_tool(ENGINES, engine_required=required))
        jsonschema.Draft202012Validator.check_schema(params)
        jsonschema.Draft7Validator.check_schema(params)


def test_schema_accepts_good_arguments_and_enforces_enums_and_bounds():
    validator = jsonschema.Draft202012Validator(_parameters(web_search_tool(ENGINES, engine_required=False)))
    assert validator.is_valid({"query": "rust release"})
    assert validator.is_valid({"engine": "glm", "query": "q", "recency": "oneWeek", "count": 50})
    assert not validator.is_valid({"engine": "bing", "query": "q"})
    assert not validator.is_valid({"query": "q", "recency": "week"})
    assert not validator.is_valid({"query": "q", "count": 0})
    assert not validator.is_valid({"query": "q", "count": 51})
    assert not validator.is_valid({"query": "q", "count": 2.5})
    assert not validator.is_valid({"engine": "glm"})


def test_engine_required_only_when_asked():
    optional = jsonschema.Draft202012Validator(_parameters(web_search_tool(ENGINES, engine_required=False)))
    required = jsonschema.Draft202012Validator(_parameters(web_search_tool(ENGINES, engine_required=True)))
    assert optional.is_valid({"query": "q"})
    assert not required.is_valid({"query": "q"})
    assert required.is_valid({"query": "q", "engine": "google"})
    assert _parameters(web_search_tool(ENGINES, engine_required=True))["required"] == ["engine", "query"]


def test_engine_description_lists_every_engine():
    description = _parameters(web_search_tool(ENGINES, engine_required=False))["properties"]["engine"][
        "description"
    ]
    assert "glm: GLM 4.7, better for Chinese / domestic news" in description
    assert "google: Gemini, global coverage" in description


def test_narrowed_single_engine_and_duplicates():
    params = _parameters(web_search_tool([("google", "Gemini"), ("google", "again")], engine_required=False))
    assert params["properties"]["engine"]["enum"] == ["google"]
    assert "google: Gemini" in params["properties"]["engine"]["description"]
    assert "again" not in params["properties"]["engine"]["description"]


def test_no_engines_means_no_engine_property():
    params = _parameters(web_search_tool([], engine_required=False))
    assert "engine" not in params["properties"]
    jsonschema.Draft202012Validator.check_schema(params)
    with pytest.raises(ValueError):
        web_search_tool([], engine_required=True)


def test_tool_description_asks_for_citations():
    assert "[n]" in web_search_tool(ENGINES, engine_required=False)["function"]["description"]


def test_custom_name_and_invalid_name():
    assert (
        web_search_tool(ENGINES, engine_required=False, name="search-web")["function"]["name"] == "search-web"
    )
    with pytest.raises(ValueError):
        web_search_tool(ENGINES, engine_required=False, name="web search!")
    with pytest.raises(ValueError):
        web_search_tool(ENGINES, engine_required=False, name="x" * 65)


def test_tool_is_memoized_for_equal_inputs():
    first = web_search_tool(ENGINES, engine_required=False)
    assert web_search_tool(list(ENGINES), engine_required=False) is first
    assert web_search_tool(tuple(ENGINES), engine_required=False) is first
    assert web_search_tool(ENGINES, engine_required=True) is not first


# --- parse_arguments: edge cases from local models -------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "   \n\t  "])
def test_empty_arguments_give_empty_dict(raw):
    assert parse_arguments(raw, tool_name="get_time", call_id="call_1") == {}


def test_dict_arguments_are_returned_as_is():
    args = {"x": 5, "y": 10}
    assert parse_arguments(args) is args


def test_dict_arguments_are_not_reparsed():
    args = {"query": '{"not": "parsed"}'}
    assert parse_arguments(args) == {"query": '{"not": "parsed"}'}


def test_valid_json_string():
    assert parse_arguments('{"query": "python async", "limit": 10}') == {"query": "python async", "limit": 10}


def test_value_types_are_preserved():
    raw = '{"s": "text", "i": 42, "f": 3.5, "t": true, "b": false, "n": null, "a": [1, "two", 3.0]}'
    parsed = parse_arguments(raw)
    assert parsed == {"s": "text", "i": 42, "f": 3.5, "t": True, "b": False, "n": None, "a": [1, "two", 3.0]}
    assert type(parsed["i"]) is int and type(parsed["f"]) is float


def test_nested_objects():
    nested = {"filters": {"site": {"include": ["a.org", "b.org"], "exclude": []}, "lang": "en"}, "query": "x"}
    assert parse_arguments(json.dumps(nested)) == nested


def test_arrays_and_mixed_types():
    value = {"items": [{"k": 1}, [2, [3, None]], "s", 4.5, True]}
    assert parse_arguments(json.dumps(value)) == value


def test_large_json():
    value = {f"key_{i}": {"text": "x" * 200, "n": i, "list": list(range(20))} for i in range(500)}
    text = json.dumps(value)
    assert len(text) > 100_000
    assert parse_arguments(text) == value


def test_truncated_json_is_reported_as_truncated_with_context():
    with pytest.raises(ArgumentError) as info:
        parse_arguments('{"query": "python", "limit": 10', tool_name="search", call_id="call_6")
    message = str(info.value)
    assert "truncated" in message
    assert "search" in message and "call_6" in message
    assert '{"query": "python", "limit": 10' in message  # preview
    assert '{"query":' in message.split("Received")[-1]  # how to fix


@pytest.mark.parametrize("raw", ['{"query": "pyth', '{"query": "x", "opts": [1, 2', '{"q": {"a": 1}'])
def test_unclosed_strings_and_brackets_say_truncated(raw):
    with pytest.raises(ArgumentError, match="truncated"):
        parse_arguments(raw)


@pytest.mark.parametrize("raw", ["{query: python}", "{'query': 'python'}", '{"query" "x"}', "not json {"])
def test_invalid_json(raw):
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw, tool_name="search", call_id="call_7")
    assert "not valid JSON" in str(info.value)
    assert "call_7" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("[1, 2]", "array"),
        ('["query", "x"]', "array"),
        ("42", "number"),
        ("true", "boolean"),
        ("null", "null"),
    ],
)
def test_json_that_is_not_an_object(raw, kind):
    with pytest.raises(ArgumentError, match=f"must be a JSON object, got an? ?{kind}|got {kind}"):
        parse_arguments(raw)


@pytest.mark.parametrize("raw", [42, 3.5, ["query"], ("q",), object()])
def test_non_text_non_dict_raw_values(raw):
    with pytest.raises(ArgumentError):
        parse_arguments(raw)


def test_markdown_fences_are_unwrapped():
    assert parse_arguments('```json\n{"query": "x"}\n```') == {"query": "x"}
    assert parse_arguments('```\n{"query": "x"}\n```') == {"query": "x"}
    assert parse_arguments('  ```JSON {"query": "x"} ```  ') == {"query": "x"}
    assert parse_arguments("```json\n```") == {}


def test_double_encoded_object_and_bytes():
    assert parse_arguments(json.dumps(json.dumps({"query": "x"}))) == {"query": "x"}
    assert parse_arguments(b'{"query": "x"}') == {"query": "x"}


def test_stray_closing_brace_is_tolerated_but_other_trailing_text_is_not():
    assert parse_arguments('{"query": "x"}}') == {"query": "x"}
    with pytest.raises(ArgumentError):
        parse_arguments('{"query": "x"} and more')
    with pytest.raises(ArgumentError):
        parse_arguments('{"query": "x"}{"query": "y"}')


def test_deep_nesting_is_an_argument_error_not_a_crash():
    with pytest.raises(ArgumentError):
        parse_arguments("[" * 200_000)
    with pytest.raises(ArgumentError):
        parse_arguments('{"a":' * 200_000)


def test_long_preview_is_shortened():
    raw = '{"query": "' + "x" * 10_000
    with pytest.raises(ArgumentError) as info:
        parse_arguments(raw)
    assert len(str(info.value)) < 600
    assert "10011 characters" in str(info.value)


# --- buffering several calls by id ----------------------------


def _buffer(fragments: list[dict]) -> dict[str, dict]:
    assembler = ToolCallAssembler()
    assembler.add(fragments)
    return {call["id"]: call for call in assembler.calls()}


def _complete(buffer: dict[str, dict]) -> dict[str, dict]:
    out = {}
    for call_id, call in buffer.items():
        try:
            out[call_id] = parse_arguments(call["function"]["arguments"], call_id=call_id)
        except ArgumentError:
            pass
    return out


def test_empty_buffer():
    assert ToolCallAssembler().calls() == []


def test_several_calls_buffered_by_id_and_complete_vs_incomplete():
    buffer = _buffer(
        [
            {"index": 0, "id": "call_1", "function": {"name": "get_time", "arguments": None}},
            {"index": 1, "id": "call_2", "function": {"name": "ping", "arguments": ""}},
            {"index": 2, "id": "call_4", "function": {"name": "calculate", "arguments": {"x": 5, "y": 10}}},
            {"index": 3, "id": "call_5", "function": {"name": "search", "arguments": '{"query": "python"}'}},
            {
                "index": 4,
                "id": "call_6",
                "function": {"name": "search", "arguments": '{"query": "py", "n": 1'},
            },
            {"index": 5, "id": "call_7", "function": {"name": "search", "arguments": "{bad json}"}},
        ]
    )
    assert list(buffer) == ["call_1", "call_2", "call_4", "call_5", "call_6", "call_7"]
    complete = _complete(buffer)
    assert complete == {
        "call_1": {},
        "call_2": {},
        "call_4": {"x": 5, "y": 10},
        "call_5": {"query": "python"},
    }
    incomplete = set(buffer) - set(complete)
    assert incomplete == {"call_6", "call_7"}
    with pytest.raises(ArgumentError, match="truncated"):
        parse_arguments(buffer["call_6"]["function"]["arguments"], tool_name="search", call_id="call_6")


def test_a_call_becomes_complete_when_later_fragments_arrive():
    assembler = ToolCallAssembler()
    assembler.add([{"index": 0, "id": "call_a", "function": {"name": "search", "arguments": '{"query": '}}])
    with pytest.raises(ArgumentError):
        parse_arguments(assembler.calls()[0]["function"]["arguments"])
    assembler.add([{"index": 0, "function": {"arguments": '"rust"}'}}])
    assert parse_arguments(assembler.calls()[0]["function"]["arguments"]) == {"query": "rust"}
    assert assembler.calls()[0]["id"] == "call_a"


# --- search_args repairs ------------------------------------------------------------------------


def test_plain_arguments():
    raw = '{"engine": "glm", "query": "今天的国际新闻头条", "recency": "oneDay", "count": 3}'
    assert search_args(raw) == SearchRequest("今天的国际新闻头条", count=3, recency="oneDay", engine="glm")


@pytest.mark.parametrize("key", ["q", "search_query", "keywords", "question", "text", "query"])
def test_query_aliases(key):
    assert search_args({key: "rust release"}).query == "rust release"


def test_query_key_wins_over_aliases():
    assert search_args({"text": "other", "query": "main"}).query == "main"


def test_bare_string_is_the_query():
    assert search_args("latest rust release").query == "latest rust release"
    assert search_args('"latest rust release"').query == "latest rust release"
    assert search_args("  2026 election  ").query == "2026 election"


def test_query_list_is_joined():
    assert search_args({"query": ["rust", "release", "notes"]}).query == "rust release notes"
    assert search_args({"keywords": ["rust", "", 1.91]}).query == "rust 1.91"


def test_whitespace_in_query_is_collapsed():
    assert search_args({"query": "  rust \n release\t"}).query == "rust release"


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (5, 5),
        ("5", 5),
        (" 10 ", 10),
        ("7.0", 7),
        (0, 1),
        (-3, 1),
        (99, 50),
        ("1000", 50),
        (2.9, 2),
        ("ten", None),
        (None, None),
        (True, None),
        ("", None),
        (float("inf"), None),
        (10**400, 50),
    ],
)
def test_count_repairs_and_clamping(count, expected):
    assert search_args({"query": "q", "count": count}).count == expected


@pytest.mark.parametrize(
    ("recency", "expected"),
    [
        ("oneDay", "oneDay"),
        ("ONEWEEK", "oneWeek"),
        ("onemonth", "oneMonth"),
        ("noLimit", "noLimit"),
        ("day", "oneDay"),
        ("week", "oneWeek"),
        ("month", "oneMonth"),
        ("year", "oneYear"),
        ("past_week", "oneWeek"),
        ("Past Month", "oneMonth"),
        ("last-year", "oneYear"),
        ("1d", "oneDay"),
        ("24h", "oneDay"),
        ("7d", "oneWeek"),
        ("1m", "oneMonth"),
        ("1y", "oneYear"),
        ("today", "oneDay"),
        ("any", "noLimit"),
        ("all_time", "noLimit"),
        ("pastday", "oneDay"),
        ("fortnight", None),
        ("", None),
        (None, None),
        (7, None),
    ],
)
def test_recency_synonyms(recency, expected):
    assert search_args({"query": "q", "recency": recency}).recency == expected


def test_engine_is_passed_through_trimmed():
    assert search_args({"query": "q", "engine": " google "}).engine == "google"
    assert search_args({"query": "q", "engine": ""}).engine is None
    assert search_args({"query": "q", "engine": ["glm"]}).engine == "glm"
    assert search_args({"query": "q", "engine": 3}).engine is None


def test_wrapped_call_object_is_unwrapped():
    raw = {"name": "web_search", "arguments": '{"q": "rust"}', "count": "4"}
    assert search_args(raw) == SearchRequest("rust", count=4)
    assert search_args({"parameters": {"query": "x"}}).query == "x"


def test_fenced_and_double_encoded_search_arguments():
    assert search_args('```json\n{"query": "x", "count": "2"}\n```') == SearchRequest("x", 2)
    assert search_args(json.dumps(json.dumps({"q": "x"}))).query == "x"


@pytest.mark.parametrize(
    "raw",
    [None, "", "   ", {}, {"query": ""}, {"query": "   "}, {"query": []}, {"count": 3}, {"query": {"a": 1}}],
)
def test_empty_query_is_an_error_for_the_model(raw):
    with pytest.raises(ArgumentError) as info:
        search_args(raw)
    assert "query" in str(info.value)
    assert '{"query": ' in str(info.value)


@pytest.mark.parametrize("raw", ['{"query": "rust', "[1, 2]", "null", '```json\n{"query": \n```'])
def test_broken_json_is_not_taken_as_a_bare_query(raw):
    with pytest.raises(ArgumentError):
        search_args(raw)


# --- properties ---------------------------------------------------------------------------------

_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_json_objects = st.dictionaries(st.text(max_size=10), _json_values, max_size=6)


@given(_json_objects)
def test_parse_arguments_round_trips_any_json_object(value):
    assert parse_arguments(json.dumps(value)) == value
    assert parse_arguments(json.dumps(value, ensure_ascii=False, indent=2)) == value


@given(st.text())
def test_parse_arguments_only_ever_raises_argument_error(text):
    try:
        result = parse_arguments(text)
    except ArgumentError as exc:
        assert str(exc)
    else:
        assert isinstance(result, dict)


@given(st.text(alphabet=st.sampled_from('{}[]",:\\ `ajn0123456789.e-+truefalsnul\n')))
def test_parse_arguments_on_json_like_noise(text):
    try:
        assert isinstance(parse_arguments(text), dict)
    except ArgumentError:
        pass


@given(_json_objects, st.data())
def test_truncating_a_json_object_gives_dict_or_argument_error(value, data):
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    try:
        assert isinstance(parse_arguments(text[:cut]), dict)
    except ArgumentError:
        pass


@given(st.one_of(st.text(), _json_values, _json_objects.map(json.dumps)))
def test_search_args_only_ever_raises_argument_error(raw):
    try:
        args = search_args(raw)
    except ArgumentError:
        return
    assert args.query and args.query == args.query.strip()
    assert args.recency is None or args.recency in RECENCY
    assert args.count is None or 1 <= args.count <= 50


_requests = st.builds(
    SearchRequest,
    st.text(min_size=1, max_size=80).map(lambda text: " ".join(text.split())).filter(bool),
    count=st.none() | st.integers(1, MAX_COUNT),
    recency=st.none() | st.sampled_from(RECENCY),
    engine=st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True),
)


@given(_requests, st.sampled_from(["object", "text", "wrapped"]))
def test_a_valid_search_round_trips(req, form):
    """Arguments that already fit the schema come back as the search they ask for, unchanged, however
    the call carries them (an object, JSON text, or wrapped in a call object)."""
    args = {key: value for key, value in (("engine", req.engine), ("query", req.query), ("recency", req.recency),
                                          ("count", req.count)) if value is not None}
    raw = {"object": args, "text": json.dumps(args, ensure_ascii=False),
           "wrapped": {"name": WEB_SEARCH, "arguments": json.dumps(args)}}[form]
    assert search_args(raw) == req


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=40), st.builds(
    lambda host, path: f"https://{host}.example/{path}", st.from_regex(r"[a-z]{1,12}", fullmatch=True),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=30))), max_size=8))
def test_an_argument_error_never_repeats_a_url(parts):
    """The model reads the error back as a tool result, and web_fetch admits URLs seen in the
    conversation: a URL the model made up must not come back in it (hub/tools/arguments.py)."""
    from hub.fetcher import urls_in_text
    from hub.tools.arguments import message

    received = " ".join(parts)
    assert urls_in_text(message("web_fetch", "call_1", "arguments must be a JSON object", received)) == []
