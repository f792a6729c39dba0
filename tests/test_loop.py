"""hub/turn/loop.py directly: one round of server tool calls under each guard (the toy tool, no HTTP)."""

from __future__ import annotations

import asyncio
import json
import time

from hub.config import Limits
from hub.tools.base import HostedSearch, ToolRequest
from hub.tools.events import ToolFinished, ToolStarted
from hub.tools.registry import ServerTools
from hub.turn.loop import BUDGET_EXHAUSTED, LoopState, run_round

from .toy.clock import Clock

TOOLS = ServerTools([Clock()])


def limits(**kw) -> Limits:
    base = {"enabled": True, "inject_policy": "selective", "max_tool_iterations": 5, "loop_wall_clock_s": 60.0,
            "max_total_result_bytes": 32768, "max_consecutive_errors": 2}
    return Limits(**{**base, **kw})


def call(city: str, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "clock", "arguments": json.dumps({"city": city})}}


def run(state: LoopState, *calls: dict, events: list | None = None) -> list[dict]:
    return asyncio.run(run_round(state, list(calls), TOOLS, emit=events.append if events is not None else None))


def test_results_are_numbered_across_rounds_and_events_carry_the_call() -> None:
    state = LoopState(limits())
    events: list = []
    first = run(state, call("paris"), events=events)
    second = run(state, call("tokyo", "c2"))
    assert first[0] == {"role": "tool", "tool_call_id": "c1", "content": "[1] It is 12:00 in paris."}
    assert second[0]["content"] == "[2] It is 20:00 in tokyo."
    assert [type(e) for e in events] == [ToolStarted, ToolFinished] and events[0].call.city == "paris"
    assert sorted(state.sources) == [1, 2] and state.rounds == 2 and state.stopped is None


def test_bad_arguments_are_told_to_the_model() -> None:
    state = LoopState(limits())
    out = run(state, {"id": "c1", "function": {"name": "clock", "arguments": '{"city": '}})
    assert out[0]["content"].startswith("Error: clock call c1: arguments are truncated")
    assert state.calls == []


def test_repeated_call_stops_the_loop() -> None:
    state = LoopState(limits())
    run(state, call("paris"))
    out = run(state, call(" Paris ", "c2"))
    assert "already asked the time in paris" in out[0]["content"] and state.stopped == "repeated_query"
    assert not state.tool_allowed()


def test_result_budget_is_measured_on_the_rendered_text() -> None:
    size = len(b"[1] It is 12:00 in paris.")
    state = LoopState(limits(max_total_result_bytes=size))
    assert run(state, call("paris"))[0]["content"] == "[1] It is 12:00 in paris."
    assert json.loads(run(state, call("tokyo", "c2"))[0]["content"]) == {"error": BUDGET_EXHAUSTED}
    assert state.stopped == "max_total_result_bytes" and state.result_bytes == size


def test_consecutive_errors_stop_the_loop() -> None:
    state = LoopState(limits(max_consecutive_errors=2))
    run(state, call("atlantis"))
    assert state.stopped is None and state.consecutive_errors == 1
    run(state, call("mu", "c2"))
    assert state.stopped == "consecutive_errors"


def test_max_uses_refuses_the_extra_calls_and_shows_them() -> None:
    state = LoopState(limits(), ToolRequest(hosted={"web_search": HostedSearch(max_uses=1)}))
    events: list = []
    out = run(state, call("paris"), call("tokyo", "c2"), events=events)
    assert out[0]["content"].startswith("[1]") and "max_uses_exceeded" in out[1]["content"]
    assert [c.ran for c in state.calls] == [True, False] and state.stopped == "max_uses"
    # the refused call shows at once; the one that runs finishes after it
    assert [(type(e).__name__, e.call.city) for e in events] == [
        ("ToolStarted", "paris"), ("ToolStarted", "tokyo"), ("ToolFinished", "tokyo"), ("ToolFinished", "paris")]


def test_iteration_and_wall_clock_guards() -> None:
    state = LoopState(limits(max_tool_iterations=1))
    assert state.tool_allowed()
    run(state, call("paris"))
    assert not state.tool_allowed() and state.stopped == "max_tool_iterations"
    late = LoopState(limits(loop_wall_clock_s=1.0), started=time.monotonic() - 2)
    assert not late.tool_allowed() and late.stopped == "loop_wall_clock"


def test_parallel_work_starts_before_the_events_wake_the_stream() -> None:
    """Both calls' work begins before the stream that waits on the round's events runs: the
    requests go out before the client's writes take the CPU (hub/turn/loop.py run_round)."""
    from hub.tools.keepalive import Feed

    log: list[str] = []

    class Logged(Clock):
        async def run(self, call, request) -> None:
            log.append(f"run {call.city}")
            await asyncio.sleep(0)
            await super().run(call, request)

    async def main() -> list[dict]:
        feed = Feed()

        async def stream() -> None:
            await feed.wait(60)
            log.append("stream woke")

        reader = asyncio.ensure_future(stream())
        await asyncio.sleep(0)  # the stream waits on the feed
        out = await run_round(LoopState(limits()), [call("paris"), call("tokyo", "c2")], ServerTools([Logged()]),
                              emit=feed.append)
        await reader
        return out

    out = asyncio.run(main())
    assert log[:3] == ["run paris", "run tokyo", "stream woke"]
    assert [m["content"] for m in out] == ["[1] It is 12:00 in paris.", "[2] It is 20:00 in tokyo."]
