"""The per-request log line's cheap path (hub/observability/logformat.py): same text as the logging module's,
written in batches without reordering, and out of the way when anything else is attached."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.observability.logctx import RequestContextFilter, request_id_var
from hub.observability.logformat import DirectLog, JsonFormatter, LineHandler, TextFormatter, install


@pytest.fixture
def handler():
    """A LineHandler installed as the root's only handler, as `searchhub serve` does."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    h = LineHandler(stream)
    h.setFormatter(JsonFormatter())
    h.addFilter(RequestContextFilter())
    root.handlers[:] = [h]
    root.setLevel(logging.INFO)
    install(h)
    yield h, stream
    # (each test calls alone() first: pytest adds its own capture handlers to the root for the
    # test's call phase, after this fixture ran)
    h.write_pending()
    root.handlers[:], _ = saved
    root.setLevel(saved[1])
    install(None)


def alone(h: LineHandler) -> None:
    logging.getLogger().handlers[:] = [h]


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(x) for x in stream.getvalue().splitlines()]


def test_direct_line_matches_the_logging_path(handler) -> None:
    h, stream = handler
    alone(h)
    token = request_id_var.set("req_abc")
    try:
        DirectLog("searchhub.http").info("POST /v1/chat/completions 200 1.2 ms key=anonymous")
        h.write_pending()
        logging.getLogger("searchhub.http").info("%s", "POST /v1/chat/completions 200 1.2 ms key=anonymous")
    finally:
        request_id_var.reset(token)
    direct, logged = lines(stream)
    direct.pop("ts"), logged.pop("ts")
    assert direct == logged == {"level": "info", "logger": "searchhub.http", "request_id": "req_abc",
                                "msg": "POST /v1/chat/completions 200 1.2 ms key=anonymous"}


def test_lines_wait_for_the_flush_and_keep_their_order(handler) -> None:
    h, stream = handler
    alone(h)

    async def scenario() -> tuple[str, str, list[str]]:
        log = DirectLog("searchhub.http")
        log.info("first")
        log.info("second")
        before = stream.getvalue()  # batched: nothing written yet
        await asyncio.sleep(LineHandler.FLUSH_S + 0.1)
        after_flush = stream.getvalue()
        log.info("third")
        logging.getLogger("searchhub.other").warning("a warning")  # writes what waits first
        return before, after_flush, [x["msg"] for x in lines(stream)]

    before, after_flush, msgs = asyncio.run(scenario())
    assert before == ""
    assert [json.loads(x)["msg"] for x in after_flush.splitlines()] == ["first", "second"]
    assert msgs == ["first", "second", "third", "a warning"]


def test_outside_an_event_loop_a_line_is_written_at_once(handler) -> None:
    h, stream = handler
    alone(h)
    DirectLog("searchhub.http").info("no loop")
    assert [x["msg"] for x in lines(stream)] == ["no loop"]


def test_a_full_batch_is_written_without_waiting(handler) -> None:
    h, stream = handler
    alone(h)

    async def scenario() -> int:
        log = DirectLog("searchhub.http")
        for i in range(LineHandler.MAX_PENDING):
            log.info(f"line {i}")
        return len(lines(stream))

    assert asyncio.run(scenario()) == LineHandler.MAX_PENDING


def test_another_handler_gets_the_record(handler) -> None:
    """An extra handler (pytest's caplog, an embedder's) sees the line as a normal record."""
    h, stream = handler
    alone(h)
    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    extra = Catch()
    logging.getLogger().addHandler(extra)
    try:
        DirectLog("searchhub.http").info("via logging")
    finally:
        logging.getLogger().removeHandler(extra)
    assert seen == ["via logging"]
    assert [x["msg"] for x in lines(stream)] == ["via logging"]


def test_level_above_info_writes_nothing(handler) -> None:
    h, stream = handler
    alone(h)
    logging.getLogger("searchhub.http").setLevel(logging.WARNING)
    try:
        DirectLog("searchhub.http").info("hidden")
        h.write_pending()
    finally:
        logging.getLogger("searchhub.http").setLevel(logging.NOTSET)
    assert stream.getvalue() == ""


@given(msg=st.text(), rid=st.text(min_size=1, max_size=40), chain=st.text(min_size=1, max_size=40),
       created=st.floats(min_value=0, max_value=4e9))
def test_formatters_line_is_one_line_that_round_trips(msg: str, rid: str, chain: str, created: float) -> None:
    j = JsonFormatter().line(created, "INFO", "searchhub.http", msg, rid, chain)
    assert "\n" not in j
    entry = json.loads(j)
    assert entry["msg"] == msg and entry["request_id"] == rid
    assert entry.get("chain_id", "-") == chain
    assert entry["ts"].endswith("Z") and len(entry["ts"]) == len("2026-01-01T00:00:00.000Z")
    t = TextFormatter().line(created, "INFO", "searchhub.http", msg, rid, chain)
    assert t.endswith(" " + msg) and " searchhub.http" in t


def test_access_fields_are_json_keys_on_both_paths(handler) -> None:
    """The access line's fields are keys of their own, alike on the cheap path and through logging
    (`extra=`); the text formatter leaves its line as it was."""
    h, stream = handler
    alone(h)
    fields = {"method": "POST", "path": "/v1/messages", "status": 200, "duration_ms": 12.5, "route": "default",
              "target": "local.m", "key": "ci-bot", "searches": 2, "fetches": 1, "search_cost": 0.01}
    msg = "POST /v1/messages 200 12.5 ms key=ci-bot searches=2 search_cost=0.01"
    DirectLog("searchhub.http").info(msg, fields)
    h.write_pending()
    logging.getLogger("searchhub.http").info("%s", msg, extra=fields)
    direct, logged = lines(stream)
    direct.pop("ts"), logged.pop("ts")
    assert direct == logged == {"level": "info", "logger": "searchhub.http", "request_id": "-", "msg": msg, **fields}
    assert TextFormatter().line(0.0, "INFO", "searchhub.http", msg, "-", "-", fields).endswith(" searchhub.http " + msg)
