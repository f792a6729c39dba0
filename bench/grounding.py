"""Grounding benchmark: do the facts a user asks about reach the model?

Offline. Uses the corpus in bench/grounding/corpus/ (bench/grounding/make_corpus.py writes it): 50
questions (30 English, 20 Chinese) about invented facts, each with one answer page whose fact sits
deep in the body and two on-topic distractor pages. The bench starts, all on loopback:

  a. a static web server serving those pages (text/html; charset=utf-8),
  b. a fake search engine on the SearXNG JSON wire (GET /search?q=..&format=json) that answers a
     question with its answer page and distractors, in an order shuffled with a fixed seed, with the
     search-engine teaser (title + ~160-character snippet, never the answer) only,
  c. a recording OpenAI-compatible model (POST /v1/chat/completions, JSON or SSE) that keeps every
     request body the gateway sends and answers a fixed text; with --model-url it is a recording
     proxy in front of a real server (llama.cpp's llama-server, vLLM, ...) instead,
  d. searchhub itself (`searchhub serve` on a generated engines.json: webSearch.mode "presearch",
     injectPolicy "always", caches off, the fake engine as the only engine, loopback pages opened to
     the page fetcher the documented way: webFetch.allowHosts ["127.0.0.1"] + allowPorts),

and sends every question through POST /v1/chat/completions, one at a time, twice: reading OFF and
reading ON (`webSearch.readPages`: {"enabled": true|false, "top", "timeoutMs", "maxChars"}). When the
gateway rejects the readPages key at startup the ON run is reported as not available (with the
gateway's own message), never faked, and the OFF run goes without the key.

Reported per run:
  answer-in-context   share of questions whose exact answer string is in what the model received
                      (every message of every model call the request made)
  result size         characters the gateway added to the conversation (received minus sent):
                      median and max
  added latency       client round trip minus the time spent inside model calls (as the recorder
                      saw them): p50 and p90; the search and any page reading are in it
  ON only             answer-in-context by the answer's depth in the page's extracted text (the
                      gateway's own extractor, against readPages.maxChars) and by the answer page's
                      rank in the results (against readPages.top); pages the gateway fetched
  --model-url         answers that contain the answer string (exact, and loosely: case, spaces and
                      thousands separators ignored)

  .venv/bin/python bench/grounding.py                         # both runs, fake model, ~15 s
  .venv/bin/python bench/grounding.py --lang zh --limit 10
  .venv/bin/python bench/grounding.py --json                  # JSON on stdout instead of the report
  .venv/bin/python bench/grounding.py --model-url http://127.0.0.1:8080/v1 --limit 10
  .venv/bin/python bench/grounding.py --read-top 5 --read-max-chars 4000
  .venv/bin/python bench/grounding.py --gateway "/other/checkout/.venv/bin/searchhub"
  .venv/bin/python bench/grounding.py --dump /tmp/ctx           # what the model received, one file each
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CORPUS = BENCH / "grounding" / "corpus"
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
SEARCHHUB = str(Path(PY).parent / "searchhub")
FIXED_ANSWER = "I cannot tell from here."
SHUFFLE_SEED = "grounding-v1"
PRESEARCH_MARK = "searchhub searched the web for you"  # hub/turn/presearch.py INSTRUCTION


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- the fakes


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the gateway's pools expect
    disable_nagle_algorithm = True  # else headers and body, written apart, wait out a delayed ACK (40 ms)

    def log_message(self, *args) -> None:
        pass

    def send_body(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler], **attrs) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        for k, v in attrs.items():
            setattr(self.httpd, k, v)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class PageHandler(Quiet):
    """GET <url_path> -> the page file; every hit counted."""

    def do_GET(self) -> None:  # noqa: N802
        srv = self.server
        path = urlsplit(self.path).path
        with srv.lock:
            srv.hits[path] = srv.hits.get(path, 0) + 1
        f = srv.pages.get(path)
        if f is None:
            self.send_body(404, b"<html><body>not found</body></html>", "text/html; charset=utf-8")
        else:
            self.send_body(200, f, "text/html; charset=utf-8")


def norm_q(s: str) -> str:
    return re.sub(r"[^0-9a-z\u4e00-\u9fff]+", "", s.lower())


def trigrams(s: str) -> set[str]:
    return {s[i:i + 3] for i in range(max(1, len(s) - 2))}


class SearchHandler(Quiet):
    """SearXNG's JSON wire: GET /search?q=..&format=json -> {"query", "results": [{url, title, content}], ...}."""

    def do_GET(self) -> None:  # noqa: N802
        srv = self.server
        parts = urlsplit(self.path)
        if parts.path.rstrip("/") != "/search":
            self.send_body(404, b"{}", "application/json")
            return
        params = parse_qs(parts.query)
        query = (params.get("q") or [""])[0]
        q = srv.match(query)
        with srv.lock:
            srv.queries.append((query, q["id"] if q else None))
        results = []
        if q is not None:
            pages = [q["answer_page"], *q["distractors"]]
            random.Random(f"{SHUFFLE_SEED}:{q['id']}").shuffle(pages)
            for p in pages:
                results.append({"url": srv.page_base + p["url_path"], "title": p["title"], "content": p["snippet"],
                                "engine": "fakeweb", "engines": ["fakeweb"], "score": 1.0, "category": "general"})
        body = {"query": query, "number_of_results": len(results), "results": results, "answers": [],
                "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}
        self.send_body(200, json.dumps(body, ensure_ascii=False).encode(), "application/json")


class ModelHandler(Quiet):
    """POST */chat/completions: records the body and the time spent, answers a fixed text (JSON or SSE),
    or with `upstream` set forwards to a real server and relays its answer."""

    def do_POST(self) -> None:  # noqa: N802
        srv = self.server
        t0 = time.perf_counter()
        current = srv.current  # the question in flight when the call came (the bench asks one at a time)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not urlsplit(self.path).path.endswith("/chat/completions"):
            self.send_body(404, b'{"error": {"message": "not found"}}', "application/json")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_body(400, b'{"error": {"message": "bad json"}}', "application/json")
            return
        rec: dict = {"body": body, "answer": ""}
        with srv.lock:
            srv.inflight += 1
        try:
            if srv.upstream:
                rec["answer"] = self.forward(raw, bool(body.get("stream")))
            else:
                rec["answer"] = FIXED_ANSWER
                self.fake(body)
        finally:
            rec["ms"] = (time.perf_counter() - t0) * 1000
            with srv.lock:
                srv.records.setdefault(srv.identify(body) or current, []).append(rec)
                srv.inflight -= 1

    def fake(self, body: dict) -> None:
        created, model = int(time.time()), body.get("model") or "m"
        if not body.get("stream"):
            out = {"id": "chatcmpl-grounding", "object": "chat.completion", "created": created, "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": FIXED_ANSWER},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16}}
            self.send_body(200, json.dumps(out).encode(), "application/json")
            return
        base = {"id": "chatcmpl-grounding", "object": "chat.completion.chunk", "created": created, "model": model}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {"content": FIXED_ANSWER}, "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 6,
                                                            "total_tokens": 16}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for c in [*(f"data: {json.dumps(c)}\n\n" for c in chunks), "data: [DONE]\n\n"]:
            self.chunk(c.encode())
        self.chunk(b"")

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def forward(self, raw: bytes, stream: bool) -> str:
        srv = self.server
        req = urllib.request.Request(srv.upstream.rstrip("/") + "/chat/completions", data=raw,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {})})
        try:
            resp = urllib.request.urlopen(req, timeout=srv.timeout)
        except urllib.error.HTTPError as e:
            data = e.read()
            self.send_body(e.code, data, e.headers.get("Content-Type") or "application/json")
            return ""
        except OSError as e:
            self.send_body(502, json.dumps({"error": {"message": f"model server: {e}"}}).encode(), "application/json")
            return ""
        with resp:
            if not stream:
                data = resp.read()
                self.send_body(resp.status, data, resp.headers.get("Content-Type") or "application/json")
                with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
                    return json.loads(data)["choices"][0]["message"]["content"] or ""
                return ""
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.headers.get("Content-Type") or "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            text, buf = [], b""
            while True:
                data = resp.read1(65536)
                if not data:
                    break
                self.chunk(data)
                buf += data
            self.chunk(b"")
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                    with contextlib.suppress(ValueError, KeyError, IndexError, TypeError, AttributeError):
                        text.append(json.loads(line[5:])["choices"][0]["delta"].get("content") or "")
            return "".join(text)


