"""`searchhub doctor`: try each provider and each engine once, then print what works and, for what
does not, what to change. Every probe has a deadline; nothing it prints carries a secret (URLs are
masked, keys are never shown)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from dataclasses import dataclass, field

import httpx

from .. import config as cfgmod
from ..backends.openai_compat import chat_url
from ..backends.registry import FAMILIES
from ..config.settings import Provider, mask_url
from ..upstream.http import make_client


@dataclass
class ProviderReport:
    id: str
    url: str  # masked
    ok: bool
    detail: str
    fixes: list[str] = field(default_factory=list)
    models: list[str] | None = None  # what the server lists, when it lists


def models_url(provider: Provider) -> str:
    """The model list beside the chat endpoint the gateway calls (hub/backends/openai_compat.py)."""
    return chat_url(provider).removesuffix("/chat/completions") + "/models"


def _headers(provider: Provider) -> dict[str, str]:
    h = {"accept": "application/json"}
    if provider.api_key:
        if provider.type == "anthropic":
            h["x-api-key"] = provider.api_key
            h["anthropic-version"] = "2023-06-01"
        else:
            h["authorization"] = f"Bearer {provider.api_key}"
    h.update(provider.headers)
    return h


def _point_it(provider: Provider, path: str) -> str:
    where = f"providers.{provider.id}.baseURL in {path}"
    if provider.base_url_env:
        return f"point searchhub at your server: set {' or '.join(provider.base_url_env)}, or edit {where}"
    return f"point searchhub at your server: edit {where}"


async def probe_provider(client: httpx.AsyncClient, provider: Provider, wanted: list[str], path: str,
                         timeout_s: float) -> ProviderReport:
    url = mask_url(provider.base_url)
    family = FAMILIES.get(provider.type)  # its module in hub/backends/families/ names it and says how it lists
    request = httpx.Request("GET", models_url(provider), headers=_headers(provider),
                            extensions={"timeout": httpx.Timeout(timeout_s).as_dict()})
    try:
        resp = await asyncio.wait_for(client.send(request), timeout_s + 1)
        body = await asyncio.wait_for(resp.aread(), timeout_s)
    except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as e:
        return ProviderReport(provider.id, url, False, f"cannot connect ({type(e).__name__})", [
            f"start {family.display if family else 'the model server'} at {url} (a local model: docs/backends.md)",
            _point_it(provider, path)])
    except (TimeoutError, httpx.TimeoutException):
        return ProviderReport(provider.id, url, False, f"no answer within {timeout_s:g} s",
                              [f"check that {url} is the model server and that it is not overloaded"])
    except Exception as e:  # noqa: BLE001 - whatever breaks, a probe reports it; never a traceback
        # The exception's text is not shown: an HTTP library may quote the URL, credentials and all.
        return ProviderReport(provider.id, url, False, f"request failed ({type(e).__name__})",
                              [_point_it(provider, path)])
    if resp.status_code in (401, 403):
        return ProviderReport(provider.id, url, False, f"the server refused the key (HTTP {resp.status_code})", [
            f"set providers.{provider.id}.apiKey in {path}" if not provider.api_key
            else f"check providers.{provider.id}.apiKey in {path}: the server does not accept it"])
    if resp.status_code >= 400:  # up, but without a model list: it will be seen on the first request
        return ProviderReport(provider.id, url, True, f"answers, but lists no models (HTTP {resp.status_code} "
                                                      "on /models)")
    models = _model_ids(body)
    if models is None:
        return ProviderReport(provider.id, url, True, "answers (its /models is not a model list)")
    report = ProviderReport(provider.id, url, True, f"answers, serves {len(models)} model(s)", models=models)
    if not (family and family.any_model):  # e.g. llama.cpp's server: its /models list proves nothing
        for name in wanted:
            if name not in models and f"{name}:latest" not in models:
                report.ok = False
                shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "") or "none"
                report.detail = f"does not serve '{name}' (it serves: {shown})"
                report.fixes.append(f"load '{name}' on the server (ollama: `ollama pull {name}`), or name one "
                                    "it serves in the route's target (for the default route: OLLAMA_MODEL)")
    return report


def _model_ids(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if items is None and isinstance(data, dict):
        items = data.get("models")  # Ollama's native /api/tags shape
    if not isinstance(items, list):
        return None
    return [str(m.get("id") or m.get("name")) for m in items if isinstance(m, dict) and (m.get("id") or m.get("name"))]


async def _diagnose(cfg: cfgmod.Config, path: str, query: str, timeout_s: float):
    from .search import probe_engines

    wanted: dict[str, list[str]] = {}
    for pools in cfg.router.routes.values():
        for pool in pools:
            for t in pool.targets:
                wanted.setdefault(t.provider.id, [])
                if t.model not in wanted[t.provider.id]:
                    wanted[t.provider.id].append(t.model)
    client = make_client()
    try:
        providers = await asyncio.gather(*(
            probe_provider(client, p, wanted.get(pid, []), path, timeout_s)
            for pid, p in cfg.providers.items()))
    finally:
        await client.aclose()
    engines = await probe_engines(cfg, query, timeout_s) if cfg.web_search.engines else {}
    return list(providers), engines


def run_doctor(cfg: cfgmod.Config, path: str, *, query: str = "weather today", timeout_s: float = 10.0) -> int:
    # What fails is in the report below; the components' own warnings would only say it twice.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    started = time.perf_counter()
    providers, engines = asyncio.run(_diagnose(cfg, path, query, timeout_s))
    by_id = {r.id: r for r in providers}
    out: list[str] = ["providers"]
    for r in providers:
        out.append(f"  {'ok  ' if r.ok else 'FAIL'}  {r.id}  {r.url}  {r.detail}")
        out += [f"        fix: {f}" for f in r.fixes]
    out.append("routes")
    bad_routes = 0
    for route, pools in cfg.router.routes.items():
        targets = [t for p in pools for t in p.targets]
        working = [t.key for t in targets if by_id[t.provider.id].ok]
        if working:
            out.append(f"  ok    {route} -> {working[0]}" + (f" (and {len(working) - 1} more)" if len(working) > 1 else ""))
        else:
            bad_routes += 1
            out.append(f"  FAIL  {route}: no target answers ({', '.join(t.key for t in targets)})")
    out.append("engines")
    if not engines:
        out.append("  none configured: web search is off (webSearch.engines in " + path + ")")
    default = cfg.web_search.default_engine
    bad_default = False
    for e in cfg.web_search.engines:
        result, seconds = engines[e.id]
        if result.ok:
            out.append(f"  ok    {e.id} ({e.type}): {len(result.hits)} hit(s) in {seconds:.1f} s")
        else:
            bad_default = bad_default or e is default
            out.append(f"  FAIL  {e.id} ({e.type}) in {seconds:.1f} s: {result.error}")
            out.append(f"        fix: {_engine_fix(e)}")
    ok = not bad_routes and not bad_default
    out.append(f"{'all good' if ok else 'something to fix'} ({time.perf_counter() - started:.1f} s)")
    print("\n".join(out))
    sys.stdout.flush()
    return 0 if ok else 1


def _engine_fix(e: cfgmod.EngineConfig) -> str:
    if e.type == "ddgs":
        return ("ddgs scrapes public search pages: this machine needs internet access (or a proxy: HTTPS_PROXY or "
                "the engine's `proxy`); for steadier results add another engine (docs/engines.md)")
    if e.provider_key:
        return f"check the provider of {e.provider_key} (above) and its key"
    if not e.api_key and e.type not in ("searxng",):
        return f"set webSearch.engines[id={e.id}].apiKey (docs/engines.md)"
    return "check the engine's baseURL and key (docs/engines.md); `searchhub engines --probe` shows its answer"
