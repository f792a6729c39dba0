"""Tool calls written as text: every format, streaming and not, and properties over hostile text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.backends.text_calls import TextCall, TextCallScanner, extract

NAMES = frozenset({"web_search"})
ARGS = {"query": "rust 1.91 release"}


def _formats(args: dict) -> list[str]:
    a = json.dumps(args)
    return [
        f'<tool_call>{{"name": "web_search", "arguments": {a}}}</tool_call>',
        f'<tool_call>\n{{"name": "web_search", "arguments": {a}}}\n</tool_call>',
        f'[TOOL_CALLS][{{"name": "web_search", "arguments": {a}}}]',
        f"[TOOL_CALLS]web_search[ARGS]{a}",
        f'<|python_tag|>{{"name": "web_search", "parameters": {a}}}<|eom_id|>',
        f"<|python_tag|>web_search.call(query={json.dumps(args['query'])})",
        f"functions.web_search:{a}",
        f"to=functions.web_search <|constrain|>json<|message|>{a}<|call|>",
        f'{{"name": "web_search", "arguments": {a}}}',
        f'{{"type": "function", "function": {{"name": "web_search", "arguments": {json.dumps(a)}}}}}',
        f'```json\n{{"name": "web_search", "arguments": {a}}}\n```',
        f"```\n<tool_call>{{\"name\": \"web_search\", \"arguments\": {a}}}</tool_call>\n```",
    ]


def _stream(text: str, cuts: list[int], names=NAMES) -> tuple[str, list[TextCall]]:
    scanner = TextCallScanner(names)
    out, prev = [], 0
    for cut in sorted(set(cuts)):
        out.append(scanner.feed(text[prev:cut]))
        prev = cut
    out.append(scanner.feed(text[prev:]))
    out.append(scanner.finish())
    return "".join(out), scanner.calls


def test_every_format_is_recovered_whole_and_char_by_char():
    for call_text in _formats(ARGS):
        text = "Let me look that up. " + call_text
        shown, calls = extract(text, NAMES)
        assert calls == [TextCall("web_search", json.dumps(ARGS))], call_text
        assert shown == "Let me look that up.", call_text
        streamed, scalls = _stream(text, list(range(len(text))))
        assert scalls == calls, call_text
        assert streamed.strip() == "Let me look that up.", (call_text, streamed)


def test_calls_to_other_tools_stay_text():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert extract(text, NAMES) == (text, [])
    assert _stream(text, list(range(len(text)))) == (text, [])


def test_opted_in_client_tool_is_recovered():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    _, calls = extract(text, {"web_search", "get_weather"})
    assert calls == [TextCall("get_weather", '{"city": "Paris"}')]


def test_prose_with_braces_and_tags_is_untouched():
    text = 'Use {"a": 1} or <b>bold</b>, the functions. [x] ```py\nprint(1)\n``` done {'
    assert extract(text, NAMES) == (text, [])


def test_no_names_means_no_scanning():
    text = '<tool_call>{"name": "web_search", "arguments": {}}</tool_call>'
    assert extract(text, frozenset()) == (text, [])


def test_two_calls_in_one_mistral_list():
    a = json.dumps({"query": "a"})
    b = json.dumps({"query": "b"})
    text = f'[TOOL_CALLS][{{"name": "web_search", "arguments": {a}}}, {{"name": "web_search", "arguments": {b}}}]'
    _, calls = extract(text, NAMES)
    assert [c.arguments for c in calls] == [a, b]


def test_unfinished_call_at_the_end_is_released_as_text():
    text = 'Answer: <tool_call>{"name": "web_search", "argu'
    assert _stream(text, [3, 10, 25]) == (text, [])


_PROSE = st.text(alphabet=st.sampled_from(list("abc xyz.,:{}[]<>|\"'`\n") + ["functions.", "to=", "```",
                                                                             "<tool_call>", "[TOOL_CALLS]"]),
                 max_size=80).map(lambda s: s)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("abc xyz.,:{}[]<>|\"'`\n") + ["functions.", "to=", "```", "<tool_call>",
                                                                 "[TOOL_CALLS]", "<|python_tag|>", '"name"']),
                max_size=40).map("".join), st.lists(st.integers(0, 200), max_size=8))
def test_text_without_a_call_comes_back_exactly(text, cuts):
    shown, calls = _stream(text, [c for c in cuts if c <= len(text)])
    if not calls:
        assert shown == text
    assert (shown, calls) == (extract(text, NAMES)[0] if not calls else shown, calls)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abc xyz.,!?\n", max_size=40), st.text(alphabet="abc xyz.,!?\n", max_size=40),
       st.sampled_from(range(12)), st.text(min_size=1, max_size=30), st.lists(st.integers(0, 300), max_size=10))
def test_a_call_between_prose_is_found_and_hidden(before, after, which, query, cuts):
    args = {"query": query}
    call_text = _formats(args)[which]
    text = before + call_text + ("\n" + after if after else "")
    shown, calls = _stream(text, [c for c in cuts if c <= len(text)])
    assert [c.name for c in calls] == ["web_search"]
    assert json.loads(calls[0].arguments) == args
    assert call_text not in shown
    assert "web_search" not in shown
    assert shown.replace("\n", "").replace(" ", "") == (before + after).replace("\n", "").replace(" ", "")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.lists(st.integers(0, 200), max_size=8))
def test_any_text_never_raises_and_chunking_does_not_matter(text, cuts):
    whole = _stream(text, [])
    assert _stream(text, [c for c in cuts if c <= len(text)]) == whole


class _CharByChar(TextCallScanner):
    """The scan as first written: every position whose character starts a trigger is tried in
    turn. The scanner finds its candidates by one regex search instead; this pins that it finds
    the same ones."""

    @staticmethod
    def _candidate(text: str, i: int, final: bool) -> int:
        from hub.backends.text_calls import _TRIGGERS

        first = {t[0] for t in _TRIGGERS}
        while i < len(text) and text[i] not in first:
            i += 1
        return i


_PIECES = st.one_of(
    st.sampled_from(list("ab tf{}[]<>|\"`\n=.:") + ["functions.", "to=", "to=functions.", "```", "```json\n",
                                                   "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]",
                                                   "<|python_tag|>", "<|eom_id|>", '"name"', '"web_search"',
                                                   '"arguments"', "web_search", ".call(", ": ", ", "]),
    st.sampled_from(range(12)).map(lambda k: _formats(ARGS)[k]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join), st.lists(st.integers(0, 400), max_size=10))
def test_the_regex_scan_shows_and_finds_what_the_char_by_char_scan_does(text, cuts):
    cuts = sorted({c for c in cuts if c <= len(text)})

    def run(scanner: TextCallScanner) -> tuple[list[str], list[TextCall]]:
        out, prev = [], 0
        for cut in [*cuts, len(text)]:
            out.append(scanner.feed(text[prev:cut]))
            prev = cut
        out.append(scanner.finish())
        return out, scanner.calls

    assert run(TextCallScanner(NAMES)) == run(_CharByChar(NAMES))
