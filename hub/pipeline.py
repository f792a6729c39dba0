"""The hub pipeline on the internal (chat) form: route -> classify -> inject -> dispatch -> loop.

Protocol endpoints call `complete()` or `stream()`; neither knows about HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import chain as chains
from . import metrics
from .citations import annotate, sources_from_content
from .config import Limits, Target
from .errors import Unavailable
from .events import Keepalive, Options, Outcome
from .intent import classify, latest_user_text
from .logctx import chain_id_var
from .loop import LoopState, run_round
from .protocols.chat import StreamNormalizer, ToolCallAssembler, normalize_completion
from .relay import relay_chunks, relay_sse
from .tools import web_search_tool

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger("searchhub.pipeline")
_CLIENT_SEARCH_TOOL = re.compile(r"search", re.I)
_CONTEXT_COUNTS = {"low": 3, "medium": 5, "high": 10}


@dataclass
class Plan:
    route: str
    candidates: tuple[Target, ...]
    body: dict
    ours: str | None  # the tool name searchhub services in this request; None = plain relay
    limits: Limits
    google: bool = False
    searching: bool = False  # search is on for this chain (intent, policy, client, sticky)
    chain: str | None = None
    had_state: bool = False
    count_hint: int | None = None
    engine_hint: str | None = None  # engine for calls that name none (Google-preferred narrowing)
    prior_sources: list = field(default_factory=list)  # hits of spliced hidden searches


def _tool_name(tool: dict) -> str | None:
    fn = tool.get("function")
    if isinstance(fn, dict):
        return fn.get("name")
    return tool.get("name")


def _add_usage(total: dict, usage: dict | None) -> None:
    if not isinstance(usage, dict):
        return
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = usage.get(k)
        if isinstance(v, int):
            total[k] = total.get(k, 0) + v
    for group, key in (("prompt_tokens_details", "cached_tokens"), ("completion_tokens_details", "reasoning_tokens")):
        v = (usage.get(group) or {}).get(key)
        if isinstance(v, int):
            d = total.setdefault(group, {})
            d[key] = d.get(key, 0) + v


def _joined(texts: list[str]) -> str:
    out = ""
    for t in texts:
        if out and t and not out[-1].isspace() and not t[0].isspace():
            out += "\n\n"
        out += t
    return out


class Pipeline:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    # ------------------------------------------------------------ planning

    async def _plan(self, body: dict, opts: Options) -> Plan:
        rt = self.rt
        cfg = rt.config
        ws = cfg.web_search
        thinking = bool(body.get("reasoning_effort")) and body.get("reasoning_effort") != "none"
        tokens = 0
        if "longcontext" in cfg.router.routes:
            tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        res = rt.router.resolve(body.get("model"), prompt_tokens=tokens, thinking=thinking)
        if not res.candidates:
            raise Unavailable(f"route '{res.route}' has no targets")
        provider = res.candidates[0].provider
        limits = ws.limits_for(provider.id)
        plan = Plan(res.route, res.candidates, body, None, limits)

        eligible = bool(ws.engines) and limits.enabled and (provider.self_hosted or provider.id in ws.per_backend)
        if opts.hosted is not None:
            eligible = bool(ws.engines)
            if not eligible:
                log.warning("the client offered hosted web search, but no engine is configured "
                            "(webSearch.engines): answering without search")
        if not eligible or opts.force_search is False:
            return plan

        messages: list[dict] = body["messages"]
        tools = body.get("tools") or []
        names = [_tool_name(t) for t in tools if isinstance(t, dict)]
        client_has_ours = ws.tool_name in names
        client_search = any(n and n != ws.tool_name and _CLIENT_SEARCH_TOOL.search(n) for n in names)

        state = None
        if opts.chain_id or (messages and messages[-1].get("role") == "tool"):
            plan.chain = chains.chain_key(opts.client_key, messages, opts.chain_id)
            chain_id_var.set(plan.chain[6:18])
            state = await chains.load(rt.store, plan.chain)
            plan.had_state = state is not None
            if state and state.hidden:
                messages = chains.splice(messages, state)
                plan.prior_sources = [s for h in state.hidden for r in h.results
                                      for s in sources_from_content(r.get("content") or "")]

        intent = None
        opted_in = body.get("enable_web_search") is True or isinstance(body.get("web_search_options"), dict)
        policy = limits.inject_policy
        if opts.hosted is not None or opts.force_search or client_has_ours:
            inject = True
        elif client_search:
            inject = False  # the client runs its own search tool; stay out of its way
        elif policy == "always":
            inject = True
        elif policy == "never":
            inject = False
        elif policy == "auto":
            inject = opted_in
        else:  # selective
            inject = opted_in or bool(state and state.sticky)
            if not inject:
                text = latest_user_text(messages)
                if text:
                    intent = classify(text)
                    metrics.INTENT_DECISIONS.labels(intent.language or "none", intent.rule or "none",
                                                    "search" if intent.search else "no").inc()
                    inject = intent.search
        if not inject:
            if messages is not body["messages"]:
                plan.body = {**body, "messages": messages}
            return plan

        if intent is None:
            text = latest_user_text(messages)
            intent = classify(text) if text else None
        plan.google = bool((intent and intent.google) or (state and state.google))
        baidu = bool(intent and intent.baidu) and ws.baidu_preference == "baidu"
        if baidu:
            plan.google = False
        plan.searching = True
        plan.ours = ws.tool_name
        new_body = {**body, "messages": messages}
        if not client_has_ours:
            engines = rt.search.engines(google_only=plan.google, baidu_only=baidu)
            engine_required = ws.default_engine is None and len(ws.engines) > 1
            if baidu and engines and (ws.default_engine is None or not ws.default_engine.baidu):
                plan.engine_hint = engines[0].id
            elif plan.google and engines and (ws.default_engine is None or not ws.default_engine.google):
                plan.engine_hint = engines[0].id
            tool = web_search_tool([(e.id, e.description) for e in engines],
                                   engine_required=engine_required, name=ws.tool_name)
            new_body["tools"] = [*tools, tool]
        plan.body = new_body
        if opts.hosted and opts.hosted.context_size:
            plan.count_hint = _CONTEXT_COUNTS.get(opts.hosted.context_size)
        metrics.WEB_SEARCH_INJECTIONS.labels(provider.type).inc()
        return plan

    def _new_loop(self, plan: Plan, opts: Options) -> LoopState:
        state = LoopState(plan.limits, opts.hosted, engine_hint=plan.engine_hint)
        for src in plan.prior_sources:
            state.sources[src.n] = src
            state.next_n = max(state.next_n, src.n + 1)
        return state

    def _round_body(self, plan: Plan, messages: list[dict], allow_tool: bool, first: bool, stream: bool) -> dict:
        b = dict(plan.body)
        b["messages"] = messages
        if stream:
            b["stream_options"] = {**(b.get("stream_options") or {}), "include_usage": True}
        tc = b.get("tool_choice")
        forces_ours = tc == "required" or (isinstance(tc, dict) and _tool_name(tc) == plan.ours) or (
            isinstance(tc, dict) and (tc.get("function") or {}).get("name") == plan.ours)
        if not allow_tool:
            tools = [t for t in b.get("tools", []) if _tool_name(t) != plan.ours]
            if tools:
                b["tools"] = tools
            else:
                b.pop("tools", None)
                b.pop("parallel_tool_calls", None)
            if forces_ours or not tools:
                b.pop("tool_choice", None)
        elif not first and forces_ours:
            b["tool_choice"] = "auto"  # a forced choice would make the model search forever
        return b

    # ------------------------------------------------------------ non-streaming

    async def complete(self, body: dict, opts: Options) -> Outcome:
        plan = await self._plan(body, opts)
        dispatcher = self.rt.dispatcher
        if plan.ours is None:
            resp, target = await dispatcher.complete(plan.route, plan.candidates, plan.body)
            return Outcome(normalize_completion(resp), target=target.key)

        state = self._new_loop(plan, opts)
        messages = list(plan.body["messages"])
        candidates = plan.candidates
        texts: list[str] = []
        usage: dict = {}
        first_resp: dict | None = None
        theirs: list[dict] = []
        first = True
        while True:
            allow = state.tool_allowed()
            req = self._round_body(plan, messages, allow, first, stream=False)
            first = False
            resp, target = await dispatcher.complete(plan.route, candidates, req)
            candidates = (target, *(c for c in candidates if c is not target))  # re-invoke the same target
            normalize_completion(resp)
            first_resp = first_resp or resp
            _add_usage(usage, resp.get("usage"))
            choice = (resp.get("choices") or [{}])[0]
            msg = choice.get("message") or {}
            calls = msg.get("tool_calls") or []
            ours = [c for c in calls if (c.get("function") or {}).get("name") == plan.ours]
            theirs = [c for c in calls if c not in ours]
            if msg.get("content"):
                texts.append(msg["content"])
            finish = choice.get("finish_reason")
            if not ours or not allow:
                break
            log.info("round %d: %d web_search call(s) on %s", state.rounds + 1, len(ours), target.key)
            tool_msgs = await run_round(state, ours, self.rt.search, count_hint=plan.count_hint)
            if theirs:
                await self._save_hidden(plan, opts, {**msg, "role": "assistant"},
                                        [c.get("id") for c in theirs], tool_msgs)
                break
            messages = [*messages, {"role": "assistant", "content": msg.get("content"), "tool_calls": ours},
                        *tool_msgs]

        content = _joined(texts)
        out_msg: dict = {"role": "assistant", "content": content or None}
        if msg.get("reasoning_content"):
            out_msg["reasoning_content"] = msg["reasoning_content"]
        if theirs:
            out_msg["tool_calls"] = theirs
            finish = "tool_calls"
        elif finish == "tool_calls" or finish is None:
            finish = "stop"
        annotations = annotate(content, state.sources)
        if annotations:
            out_msg["annotations"] = annotations
        result = {**resp, "id": first_resp.get("id", resp.get("id")),
                  "choices": [{"index": 0, "message": out_msg, "finish_reason": finish, "logprobs": None}]}
        if usage:
            result["usage"] = usage
        await self._finish_chain(plan, opts, finish)
        return Outcome(result, state.searches, target.key)

    async def _save_hidden(self, plan: Plan, opts: Options, assistant: dict, their_ids: list[str],
                           tool_msgs: list[dict]) -> None:
        """A mixed turn: the client gets only its own calls; ours wait in the chain state for the splice."""
        plan.chain = plan.chain or chains.chain_key(opts.client_key, plan.body["messages"], opts.chain_id)
        hidden = chains.Hidden(their_ids, assistant, tool_msgs)
        await chains.save(self.rt.store, plan.chain, self.rt.config.web_search.chain_ttl_s,
                          sticky=True, google=plan.google, hidden=hidden)

    async def _finish_chain(self, plan: Plan, opts: Options, finish: str | None) -> None:
        """Sticky until the final answer: keep state while the client runs tools, drop it at 'stop'."""
        if finish == "tool_calls" and plan.searching:
            plan.chain = plan.chain or chains.chain_key(opts.client_key, plan.body["messages"], opts.chain_id)
            await chains.save(self.rt.store, plan.chain, self.rt.config.web_search.chain_ttl_s,
                              sticky=True, google=plan.google)
        elif finish != "tool_calls" and plan.had_state and plan.chain:
            await chains.drop(self.rt.store, plan.chain)

    # ------------------------------------------------------------ streaming

    async def stream(self, body: dict, opts: Options) -> AsyncIterator:
        """Opens the first upstream stream before returning, so routing errors surface as HTTP errors."""
        plan = await self._plan(body, opts)
        dispatcher = self.rt.dispatcher
        if plan.ours is None:
            if opts.endpoint == "chat":  # the chat encoder takes pre-framed SSE bytes
                it, target = await dispatcher.stream(plan.route, plan.candidates, plan.body, raw=True)
                return relay_sse(it, target)
            it, _ = await dispatcher.stream(plan.route, plan.candidates, plan.body)
            return relay_chunks(it)
        state = self._new_loop(plan, opts)
        allow = state.tool_allowed()
        messages = list(plan.body["messages"])
        it, target = await dispatcher.stream(
            plan.route, plan.candidates, self._round_body(plan, messages, allow, True, stream=True))
        return self._loop_stream(plan, opts, state, messages, it, target, allow)

    async def _loop_stream(self, plan: Plan, opts: Options, state: LoopState, messages: list[dict],
                           it: AsyncIterator[dict], target: Target, allow: bool) -> AsyncIterator:
        dispatcher = self.rt.dispatcher
        candidates = (target, *(c for c in plan.candidates if c is not target))
        base: dict | None = None
        sent_role = False
        usage: dict = {}
        texts: list[str] = []
        prev_text_end_ws = True
        finish: str | None = None
        their_calls = False
        their_ids: list[str] = []
        try:
            while True:
                normalizer = StreamNormalizer()
                ours = ToolCallAssembler()
                kinds: dict[int, bool] = {}  # upstream tool-call index -> is ours
                their_index: dict[int, int] = {}
                round_text: list[str] = []
                async for raw in it:
                    chunk = normalizer.feed(raw)
                    if chunk is None:
                        continue
                    if chunk.get("usage"):
                        _add_usage(usage, chunk["usage"])
                    choices = chunk.get("choices")
                    if not choices:
                        continue
                    if base is None:
                        base = {k: chunk[k] for k in ("id", "object", "created", "model") if k in chunk}
                        base["object"] = "chat.completion.chunk"
                    choice = choices[0]
                    delta = choice.get("delta") or {}
                    out: dict = {}
                    text = delta.get("content")
                    if text:
                        if not round_text and texts and not prev_text_end_ws and not text[0].isspace():
                            text = "\n\n" + text
                        round_text.append(delta["content"])
                        texts.append(text)
                        out["content"] = text
                    if delta.get("reasoning_content"):
                        out["reasoning_content"] = delta["reasoning_content"]
                    for tc in delta.get("tool_calls") or []:
                        idx = tc.get("index", 0)
                        if idx not in kinds:
                            kinds[idx] = (tc.get("function") or {}).get("name") == plan.ours
                        if kinds[idx]:
                            ours.add([tc])
                        else:
                            their_calls = True
                            if tc.get("id"):
                                their_ids.append(tc["id"])
                            mapped = their_index.setdefault(idx, len(their_index))
                            out.setdefault("tool_calls", []).append({**tc, "index": mapped})
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                    if out:
                        if not sent_role:
                            out = {"role": "assistant", **out}
                            sent_role = True
                        yield {**base, "choices": [{"index": 0, "delta": out, "finish_reason": None}]}
                if round_text:
                    prev_text_end_ws = round_text[-1][-1:].isspace()
                our_calls = ours.calls() if kinds and any(kinds.values()) else []
                if not our_calls or not allow:
                    break
                log.info("round %d: %d web_search call(s) on %s", state.rounds + 1, len(our_calls), target.key)
                queue: list = []
                task = asyncio.ensure_future(
                    run_round(state, our_calls, self.rt.search, emit=queue.append, count_hint=plan.count_hint))
                try:
                    while True:
                        done, _ = await asyncio.wait({task}, timeout=self.rt.config.web_search.keepalive_s)
                        while queue:
                            yield queue.pop(0)
                        if done:
                            break
                        yield Keepalive()
                finally:
                    if not task.done():
                        task.cancel()
                tool_msgs = task.result()
                while queue:
                    yield queue.pop(0)
                assistant = {"role": "assistant", "content": "".join(round_text) or None, "tool_calls": our_calls}
                if their_calls:
                    await self._save_hidden(plan, opts, assistant, their_ids, tool_msgs)
                    break
                messages = [*messages, assistant, *tool_msgs]
                allow = state.tool_allowed()
                finish = None
                it, target = await dispatcher.stream(
                    plan.route, candidates, self._round_body(plan, messages, allow, False, stream=True))
                candidates = (target, *(c for c in candidates if c is not target))
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()

        if base is None:
            base = {"id": "chatcmpl-" + str(int(time.time() * 1000)), "object": "chat.completion.chunk",
                    "created": int(time.time()), "model": target.model}
        if their_calls:
            finish = "tool_calls"
        elif finish in (None, "tool_calls"):
            finish = "stop"
        annotations = annotate("".join(texts), state.sources) if state.sources else []
        if annotations:
            yield {**base, "choices": [{"index": 0, "delta": {"annotations": annotations}, "finish_reason": None}]}
        final_delta = {} if sent_role else {"role": "assistant"}
        yield {**base, "choices": [{"index": 0, "delta": final_delta, "finish_reason": finish}]}
        yield {**base, "choices": [], "usage": usage or None}
        await self._finish_chain(plan, opts, finish)
