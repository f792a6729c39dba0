"""A protocol is one folder of hub/protocols/: its `endpoints` module declares PROTOCOL (its endpoints,
its error shape, the paths whose errors take that shape), hub/protocols/registry.py finds it, and
routes/protocols.py serves it. Nothing in routes/ names a protocol."""

from __future__ import annotations

import importlib
import json
import textwrap
import uuid
from pathlib import Path

import httpx
import pytest

from hub.config import parse
from hub.protocols.registry import PROTOCOLS, discover, shaping
from hub.runtime import PLUGINS
from routes.app import DIRECT_PATHS, create_app

from .fakes.server import ServerThread
from .helpers import ROOT, base_config, hermetic

PROTOCOLS_DIR = ROOT / "hub" / "protocols"

# A made-up protocol: "ask" a question, get the model's answer, errors as {"problem": ...}.
ASK = """
    from hub.core.errors import BadRequest
    from hub.protocols.errors import as_gateway_error
    from hub.protocols.serving import SSE_HEADERS, Answer, Endpoint, ProtocolKind, Stream


    async def ask(rt, call):
        question = call.body.get("question")
        if not isinstance(question, str):
            raise BadRequest("question: must be a string")
        opts = call.options()
        chat = {"model": call.body.get("model", "default"), "messages": [{"role": "user", "content": question}]}
        if call.body.get("stream"):
            async def chunks():
                yield b"event: said\\ndata: " + (await rt.pipeline.complete(chat, opts)).response[
                    "choices"][0]["message"]["content"].encode() + b"\\n\\n"
            return Stream(chunks(), lambda message: b"event: cut\\ndata: " + message.encode() + b"\\n\\n", SSE_HEADERS)
        outcome = await rt.pipeline.complete(chat, opts)
        return Answer({"answer": outcome.response["choices"][0]["message"]["content"],
                       "asked_by": call.headers.get("user-agent", "")})


    async def whoami(rt, call):
        key, bill = call.caller()
        return Answer({"id": call.path_params["id"], "query": call.query, "key": key.name if key else None})


    def problem(exc, call):
        err = as_gateway_error(exc)
        return Answer({"problem": err.message, "seen": call is not None}, err.status)


    PROTOCOL = ProtocolKind(
        name="ask",
        endpoints=(Endpoint("POST", ("/ask/v1/ask",), ask, "ask", direct=True),
                   Endpoint("GET", ("/ask/v1/who/{id}",), whoami, "who", body=False, watched=False)),
        error=problem,
        prefixes=("/ask/",),
    )
"""


def _protocols(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folders: dict[str, dict[str, str]]):
    """A throwaway protocols package on sys.path: folder -> {module: source}."""
    name = f"protocols_{uuid.uuid4().hex}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "shared.py").write_text("X = 1\n")  # a module beside the folders: no protocol
    for folder, modules in folders.items():
        (tmp_path / name / folder).mkdir()
        (tmp_path / name / folder / "__init__.py").write_text("")
        for module, source in modules.items():
            (tmp_path / name / folder / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


# ---------------------------------------------------------------- the repository's protocols


def test_every_protocol_folder_is_served():
    """Each folder of hub/protocols/ (read from disk, not from the registry) declares one protocol,
    and every path it declares is a route of the app."""
    on_disk = {p.name for p in PROTOCOLS_DIR.iterdir()
               if p.is_dir() and (p / "__init__.py").exists() and not p.name.startswith("_")}
    assert on_disk == {kind.name for kind in PROTOCOLS} >= {"chat", "responses", "messages"}
    for kind in PROTOCOLS:
        assert importlib.import_module(f"hub.protocols.{kind.name}.endpoints").PROTOCOL is kind
    app = create_app(str(ROOT / "engines.json"))
    served = {(m, r.path) for r in app.routes for m in (getattr(r, "methods", None) or ())}
    declared = {(ep.method, path) for kind in PROTOCOLS for ep in kind.endpoints for path in ep.paths}
    assert declared <= served
    assert DIRECT_PATHS == {"/v1/chat/completions", "/v1/responses", "/v1/messages", "/anthropic/v1/messages"}


def test_errors_take_the_shape_of_the_path_s_protocol():
    assert shaping("/v1/messages/count_tokens").name == "messages"
    assert shaping("/anthropic/v1/models").name == "messages"
    assert shaping("/api/web_fetch").name == "ollama"
    assert shaping("/v1/chat/completions").name == shaping("/nowhere").name == "chat"


# ---------------------------------------------------------------- a new protocol: one folder, nothing else


def test_a_new_protocol_folder_is_served_over_http(tmp_path, monkeypatch, fake_model):
    """A folder with an endpoints module is found and served: its handler runs a turn on the fake
    model, streams, reads path and query, and every error on its paths (a bad body, its own 400, a
    404, a 401) is in its shape, while the other protocols keep theirs."""
    kinds = (*PROTOCOLS, *discover(_protocols(tmp_path, monkeypatch, {"ask": {"endpoints": ASK}})))
    cfg = hermetic(base_config(fake_model.url))
    cfg["server"]["apiKeys"] = [{"name": "team", "key": "sk-team-0123456789"}]
    cfg["server"]["adminKeys"] = ["admin-key-0123456789"]
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(cfg))
    config = parse(path.read_text(), env={}, plugins=PLUGINS, path=str(path))
    server = ServerThread(create_app(str(path), config, protocols=kinds)).start()
    auth = {"authorization": "Bearer sk-team-0123456789"}
    try:
        with httpx.Client(base_url=server.url, timeout=30, headers=auth) as c:
            r = c.post("/ask/v1/ask", json={"question": "hi"}, headers={"user-agent": "asker/1"})
            assert r.status_code == 200 and r.json()["asked_by"] == "asker/1", r.text
            assert r.json()["answer"] and r.headers["x-request-id"]
            assert fake_model.requests[-1]["messages"][-1]["content"] == "hi"

            r = c.post("/ask/v1/ask", json={"question": "hi", "stream": True})
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            assert r.text.startswith("event: said\ndata: ")

            r = c.get("/ask/v1/who/42?x=1")
            assert r.json() == {"id": "42", "query": "x=1", "key": "team"}

            bad = c.post("/ask/v1/ask", content=b"{not json")
            assert bad.status_code == 400 and bad.json()["seen"] is False and "problem" in bad.json()
            own = c.post("/ask/v1/ask", json={"question": 3})
            assert own.status_code == 400 and own.json() == {"problem": "question: must be a string", "seen": True}
            missing = c.get("/ask/v1/nothing")
            assert missing.status_code == 404 and "no such endpoint" in missing.json()["problem"]
            assert c.post("/v1/chat/completions", content=b"{").json()["error"]["type"] == "invalid_request_error"
        anonymous = httpx.post(server.url + "/ask/v1/ask", json={"question": "hi"}, timeout=10)
        assert anonymous.status_code == 401 and "API key" in anonymous.json()["problem"]
        # its calls are the gateway's API calls: counted, and traced as model calls
        counted = httpx.get(server.url + "/metrics", timeout=10).text
        assert 'searchhub_requests_total{endpoint="ask",status="200"} 2.0' in counted, counted[-3000:]
        assert 'searchhub_requests_total{endpoint="ask",status="400"} 2.0' in counted
        traces = httpx.get(server.url + "/admin/traces", timeout=10,
                           headers={"authorization": "Bearer admin-key-0123456789"}).json()
        assert [t["endpoint"] for t in traces["data"]].count("ask") >= 2, traces
    finally:
        server.stop()


