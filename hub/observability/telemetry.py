"""Optional OpenTelemetry export: one span tree per request, built from its finished trace.

Spans are made after the request ends, from the timings the trace already holds, so the request
path pays nothing and no span context has to travel through the pipeline. Off unless
`telemetry.otlpEndpoint` is set; the OpenTelemetry SDK is imported only then (the `otel` extra).
Attribute names follow the OpenTelemetry GenAI semantic conventions where one applies.
"""

from __future__ import annotations

import logging
from typing import Any

from ..config.settings import TelemetryConfig
from .trace import Trace

log = logging.getLogger("searchhub.telemetry")
_NS = 1_000_000


class Telemetry:
    """Exports finished traces as spans; the default instance does nothing."""

    def __init__(self, tracer: Any = None, provider: Any = None) -> None:
        self._tracer = tracer
        self._provider = provider

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @classmethod
    def from_config(cls, config: TelemetryConfig) -> Telemetry:
        if not config.otlp_endpoint:
            return cls()
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as e:
            log.error("telemetry.otlpEndpoint is set, but the OpenTelemetry SDK is not installed (%s): "
                      "install searchhub[otel] (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http); "
                      "serving without spans", e.name)
            return cls()
        provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}))
        exporter = OTLPSpanExporter(endpoint=config.otlp_endpoint, headers=dict(config.headers) or None)
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000))
        log.info("exporting request spans over OTLP/HTTP")
        return cls(provider.get_tracer("searchhub"), provider)

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()

    def export(self, trace: Trace) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        from opentelemetry import trace as otel
        from opentelemetry.trace import SpanKind, Status, StatusCode

        start = int(trace.started_at * 1e9)
        end = start + int((trace.total_ms or 0) * _NS)
        root = tracer.start_span(f"searchhub {trace.endpoint}", kind=SpanKind.SERVER,
                                 start_time=start, attributes=_request_attributes(trace))
        if trace.status >= 500 or trace.error:
            root.set_status(Status(StatusCode.ERROR, trace.error or f"status {trace.status}"))
        ctx = otel.set_span_in_context(root)
        rounds = trace.targets
        for i, attempt in enumerate(rounds):
            r_start = start + int(attempt.at_ms * _NS)
            later = [c.at_ms for c in trace.calls if c.at_ms >= attempt.at_ms + attempt.ms]
            later += [t.at_ms for t in rounds[i + 1:]]
            r_end = start + int(min(later) * _NS) if later else end
            span = tracer.start_span(f"chat {attempt.target.partition('.')[2]}", context=ctx, kind=SpanKind.CLIENT, start_time=r_start,
                                     attributes=_round_attributes(trace, attempt))
            if attempt.outcome != "ok":
                span.set_status(Status(StatusCode.ERROR, attempt.reason or "failed"))
            span.end(end_time=max(r_end, r_start))
        for call in trace.calls:
            c_start = start + int(call.at_ms * _NS)
            span = tracer.start_span(f"execute_tool {call.tool}", context=ctx, kind=SpanKind.INTERNAL,
                                     start_time=c_start, attributes=_tool_attributes(call))
            if call.outcome != "ok":
                span.set_status(Status(StatusCode.ERROR, call.outcome))
            span.end(end_time=c_start + int((call.latency_ms or 0) * _NS))
        root.end(end_time=end)


def _request_attributes(t: Trace) -> dict:
    a: dict[str, Any] = {
        "http.request.method": "POST", "http.response.status_code": t.status, "searchhub.endpoint": t.endpoint,
        "gen_ai.operation.name": "chat", "searchhub.request_id": t.id, "searchhub.client": t.client,
        "searchhub.rounds": t.rounds, "searchhub.tool_calls": len(t.calls),
    }
    _set_present(a, {"gen_ai.request.model": t.model, "searchhub.route": t.route, "searchhub.chain": t.chain,
                     "searchhub.key": t.key})
    if t.injection is not None:
        a["searchhub.injected"] = t.injection.decision
        a["searchhub.injection_reason"] = t.injection.reason
    if t.guards:
        a["searchhub.guards"] = list(t.guards)
    _usage(a, t.usage)
    return a


def _round_attributes(t: Trace, attempt) -> dict:
    provider, _, model = attempt.target.partition(".")
    a: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                         "gen_ai.request.model": model, "searchhub.target": attempt.target}
    _set_present(a, {"http.response.status_code": attempt.status, "error.type": (attempt.reason or "")[:120]})
    return a


def _tool_attributes(call) -> dict:
    a: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool,
                         "gen_ai.tool.type": "extension", "searchhub.outcome": call.outcome,
                         "searchhub.cached": call.cached}
    _set_present(a, {"gen_ai.tool.call.id": call.id, "searchhub.engine": call.engine,
                     "searchhub.engine_chosen_by": call.chosen_by})
    if call.hits is not None:
        a["searchhub.hits"] = call.hits
    return a


def _set_present(a: dict, values: dict) -> None:
    """Adds the attributes that have a value (None, "" and 0 are left out, as OpenTelemetry has no null)."""
    a.update({k: v for k, v in values.items() if v})


def _usage(a: dict, usage: dict | None) -> None:
    if not usage:
        return
    if isinstance(usage.get("prompt_tokens"), int):
        a["gen_ai.usage.input_tokens"] = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        a["gen_ai.usage.output_tokens"] = usage["completion_tokens"]
