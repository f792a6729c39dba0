"""The bounded server-side tool loop: executes one round of server tool calls under the guards.

Independent of HTTP, of the client protocol and of which tools there are: it takes the model's calls
of server tools and gives back the tool messages to append; a guard that fires ends the loop (the
model then gets one last round without the tools).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config.settings import Limits
from ..core.citations import Source
from ..observability import metrics
from ..observability.trace import Trace
from ..search.render import error_text
from ..tools.arguments import ArgumentError
from ..tools.base import ServerTool, ToolCall, ToolRequest
from ..tools.events import ToolFinished, ToolStarted
from ..tools.registry import ServerTools

log = logging.getLogger("searchhub.loop")
BUDGET_EXHAUSTED = "tool-result budget exhausted: answer with the results you already have"
MAX_USES = "max_uses_exceeded"


@dataclass
class LoopState:
    limits: Limits
    request: ToolRequest = field(default_factory=ToolRequest)
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0  # rounds in which the model called a server tool
    result_bytes: int = 0
    consecutive_errors: int = 0
    seen: set[str] = field(default_factory=set)
    calls: list[ToolCall] = field(default_factory=list)
    sources: dict[int, Source] = field(default_factory=dict)
    next_n: int = 1
    stopped: str | None = None  # the guard that ended the loop
    trace: Trace | None = None

    def stop(self, guard: str) -> None:
        if self.stopped is None:
            self.stopped = guard
            metrics.WEB_SEARCH_ITERATION_CAP.labels("loop", guard).inc()
            log.info("tool loop ended by guard: %s", guard)
            if self.trace is not None:
                self.trace.guard(guard)

    def tool_allowed(self) -> bool:
        """May the next model round still call server tools?"""
        if self.stopped:
            return False
        if self.rounds >= self.limits.max_tool_iterations:
            self.stop("max_tool_iterations")
            return False
        if time.monotonic() - self.started > self.limits.loop_wall_clock_s:
            self.stop("loop_wall_clock")
            return False
        return True

    def add_sources(self, sources: list[Source]) -> None:
        for s in sources:
            self.sources[s.n] = s
            self.next_n = max(self.next_n, s.n + 1)

    def uses(self, tool: ServerTool, pending: list[tuple[int, ServerTool, ToolCall]]) -> int:
        """Calls of this tool in the turn so far, this round's included (refused ones count, as
        Anthropic counts failed calls against max_uses)."""
        kind = tool.call_type
        return sum(isinstance(c, kind) for c in self.calls) + sum(t is tool for _, t, _ in pending)

    @property
    def room(self) -> int:
        """Bytes left in the tool-result budget."""
        return max(0, self.limits.max_total_result_bytes - self.result_bytes)

    def take(self, size: int) -> bool:
        """Room for `size` more bytes of results in the budget? Stops the loop when not."""
        if self.result_bytes + size > self.limits.max_total_result_bytes:
            self.stop("max_total_result_bytes")
            return False
        self.result_bytes += size
        return True


Emit = Callable[[object], None]


async def run_round(state: LoopState, calls: list[dict], tools: ServerTools, *, emit: Emit | None = None) -> list[dict]:
    """Execute the round's server tool calls (concurrently) and return one tool message per call."""
    state.rounds += 1
    messages: list[dict | None] = [None] * len(calls)
    shown: list[ToolCall | None] = [None] * len(calls)  # calls in call order, for clients that show them
    jobs: list[tuple[int, ServerTool, ToolCall]] = []
    started: list[object] = []  # ToolStarted (and refusals' events), emitted once the work is under way
    bad_arguments = 0
    for i, raw in enumerate(calls):
        fn = raw.get("function") or {}
        call_id = raw.get("id") or ""
        tool = tools.get(fn.get("name"))
        assert tool is not None, "the pipeline passes only server tool calls"
        try:
            call = tool.call(call_id, fn.get("arguments"), state.request)
        except ArgumentError as e:
            log.info("unusable arguments for %s: %s", fn.get("name"), e)
            messages[i] = _tool(call_id, f"Error: {e}")
            bad_arguments += 1
            continue
        if call.key in state.seen:
            messages[i] = _tool(call_id, error_text(f"you already {call.label}; answer from the results above"))
            state.stop("repeated_query")
            continue
        limit = tool.max_uses(state.request)
        if limit is not None and state.uses(tool, jobs) >= limit:
            tool.refuse(call, MAX_USES, "max_uses exceeded")
            shown[i] = call
            started += (ToolStarted(call), ToolFinished(call))
            messages[i] = _tool(call_id, error_text(f"{MAX_USES}: no more calls are allowed"))
            state.stop("max_uses")
            continue
        state.seen.add(call.key)
        jobs.append((i, tool, call))
        started.append(ToolStarted(call))

    errors = bad_arguments  # a call the model cannot even phrase fails like a search that fails
    if len(jobs) > 1:
        # The work's tasks are queued before the events wake the client's stream, so the
        # requests go out before the stream's writes (and the client's wake) take the CPU.
        tasks = [asyncio.ensure_future(_timed(tool.run(call, state.request))) for _, tool, call in jobs]
        _emit_all(emit, started)
        elapsed = await asyncio.gather(*tasks)
    else:  # the common round: no task to schedule (the stream runs once this task waits)
        _emit_all(emit, started)
        elapsed = [await _timed(tool.run(call, state.request)) for _, tool, call in jobs]
    for (i, tool, call), seconds in zip(jobs, elapsed, strict=True):
        shown[i] = call
        if state.trace is not None:
            state.trace.ran(tool.name, state.rounds, call, seconds)
        rendered = tool.render(call, state.next_n, state.room)
        if not call.ok:
            errors += 1
            text = rendered.text
        elif state.take(len(rendered.text.encode())):
            text = rendered.text
            state.add_sources(rendered.sources)
        else:
            text = error_text(BUDGET_EXHAUSTED)
        messages[i] = _tool(call.id, text)
        if emit:
            emit(ToolFinished(call))
    attempted = bad_arguments + len(jobs)
    if attempted and errors == attempted:
        state.consecutive_errors += 1
        if state.consecutive_errors >= state.limits.max_consecutive_errors:
            state.stop("consecutive_errors")
    elif attempted:
        state.consecutive_errors = 0
    state.calls.extend(c for c in shown if c is not None)
    out = [m for m in messages if m is not None]
    for m in out:
        state.request.transcript.add(m)
    return out


def _emit_all(emit: Emit | None, events: list[object]) -> None:
    if emit:
        for event in events:
            emit(event)


async def _timed(run) -> float:
    started = time.perf_counter()
    await run
    return time.perf_counter() - started


def _tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
