"""Fake search-capable models on loopback, beyond GLM and Gemini: Qwen on DashScope (native and
OpenAI-compatible), Kimi with its builtin $web_search, Perplexity Sonar, OpenAI (chat search models and
the Responses web_search tool) and Claude with web_search_20250305. Each path starts with an instance
name, so a web_search pool can fail over between instances.

Wire details as documented (checked for these fakes against the sources the reference names):
- DashScope native: POST {root}/api/v1/services/aigc/text-generation/generation, Bearer; {model,
  input{messages}, parameters{result_format, enable_search, search_options{forced_search,
  enable_source, enable_citation, citation_format, freshness?, assigned_site_list?}}}; answers
  {request_id, output{choices[{finish_reason, message}], search_info{search_results[{index, title,
  url, site_name, icon}]}}, usage}. Compatible mode: POST {root}/compatible-mode/v1/chat/completions
  with top-level enable_search / search_options; answers a plain chat.completion (no sources).
- Kimi: POST {base}/chat/completions; tools [{"type": "builtin_function", "function": {"name":
  "$web_search"}}]; first answer finish_reason "tool_calls" with a builtin_function call whose
  arguments the client must echo unchanged in a role "tool" message (tool_call_id, name); then the
  final answer. No structured sources.
- Sonar: POST {base}/chat/completions; search_recency_filter, search_domain_filter,
  web_search_options{search_context_size, user_location}; answers with top-level search_results[{title,
  url, date, last_updated, snippet, source}] and citations[]; [n] markers index search_results from 1.
- OpenAI chat search models: POST {base}/chat/completions with web_search_options; sampling
  parameters such as temperature are refused; message.annotations[{type: url_citation, url_citation{
  start_index, end_index, url (with ?utm_source=openai), title}}].
- OpenAI Responses: POST {base}/responses; tools [{type: web_search}], include
  ["web_search_call.action.sources"]; output [web_search_call{action{type: search, query, sources[{type:
  url, url} | {type: api, name}]}}, message{content[output_text{text, annotations[url_citation{url,
  title, start_index, end_index}]}]}].
- Anthropic: POST {base}/v1/messages, x-api-key, anthropic-version; tools [{type:
  web_search_20250305, name: web_search, max_uses}]; content [server_tool_use, web_search_tool_result{
  content[web_search_result{url, title, encrypted_content, page_age}] | {type:
  web_search_tool_result_error, error_code}}, text{text, citations[web_search_result_location{url,
  title, cited_text, encrypted_index}]}].
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .search_providers import FakeBase, Recorded, Reply, respond, route
from .server import ServerThread

KEYS = {
    "dashscope": "sk-dashscope-test-0015",
    "moonshot": "sk-moonshot-test-0016",
    "perplexity": "pplx-sonar-test-0017",
    "openai": "sk-openai-test-0018",
    "anthropic": "sk-ant-test-0019",
}
KIMI_ARGUMENTS = '{"search_result":{"search_id":"8f2c4e"},"usage":{"total_tokens":3958}}'
BLOG = "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
RELEASES = "https://doc.rust-lang.org/stable/releases.html"
WIKI = "https://en.wikipedia.org/wiki/Rust_(programming_language)"


def _bearer(headers: dict, family: str) -> bool:
    return headers.get("authorization") == f"Bearer {KEYS[family]}"


def _unauthorized() -> Response:
    return JSONResponse({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}, status_code=401)


def _chat(content: str, model: Any, **top: Any) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1763799000, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50}, **top}


class FakeSearchModelFamilies(FakeBase):
    @staticmethod
    def base(server: ServerThread, family: str, instance: str) -> str:
        """The provider baseURL a user would configure, for this fake."""
        return {
            "dashscope": f"{server.url}/{instance}/compatible-mode/v1",
            "moonshot": f"{server.url}/{instance}/kimi/v1",
            "perplexity": f"{server.url}/{instance}/sonar",
            "openai": f"{server.url}/{instance}/openai/v1",
            "anthropic": f"{server.url}/{instance}",
        }[family]

    @route("POST", "/{i}/api/v1/services/aigc/text-generation/generation", "{i}")
    async def dashscope_native(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "dashscope"):
            return JSONResponse({"request_id": "r", "code": "InvalidApiKey", "message": "Invalid API-key provided."},
                                status_code=401)
        body = rec.json or {}
        params = body.get("parameters", {})
        opts = params.get("search_options", {})
        if not isinstance(body.get("input", {}).get("messages"), list) or params.get("enable_search") is not True:
            return JSONResponse({"request_id": "r", "code": "InvalidParameter", "message": "input is invalid"},
                                status_code=400)
        info = None
        if opts.get("enable_source"):
            info = {"search_results": [
                {"index": 1, "title": "Announcing Rust 1.91.0 | Rust Blog", "url": BLOG, "site_name": "Rust Blog",
                 "icon": "https://blog.rust-lang.org/favicon.ico"},
                {"index": "2", "title": "Releases", "url": RELEASES, "site_name": "Rust docs", "icon": ""},
                {"index": 3, "title": "Click", "url": "javascript:alert(1)", "site_name": "x", "icon": ""},
            ]}
        marker = opts.get("citation_format", "[<number>]").replace("<number>", "{}")
        text = f"Rust 1.91.0 is the latest stable release{marker.format(1)}; see the notes{marker.format(2)}" \
               f" and{marker.format(3)}."
        output: dict[str, Any] = {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
        if info is not None:
            output["search_info"] = info
        return respond(reply, {"request_id": "req-1", "output": output,
                               "usage": {"input_tokens": 512, "output_tokens": 40, "total_tokens": 552,
                                         "plugins": {"search": {"count": 1, "strategy": "turbo"}}}})

    @route("POST", "/{i}/compatible-mode/v1/chat/completions", "{i}")
    async def dashscope_compatible(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "dashscope"):
            return _unauthorized()
        body = rec.json or {}
        if body.get("enable_search") is not True:
            return respond(reply, _chat("I cannot search.", body.get("model")))
        return respond(reply, _chat(f"Rust 1.91.0 is out: [Rust Blog]({BLOG}); all releases at {RELEASES}.",
                                    body.get("model")))

    @route("POST", "/{i}/kimi/v1/chat/completions", "{i}")
    async def kimi(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "moonshot"):
            return _unauthorized()
        body = rec.json or {}
        tools = body.get("tools", [])
        if tools != [{"type": "builtin_function", "function": {"name": "$web_search"}}]:
            return JSONResponse({"error": {"message": "tools invalid", "type": "invalid_request_error"}}, status_code=400)
        messages = body.get("messages", [])
        echoes = [m for m in messages if m.get("role") == "tool"]
        if not echoes:
            return respond(reply, {
                "id": "cmpl-1", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": "",
                    "tool_calls": [{"index": 0, "id": "web_search:0", "type": "builtin_function",
                                    "function": {"name": "$web_search", "arguments": KIMI_ARGUMENTS}}]}}],
                "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}})
        call = messages[-2] if len(messages) >= 2 else {}
        echo = echoes[-1]
        if (call.get("tool_calls", [{}])[0].get("function", {}).get("arguments") != KIMI_ARGUMENTS
                or echo.get("tool_call_id") != "web_search:0" or echo.get("content") != KIMI_ARGUMENTS
                or echo.get("name") != "$web_search"):
            return JSONResponse({"error": {"message": "tool result does not match the call",
                                           "type": "invalid_request_error"}}, status_code=400)
        text = ("Rust 1.91.0 is the latest stable release.\n\nSources:\n"
                f"- [Announcing Rust 1.91.0]({BLOG})\n- [Release notes]({RELEASES})\n- {WIKI}.")
        return respond(reply, _chat(text, body.get("model")))

    @route("POST", "/{i}/sonar/chat/completions", "{i}")
    async def sonar(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "perplexity"):
            return _unauthorized()
        body = rec.json or {}
        results = [
            {"title": "Announcing Rust 1.91.0 | Rust Blog", "url": BLOG, "date": "2025-10-30",
             "last_updated": "2025-11-02", "snippet": "The Rust team is happy to announce 1.91.0.", "source": "web"},
            {"title": "Click", "url": "javascript:alert(1)", "snippet": "x", "source": "web"},
            {"title": "Releases", "url": RELEASES, "snippet": "Version 1.91.0 (2025-10-30)", "source": "web"},
        ]
        return respond(reply, _chat("Rust 1.91.0 is the latest stable release [1][3], not [2].", body.get("model"),
                                    citations=[r["url"] for r in results], search_results=results))

    @route("POST", "/{i}/openai/v1/chat/completions", "{i}")
    async def openai_chat(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "openai"):
            return _unauthorized()
        body = rec.json or {}
        if "temperature" in body or "web_search_options" not in body:
            return JSONResponse({"error": {"message": "web_search_options is required for this model",
                                           "type": "invalid_request_error"}}, status_code=400)
        text = "Rust 1.91.0 is the latest stable release, announced on the Rust blog."
        span = "announced on the Rust blog"
        start = text.index(span)
        annotations = [{"type": "url_citation", "url_citation": {
            "start_index": start, "end_index": start + len(span), "url": BLOG + "?utm_source=openai",
            "title": "Announcing Rust 1.91.0 | Rust Blog"}}]
        data = _chat(text, body.get("model"))
        data["choices"][0]["message"]["annotations"] = annotations
        return respond(reply, data)

    @route("POST", "/{i}/openai/v1/responses", "{i}")
    async def openai_responses(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if not _bearer(rec.headers, "openai"):
            return _unauthorized()
        body = rec.json or {}
        if not any(t.get("type") == "web_search" for t in body.get("tools", [])):
            return JSONResponse({"error": {"message": "no web_search tool", "type": "invalid_request_error"}},
                                status_code=400)
        with_sources = "web_search_call.action.sources" in body.get("include", [])
        action: dict[str, Any] = {"type": "search", "query": "latest stable rust release"}
        if with_sources:
            action["sources"] = [{"type": "url", "url": BLOG}, {"type": "api", "name": "oai-weather"},
                                 {"type": "url", "url": WIKI}]
        text = "Rust 1.91.0 is the latest stable release (Rust Blog)."
        output = [
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": action},
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [
                {"type": "output_text", "text": text, "annotations": [
                    {"type": "url_citation", "url": BLOG + "?utm_source=openai", "title": "Announcing Rust 1.91.0",
                     "start_index": 0, "end_index": 40}]}]},
        ]
        return respond(reply, {"id": "resp_1", "object": "response", "status": "completed", "model": body.get("model"),
                               "output": output, "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30}})

    @route("POST", "/{i}/v1/messages", "{i}")
    async def anthropic(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if rec.headers.get("x-api-key") != KEYS["anthropic"]:
            return JSONResponse({"type": "error", "error": {"type": "authentication_error",
                                                            "message": "invalid x-api-key"}}, status_code=401)
        if not rec.headers.get("anthropic-version"):
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error",
                                                            "message": "anthropic-version header is required"}},
                                status_code=400)
        body = rec.json or {}
        tool = next((t for t in body.get("tools", []) if t.get("type") == "web_search_20250305"), None)
        if tool is None or tool.get("name") != "web_search" or "max_tokens" not in body:
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error", "message": "bad tools"}},
                                status_code=400)
        results = [
            {"type": "web_search_result", "url": BLOG, "title": "Announcing Rust 1.91.0 | Rust Blog",
             "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2EM",
             "page_age": "October 30, 2025"},
            {"type": "web_search_result", "url": RELEASES, "title": "Releases", "encrypted_content": "Eo8B",
             "page_age": None},
        ]
        content = [
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
             "input": {"query": "latest stable rust release"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": results},
            {"type": "text", "text": "Rust 1.91.0 is the latest stable release.", "citations": [
                {"type": "web_search_result_location", "url": BLOG, "title": "Announcing Rust 1.91.0 | Rust Blog",
                 "cited_text": "The Rust team is happy to announce a new version of Rust, 1.91.0.",
                 "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}]},
        ]
        return respond(reply, {"id": "msg_01", "type": "message", "role": "assistant", "model": body.get("model"),
                               "content": content, "stop_reason": "end_turn", "stop_sequence": None,
                               "usage": {"input_tokens": 2000, "output_tokens": 50,
                                         "server_tool_use": {"web_search_requests": 1}}})


def error_block(code: str) -> dict:
    """A Messages answer whose search failed (HTTP 200, an error block)."""
    return {"id": "msg_e", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "end_turn",
            "content": [{"type": "server_tool_use", "id": "srvtoolu_e", "name": "web_search", "input": {"query": "q"}},
                        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_e",
                         "content": {"type": "web_search_tool_result_error", "error_code": code}}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}


