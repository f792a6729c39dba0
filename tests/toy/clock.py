"""A toy server tool, written the way a new module of hub/tools/kinds/ would be, declaration (TOOL)
included: tests/test_server_tools.py puts its TOOL in the registry's table, tests/test_tool_registry.py
has the registry discover it from a package of its own.

`clock` tells the time in a city; its calls show as a page opened (Responses `open_page`) and as
Anthropic `web_fetch` blocks, counted in `web_fetch_requests`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hub.core.citations import Source
from hub.search.render import error_text
from hub.tools.arguments import ArgumentError, message, parse_arguments
from hub.tools.base import Hosted, Rendered, ToolCall, ToolRequest
from hub.tools.kind import Parts, ToolKind

HOSTED = Hosted(action="open_page", anthropic_name="web_fetch", anthropic_result="web_fetch_tool_result",
                usage_key="web_fetch_requests")
TIMES = {"paris": "12:00", "tokyo": "20:00"}


@dataclass(slots=True)
class ClockCall(ToolCall):
    city: str = ""
    result: str | None = None
    error: str | None = None
    HOSTED: ClassVar[Hosted] = HOSTED

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def key(self) -> str:
        return self.city

    @property
    def label(self) -> str:
        return f"asked the time in {self.city}"

    @property
    def ran(self) -> bool:
        return self.error != "max_uses_exceeded"

    def shown_input(self) -> dict:
        return {"url": self.url}

    @property
    def url(self) -> str:
        return f"https://clock.test/{self.city}"

    def action(self, *, done: bool) -> dict:
        return {"type": HOSTED.action, "url": self.url}

    def hosted_content(self) -> list[dict] | dict:
        if not self.ok:
            return {"type": "web_fetch_tool_error", "error_code": self.error or "unavailable"}
        return {"type": "web_fetch_result", "url": self.url,
                "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                          "data": self.result}}}

    def pages(self):
        return [(self.url, f"Time in {self.city}", self.result or "")] if self.ok else []


class Clock:
    call_type = ClockCall

    def __init__(self, name: str = "clock") -> None:
        self.name = name
        self._schema = {"type": "function", "function": {
            "name": name, "description": "The local time in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

    def offered(self, request: ToolRequest) -> bool:
        return True

    def max_uses(self, request: ToolRequest) -> int | None:
        hosted = request.hosted.get("web_search")  # the toy obeys the hosted search's max_uses
        return hosted.max_uses if hosted is not None else None

    def schema(self, request: ToolRequest) -> dict:
        return self._schema

    def call(self, call_id: str, raw_arguments: Any, request: ToolRequest) -> ClockCall:
        city = parse_arguments(raw_arguments, tool_name=self.name, call_id=call_id).get("city")
        if not isinstance(city, str) or not city.strip():
            raise ArgumentError(message(self.name, call_id, "the city is missing", str(raw_arguments)))
        return ClockCall(call_id, city.strip().lower())

    async def run(self, call: ClockCall, request: ToolRequest) -> None:
        found = TIMES.get(call.city)
        if found is None:
            call.error = "url_not_accessible"
        else:
            call.result = f"It is {found} in {call.city}."

    def refuse(self, call: ClockCall, code: str, message: str) -> None:
        call.error = code

    def render(self, call: ClockCall, first_n: int, room: int | None = None) -> Rendered:
        if not call.ok:
            return Rendered(error_text(f"no clock for {call.city}"), [])
        return Rendered(f"[{first_n}] {call.result}", [Source(first_n, call.url, f"Time in {call.city}", call.result)])

    def replay(self, shown_input: dict, content: Any) -> tuple[dict, str]:
        url = shown_input.get("url") if isinstance(shown_input.get("url"), str) else ""
        return {"city": url.rsplit("/", 1)[-1]}, "replayed clock result"


def _build(parts: Parts) -> Clock:
    return Clock()


TOOL = ToolKind("clock", build=_build)
