"""The hub pipeline on the internal (chat) form: route -> decide injection -> dispatch -> tool loop.

Protocol endpoints call `complete()` or `stream()`; neither knows about HTTP or about which endpoint
asked. Both drivers run the same `Turn`: the rounds of one client turn through the tool loop.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import msgspec

from ..backends import usage as usages
from ..backends.normalize import normalize_completion
from ..config.settings import Config, Limits, Provider, Target
from ..core.citations import annotate, sources_from_content
from ..core.errors import Unavailable
from ..core.ids import new_id
from ..injection import openrouter
from ..injection.chain import ChainSession, ChainState, Hidden, splice
from ..injection.decide import Decision, decide, eligible, ineligible_reason, request_of, tool_name
from ..injection.intent import latest_user_text
from ..injection.side_requests import ClientTools, classify_side
from ..observability import metrics
from ..observability.logctx import chain_id_var
from ..observability.logformat import DirectLog
from ..observability.trace import Trace, client_family
from ..protocols.chat.request import CONTEXT_COUNTS, context_size, search_options
from ..routing.dispatch import Dispatcher
from ..routing.router import Router
from ..search.service import EngineIndex
from ..store import Store
from ..streams.relay import Frames, relay_chunks, relay_sse
from ..tools.base import ToolRequest, Transcript
from ..tools.events import Options, Outcome
from ..tools.keepalive import Feed
from ..tools.kinds.web_search import WEB_SEARCH
from ..tools.registry import ServerTools
from . import tool_choice
from .answer import add_usage, fill_usage, final_finish, joined, recover_text_calls
from .loop import LoopState, run_round
from .presearch import search_call, search_query, with_results
from .stream_driver import StreamDriver

log = logging.getLogger("searchhub.pipeline")
round_log = DirectLog("searchhub.pipeline")  # a line per search round, written with the request's (hub/observability/logformat.py)


class Plan(msgspec.Struct):
    route: str
    candidates: tuple[Target, ...]
    body: dict  # the request to send: spliced history, our tools added
    limits: Limits
    session: ChainSession
    served: frozenset[str] = frozenset()  # server tools serviced in this request; empty = a plain relay
    request: ToolRequest = ToolRequest()
    prior: tuple = ()  # numbered sources of spliced hidden calls
    mode: str = "tool"  # webSearch.mode for this request: tool | presearch | hybrid
    presearch: bool = False  # search first, with a query from the user's text
    text_names: frozenset[str] = frozenset()  # tool calls written as text are recovered for these
    decision: Decision | None = None  # None: the target could not get the tools at all ...
    ineligible: str | None = None  # ... for this reason

    @property
    def relay(self) -> bool:
        return not self.served


class Routing(msgspec.Struct):
    """A request's route, and what the request becomes for each candidate target: injection is
    decided for a target when it is tried (its own policy and per-backend limits), so a commercial
    fallback gets the client's request untouched and a self-hosted fallback gets the tools."""

    route: str
    candidates: tuple[Target, ...]
    body: dict  # the client's request
    opts: Options
    session: ChainSession
    messages: list[dict]  # after the chain's splice (the client's own when nothing was spliced)
    state: ChainState | None = None
    prior: tuple = ()
    plans: dict[str, Plan] = msgspec.field(default_factory=dict)  # by provider id
    counted: bool = False  # the intent decision was counted in the metrics
    side: bool | None = None  # a client's side request (hub/injection/side_requests.py), once asked


