"""OpenRouter's ways of asking for web search, on a chat request (Responses requests arrive here
translated): the `:online` model suffix, `plugins: [{"id": "web", ...}]`, and the server tools
`{"type": "openrouter:web_search" | "openrouter:web_fetch", "parameters": {...}}`
(../shared/reference/protocols-2026-11.md §4 has the wire; docs/ecosystems.md the mapping).

Each becomes what the gateway already does: the request is searched (the suffix and the plugin turn
search on for this request, as the `web_search: true` override does, in the configured mode), and
the server tools are the client's hosted tools (HostedSearch, HostedFetch), run by the gateway's
own engines and fetcher. What OpenRouter's shape names that the backend does not know (the suffix,
`plugins`, the `openrouter:*` tools) never reaches the backend. Unknown plugins are ignored with a
log line, never a 400. Pure apart from that log line."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from ..tools.base import HostedFetch, HostedSearch
from ..tools.events import Options

log = logging.getLogger("searchhub.openrouter")

SUFFIX = ":online"
SEARCH_TOOL = "openrouter:web_search"
FETCH_TOOL = "openrouter:web_fetch"
_AUTO_ENGINES = ("native", "auto", "exa", "")  # OpenRouter's engines: all mean "the gateway's own"


@dataclass(frozen=True, slots=True)
class Dialect:
    """What an OpenRouter-shaped request asked for, once its fields are taken out of the body."""

    online: bool = False  # the suffix or the web plugin: search this request
    max_results: int | None = None
    engine: str | None = None  # an engine id of ours the client named (None: the default engine)
    # The plugin's search_prompt is not kept: the gateway introduces results in its own words
    # (docs/ecosystems.md).


def adapt(body: dict, opts: Options, engine_ids: frozenset[str] = frozenset()) -> tuple[dict, Options]:
    """The request without OpenRouter's fields, and the options they stand for. A body without them
    comes back as it is (the same objects)."""
    model = body.get("model")
    plugins = body.get("plugins")
    has_plugins = "plugins" in body
    tools = body.get("tools")
    ours = [t for t in tools if _is_openrouter_tool(t)] if isinstance(tools, list) else []
    suffixed = isinstance(model, str) and model.endswith(SUFFIX) and len(model) > len(SUFFIX)
    if not suffixed and not has_plugins and not ours:
        return body, opts
    body = dict(body)
    dialect = Dialect(online=suffixed)
    if suffixed:
        body["model"] = model[: -len(SUFFIX)]
    if has_plugins:
        del body["plugins"]
        dialect = _plugins(plugins, dialect, engine_ids)
    if ours:
        body["tools"] = [t for t in tools if not _is_openrouter_tool(t)]
        if not body["tools"]:
            del body["tools"]
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
    hosted, hosted_fetch = opts.hosted, opts.hosted_fetch
    for tool in ours:
        params = tool.get("parameters") if isinstance(tool.get("parameters"), dict) else {}
        if tool["type"] == SEARCH_TOOL:
            hosted = _search_tool(params)
        else:
            hosted_fetch = _fetch_tool(params)
    force = opts.force_search
    if dialect.online and force is None:
        force = True  # the client asked for a searched answer; an explicit `web_search: false` still wins
    if dialect.online and hosted is None:
        hosted = HostedSearch()
    count = dialect.max_results
    if hosted is not None and count is not None:
        hosted = replace(hosted, max_results=count)
    if dialect.engine is not None and hosted is not None:
        hosted = replace(hosted, engine=dialect.engine)
    return body, replace(opts, force_search=force, hosted=hosted, hosted_fetch=hosted_fetch, citation_content=True)


def _is_openrouter_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") in (SEARCH_TOOL, FETCH_TOOL)


def _plugins(plugins: Any, dialect: Dialect, engine_ids: frozenset[str]) -> Dialect:
    for plugin in plugins if isinstance(plugins, list) else [plugins]:
        pid = plugin.get("id") if isinstance(plugin, dict) else None
        if pid != "web":
            log.info("OpenRouter plugin %r is not one searchhub serves; ignored", str(pid)[:40])
            continue
        count = plugin.get("max_results")
        engine = plugin.get("engine")
        dialect = replace(
            dialect, online=True,
            max_results=_count(count) if count is not None else dialect.max_results,
            engine=engine if isinstance(engine, str) and engine in engine_ids else dialect.engine,
        )
    return dialect


def _search_tool(params: dict) -> HostedSearch:
    """`openrouter:web_search` parameters -> the hosted search the gateway runs."""
    context = params.get("search_context_size")
    return HostedSearch(
        allowed_domains=_domains(params.get("allowed_domains")),
        blocked_domains=_domains(params.get("excluded_domains")),
        max_uses=_count(params.get("max_uses")),
        context_size=context if context in ("low", "medium", "high") else None,
        max_results=_count(params.get("max_results")),
        engine=params["engine"] if isinstance(params.get("engine"), str)
        and params["engine"] not in _AUTO_ENGINES else None,
    )


def _fetch_tool(params: dict) -> HostedFetch:
    """`openrouter:web_fetch` parameters -> the hosted fetch the gateway runs."""
    return HostedFetch(
        allowed_domains=_domains(params.get("allowed_domains")),
        blocked_domains=_domains(params.get("blocked_domains")),
        max_uses=_count(params.get("max_uses")),
        max_content_tokens=_count(params.get("max_content_tokens")),
    )


def _domains(value: Any) -> tuple[str, ...]:
    return tuple(d.strip().lower() for d in value if isinstance(d, str) and d.strip())[:100] \
        if isinstance(value, list) else ()


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 100 else None
