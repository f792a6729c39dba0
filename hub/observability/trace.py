"""Request traces: what the gateway decided and did for one request, in one compact record.

A `Trace` is filled by small calls from the HTTP middleware, the pipeline, the dispatcher and the
tool loop, each of which receives it explicitly (`Options.trace`, `LoopState.trace`, a `trace=`
argument) and does nothing when it is None. It never holds message bodies, headers or keys; with
`trace.bodies` on, it also keeps the request body and the final answer.
"""

from __future__ import annotations

import re
import time
from contextvars import ContextVar

import msgspec


def ms(seconds: float) -> float:
    """Seconds as milliseconds to 0.1 ms (round(x, 1) costs microseconds on the hot path)."""
    return int(seconds * 10000 + 0.5) / 10


class TargetTry(msgspec.Struct, rename="camel"):
    """One upstream target tried: `ok`, or why it failed (its failover reason)."""

    target: str
    outcome: str  # ok | failed
    reason: str | None = None
    status: int | None = None
    at_ms: float = 0.0  # when the attempt started, from the request's start
    ms: float = 0.0  # until the answer (streams: its first byte) or the failure


class PageVisit(msgspec.Struct, rename="camel"):
    """A result page read after a search (webSearch.readPages): how it went."""

    url: str
    outcome: str  # ok, timeout, blocked, error, skipped, budget
    chars: int = 0  # passage characters the model got from it
    ms: float = 0.0
    cached: bool = False


class ServerCall(msgspec.Struct, rename="camel"):
    """One server-tool call (web_search, web_fetch, …)."""

    tool: str
    round: int
    id: str = ""
    engine: str | None = None
    chosen_by: str | None = None  # model | default | google | fallback
    query: str | None = None
    url: str | None = None
    latency_ms: float | None = None
    outcome: str = "ok"  # ok, or the error code
    error: str | None = None
    hits: int | None = None
    cached: bool = False
    at_ms: float = 0.0
    pages: list[PageVisit] = []  # result pages read for passages


class Decision(msgspec.Struct, rename="camel"):
    """A yes/no the gateway made, and why."""

    decision: bool
    reason: str
    rule: str | None = None  # intent: the rule that fired
    language: str | None = None
    policy: str | None = None  # injection: the injectPolicy in force
    mode: str | None = None  # injection: tool | presearch | hybrid (webSearch.mode), side-call


class Source(msgspec.Struct, rename="camel"):
    n: int
    url: str
    title: str = ""


