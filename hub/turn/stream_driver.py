"""The streaming side of a turn (hub/turn/pipeline.py `Turn`): each round's upstream stream relayed
live to the client (text, reasoning, the client's calls) while our calls are collected; between
rounds, the tool events and keepalives.

The upstream stream comes a network read at a time (hub/streams/watch.py `watched_reads`), and what
a read brings goes on as one list of chunks (hub/tools/events.py): a model that answers in bursts costs
one pass through the generators per read, not per chunk.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..backends import usage as usages
from ..backends.normalize import StreamNormalizer, ToolCallAssembler
from ..backends.text_calls import TextCallScanner
from ..config.settings import Target
from ..core.citations import annotate
from ..observability import metrics
from ..tools.keepalive import Feed, with_keepalive
from .answer import add_usage, final_finish, text_call

if TYPE_CHECKING:
    from .pipeline import Turn

log = logging.getLogger("searchhub.pipeline")


class StreamDriver:
    """Drives a streamed turn: what the client sees across all its rounds."""

    def __init__(self, turn: Turn, keepalive_s: float) -> None:
        self.turn = turn
        self.keepalive_s = keepalive_s
        self.base: dict | None = None  # id, object, created and model of every chunk sent
        self.sent_role = False
        self.prev_text_end_ws = True
        self.finish: str | None = None
        self.their_ids: list[str] = []
        self.their_calls = False

    async def run(self, it: AsyncIterator[list[dict]], target: Target, allow: bool,
                  before: list | None = None) -> AsyncIterator:
        turn = self.turn
        for item in before or ():  # the presearch's events
            yield item
        try:
            while True:
                rnd = _Round(self, target, allow)
                async for read in it:
                    shown = rnd.read(read)
                    if shown:
                        yield shown
                shown = rnd.end()
                if shown:
                    yield shown
                if rnd.text:
                    self.prev_text_end_ws = rnd.text[-1][-1:].isspace()
                our_calls = rnd.ours.calls()
                if not our_calls or not allow:
                    break
                await it.aclose()  # ended already: this frees it before the next one opens
                events = Feed()
                task = asyncio.ensure_future(self._next_round("".join(rnd.text), our_calls, events))
                try:
                    async for item in with_keepalive(task, events, self.keepalive_s):
                        yield item
                except BaseException:  # abandoned after the next stream opened: close it
                    if task.done() and not task.cancelled() and task.exception() is None and (nxt := task.result()):
                        await nxt[1].aclose()
                    raise
                opened = task.result()
                if opened is None:
                    break
                allow, it, target = opened
                self.finish = None
                turn.served_to(target)
        finally:
            await it.aclose()
        yield self._ending(target)
        await turn.finish(final_finish(self.finish, self.their_calls), {"usage": turn.usage, "text": "".join(turn.texts)})

    async def _next_round(self, text: str, calls: list[dict], events: Feed) -> tuple | None:
        """Our calls run, then at once the next round's stream opens (in the same task, so the
        model is asked the moment the results are in; their events reach the client meanwhile):
        (allow, stream, target), or None when the turn ends here."""
        turn = self.turn
        if not await turn.after_round(text, calls, self.their_ids, events):
            return None
        allow = turn.allowed()
        it, target = await turn.dispatcher.stream(turn.plan.route, turn.candidates, turn.body(allow),
                                                           trace=turn.trace, server_tools=turn.tools.names)
        return allow, it, target

    def chunk(self, delta: dict) -> dict:
        """An answer chunk with this delta (the first one says the role)."""
        if not self.sent_role:
            delta = {"role": "assistant", **delta}
            self.sent_role = True
        return {**self.base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    def _ending(self, target: Target) -> list[dict]:
        """Citations, the finish and the summed usage, as the last chunks."""
        base = self.base or {"id": "chatcmpl-" + str(int(time.time() * 1000)), "object": "chat.completion.chunk",
                             "created": int(time.time()), "model": target.model}
        finish = final_finish(self.finish, self.their_calls)
        sources = self.turn.state.sources
        out = []
        annotations = annotate("".join(self.turn.texts), sources, content=self.turn.citation_content) if sources else []
        if annotations:
            out.append({**base, "choices": [{"index": 0, "delta": {"annotations": annotations}, "finish_reason": None}]})
        final_delta = {} if self.sent_role else {"role": "assistant"}
        out.append({**base, "choices": [{"index": 0, "delta": final_delta, "finish_reason": finish}]})
        out.append({**base, "choices": [], "usage": self.turn.usage or None})
        return out


class _Round:
    """One upstream stream of the turn: `take` each chunk (it returns what the client sees of
    it), then `end`. Its text, and our calls in `ours`, are what the tool loop runs on."""

    __slots__ = ("driver", "turn", "target", "normalizer", "ours", "text", "scanner", "kinds", "their_index",
                 "chunks", "has_usage", "native_calls")

    def __init__(self, driver: StreamDriver, target: Target, allow: bool) -> None:
        self.driver = driver
        self.turn = driver.turn
        self.target = target
        self.normalizer = StreamNormalizer()
        self.ours = ToolCallAssembler()
        self.text: list[str] = []
        self.scanner = TextCallScanner(self.turn.plan.text_names if allow else frozenset())
        self.kinds: dict[int, bool] = {}  # upstream tool-call index -> is ours
        self.their_index: dict[int, int] = {}
        self.chunks = 0
        self.has_usage = False
        self.native_calls = False

    def read(self, raw_chunks: list[dict]) -> list[dict]:
        """What the client sees of one network read. The text of text-only chunks that came in
        the same read is shown as one delta: it reaches the client in the same write anyway, and
        each delta costs the text-call scanner, the protocol translators and the encoders a full
        pass (a burst of 20 was a quarter of a streamed search round's instructions; bench/README.md)."""
        out: list[dict] = []
        texts: list[str] = []
        driver = self.driver
        text_only = self.normalizer.text_only
        for raw in raw_chunks:
            text = text_only(raw) if driver.base is not None else None
            if text is not None:  # the common chunk: text only, no fixing needed
                self.chunks += 1
                if text:
                    texts.append(text)
                continue
            if texts:
                self._text_delta(texts, out)
                texts = []
            c = self.take(raw)
            if c is not None:
                out.append(c)
        if texts:
            self._text_delta(texts, out)
        return out

    def _text_delta(self, texts: list[str], out: list[dict]) -> None:
        shown = self._shown("".join(texts))
        if shown:
            out.append(self.driver.chunk({"content": shown}))

    def take(self, raw: dict) -> dict | None:
        """What the client sees of one chunk (`read` takes text-only chunks itself)."""
        driver = self.driver
        self.chunks += 1
        chunk = self.normalizer.feed(raw)
        if chunk is None:
            return None
        if not usages.missing(chunk.get("usage")):
            self.has_usage = True
            add_usage(self.turn.usage, chunk["usage"])
        choices = chunk.get("choices")
        if not choices:
            return None
        if driver.base is None:
            driver.base = {k: chunk[k] for k in ("id", "object", "created", "model") if k in chunk}
            driver.base["object"] = "chat.completion.chunk"
        choice = choices[0]
        delta = choice.get("delta") or {}
        out: dict = {}
        text = delta.get("content")
        if text and (shown := self._shown(text)):
            out["content"] = shown
        if delta.get("reasoning_content"):
            out["reasoning_content"] = delta["reasoning_content"]
        for tc in delta.get("tool_calls") or []:
            self.native_calls = True
            idx = tc.get("index", 0)
            if idx not in self.kinds:
                self.kinds[idx] = self.turn.ours(tc)
            if self.kinds[idx]:
                self.ours.add([tc])
            else:
                driver.their_calls = True
                if tc.get("id"):
                    driver.their_ids.append(tc["id"])
                mapped = self.their_index.setdefault(idx, len(self.their_index))
                out.setdefault("tool_calls", []).append({**tc, "index": mapped})
        if choice.get("finish_reason"):
            driver.finish = choice["finish_reason"]
        return driver.chunk(out) if out else None

    def _shown(self, text: str) -> str:
        """What to show of a text delta (the scanner holds back what may be a call written as
        text); a round's text after an earlier round's starts a new paragraph."""
        shown = text if self.native_calls else self.scanner.feed(text)
        if not shown:
            return ""
        turn = self.turn
        if not self.text and turn.texts and not self.driver.prev_text_end_ws and not shown[0].isspace():
            shown = "\n\n" + shown
        self.text.append(text)
        turn.texts.append(shown)
        return shown

    def end(self) -> list[dict]:
        """The stream ended: what the text-call scanner still held (the text, and the calls it
        recovered), and the round's usage estimated when the backend sent none."""
        turn, driver, target = self.turn, self.driver, self.target
        if not self.has_usage and self.chunks and target.provider.quirks.estimate_usage:
            add_usage(turn.usage, usages.estimate(target.provider.id, usages.prompt_tokens(
                turn.messages, turn.plan.body.get("tools")), max(self.chunks - 2, 1)))
        rest = self.scanner.finish()
        out: dict = {}
        if rest:
            self.text.append(rest)
            turn.texts.append(rest)
            out["content"] = rest
        scanner = self.scanner
        if scanner.calls and not self.native_calls:
            metrics.TEXT_TOOL_CALLS.labels(target.provider.id).inc(len(scanner.calls))
            log.info("recovered %d tool call(s) written as text by %s", len(scanner.calls), target.key)
            for call in scanner.calls:
                tc = text_call(call, index=len(self.kinds))
                self.kinds[len(self.kinds)] = call.name in turn.plan.served
                if call.name in turn.plan.served:
                    self.ours.add([tc])
                else:
                    driver.their_calls = True
                    driver.their_ids.append(tc["id"])
                    out.setdefault("tool_calls", []).append({**tc, "index": len(self.their_index)})
                    self.their_index[len(self.their_index)] = len(self.their_index)
        if not out or driver.base is None:
            return []
        return [driver.chunk(out)]