# ----------------------------------------------------------------------------- the gateway


class Gateway:
    def __init__(self, cmd: list[str], cfg: dict, tmp: Path, name: str) -> None:
        self.path = tmp / f"{name}.engines.json"
        self.path.write_text(json.dumps(cfg, indent=1))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if k not in ("SEARCHHUB_CONFIG", "SEARCHHUB_LOG_FORMAT")}
        self.out = open(self.log_path, "wb")
        self.proc = subprocess.Popen([*cmd, "serve", "--config", str(self.path), "--port", str(self.port)],
                                     stdout=self.out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                     start_new_session=True)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> str | None:
        """None when /health answers 200; else the reason (the process exited: its log)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return self.log_text()
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return None
            time.sleep(0.1)
        return f"not ready after {timeout:.0f} s:\n{self.log_text()[-3000:]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.out.close()


def gateway_config(model_base: str, model: str, search_url: str, page_port: int, reading: dict | None,
                   timeout_ms: int) -> dict:
    ws: dict = {
        "mode": "presearch",
        "injectPolicy": "always",
        "cacheTtlMs": 0,
        "timeoutMs": 8000,
        "engines": [{"id": "searxng", "type": "searxng", "baseURL": search_url, "default": True,
                     "description": "grounding bench fake engine"}],
    }
    if reading is not None:
        ws["readPages"] = reading
    return {
        "providers": {"local": {"type": "vllm", "baseURL": model_base, "timeoutMs": timeout_ms}},
        "virtualrouter": {"routing": {"default": [{"id": "p", "priority": 100, "targets": [f"local.{model}"]}]},
                          "retries": 0},
        "webSearch": ws,
        # the documented way to let the page fetcher read loopback pages (docs/web-fetch.md)
        "webFetch": {"allowHosts": ["127.0.0.1"], "allowPorts": [80, 443, page_port], "cacheTtlMs": 0},
    }


# ----------------------------------------------------------------------------- measuring


def message_text(messages: list) -> str:
    """Every text the model gets in these messages (content strings and text parts; tool calls' arguments)."""
    out: list[str] = []
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out += [p.get("text") or "" for p in c if isinstance(p, dict)]
        for tc in m.get("tool_calls") or []:
            with contextlib.suppress(AttributeError, TypeError):
                out.append(tc["function"]["arguments"] or "")
    return "\n".join(out)


def loose(s: str) -> str:
    return re.sub(r"[\s,，]+", "", s.lower())


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def extracted_offsets(questions: list[dict]) -> dict[str, int | None]:
    """Where the answer sits in the text the gateway's own extractor gets from the answer page (None when
    the extractor cannot be imported: then depth breakdowns fall back to the corpus's article offset)."""
    try:
        sys.path.insert(0, str(ROOT))
        from hub.fetcher.extract import extract
        from hub.search.sanitize import clean_text
    except ImportError:
        return {q["id"]: None for q in questions}
    out = {}
    for q in questions:
        body = (CORPUS / q["answer_page"]["file"]).read_bytes()
        text = clean_text(extract("html", body, "text/html; charset=utf-8", "http://127.0.0.1/", 10**6).text, 10**6)
        i = text.find(q["answer"])
        out[q["id"]] = i if i >= 0 else None
    return out


def ask(url: str, question: str, model: str, stream: bool, max_tokens: int, timeout: float) -> tuple[int, str, float]:
    body = {"model": model, "messages": [{"role": "user", "content": question}], "max_tokens": max_tokens}
    if stream:
        body["stream"] = True
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    except OSError as e:
        return 0, f"{type(e).__name__}: {e}", (time.perf_counter() - t0) * 1000
    ms = (time.perf_counter() - t0) * 1000
    text = ""
    if status == 200 and not stream:
        with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
            text = json.loads(raw)["choices"][0]["message"]["content"] or ""
    elif status == 200:
        for line in raw.decode(errors="replace").splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                with contextlib.suppress(ValueError, KeyError, IndexError, TypeError, AttributeError):
                    text += json.loads(line[5:])["choices"][0]["delta"].get("content") or ""
    else:
        text = raw.decode(errors="replace")[:300]
    return status, text, ms


def settle(model_srv: Server, timeout: float = 5) -> None:
    """Wait until no model call is in flight: a call's record is stored just after its answer went out."""
    deadline = time.time() + timeout
    while model_srv.httpd.inflight and time.time() < deadline:
        time.sleep(0.002)


def run_questions(name: str, gw: Gateway, model_srv: Server, page_srv: Server, search_srv: Server,
                  questions: list[dict], offsets: dict, args) -> dict:
    with page_srv.httpd.lock:
        page_srv.httpd.hits.clear()
    # warm-up, one question per language: imports and lazy set-up (the first page read, the first
    # Chinese page), pools. Not in the figures; reported apart as the cold first request.
    model_srv.httpd.current = "warmup"
    cold = {}
    for lang in ("en", "zh"):
        first = next((q for q in questions if q["lang"] == lang), None)
        if first is not None:
            _, _, cold[lang] = ask(gw.url, first["question"], args.model_name, args.stream, args.max_tokens,
                                   args.request_timeout)
            settle(model_srv)
            cold[lang] = round(cold[lang] - sum(r["ms"] for r in model_srv.httpd.records.get(first["id"], [])), 1)
            model_srv.httpd.records.clear()
    with page_srv.httpd.lock:
        page_srv.httpd.hits.clear()
    search_srv.httpd.queries.clear()
    rows = []
    t_run = time.time()
    for q in questions:
        model_srv.httpd.current = q["id"]
        status, reply, ms = ask(gw.url, q["question"], args.model_name, args.stream, args.max_tokens,
                                args.request_timeout)
        settle(model_srv)
        recs = model_srv.httpd.records.pop(q["id"], [])
        received = "\n".join(message_text(r["body"].get("messages")) for r in recs)
        sent = q["question"]
        first_msgs = message_text(recs[0]["body"].get("messages")) if recs else ""
        model_ms = sum(r["ms"] for r in recs)
        pages = [q["answer_page"], *q["distractors"]]
        random.Random(f"{SHUFFLE_SEED}:{q['id']}").shuffle(pages)
        rank = 1 + [p["file"] for p in pages].index(q["answer_page"]["file"])
        row = {
            "id": q["id"], "lang": q["lang"], "status": status,
            "searched": PRESEARCH_MARK in received,
            "answer_in_context": q["answer"] in received,
            "near_misses_in_context": sum(1 for d in q["distractors"] if d.get("near_miss") and d["near_miss"] in received),
            "result_chars": max(0, len(first_msgs) - len(sent)),
            "model_calls": len(recs),
            "total_ms": round(ms, 2), "model_ms": round(model_ms, 2), "added_ms": round(ms - model_ms, 2),
            "answer_rank": rank,
            "answer_offset_extracted": offsets.get(q["id"]),
            "answer_offset_article": q["answer_page"]["answer_offset_article"],
        }
        if args.dump:
            d = Path(args.dump)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name.lower()}-{q['id']}.txt").write_text(received, encoding="utf-8")
        if args.model_url:
            row["reply"] = reply[:500]
            row["answer_in_reply"] = q["answer"] in reply
            row["answer_in_reply_loose"] = loose(q["answer"]) in loose(reply)
        if status != 200:
            row["error"] = reply[:300]
        rows.append(row)
        if args.verbose:
            log(f"  {name} {q['id']} status {status} searched {row['searched']} in-context "
                f"{row['answer_in_context']} chars {row['result_chars']} added {row['added_ms']:.1f} ms")
    with page_srv.httpd.lock:
        hits = dict(page_srv.httpd.hits)
    answer_paths = {q["answer_page"]["url_path"] for q in questions}
    unmatched = [qq for qq, qid in search_srv.httpd.queries if qid is None]
    return {"name": name, "available": True, "rows": rows, "seconds": round(time.time() - t_run, 1),
            "cold_added_ms": cold,
            "page_fetches": sum(hits.values()),
            "answer_page_fetches": sum(v for k, v in hits.items() if k in answer_paths),
            "searches": len(search_srv.httpd.queries), "unmatched_queries": unmatched[:5],
            "summary": summarize(rows, args)}


