"""The floors: the least a Starlette pass-through in front of the same upstream can cost.

`--client httpx` (httpx's own transport), `aiohttp` (raw aiohttp), `httpx-aiohttp` (httpx over the
httpx-aiohttp transport, what the gateway uses). Each relays POST /v1/chat/completions: non-stream
as one body, `"stream": true` chunk by chunk as the upstream's bytes arrive. Served by uvicorn with
the gateway's settings (uvloop, httptools, no access log).

Run: `python bench/bare_passthrough.py --client aiohttp --upstream http://127.0.0.1:9100 --port 9201`
"""

from __future__ import annotations

import argparse
import contextlib

import msgspec
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

HEADERS = {"content-type": "application/json"}
LIMITS = dict(max_connections=1000, max_keepalive_connections=200)  # the gateway's pool size


def build_app(client_kind: str, upstream: str) -> Starlette:
    url = upstream.rstrip("/") + "/v1/chat/completions"
    state: dict = {}

    async def chat(request):
        body = await request.body()
        stream = msgspec.json.decode(body).get("stream") is True
        c = state["client"]
        if client_kind == "aiohttp":
            if not stream:
                async with c.post(url, data=body, headers=HEADERS) as r:
                    return Response(await r.read(), r.status, media_type="application/json")
            r = await c.post(url, data=body, headers=HEADERS)

            async def relay():
                try:
                    async for chunk in r.content.iter_any():
                        yield chunk
                finally:
                    r.release()
            return StreamingResponse(relay(), r.status, media_type="text/event-stream")
        if not stream:
            r = await c.post(url, content=body, headers=HEADERS)
            return Response(r.content, r.status_code, media_type="application/json")
        r = await c.send(c.build_request("POST", url, content=body, headers=HEADERS), stream=True)

        async def relay_httpx():
            try:
                async for chunk in r.aiter_raw():
                    yield chunk
            finally:
                await r.aclose()
        return StreamingResponse(relay_httpx(), r.status_code, media_type="text/event-stream")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if client_kind == "aiohttp":
            import aiohttp

            c = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=LIMITS["max_connections"]),
                                      timeout=aiohttp.ClientTimeout(total=None))
        else:
            import httpx

            transport = None
            if client_kind == "httpx-aiohttp":
                from httpx_aiohttp import AiohttpTransport

                transport = AiohttpTransport(limits=httpx.Limits(**LIMITS))
            else:
                transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(**LIMITS))
            c = httpx.AsyncClient(transport=transport, timeout=None)
        state["client"] = c
        try:
            yield
        finally:
            await c.close() if client_kind == "aiohttp" else await c.aclose()

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])], lifespan=lifespan)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--client", choices=["httpx", "aiohttp", "httpx-aiohttp"], required=True)
    ap.add_argument("--upstream", required=True, help="fake backend base URL, e.g. http://127.0.0.1:9100")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    import uvicorn

    uvicorn.run(build_app(args.client, args.upstream), host=args.host, port=args.port, loop="uvloop",
                http="httptools", log_level="warning", access_log=False, server_header=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
