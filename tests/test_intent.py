"""The web-search intent classifier: the labelled corpus, rule ids, reminders, window, properties."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hub.injection.intent import (
    REMINDER_CLOSE,
    REMINDER_OPEN,
    SCAN_HEAD,
    SCAN_TAIL,
    Intent,
    classify,
    describe,
    latest_user_text,
    strip_system_reminders,
)
from tests.intent_corpus import CORPUS, EN_CODE, EN_HARD, MIXED, ZH_CODE, ZH_HARD, ZH_SOFT

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _reminder(body: str) -> str:
    return f"{REMINDER_OPEN}{body}{REMINDER_CLOSE}"


# --- the corpus -------------------------------------------------------------------------------


def test_corpus_size_and_balance() -> None:
    chinese = [text for text, _, _ in CORPUS if _HAN.search(text)]
    assert len(CORPUS) >= 150
    assert 0.4 <= len(chinese) / len(CORPUS) <= 0.6
    assert len({text for text, _, _ in CORPUS}) == len(CORPUS), "duplicate texts in the corpus"
    assert any(search for _, search, _ in CORPUS) and any(not search for _, search, _ in CORPUS)


@pytest.mark.parametrize(("text", "search", "google"), CORPUS)
def test_corpus(text: str, search: bool, google: bool) -> None:
    intent = classify(text)
    assert (intent.search, intent.google) == (search, google), intent.reason
    if intent.search:
        assert intent.rule is not None and intent.language in ("zh", "en")
    else:
        assert intent.rule is None and not intent.google


@pytest.mark.parametrize(("text", "_search", "_google"), EN_CODE + ZH_CODE)
def test_code_requests_that_hit_a_soft_rule_say_why_they_were_suppressed(
    text: str, _search: bool, _google: bool
) -> None:
    intent = classify(text)
    assert not intent.search
    assert "suppressed: code context" in intent.reason or intent.reason == "no rule matched"


# --- rule ids, languages, reasons -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule", "language", "words"),
    [
        ("谷歌一下", "zh-hard", "zh", ["谷歌一下"]),
        ("百度一下你就知道", "zh-hard", "zh", ["百度一下"]),
        ("google一下", "zh-hard", "zh", ["google一下"]),
        ("上网查查", "zh-soft-shangwang", "zh", ["上网"]),
        ("搜索新闻", "zh-soft-verb-noun", "zh", ["搜索", "新闻"]),
        ("查找报道", "zh-soft-verb-noun", "zh", ["查找", "报道"]),
        ("Search The Web please", "en-hard", "en", ["search the web"]),
        ("/search cats", "en-hard", "en", ["/search"]),
        ("find me news", "en-soft", "en", ["find", "news"]),
        ("Look  Up some info", "en-soft", "en", ["look  up", "info"]),
        # Chinese rules are checked first; the reason names the rule that decided.
        ("搜索新闻 and search the web", "en-hard", "en", ["search the web"]),
        ("搜索新闻 and find the news", "zh-soft-verb-noun", "zh", ["搜索", "新闻"]),
    ],
)
def test_rule_ids_and_reasons(text: str, rule: str, language: str, words: list[str]) -> None:
    intent = classify(text)
    assert intent.search
    assert (intent.rule, intent.language) == (rule, language)
    assert intent.reason.startswith(rule)
    for word in words:
        assert f'"{word}"' in intent.reason


def test_every_hard_phrase_of_the_design_is_a_hard_hit() -> None:
    for phrase in ("/search", "web search", "websearch", "internet search", "search the web", "web-search"):
        assert classify(f"please {phrase} for me").rule == "en-hard", phrase
    assert classify("internet-search for me").rule == "en-hard"


def test_hard_hits_are_never_suppressed_by_code_context() -> None:
    intent = classify("web search: how to fix `KeyError` in src/app/news_feed.py line 42")
    assert intent.search and intent.rule == "en-hard"
    assert classify("谷歌一下 utils.py 的这个报错").rule == "zh-hard"


def test_suppressed_soft_hit_keeps_its_language_and_names_the_signal() -> None:
    intent = classify("find the function that returns the user info")
    assert intent == Intent(
        False,
        False,
        "en",
        None,
        'en-soft (verb "find" + noun "info") suppressed: code context, code noun "function"',
    )
    assert classify("查找返回用户信息的函数").language == "zh"


@pytest.mark.parametrize(
    ("text", "signal"),
    [
        ("find news in `feed`", "backtick"),
        ("find news where x == 1", "syntax"),
        ("find news under ./feeds", "path"),
        ("find news in feeds/", "path"),
        ("find news in news.py", "filename"),
        ("find news in NEWS_FEED", "identifier"),
        ("find news in fetchNews", "identifier"),
        ("find news in load()", "call"),
        ("find news via self.feed", "member access"),
        ("$ find news", "shell"),
        ("find news -r", "shell"),
        ("find news && exit", "shell"),
        ("find news in the repo", "code noun"),
        ("在代码里查找新闻", "code noun"),
    ],
)
def test_each_code_signal(text: str, signal: str) -> None:
    intent = classify(text)
    assert not intent.search
    assert f"code context, {signal} " in intent.reason


def test_google_preference() -> None:
    assert classify("google the latest news").google
    assert classify("find news about GOOGLE").google  # anywhere in a hit, any case
    assert classify("搜索谷歌的新闻").google
    assert not classify("find the latest news").google
    assert not classify("google is a company").google  # no hit, so no preference


def test_no_hit_reports_the_script_of_the_text() -> None:
    assert classify("hello there").language == "en"
    assert classify("你好").language == "zh"
    assert classify("12345 !!!").language is None
    assert classify("").reason.startswith("no user text")


# --- system reminders ----------------------------------------------------------------------


def test_system_reminder_blocks_are_ignored() -> None:
    reminder = _reminder("\nUse the web search tool to look up news when asked.\n")
    assert not classify(f"rename foo to bar{reminder}").search
    assert not classify(f"{reminder}\nrename foo to bar").search
    assert not classify(reminder).search
    assert classify(f"{reminder}search the web for cats{reminder}").search


def test_words_either_side_of_a_reminder_stay_separate() -> None:
    assert strip_system_reminders(f"search{_reminder('x')}the web") == "search the web"


def test_unclosed_or_stray_tags_do_not_swallow_user_text() -> None:
    assert classify(f"what is {REMINDER_OPEN}? search the web").search
    assert classify(f"{REMINDER_CLOSE} search the web").search
    text = f"{REMINDER_OPEN} search the web {_reminder('x')}"
    assert strip_system_reminders(text) == f"{REMINDER_OPEN} search the web"


# --- the scan window -----------------------------------------------------------------------


def test_window_keeps_the_head_and_the_tail_of_a_long_text() -> None:
    filler = "lorem ipsum dolor sit amet " * 1_000
    assert classify("search the web for this:\n" + filler).search
    assert classify(filler + "\nsearch the web for this").search
    # The middle of a long message is pasted material and is not scanned.
    middle = filler[: SCAN_HEAD + 500] + " search the web " + filler[: SCAN_TAIL + 500]
    assert not classify(middle).search


def test_classify_is_fast() -> None:
    texts = [
        "find the latest news about the Mars mission",
        "find the function that returns the user info",
        "帮我搜索一下最近的新闻",
        "Hey, can you refactor the parser so it handles nested lists properly?",
    ]
    start = time.perf_counter()
    for _ in range(1_000):
        for text in texts:
            classify(text)
    per_call = (time.perf_counter() - start) / (1_000 * len(texts))
    assert per_call < 500e-6  # ~10 us on a laptop; the bound only catches a pathological regex


@pytest.mark.parametrize(
    "text",
    [
        ("find news: " + "the committee reviewed several proposals. " * 25_000)[:1_000_000],
        "find news " + "a/" * 2_000 + "a.py",  # path-like runs once made the file-name regex quadratic
        "find news " + "-a/" * 1_500 + ".",
        "find news " + "f(" * 2_000,
        "find news " + "a_" * 2_000,
        "search" + " " * 4_000 + "the web",
        REMINDER_OPEN * 50_000,
        REMINDER_CLOSE * 50_000,
    ],
    ids=["long-prose", "slashes", "dash-slashes", "parens", "underscores", "spaces", "opens", "closes"],
)
def test_pathological_texts_stay_fast(text: str) -> None:
    start = time.perf_counter()
    classify(text)
    assert time.perf_counter() - start < 0.5  # ~1 ms measured; a quadratic regex takes seconds; loaded CI boxes stall


# --- properties ----------------------------------------------------------------------------

_HARD_PHRASES = [
    "/search",
    "web search",
    "websearch",
    "internet search",
    "search the web",
    "web-search",
    "internet-search",
    "search the internet",
    "look it up online",
    "google it",
    "谷歌搜索",
    "谷歌一下",
    "百度一下",
]
# Every character of every trigger word (both cases), Chinese rules included.
_TRIGGER_WORDS = _HARD_PHRASES + [
    "internet search online searching finding look up for googling browsing surfing the net it this that",
    "web internet online news information info reports articles",
    "上网 搜索 查找 搜 网络 联网 新闻 信息 报道 谷歌 google",
]
_TRIGGER_CHARS = "".join(sorted({c for w in _TRIGGER_WORDS for c in w + w.upper()} - {" "}))


@given(st.text())
def test_classify_never_raises_and_is_deterministic(text: str) -> None:
    first = classify(text)
    assert isinstance(first, Intent)
    assert classify(text) == first
    assert isinstance(describe(first), str)


@given(st.text(max_size=400), st.sampled_from(_HARD_PHRASES), st.integers(min_value=0, max_value=400))
def test_adding_a_hard_phrase_always_triggers(text: str, phrase: str, position: int) -> None:
    assume(REMINDER_OPEN not in text and REMINDER_CLOSE not in text)
    position = min(position, len(text))
    intent = classify(text[:position] + " " + phrase + " " + text[position:])
    assert intent.search
    assert intent.rule is not None and intent.rule.endswith("-hard")


@given(st.text(max_size=2_000), st.text(max_size=300))
def test_appending_a_system_reminder_never_changes_the_decision(text: str, body: str) -> None:
    assume(REMINDER_OPEN not in text + body and REMINDER_CLOSE not in text + body)
    assert classify(text + _reminder(body)) == classify(text)
    assert classify(_reminder(body) + text) == classify(text)


@given(st.text(alphabet=st.characters(blacklist_characters=_TRIGGER_CHARS)))
def test_text_without_trigger_letters_never_triggers(text: str) -> None:
    assert not classify(text).search


# --- latest_user_text ----------------------------------------------------------------------


def _user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def test_latest_user_text_string_content() -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        _user("first question"),
        {"role": "assistant", "content": "an answer"},
        _user("second question"),
    ]
    assert latest_user_text(messages) == "second question"


def test_latest_user_text_joins_text_parts_and_ignores_images() -> None:
    content = [
        {"type": "text", "text": "look at this"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "and search the web"},
    ]
    assert latest_user_text([_user(content)]) == "look at this\nand search the web"


def test_image_only_latest_user_message_falls_back_to_the_previous_user_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages = [_user("what is in the news?"), {"role": "assistant", "content": "?"}, _user([image])]
    assert latest_user_text(messages) == "what is in the news?"


def test_tool_messages_are_not_user_text() -> None:
    messages = [
        _user("search the web for cats"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "web_search"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "news about dogs"},
    ]
    assert latest_user_text(messages) == "search the web for cats"


def test_reminder_only_user_message_carries_no_user_text() -> None:
    messages = [_user("search the web for cats"), _user([{"type": "text", "text": _reminder("todo list")}])]
    assert latest_user_text(messages) == "search the web for cats"


def test_no_user_text() -> None:
    assert latest_user_text([]) is None
    assert (
        latest_user_text([{"role": "system", "content": "x"}, {"role": "assistant", "content": "y"}]) is None
    )
    assert latest_user_text([_user(""), _user([]), _user(None), _user([{"type": "text"}])]) is None


# --- describe --------------------------------------------------------------------------------


def test_describe_lists_every_field() -> None:
    lines = describe(classify("google the news")).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "decision",
        "google-preferred",
        "language",
        "rule",
        "reason",
    ]
    assert "web search" in lines[0] and "yes" in lines[1] and "en-soft" in lines[3]
    assert "no web search" in describe(classify("hello")).splitlines()[0]


def test_corpus_groups_cover_every_rule() -> None:
    rules = {classify(text).rule for text, _, _ in EN_HARD + ZH_HARD + ZH_SOFT + MIXED}
    rules |= {classify("find the news").rule}
    assert rules >= {"zh-hard", "zh-soft-shangwang", "zh-soft-verb-noun", "en-hard", "en-soft"}