def test_a_folder_without_endpoints_is_a_bug(tmp_path, monkeypatch):
    package = _protocols(tmp_path, monkeypatch, {"half": {"wire": "X = 1\n"}})
    with pytest.raises(ValueError, match=r"\.half is a protocol folder without an 'endpoints' module"):
        discover(package)


def test_an_endpoints_module_that_declares_nothing_is_a_bug(tmp_path, monkeypatch):
    package = _protocols(tmp_path, monkeypatch, {"empty": {"endpoints": "X = 1\n"}})
    with pytest.raises(ValueError, match=r"\.empty\.endpoints declares no protocol"):
        discover(package)


def test_a_path_served_twice_is_a_bug(tmp_path, monkeypatch):
    package = _protocols(tmp_path, monkeypatch, {"ask": {"endpoints": ASK},
                                                 "ask2": {"endpoints": ASK.replace('name="ask"', 'name="ask2"')}})
    with pytest.raises(ValueError, match=r"POST /ask/v1/ask is already served by .*\.ask\.endpoints"):
        discover(package)


def test_an_endpoint_that_raises_inside_its_import_is_not_hidden(tmp_path, monkeypatch):
    """A missing module inside a protocol's endpoints is its own error, not 'no endpoints module'."""
    package = _protocols(tmp_path, monkeypatch, {"ask": {"endpoints": "import no_such_module_here\n"}})
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        discover(package)


def test_a_protocol_whose_error_answer_fails_still_answers(tmp_path, monkeypatch, fake_model):
    """A plug-in's error shape that raises: the client gets a 500 in OpenAI's shape, not a dropped
    request, for a handler's failure and for a 404 on its paths alike."""
    broken = ASK.replace("        err = as_gateway_error(exc)\n        return Answer({\"problem\"",
                         "        raise RuntimeError(\"the shape itself is broken\")\n"
                         "        return Answer({\"problem\"")
    assert broken != ASK
    kinds = (*PROTOCOLS, *discover(_protocols(tmp_path, monkeypatch, {"ask": {"endpoints": broken}})))
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(base_config(fake_model.url))))
    config = parse(path.read_text(), env={}, plugins=PLUGINS, path=str(path))
    server = ServerThread(create_app(str(path), config, protocols=kinds)).start()
    try:
        for r in (httpx.post(server.url + "/ask/v1/ask", json={"question": 3}, timeout=10),
                  httpx.get(server.url + "/ask/v1/nothing", timeout=10)):
            assert r.status_code == 500 and r.json()["error"]["message"] == "internal error", r.text
    finally:
        server.stop()