class Turn:
    """One client turn through the tool loop: the round bodies, failover to the same target, our
    calls split from the client's, the hidden-call save, usage and texts summed over rounds."""

    def __init__(self, plan: Plan, *, config: Config, tools: ServerTools, dispatcher: Dispatcher, stream: bool,
                 trace: Trace | None = None, citation_content: bool = False) -> None:
        self.config = config
        self.citation_content = citation_content
        self.tools = tools
        self.dispatcher = dispatcher
        self.plan = plan
        self.stream = stream
        self.trace = trace
        self.state = LoopState(plan.limits, plan.request, trace=trace)
        self.state.add_sources(list(plan.prior))
        self.messages = list(plan.body["messages"])
        self.candidates = plan.candidates
        self.first = True
        self.usage: dict = {}
        self.texts: list[str] = []
        self.offer = plan.mode != "presearch"  # presearch alone never offers the tool to the model
        self.allow = self.allowed()
        self.opening = self.body(self.allow)  # the first round's request

    def allowed(self) -> bool:
        """May the next round still call our tools?"""
        return self.offer and self.state.tool_allowed()

    async def presearch(self, events: list | None) -> None:
        """Search with a query taken from the user's text and put the results in front of the model."""
        ws_name = self.config.web_search.tool_name
        query = search_query(latest_user_text(self.messages) or "")
        log.info("presearch: %r", query)
        tool_msgs = await run_round(self.state, [search_call(new_id("call"), ws_name, query)], self.tools,
                                    emit=events.append if events is not None else None)
        self.messages = with_results(self.messages, query, [str(m.get("content") or "") for m in tool_msgs])
        self.first = True
        self.allow = self.allowed()
        self.opening = self.body(self.allow)

    def body(self, allow: bool) -> dict:
        """The next round's request; without our tools when they are no longer allowed."""
        b = dict(self.plan.body)
        b["messages"] = self.messages
        if self.stream:
            b["stream_options"] = {**(b.get("stream_options") or {}), "include_usage": True}
        served = self.plan.served
        tools = b.get("tools", [])
        if not allow:
            tools = [t for t in tools if tool_name(t) not in served]
            if tools:
                b["tools"] = tools
            else:
                b.pop("tools", None)
                b.pop("parallel_tool_calls", None)
        if "tool_choice" in b:
            choice = tool_choice.for_round(b["tool_choice"], served=served, allow=allow, first=self.first,
                                           tools_left=bool(tools))
            if choice is tool_choice.DROP:
                del b["tool_choice"]
            else:
                b["tool_choice"] = choice
        self.first = False
        return b

    def served_to(self, target: Target) -> None:
        """The next round re-invokes the target that answered (its cache holds the conversation);
        the others that may take over are those that get the tools too."""
        self.candidates = (target, *(c for c in self.candidates if c is not target))

    def ours(self, call: dict) -> bool:
        return (call.get("function") or {}).get("name") in self.plan.served

    async def after_round(self, text: str | None, ours: list[dict], their_ids: list[str], events: Feed | None) -> bool:
        """Run our calls of a round; True when the model gets another round, False when the turn
        ends here (client calls in the same round: ours are hidden in the chain for the splice)."""
        round_log.info(f"round {self.state.rounds + 1}: {len(ours)} server tool call(s)")
        tool_msgs = await run_round(self.state, ours, self.tools,
                                    emit=events.append if events is not None else None)
        assistant = {"role": "assistant", "content": text or None, "tool_calls": ours}
        if their_ids:
            await self.plan.session.hide(Hidden(their_ids, assistant, tool_msgs), google=self.plan.request.google)
            return False
        self.messages = [*self.messages, assistant, *tool_msgs]
        return True

    async def finish(self, finish: str, result: dict) -> None:
        state = self.state
        metrics.LOOP_DEPTH.observe(state.rounds)
        metrics.TOOL_CALLS_PER_REQUEST.observe(len(state.calls))
        if self.trace is not None:
            self.trace.finish_loop(state.sources, result, self.config.trace.bodies, self.plan.body)
        await self.plan.session.finish(finish, searching=bool(self.plan.served), google=self.plan.request.google)


