"""Optional OpenTelemetry: spans over OTLP/HTTP to a loopback collector, GenAI attribute names, and a
clear message when the SDK is missing."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .fakes.server import ServerThread
from .helpers import base_config, searxng_engine

ROOT = Path(__file__).resolve().parent.parent


class FakeCollector:
    """An OTLP/HTTP trace receiver: decodes the protobuf export requests it gets."""

    def __init__(self) -> None:
        self.spans: list = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        self.server = ServerThread(Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])]))

    async def _traces(self, request: Request) -> Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        req = ExportTraceServiceRequest()
        req.ParseFromString(await request.body())
        with self._lock:
            self.headers.append(dict(request.headers))
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    self.spans.extend(ss.spans)
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")


def attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


def search_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 is out [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}


def test_spans_for_request_rounds_and_tool_calls(gateway, fake_model, search_fakes) -> None:
    collector = FakeCollector()
    collector.server.start()
    try:
        cfg = base_config(fake_model.url)
        cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
        cfg["telemetry"] = {"otlpEndpoint": collector.server.url + "/v1/traces", "serviceName": "hub-test",
                            "headers": {"x-collector-token": "tok"}}
        cfg["trace"] = {"enabled": False}  # spans do not depend on the trace ring
        gw = gateway(cfg)
        fake_model.default = search_then_answer
        openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
            model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
        deadline = time.monotonic() + 15
        while len(collector.spans) < 4:
            assert time.monotonic() < deadline, f"got {len(collector.spans)} spans"
            time.sleep(0.1)
    finally:
        collector.server.stop()
    by_name: dict[str, list] = {}
    for s in collector.spans:
        by_name.setdefault(s.name, []).append(s)
    (root,) = by_name["searchhub chat"]
    rounds = by_name["chat m"]
    (tool,) = by_name["execute_tool web_search"]
    assert len(rounds) == 2
    trace_id = root.trace_id
    assert all(s.trace_id == trace_id and s.parent_span_id == root.span_id for s in [*rounds, tool])
    a = attrs(root)
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "default"
    assert a["http.response.status_code"] == 200 and a["searchhub.injected"] is True
    assert a["gen_ai.usage.input_tokens"] == 20 and a["gen_ai.usage.output_tokens"] == 10
    r = attrs(rounds[0])
    assert r["gen_ai.provider.name"] == "local" and r["gen_ai.request.model"] == "m"
    t = attrs(tool)
    assert t["gen_ai.tool.name"] == "web_search" and t["gen_ai.operation.name"] == "execute_tool"
    assert t["searchhub.engine"] == "searxng" and t["searchhub.engine_chosen_by"] == "default"
    assert root.start_time_unix_nano <= rounds[0].start_time_unix_nano <= tool.start_time_unix_nano
    assert tool.end_time_unix_nano <= rounds[1].start_time_unix_nano + 5_000_000
    assert rounds[1].end_time_unix_nano <= root.end_time_unix_nano
    assert "latest rust release" not in str(collector.spans)  # no model text in spans
    assert collector.headers[0]["x-collector-token"] == "tok"


def test_missing_sdk_is_a_clear_message_not_a_failure() -> None:
    code = (
        "import sys, logging\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "sys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None\n"  # as if not installed
        "from hub.config import TelemetryConfig\n"
        "from hub.observability.telemetry import Telemetry\n"
        "t = Telemetry.from_config(TelemetryConfig(otlp_endpoint='http://127.0.0.1:9/v1/traces'))\n"
        "assert not t.enabled\n"
        "print('served')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "served" in out.stdout, out.stderr
    assert "OpenTelemetry SDK is not installed" in out.stderr and "searchhub[otel]" in out.stderr
