"""The presearch query: the user's text without its search phrasing, in English and Chinese."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.turn.presearch import MAX_QUERY, search_query

CASES = [
    ("search the web for today's Rust news", "today's Rust news"),
    ("上网查一下今天北京天气", "今天北京天气"),
    ("Please search online for the latest Python release", "the latest Python release"),
    ("Can you look up the population of France?", "the population of France?"),
    ("google the capital of Peru", "the capital of Peru"),
    ("what's the weather in Paris? search the web please", "what's the weather in Paris?"),
    ("/search rust async book", "rust async book"),
    ("谷歌一下 OpenAI 最新模型", "OpenAI 最新模型"),
    ("帮我搜索一下最新的AI新闻", "最新的AI新闻"),
    ("百度一下 北京天气", "北京天气"),
    ("web search: rust 1.91", "rust 1.91"),
    ("look it up online: best pizza in Rome", "best pizza in Rome"),
    ("What is the tallest mountain? Look it up on the web.", "What is the tallest mountain?"),
    ("请上网搜索关于量子计算的最新进展", "量子计算的最新进展"),
    ("最近的新闻，上网查一下", "最近的新闻"),
    ("<system-reminder>search the web often</system-reminder>search the web for tokio 1.40", "tokio 1.40"),
    ("search the web for", "search the web for"),  # nothing left: the text itself
]


@pytest.mark.parametrize(("text", "query"), CASES)
def test_query_from_user_text(text, query):
    assert search_query(text) == query


def test_the_ask_line_of_a_paste():
    text = "search the web for this error\nTraceback (most recent call last):\n  File x.py\nValueError: boom"
    assert search_query(text) == "this error"


# Words that are not search phrasing, so what follows a phrase is kept whole.
_WORD = st.sampled_from(["rust", "tokio", "release", "paris", "weather", "2025", "price", "of", "the", "best",
                         "pizza", "mars", "rover", "python", "年", "北京", "天气", "量子", "计算", "股票"])
_TOPIC = st.lists(_WORD, min_size=1, max_size=8).map(" ".join)
_EN_PHRASES = ["search the web for ", "Search the internet for ", "please search online for ", "google ",
               "can you look up ", "web search: ", "/search ", "could you please search the web about ",
               "Look up online "]
_ZH_PHRASES = ["上网查一下", "上网搜索", "帮我搜索一下", "谷歌一下 ", "百度一下", "请上网搜一下", "网上查查"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_EN_PHRASES + _ZH_PHRASES), _TOPIC)
def test_phrase_then_topic_gives_the_topic(phrase, topic):
    assert search_query(phrase + topic) == topic


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_any_text_gives_a_bounded_query_without_raising(text):
    query = search_query(text)
    assert len(query) <= MAX_QUERY
    assert query == query.strip()
    if any(ch.isalnum() for ch in text) and "<system-reminder>" not in text:
        assert query
