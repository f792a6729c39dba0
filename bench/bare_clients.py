"""bench/bare_passthrough.py's floor with another upstream client, started the way bench/run.py and
bench/streams.py start an A/B gateway build (`CMD serve --config FILE --port P`), so that the relay
benchmarks measure a client end to end without a change to hub/ or to the benchmarks:

  .venv/bin/python bench/run.py --targets direct,bare-aiohttp,gateway --concurrency 16 \
      --gateway-b ".venv/bin/python bench/bare_clients.py --client h1" \
      --gateway-b ".venv/bin/python bench/bare_clients.py --client pyreqwest"

(in the report gateway-b is the floor over the gateway's lean client, gateway-c over pyreqwest).
The upstream is the config's first provider's baseURL (run.py's generated engines.json). Clients:
  h1         hub/upstream/http.py make_client(), UpstreamClient.request_direct (the lean HTTP/1.1 client)
  aiohttp    aiohttp.ClientSession, as bare_passthrough.py's floor
  pyreqwest  pyreqwest (Rust reqwest), streamed reads with streamed_read_buffer_limit(0) (bench/clients.py says why)
Same Starlette app as bare_passthrough.py: non-stream relayed as one body, streams chunk by chunk
as the upstream's bytes arrive; uvicorn with the gateway's settings; GET /health answers 200.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import msgspec
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HEADERS = {"content-type": "application/json"}


def build_app(client_kind: str, upstream: str) -> Starlette:
    url = upstream.rstrip("/") + "/v1/chat/completions"
    state: dict = {}

    async def health(request):
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def chat(request):
        body = await request.body()
        stream = msgspec.json.decode(body).get("stream") is True
        c = state["client"]
        if client_kind == "pyreqwest":
            if not stream:
                r = await c.post(url).headers(HEADERS).body_bytes(body).build().send()
                return Response(bytes(await r.bytes()), r.status, media_type="application/json")
            cm = c.post(url).headers(HEADERS).body_bytes(body).streamed_read_buffer_limit(0).build_streamed()
            r = await cm.__aenter__()

            async def relay_reqwest():
                try:
                    reader = r.body_reader
                    while (chunk := await reader.read_chunk()) is not None:
                        yield bytes(chunk)
                finally:
                    await cm.__aexit__(None, None, None)
            return StreamingResponse(relay_reqwest(), r.status, media_type="text/event-stream")
        if client_kind == "h1":
            r = await c.request_direct(url, body, HEADERS, state["timeout"])
        else:
            r = await c.post(url, data=body, headers=HEADERS)
        if not stream:
            try:
                return Response(await r.read(), r.status, media_type="application/json")
            finally:
                r.release()

        async def relay():
            try:
                async for chunk in r.content.iter_any():
                    yield chunk
            finally:
                r.release()
        return StreamingResponse(relay(), r.status, media_type="text/event-stream")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        import aiohttp

        if client_kind == "h1":
            from hub.upstream.http import make_client

            c = make_client({})
            state["timeout"] = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=600)
            close = c.aclose
        elif client_kind == "pyreqwest":
            from pyreqwest.client import ClientBuilder

            c = ClientBuilder().max_connections(1000).build()
            close = c.close
        else:
            c = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000),
                                      timeout=aiohttp.ClientTimeout(total=None))
            close = c.close
        state["client"] = c
        try:
            yield
        finally:
            await close()

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                             Route("/health", health, methods=["GET"])], lifespan=lifespan)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--client", choices=["h1", "aiohttp", "pyreqwest"], required=True)
    ap.add_argument("command", choices=["serve"])
    ap.add_argument("--config", required=True, help="an engines.json: its first provider's baseURL is the upstream")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    cfg = json.loads(Path(args.config).read_text())
    base = next(iter(cfg["providers"].values()))["baseURL"].rstrip("/").removesuffix("/v1")
    import uvicorn

    uvicorn.run(build_app(args.client, base), host=args.host, port=args.port, loop="uvloop", http="httptools",
                log_level="warning", access_log=False, server_header=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