def rate(rows: list[dict], key: str = "answer_in_context") -> dict:
    n = len(rows)
    k = sum(1 for r in rows if r.get(key))
    return {"n": n, "hits": k, "rate": round(k / n, 3) if n else None}


def summarize(rows: list[dict], args) -> dict:
    ok = [r for r in rows if r["status"] == 200]
    chars = [r["result_chars"] for r in ok]
    added = [r["added_ms"] for r in ok]
    s: dict = {
        "requests": len(rows), "errors": len(rows) - len(ok),
        "searched": sum(1 for r in rows if r["searched"]),
        "answer_in_context": rate(rows),
        "by_lang": {lang: rate([r for r in rows if r["lang"] == lang]) for lang in ("en", "zh")},
        "result_chars_median": statistics.median(chars) if chars else None,
        "result_chars_max": max(chars) if chars else None,
        "added_ms_p50": round(pct(added, 0.5), 2) if added else None,
        "added_ms_p90": round(pct(added, 0.9), 2) if added else None,
        "total_ms_p50": round(pct([r["total_ms"] for r in ok], 0.5), 2) if ok else None,
        "added_ms_p50_by_lang": {lang: (round(pct(v, 0.5), 2) if v else None) for lang in ("en", "zh")
                                 for v in [[r["added_ms"] for r in ok if r["lang"] == lang]]},
        "near_misses_in_context": sum(r["near_misses_in_context"] for r in rows),
        "near_misses": 2 * len(rows),
        "by_rank": {str(k): rate([r for r in rows if r["answer_rank"] == k]) for k in (1, 2, 3)},
    }
    cut = args.read_max_chars

    def off(r):
        o = r["answer_offset_extracted"]
        return o if o is not None else r["answer_offset_article"]

    s["by_depth"] = {f"answer starts < {cut} chars into the page text": rate([r for r in rows if off(r) < cut]),
                     f"answer starts >= {cut} chars into the page text": rate([r for r in rows if off(r) >= cut])}
    if args.model_url:
        s["answer_in_reply"] = rate(rows, "answer_in_reply")
        s["answer_in_reply_loose"] = rate(rows, "answer_in_reply_loose")
    return s