class Trace(msgspec.Struct, rename="camel"):
    id: str
    started_at: float  # epoch seconds
    endpoint: str
    seq: int = 0
    stream: bool = False
    client: str = "other"
    key: str | None = None
    chain: str | None = None
    model: str | None = None
    route: str | None = None
    target: str | None = None
    targets: list[TargetTry] = msgspec.field(default_factory=list)
    intent: Decision | None = None
    injection: Decision | None = None
    side_request: str | None = None
    rounds: int = 0  # model rounds (upstream calls that answered)
    calls: list[ServerCall] = msgspec.field(default_factory=list)
    guards: list[str] = msgspec.field(default_factory=list)
    sources: list[Source] = msgspec.field(default_factory=list)
    usage: dict | None = None
    usage_estimated: bool = False
    ttft_ms: float | None = None
    total_ms: float | None = None
    search_cost: float | None = None
    status: int = 0
    error: str | None = None
    bodies: dict | None = None

    # ---- the recording calls (each one line at its call site)

    def offset_ms(self, elapsed_s: float = 0.0) -> float:
        """Milliseconds from the request's start to (now - elapsed_s)."""
        return ms(time.time() - elapsed_s - self.started_at)

    def tried(self, target: str, reason: str, status: int | None = None, elapsed_s: float = 0.0) -> None:
        self.targets.append(TargetTry(target, "failed", reason, status, self.offset_ms(elapsed_s), ms(elapsed_s)))

    def answered(self, target: str, elapsed_s: float = 0.0) -> None:
        self.targets.append(TargetTry(target, "ok", None, None, self.offset_ms(elapsed_s), ms(elapsed_s)))
        self.target = target
        self.rounds += 1

    def tool_call(self, call: ServerCall, elapsed_s: float) -> None:
        call.latency_ms = ms(elapsed_s)
        call.at_ms = self.offset_ms(elapsed_s)
        self.calls.append(call)

    def ran(self, tool: str, round: int, call, elapsed_s: float) -> None:
        """A server-tool call of the loop (hub/tools/): what its `trace_fields()` says about it."""
        f = call.trace_fields()
        self.tool_call(ServerCall(
            tool, round, call.id, f.get("engine"), f.get("chosen_by"), f.get("query"), f.get("url"),
            outcome="ok" if call.ok else (f.get("outcome") or "error"), error=f.get("error"), hits=f.get("hits"),
            cached=bool(f.get("cached")), pages=f.get("pages") or []), elapsed_s)

    def guard(self, name: str) -> None:
        if name not in self.guards:
            self.guards.append(name)

    # The first decision of a request is the one that explains it: a follow-up call the gateway makes
    # for the same request (Claude Code's summary round) does not overwrite it.

    def decided_intent(self, intent) -> None:
        if self.intent is None:
            self.intent = Decision(intent.search, intent.reason, rule=intent.rule, language=intent.language)

    def injected(self, decision: bool, reason: str, policy: str | None = None, mode: str | None = None) -> None:
        if self.injection is None:
            self.injection = Decision(decision, reason, policy=policy, mode=mode)

    def side_call(self, tool: str, call, elapsed_s: float) -> None:
        """Claude Code's WebSearch execution call: one search the client asked for, no model loop."""
        self.side_request = "claude-code-websearch"
        self.injected(True, "Claude Code asked the gateway to run its WebSearch tool", mode="side-call")
        self.ran(tool, 1, call, elapsed_s)
        self.sources = [Source(n, url, title or "") for n, (url, title, _) in enumerate(call.pages(), 1) if n <= 50]

    def decided(self, decision, policy: str | None, mode: str = "tool") -> None:
        """The pipeline's injection decision (hub/injection/decide.py), the intent behind it, and when the
        gateway took the request on, how: its webSearch.mode (`tool`, `presearch`, `hybrid`)."""
        if decision.intent is not None:
            self.decided_intent(decision.intent)
        self.injected(decision.inject, decision.reason, policy, mode if decision.inject else None)

    def finish_answer(self, response: dict, bodies: bool, request: dict) -> None:
        """A relayed (non-searching) answer: its usage, and with bodies on, the texts."""
        usage = response.get("usage")
        self.usage = usage if isinstance(usage, dict) else None
        if bodies:
            self.bodies = {"request": request, "response": response.get("choices")}

    def finish_loop(self, sources: dict, result: dict, bodies: bool, request: dict) -> None:
        """The search loop's end: the citations' sources, summed usage, with bodies on the texts."""
        self.sources = [Source(s.n, s.url, s.title or "") for s in list(sources.values())[:50]]
        usage = result.get("usage")
        self.usage = usage if isinstance(usage, dict) and usage else None
        if bodies:
            self.bodies = {"request": request, "response": result.get("choices") or result.get("text")}

    @property
    def searched(self) -> bool:
        return bool(self.calls)

    def summary(self) -> dict:
        """The row the live list shows."""
        return {
            "id": self.id, "seq": self.seq, "startedAt": self.started_at, "endpoint": self.endpoint,
            "client": self.client, "key": self.key, "chain": self.chain, "model": self.model,
            "target": self.target, "status": self.status, "stream": self.stream,
            "searched": self.searched, "calls": len(self.calls), "rounds": self.rounds,
            "engines": sorted({c.engine for c in self.calls if c.engine}),
            "intent": self.intent.decision if self.intent else None,
            "injected": self.injection.decision if self.injection else None,
            "guards": self.guards, "ttftMs": self.ttft_ms, "totalMs": self.total_ms, "error": self.error,
        }


# ---------------------------------------------------------------- client family

# First match wins; checked against the User-Agent (and Codex's `originator` header).
_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("claude-cli", re.compile(r"^claude-cli/", re.I)),
    ("codex", re.compile(r"^codex[_-]|^codex/", re.I)),
    ("opencode", re.compile(r"^opencode/", re.I)),
    ("qwen-code", re.compile(r"^qwen-?code/", re.I)),
    ("gemini-cli", re.compile(r"^gemini-?cli/", re.I)),
    ("openai-sdk", re.compile(r"^(async)?openai/", re.I)),
    ("anthropic-sdk", re.compile(r"^(async)?anthropic/", re.I)),
    ("curl", re.compile(r"^curl/", re.I)),
    ("python-httpx", re.compile(r"^python-httpx/", re.I)),
    ("python-requests", re.compile(r"^python-requests/", re.I)),
    ("browser", re.compile(r"^Mozilla/", re.I)),
)


def client_family(user_agent: str | None, originator: str | None = None) -> str:
    """A short, fixed-vocabulary name for the calling client (safe as a metric label)."""
    for ua in (originator, user_agent):
        if not ua:
            continue
        ua = ua.strip()[:200]
        for name, pattern in _FAMILIES:
            if pattern.search(ua):
                return name
    return "other"


# The trace of the request being served (set by routes/app.py for the request's task): a stream that
# breaks after its 200 marks it failed with its message (hub/protocols/errors.py `stream_broke`).
current_trace: ContextVar[Trace | None] = ContextVar("current_trace", default=None)
