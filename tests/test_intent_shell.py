"""Hard phrases inside shell command lines are patterns being searched for in files, not requests
to search the web (hub/injection/intent.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.injection.intent import classify

PHRASES = ["search online", "web search", "search the web", "google search", "internet search",
           "look it up online", "search on google"]
COMMANDS = ["rg", "grep -rn", "git grep -i", "ag", "sed -n '/x/p' file; grep", "$ rg", "sudo grep -r"]


@pytest.mark.parametrize("text", [
    "rg 'search online' src/",
    "rg \"web search\" hub/",
    "$ grep -rn 'search the web' .",
    "run `rg 'search online' src/` and fix what it finds",
    "can you check why `git grep -n \"google search\"` prints nothing",
    "cat notes.txt | grep 'internet search'",
    "echo \"search the web\" > prompt.txt",
])
def test_shell_lines_do_not_search(text: str) -> None:
    intent = classify(text)
    assert not intent.search, intent


@pytest.mark.parametrize("text", [
    "search online for the best rg alternatives",
    "echo done; now search the web for rust news",  # the phrase is after the command ended
    "I ran grep already.\nPlease search the web for the error message",
    "web search: latest rust release",
    "use `rg` for the code, but search online for the API docs",
])
def test_requests_near_shell_words_still_search(text: str) -> None:
    intent = classify(text)
    assert intent.search and intent.rule == "en-hard", intent


@given(st.sampled_from(COMMANDS), st.sampled_from(PHRASES), st.sampled_from(["'", '"']),
       st.sampled_from(["", " src/", " .", " -g '*.py'"]), st.sampled_from(["", "`", "please run "]))
def test_any_hard_phrase_as_a_command_argument(command: str, phrase: str, quote: str, rest: str, lead: str) -> None:
    close = "`" if lead == "`" else ""
    text = f"{lead}{command} {quote}{phrase}{quote}{rest}{close}"
    assert not classify(text).search, text


@given(st.sampled_from(PHRASES), st.text(alphabet="abcdefghij ", max_size=30))
def test_hard_phrases_in_prose_still_search(phrase: str, tail: str) -> None:
    assert classify(f"please {phrase} for {tail}x").search