# ----------------------------------------------------------------------------- report


def fmt_rate(r: dict) -> str:
    if not r or r["rate"] is None:
        return "–"
    return f"{r['rate'] * 100:.0f} % ({r['hits']}/{r['n']})"


def report(out: dict) -> str:
    lines = [f"Grounding bench — {out['meta']['questions']} questions ({out['meta']['en']} en, {out['meta']['zh']} zh), "
             f"presearch, {'model ' + out['meta']['model_url'] if out['meta']['model_url'] else 'fake model'}, "
             f"reading ON = readPages {json.dumps(out['meta']['read_pages_on'])}", ""]
    runs = out["runs"]
    head = "| | " + " | ".join(f"reading {r['name']}" for r in runs) + " |"
    lines += [head, "|---|" + "---|" * len(runs)]

    def row(label, f):
        cells = []
        for r in runs:
            cells.append(f(r) if r.get("available") else "not available")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("answer in context", lambda r: fmt_rate(r["summary"]["answer_in_context"]))
    row("… English", lambda r: fmt_rate(r["summary"]["by_lang"]["en"]))
    row("… Chinese", lambda r: fmt_rate(r["summary"]["by_lang"]["zh"]))
    for k in runs[0]["summary"]["by_depth"] if runs[0].get("available") else []:
        row(f"… {k}", lambda r, k=k: fmt_rate(r["summary"]["by_depth"][k]))
    for k in ("1", "2", "3"):
        row(f"… answer page ranked {k}", lambda r, k=k: fmt_rate(r["summary"]["by_rank"][k]))
    row("search result chars, median / max",
        lambda r: f"{r['summary']['result_chars_median']:,.0f} / {r['summary']['result_chars_max']:,}")
    row("added latency p50 / p90 (ms)", lambda r: f"{r['summary']['added_ms_p50']:.1f} / {r['summary']['added_ms_p90']:.1f}")
    row("… p50 English / Chinese (ms)", lambda r: " / ".join(
        "–" if r["summary"]["added_ms_p50_by_lang"][k] is None else f"{r['summary']['added_ms_p50_by_lang'][k]:.1f}"
        for k in ("en", "zh")))
    row("… first request after start, en / zh (ms, not in the above)", lambda r: " / ".join(
        f"{r['cold_added_ms'][k]:.0f}" if k in r["cold_added_ms"] else "–" for k in ("en", "zh")))
    row("round trip p50 (ms)", lambda r: f"{r['summary']['total_ms_p50']:.1f}")
    row("distractors' close-but-wrong sentences in context",
        lambda r: f"{r['summary']['near_misses_in_context']}/{r['summary']['near_misses']}")
    row("requests searched / errors", lambda r: f"{r['summary']['searched']}/{r['summary']['requests']} / "
                                                f"{r['summary']['errors']}")
    row("pages fetched (answer pages)", lambda r: f"{r['page_fetches']} ({r['answer_page_fetches']})")
    if out["meta"]["model_url"]:
        row("model's answer contains it", lambda r: fmt_rate(r["summary"]["answer_in_reply"]))
        row("… loosely (case, spaces, separators)", lambda r: fmt_rate(r["summary"]["answer_in_reply_loose"]))
    row("run time (s)", lambda r: f"{r['seconds']:.1f}")
    for r in runs:
        if not r.get("available"):
            lines += ["", f"reading {r['name']}: not available — {r['reason']}"]
        elif r["name"] == "ON" and not r["page_fetches"]:
            lines += ["", "reading ON: the gateway took the readPages config but fetched no page (reading not wired "
                          "into this build's presearch yet?)"]
        if r.get("available") and r.get("unmatched_queries"):
            lines += ["", f"reading {r['name']}: queries the fake engine could not match: {r['unmatched_queries']}"]
    errs = [(r["name"], x) for r in runs if r.get("available") for x in r["rows"] if x["status"] != 200]
    for name, x in errs[:5]:
        lines.append(f"error (reading {name}) {x['id']}: {x['status']} {x.get('error', '')[:200]}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=["en", "zh", "all"], default="all")
    ap.add_argument("--limit", type=int, default=0, help="at most N questions per language (0: all)")
    ap.add_argument("--runs", default="off,on", help="which runs, in order: off,on")
    ap.add_argument("--read-top", type=int, default=3)
    ap.add_argument("--read-timeout-ms", type=int, default=4000)
    ap.add_argument("--read-max-chars", type=int, default=2000)
    ap.add_argument("--model-url", help="a real OpenAI-compatible server's base URL (…/v1) instead of the fake model")
    ap.add_argument("--model-name", default="m", help="the model name sent upstream (default m)")
    ap.add_argument("--api-key", default=os.environ.get("GROUNDING_MODEL_KEY", ""),
                    help="bearer key for --model-url (or GROUNDING_MODEL_KEY)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--stream", action="store_true", help="the client asks for a stream")
    ap.add_argument("--request-timeout", type=float, default=120)
    ap.add_argument("--gateway", default=SEARCHHUB, help="the searchhub command (another checkout's build)")
    ap.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write JSON (to stdout with no FILE)")
    ap.add_argument("--dump", metavar="DIR", help="write what the model received, per run and question, into DIR")
    ap.add_argument("--keep-logs", action="store_true", help="keep the gateway logs and configs (their path is logged)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    questions = json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))
    if args.lang != "all":
        questions = [q for q in questions if q["lang"] == args.lang]
    if args.limit:
        questions = [q for lang in ("en", "zh") for q in [x for x in questions if x["lang"] == lang][:args.limit]]
    if not questions:
        raise SystemExit("no questions selected")
    reading_on = {"enabled": True, "top": args.read_top, "timeoutMs": args.read_timeout_ms,
                  "maxChars": args.read_max_chars}
    runs_wanted = [r.strip() for r in args.runs.split(",") if r.strip()]

    page_map = {p["url_path"]: (CORPUS / p["file"]).read_bytes()
                for q in questions for p in [q["answer_page"], *q["distractors"]]}
    by_norm = {norm_q(q["question"]): q for q in questions}
    grams = {q["id"]: trigrams(norm_q(q["question"])) for q in questions}

    def match(query: str) -> dict | None:
        n = norm_q(query)
        if n in by_norm:
            return by_norm[n]
        for k, q in by_norm.items():
            if n and (n in k or k in n):
                return q
        g = trigrams(n)
        best = max(questions, key=lambda q: len(g & grams[q["id"]]) / (len(g | grams[q["id"]]) or 1))
        score = len(g & grams[best["id"]]) / (len(g | grams[best["id"]]) or 1)
        return best if score >= 0.5 else None

    def identify(body: dict) -> str | None:
        """The question a model call is about: the one whose text its last user message starts with."""
        users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        text = message_text(users[-1:]).lstrip()
        found = [q["id"] for q in questions if text.startswith(q["question"])]
        return found[0] if len(found) == 1 else None

    offsets = extracted_offsets(questions)
    tmp = Path(tempfile.mkdtemp(prefix="searchhub-grounding-"))
    lock = threading.Lock()
    page_srv = Server(PageHandler, pages=page_map, hits={}, lock=lock)
    search_srv = Server(SearchHandler, match=match, queries=[], lock=threading.Lock(), page_base=None)
    search_srv.httpd.page_base = page_srv.url
    model_srv = Server(ModelHandler, records={}, current=None, identify=identify, inflight=0, lock=threading.Lock(),
                       upstream=args.model_url,
                       api_key=args.api_key, timeout=args.request_timeout)
    cmd = shlex.split(args.gateway)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "questions": len(questions),
            "en": sum(q["lang"] == "en" for q in questions), "zh": sum(q["lang"] == "zh" for q in questions),
            "model_url": args.model_url, "stream": args.stream, "read_pages_on": reading_on,
            "gateway": args.gateway}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        meta["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True, timeout=5).stdout.strip()
    out: dict = {"meta": meta, "runs": []}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    try:
        # Does this gateway know readPages? Start it with reading ON and see whether it takes the config.
        read_known, reason = True, ""
        model_base = model_srv.url + "/v1"  # the fake model, or the recording proxy in front of --model-url
        timeout_ms = int(args.request_timeout * 1000)
        probe = Gateway(cmd, gateway_config(model_base, args.model_name, search_srv.url, page_srv.port, reading_on,
                                            timeout_ms), tmp, "probe-on")
        why = probe.wait_ready()
        probe.stop()
        if why is not None:
            if "readPages" in why:
                read_known = False
                reason = "the gateway rejects the config key webSearch.readPages: " + " ".join(
                    ln.strip() for ln in why.splitlines() if "readPages" in ln)[:400]
                log(f"reading ON not available: {reason}")
            else:
                raise SystemExit(f"the gateway did not start:\n{why[-3000:]}")
        for name in runs_wanted:
            if name == "on" and not read_known:
                out["runs"].append({"name": "ON", "available": False, "reason": reason})
                continue
            if name == "on":
                reading = reading_on
            else:  # explicit off when the gateway knows the key (its default could be on); absent otherwise
                reading = {**reading_on, "enabled": False} if read_known else None
            cfg = gateway_config(model_base, args.model_name, search_srv.url, page_srv.port, reading, timeout_ms)
            gw = Gateway(cmd, cfg, tmp, f"gateway-{name}")
            try:
                why = gw.wait_ready()
                if why is not None:
                    raise SystemExit(f"the gateway (reading {name}) did not start:\n{why[-3000:]}")
                log(f"reading {name.upper()}: {len(questions)} questions through {gw.url}")
                res = run_questions(name.upper(), gw, model_srv, page_srv, search_srv, questions, offsets, args)
                res["config_readPages"] = reading
                out["runs"].append(res)
                s = res["summary"]
                log(f"reading {name.upper()}: answer in context {fmt_rate(s['answer_in_context'])}, result chars "
                    f"median {s['result_chars_median']}, added p50 {s['added_ms_p50']} ms, {res['seconds']} s")
            finally:
                gw.stop()
        meta["seconds"] = round(time.time() - started, 1)
        if args.json:
            text = json.dumps(out, ensure_ascii=False, indent=1)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text, encoding="utf-8")
        if args.json != "-":
            print(report(out))
            print(f"\n({meta['seconds']:.0f} s in all; gateway logs in {tmp if args.keep_logs else 'a removed temp dir'})")
    finally:
        for s in (page_srv, search_srv, model_srv):
            with contextlib.suppress(Exception):
                s.stop()
        if not args.keep_logs:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"logs and configs in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