class Pipeline:
    """Built once per config from the parts it uses."""

    def __init__(self, config: Config, router: Router, dispatcher: Dispatcher, tools: ServerTools,
                 store: Store) -> None:
        self.config = config
        self.router = router
        self.dispatcher = dispatcher
        self.tools = tools
        self.store = store
        self.client_tools = ClientTools()
        self._engines = EngineIndex(config.web_search.engines)  # OpenRouter's `engine` may name one

    def _side_request(self, body: dict, opts: Options) -> bool:
        """A client's side request (hub/injection/side_requests.py); the decision and its reason are logged."""
        cfg = self.config.web_search.side_requests
        if not cfg.enabled:
            return False
        uses_tools = self.client_tools.note(f"{opts.client_key}|{opts.client_agent}", bool(body.get("tools")))
        decision = classify_side(body, rules=cfg.rules, client_uses_tools=uses_tools)
        if decision.side:
            log.info("side request, not a search turn (%s): %s", decision.rule, decision.reason)
        return decision.side

    # ------------------------------------------------------------ planning

    async def routing(self, body: dict, opts: Options) -> Routing:
        """The route and its candidates; the chain's state when any candidate could get the tools."""
        ws = self.config.web_search
        thinking = bool(body.get("reasoning_effort")) and body.get("reasoning_effort") != "none"
        tokens = 0
        if "longcontext" in self.config.router.routes:
            tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        res = self.router.resolve(body.get("model"), prompt_tokens=tokens, thinking=thinking)
        if not res.candidates:
            raise Unavailable(f"route '{res.route}' has no targets")
        messages: list[dict] = body["messages"]
        session = ChainSession(self.store, ws.chain_ttl_s, opts.client_key, messages, opts.chain_id)
        routing = Routing(res.route, res.candidates, body, opts, session, messages)
        tr = opts.trace
        if tr is not None:
            tr.route = res.route
        if WEB_SEARCH in opts.hosted and not ws.engines:
            log.warning("the client offered hosted web search, but no engine is configured "
                        "(webSearch.engines): answering without search")
        if session.continues and any(eligible(ws, t.provider, hosted=opts.hosted, force=opts.force_search)
                                     for t in res.candidates):
            chain_id_var.set(session.key[6:18])
            if tr is not None:
                tr.chain = session.key[6:18]
            routing.state = await session.load()
            if routing.state and routing.state.hidden:
                routing.messages = splice(messages, routing.state)
                routing.prior = tuple(s for h in routing.state.hidden for r in h.results
                                      for s in sources_from_content(r.get("content") or ""))
        return routing

    def plan(self, routing: Routing, provider: Provider) -> Plan:
        """What the request becomes for one provider's targets (decided once per provider)."""
        plan = routing.plans.get(provider.id)
        if plan is None:
            plan = routing.plans[provider.id] = self._plan(routing, provider)
        return plan

    def _plan(self, routing: Routing, provider: Provider) -> Plan:
        ws = self.config.web_search
        body, opts, messages = routing.body, routing.opts, routing.messages
        plan = Plan(routing.route, routing.candidates, body, ws.limits_for(provider.id), routing.session)
        if not eligible(ws, provider, hosted=opts.hosted, force=opts.force_search):
            plan.ineligible = ineligible_reason(ws, provider, opts.force_search)
            return plan
        plan.prior = routing.prior
        first = routing.side is None
        if first:  # once per request: it notes whether the client uses tools
            routing.side = self._side_request(body, opts)
        request = request_of(body, messages, force=opts.force_search, hosted=opts.hosted, side=routing.side)
        decision = decide(ws, provider, request, routing.state)
        if first and routing.side and not decision.inject:  # counted once, like the decision itself
            tr = opts.trace  # its client family also reads Codex's originator header
            metrics.child(metrics.SIDE_REQUESTS_SKIPPED, tr.client if tr is not None
                          else client_family(opts.client_agent)).inc()
        plan.mode = plan.limits.mode
        plan.presearch = (decision.inject and plan.mode != "tool" and ws.tool_name in self.tools
                          and bool(messages) and messages[-1].get("role") == "user")
        if decision.by_intent and decision.intent is not None and not routing.counted:
            routing.counted = True
            intent = decision.intent
            metrics.child(metrics.INTENT_DECISIONS, intent.language or "none", intent.rule or "none",
                          "search" if intent.search else "no").inc()
        plan.decision = decision
        plan.body = self._inject(plan, body, messages, decision, opts, provider.id) if decision.inject else (
            body if messages is body["messages"] else {**body, "messages": messages})
        scope = provider.quirks.text_tool_calls
        if scope == "server":
            plan.text_names = plan.served
        elif scope == "all" and plan.served:
            plan.text_names = plan.served | {n for n in map(tool_name, body.get("tools") or []) if n}
        return plan

    def turn(self, routing: Routing, provider: Provider, turns: dict[str, Turn], *, stream: bool) -> Turn:
        """The turn a target that gets the tools starts (one per provider); its later rounds may fail
        over only to candidates that get the tools too (the conversation holds our calls)."""
        turn = turns.get(provider.id)
        if turn is None:
            plan = self.plan(routing, provider)
            plan.candidates = tuple(t for t in routing.candidates
                                    if t.provider is provider or not self.plan(routing, t.provider).relay)
            turn = turns[provider.id] = Turn(plan, config=self.config, tools=self.tools, dispatcher=self.dispatcher,
                                             stream=stream, trace=routing.opts.trace,
                                             citation_content=routing.opts.citation_content)
        return turn

    def committed(self, routing: Routing, target: Target, trace: Trace | None) -> Plan:
        """The plan of the target that answered: its decision is the request's (trace, metrics)."""
        plan = self.plan(routing, target.provider)
        if trace is not None:
            if plan.decision is None:
                trace.injected(False, plan.ineligible or "", plan.limits.inject_policy)
            else:
                trace.decided(plan.decision, plan.limits.inject_policy, plan.mode)
        if not plan.relay:
            metrics.child(metrics.WEB_SEARCH_INJECTIONS, target.provider.type).inc()
            metrics.child(metrics.SEARCH_MODE, "tool" if plan.mode == "tool" else "presearch").inc()
        return plan

    def _inject(self, plan: Plan, body: dict, messages: list[dict], decision: Decision, opts: Options,
                provider: str) -> dict:
        """The request with our tools added (those offered to this request that the client does not
        offer itself)."""
        search = opts.hosted.get(WEB_SEARCH)  # the client's hosted search: its search_context_size
        count = CONTEXT_COUNTS.get(search.context_size or "") if search is not None else None
        location, chat_count = search_options(body)  # chat's web_search_options
        plan.request = ToolRequest(hosted=opts.hosted, google=decision.google, baidu=decision.baidu,
                                   count_hint=count or chat_count, user_location=location,
                                   context_size=(search.context_size if search is not None else None) or context_size(body),
                                   key=opts.key, bill=opts.bill, provider=provider,
                                   transcript=Transcript(messages))
        chosen = [t for t in self.tools if t.offered(plan.request)]
        plan.served = frozenset(t.name for t in chosen)
        offered = {tool_name(t) for t in body.get("tools") or []}
        added = [t.schema(plan.request) for t in chosen if t.name not in offered]
        new_body = {**body, "messages": messages}
        if added:
            new_body["tools"] = [*(body.get("tools") or []), *added]
        ws = self.config.web_search
        force = ws.tool_name if opts.force_call and plan.mode == "tool" and ws.tool_name in self.tools else None
        choice = tool_choice.opening(body.get("tool_choice"), force=force)  # the client forced its hosted search
        if choice is not None:
            new_body["tool_choice"] = choice
        return new_body

    async def presearch(self, routing: Routing, turns: dict[str, Turn], *, stream: bool) -> list:
        """Presearch for the first candidate, when its plan asks for it (before the first round);
        the events to show (a target that takes over later answers without it)."""
        events: list = []
        provider = routing.candidates[0].provider
        if self.plan(routing, provider).presearch:
            await self.turn(routing, provider, turns, stream=stream).presearch(events)
        return events

    # ------------------------------------------------------------ non-streaming

    async def complete(self, body: dict, opts: Options) -> Outcome:
        body, opts = openrouter.adapt(body, opts, self._engines)
        routing = await self.routing(body, opts)
        turns: dict[str, Turn] = {}

        def opening(target: Target) -> dict:
            plan = self.plan(routing, target.provider)
            return plan.body if plan.relay else self.turn(routing, target.provider, turns, stream=False).opening

        await self.presearch(routing, turns, stream=False)
        resp, target = await self.dispatcher.complete(routing.route, routing.candidates, opening, trace=opts.trace,
                                                      server_tools=self.tools.names)
        plan = self.committed(routing, target, opts.trace)
        if plan.relay:
            if opts.trace is not None:
                opts.trace.finish_answer(resp, self.config.trace.bodies, plan.body)
            normalize_completion(resp)
            fill_usage(resp, plan.body, target)
            return Outcome(resp, target=target.key)
        turn = self.turn(routing, target.provider, turns, stream=False)
        allow = turn.allow
        sent = turn.opening
        first_id = None
        while True:
            turn.served_to(target)
            normalize_completion(resp)
            fill_usage(resp, sent, target)
            if allow:
                recover_text_calls(((resp.get("choices") or [{}])[0] or {}).get("message") or {},
                                   turn.plan.text_names, target)
            first_id = first_id or resp.get("id")
            add_usage(turn.usage, resp.get("usage"))
            choice = (resp.get("choices") or [{}])[0]
            msg = choice.get("message") or {}
            calls = msg.get("tool_calls") or []
            ours = [c for c in calls if turn.ours(c)]
            theirs = [c for c in calls if not turn.ours(c)]
            if msg.get("content"):
                turn.texts.append(msg["content"])
            if not ours or not allow or not await turn.after_round(msg.get("content"), ours,
                                                                   [c.get("id") for c in theirs], None):
                break
            allow = turn.allowed()
            sent = turn.body(allow)
            resp, target = await self.dispatcher.complete(routing.route, turn.candidates, sent, trace=turn.trace,
                                                          server_tools=self.tools.names)
        finish = final_finish(choice.get("finish_reason"), bool(theirs))
        content = joined(turn.texts)
        out_msg: dict = {"role": "assistant", "content": content or None}
        if msg.get("reasoning_content"):
            out_msg["reasoning_content"] = msg["reasoning_content"]
        if theirs:
            out_msg["tool_calls"] = theirs
        annotations = annotate(content, turn.state.sources, content=opts.citation_content)
        if annotations:
            out_msg["annotations"] = annotations
        result = {**resp, "id": first_id or resp.get("id"),
                  "choices": [{"index": 0, "message": out_msg, "finish_reason": finish, "logprobs": None}]}
        if turn.usage:
            result["usage"] = turn.usage
        await turn.finish(finish, result)
        return Outcome(result, turn.state.calls, target.key)

    # ------------------------------------------------------------ streaming

    async def stream(self, body: dict, opts: Options) -> AsyncIterator | Frames:
        """Opens the first upstream stream (up to its first content) before returning, so routing
        errors and targets that all fail surface as HTTP errors."""
        body, opts = openrouter.adapt(body, opts, self._engines)
        routing = await self.routing(body, opts)
        turns: dict[str, Turn] = {}

        def opening(target: Target) -> dict:
            plan = self.plan(routing, target.provider)
            return plan.body if plan.relay else self.turn(routing, target.provider, turns, stream=True).opening

        def raw(target: Target) -> bool:  # the encoder takes pre-framed chat SSE: the fast path
            return opts.frames and self.plan(routing, target.provider).relay

        events = await self.presearch(routing, turns, stream=True)
        it, target = await self.dispatcher.stream(routing.route, routing.candidates, opening, raw=raw,
                                                  trace=opts.trace, server_tools=self.tools.names)
        plan = self.committed(routing, target, opts.trace)
        if plan.relay:
            def prompt() -> int:  # only a stream the backend reports no usage for needs it
                return usages.prompt_tokens(plan.body.get("messages"), plan.body.get("tools"))

            if opts.frames:
                want = bool((plan.body.get("stream_options") or {}).get("include_usage"))
                return Frames(relay_sse(it, target, prompt=prompt, want_usage=want))
            return relay_chunks(it, target, prompt=prompt)
        turn = self.turn(routing, target.provider, turns, stream=True)
        turn.served_to(target)
        before = events if turn.plan.presearch else []
        return StreamDriver(turn, self.config.web_search.keepalive_s).run(it, target, turn.allow, before)
