"""hub.routing.aliases: modelAliases for Anthropic clients."""

from __future__ import annotations

import logging

import pytest

from hub.routing.aliases import rewrite

ALIASES = {
    "exact": {"claude-haiku-4-5-20251001": "fast.qwen3-8b"},
    "reasoning": "thinker",
    "haiku": "small",
    "opus": "big",
    "sonnet": "medium",
    "default": "fallback",
}


@pytest.mark.parametrize(("model", "thinking", "expected"), [
    ("claude-haiku-4-5-20251001", True, "fast.qwen3-8b"),  # exact first, even with thinking
    ("CLAUDE-HAIKU-4-5-20251001", False, "fast.qwen3-8b"),  # exact is case-insensitive too
    ("claude-opus-5-5", True, "thinker"),  # reasoning before the families
    ("claude-haiku-4-5", False, "small"),
    ("claude-Opus-4-1", False, "big"),
    ("claude-sonnet-4-5-20250929", False, "medium"),
    ("gpt-4.1", False, "fallback"),
])
def test_order(model, thinking, expected) -> None:
    assert rewrite(model, ALIASES, thinking=thinking) == expected


def test_partial_config_and_no_config() -> None:
    assert rewrite("claude-opus-5-5", {"sonnet": "medium"}) == "claude-opus-5-5"
    assert rewrite("claude-opus-5-5", {"sonnet": "medium", "default": "d"}) == "d"
    assert rewrite("claude-opus-5-5", {}) == "claude-opus-5-5"
    assert rewrite("claude-opus-5-5", None, thinking=True) == "claude-opus-5-5"
    # opus matches before sonnet when a name carries both
    assert rewrite("opus-vs-sonnet", {"opus": "o", "sonnet": "s"}) == "o"


def test_names_the_router_knows_are_kept() -> None:
    known = {"default", "local.m"}.__contains__
    assert rewrite("local.m", ALIASES, thinking=True, known=known) == "local.m"
    assert rewrite("default", ALIASES, known=known) == "default"
    assert rewrite("claude-haiku-4-5", ALIASES, known=known) == "small"
    # an exact pin still wins over a known name: the operator asked for it by name
    assert rewrite("default", {"exact": {"default": "x"}}, known=known) == "x"


def test_rewrite_logged_at_info(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="searchhub.aliases"):
        rewrite("claude-sonnet-4-5", ALIASES)
        rewrite("medium", {"sonnet": "medium"})  # no rewrite, no log
    assert [r.getMessage() for r in caplog.records] == ["model alias (sonnet): claude-sonnet-4-5 -> medium"]
    assert caplog.records[0].levelno == logging.INFO
