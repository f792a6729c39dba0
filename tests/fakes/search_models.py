"""Fake search-capable models on loopback: Zhipu GLM chat completions with its built-in web_search
tool, and Gemini generateContent grounded with Google Search. Several named instances share one
server (path prefix = instance name), so a web_search pool can fail over between them.

Wire details, as verified (protocols.md sections 5 and 6, from the zhipu OpenAPI excerpt, the typed
zai-rs WebSearch tool, googleapis/python-genai types.py):
- GLM: POST {base}/chat/completions, `Authorization: Bearer <key>`; tools [{"type": "web_search",
  "web_search": {enable, search_engine, search_result, count, search_recency_filter, ...}}]; the
  answer in choices[0].message.content, hits in the TOP-LEVEL `web_search` array
  [{title, content, link, media, icon, refer, publish_date}] only when search_result is true;
  errors {"error": {"code": "<digits as string>", "message"}}.
- Gemini: POST {root}/v1beta/models/{model}:generateContent, `x-goog-api-key`; tools
  [{"google_search": {}}] (timeRangeFilter {startTime, endTime} optional, checked in the SDK's
  GoogleSearch type); google_search beside functionDeclarations is refused; answers candidates[0]
  {content.parts[].text, groundingMetadata{webSearchQueries, groundingChunks[{web{uri, title}}],
  groundingSupports[{segment{startIndex?, endIndex, text}, groundingChunkIndices}]}}; a bad key is
  400 {"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .search_providers import CORPUS, FakeBase, Recorded, Reply, respond, route
from .server import ServerThread

GLM_KEY = "glm-test-key-0005"
GEMINI_KEY = "gemini-test-key-0006"


class FakeSearchModels(FakeBase):
    """GLM at /{instance}/api/paas/v4/chat/completions, Gemini at /{instance}/v1beta/models/..."""

    @staticmethod
    def glm_base(server: ServerThread, instance: str) -> str:
        return f"{server.url}/{instance}/api/paas/v4"

    @staticmethod
    def gemini_base(server: ServerThread, instance: str) -> str:
        return f"{server.url}/{instance}"

    @route("POST", "/{instance}/api/paas/v4/chat/completions", "{instance}")
    async def glm(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if rec.headers.get("authorization") != f"Bearer {GLM_KEY}":
            return JSONResponse({"error": {"code": "1000", "message": "身份验证失败。"}}, status_code=401)
        body = rec.json or {}
        tool = next((t.get("web_search", {}) for t in body.get("tools", []) if t.get("type") == "web_search"), None)
        if tool is None or any(t.get("type") == "function" for t in body.get("tools", [])):
            return JSONResponse({"error": {"code": "1210", "message": "API 调用参数有误"}}, status_code=400)
        n = int(tool.get("count", 10))
        items = [
            {"title": t, "content": s, "link": u, "media": u.split("/")[2] if "://" in u else "",
             "icon": "", "refer": f"ref_{i}", "publish_date": (d or "")[:10]}
            for i, (t, u, s, d) in enumerate(CORPUS[:n], 1)
        ]
        normal: dict[str, Any] = {
            "id": "2025112216100012345", "request_id": "2025112216100012345", "created": 1763799000,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": "Rust 1.91.0 is the latest stable release [ref_1], see the notes [ref_2] and [ref_4].",
            }}],
            "usage": {"prompt_tokens": 2200, "completion_tokens": 31, "total_tokens": 2231},
        }
        if tool.get("search_result") is True:
            normal["web_search"] = items
        return respond(reply, normal)

    @route("POST", "/{instance}/v1beta/models/{model}:generateContent", "{instance}")
    async def gemini(self, request: Request, rec: Recorded, reply: Reply | None) -> Response:
        if rec.headers.get("x-goog-api-key") != GEMINI_KEY:
            return JSONResponse({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                           "status": "INVALID_ARGUMENT"}}, status_code=400)
        body = rec.json or {}
        tools = body.get("tools", [])
        if any("functionDeclarations" in t or "function_declarations" in t for t in tools):
            return JSONResponse({"error": {"code": 400, "message": "Tool use with function calling is unsupported",
                                           "status": "INVALID_ARGUMENT"}}, status_code=400)
        grounded = any("google_search" in t or "googleSearch" in t for t in tools)
        text = "Rust 1.91.0 is the latest stable release. It shipped on October 30, 2025."
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0,
        }
        if grounded:
            candidate["groundingMetadata"] = {
                "webSearchQueries": ["latest stable rust release"],
                "searchEntryPoint": {"renderedContent": "<style>.x{}</style><div class=\"container\">…</div>"},
                "groundingChunks": [
                    {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9", "title": "rust-lang.org"}},
                    {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/XyZ1", "title": "wikipedia.org"}},
                ],
                "groundingSupports": [
                    {"segment": {"endIndex": 40, "text": "Rust 1.91.0 is the latest stable release."},
                     "groundingChunkIndices": [0], "confidenceScores": [0.98]},
                    {"segment": {"startIndex": 41, "endIndex": 73, "text": "It shipped on October 30, 2025."},
                     "groundingChunkIndices": [0, 1], "confidenceScores": [0.95, 0.9]},
                ],
            }
        normal = {"candidates": [candidate],
                  "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 30, "totalTokenCount": 42},
                  "modelVersion": request.path_params["model"], "responseId": "abc123"}
        return respond(reply, normal)
