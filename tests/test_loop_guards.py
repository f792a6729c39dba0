"""Loop guards that compare what a call means, not how it was written: a repeated search with the
engine resolved and the query folded, and argument errors counting toward the consecutive-error stop."""

from __future__ import annotations

import asyncio
import json

from hub.tools.registry import ServerTools
from hub.turn.loop import LoopState, run_round

from .helpers import searxng_engine, serper_engine
from .test_loop import limits
from .test_pipeline import ask, search_config, search_until_stopped
from .toy.clock import Clock

TOOLS = ServerTools([Clock()])


def run(state: LoopState, *calls: dict) -> list[dict]:
    return asyncio.run(run_round(state, list(calls), TOOLS))


def bad(call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "clock", "arguments": '{"city": '}}


def good(city: str, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "clock", "arguments": json.dumps({"city": city})}}


def test_argument_errors_count_toward_the_consecutive_error_stop() -> None:
    state = LoopState(limits(max_consecutive_errors=2))
    run(state, bad())
    assert state.consecutive_errors == 1 and state.stopped is None
    run(state, bad("c2"), bad("c3"))
    assert state.stopped == "consecutive_errors" and not state.tool_allowed()


def test_argument_errors_and_failed_calls_mix() -> None:
    state = LoopState(limits(max_consecutive_errors=2))
    run(state, bad(), good("atlantis", "c2"))  # atlantis: the toy clock's failing city
    run(state, good("mu", "c3"))
    assert state.stopped == "consecutive_errors"


def test_one_good_call_resets_the_count() -> None:
    state = LoopState(limits(max_consecutive_errors=2))
    run(state, bad())
    run(state, bad("c2"), good("paris", "c3"))
    assert state.consecutive_errors == 0 and state.stopped is None
    run(state, bad("c4"))
    assert state.consecutive_errors == 1 and state.stopped is None


def test_repeat_with_the_default_engine_named_is_caught(gateway, fake_model, search_fakes) -> None:
    """{"query": "x"} then {"query": "X", "engine": "<the default>"}: the same search."""
    engines = [searxng_engine(search_fakes, default=True), serper_engine(search_fakes)]
    gw = gateway(search_config(fake_model.url, engines))
    args = iter([{"query": "latest rust release"}, {"query": " Latest  RUST release ", "engine": "SearXNG"}])
    fake_model.default = search_until_stopped(args, "stopped")
    r = ask(gw, "search the web for the latest rust release")
    assert r.choices[0].message.content == "stopped"
    assert len(search_fakes.calls("searxng")) == 1 and search_fakes.calls("serper") == []
    assert "already searched" in fake_model.requests[2]["messages"][-1]["content"]


def test_same_query_on_another_engine_is_not_a_repeat(gateway, fake_model, search_fakes) -> None:
    engines = [searxng_engine(search_fakes, default=True), serper_engine(search_fakes)]
    gw = gateway(search_config(fake_model.url, engines, maxToolIterations=2))
    args = iter([{"query": "latest rust release"}, {"query": "latest rust release", "engine": "serper"}])
    fake_model.default = search_until_stopped(args, "done")
    assert ask(gw, "search the web for the latest rust release").choices[0].message.content == "done"
    assert len(search_fakes.calls("searxng")) == 1 and len(search_fakes.calls("serper")) == 1
