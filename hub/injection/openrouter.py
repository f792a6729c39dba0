"""OpenRouter's ways of asking for web search, on a chat request (Responses requests arrive here
translated): the `:online` model suffix, `plugins: [{"id": "web", ...}]`, and the server tools
`{"type": "openrouter:web_search" | "openrouter:web_fetch", "parameters": {...}}`
(../shared/reference/protocols-2026-11.md §4 has the wire; docs/ecosystems.md the mapping).

Each becomes what the gateway already does: the request is searched (the suffix and the plugin turn
search on for this request, as the `web_search: true` override does, in the configured mode), and
the server tools are the client's hosted tools, each read by the server tool that declares its
OpenRouter name (hub/tools/registry.py: HostedSearch, HostedFetch), run by the gateway's own engines
and fetcher. What OpenRouter's shape names that the backend does not know (the suffix,
`plugins`, the `openrouter:*` tools) never reaches the backend. Unknown plugins are ignored with a
log line, never a 400. Pure apart from that log line."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from ..search.service import EngineIndex
from ..tools.base import HostedSearch
from ..tools.events import Options
from ..tools.kind import OPENROUTER
from ..tools.kinds.web_search import WEB_SEARCH
from ..tools.offers import loose_count
from ..tools.registry import offerings, read_offers

log = logging.getLogger("searchhub.openrouter")

SUFFIX = ":online"


@dataclass(frozen=True, slots=True)
class Dialect:
    """What an OpenRouter-shaped request asked for, once its fields are taken out of the body."""

    online: bool = False  # the suffix or the web plugin: search this request
    max_results: int | None = None
    engine: str | None = None  # an engine id of ours the client named (None: the default engine)
    # The plugin's search_prompt is not kept: the gateway introduces results in its own words
    # (docs/ecosystems.md).


_NO_ENGINES = EngineIndex()


def adapt(body: dict, opts: Options, engines: EngineIndex = _NO_ENGINES) -> tuple[dict, Options]:
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
        dialect = _plugins(plugins, dialect, engines)
    if ours:
        body["tools"] = [t for t in tools if not _is_openrouter_tool(t)]
        if not body["tools"]:
            del body["tools"]
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
    hosted = {**opts.hosted, **read_offers(OPENROUTER, ours, kind_of=lambda t: t["type"], params=_params)}
    force = opts.force_search
    if dialect.online and force is None:
        force = True  # the client asked for a searched answer; an explicit `web_search: false` still wins
    search = hosted.get(WEB_SEARCH)
    if dialect.online and search is None:
        search = HostedSearch()
    count = dialect.max_results
    if search is not None and count is not None:
        search = replace(search, max_results=count)
    if dialect.engine is not None and search is not None:
        search = replace(search, engine=dialect.engine)
    if search is not None and search.engine is not None:  # the tool's engine, like the plugin's: ours or none
        search = replace(search, engine=_ours(search.engine, engines))
    if search is not None:
        hosted[WEB_SEARCH] = search
    return body, msgspec.structs.replace(opts, force_search=force, hosted=hosted, citation_content=True)


def _params(tool: dict) -> dict:
    return tool["parameters"] if isinstance(tool.get("parameters"), dict) else {}


def _is_openrouter_tool(tool: Any) -> bool:
    """An `openrouter:*` server tool a server tool of the gateway declares (hub/tools/registry.py)."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    # the prefix first: every chat request's tools pass here, and OpenRouter's all carry it
    return isinstance(kind, str) and kind.startswith("openrouter:") and bool(offerings(OPENROUTER, kind))


def _plugins(plugins: Any, dialect: Dialect, engines: EngineIndex) -> Dialect:
    for plugin in plugins if isinstance(plugins, list) else [plugins]:
        pid = plugin.get("id") if isinstance(plugin, dict) else None
        if pid != "web":
            log.info("OpenRouter plugin %r is not one searchhub serves; ignored", str(pid)[:40])
            continue
        count = plugin.get("max_results")
        engine = plugin.get("engine")
        dialect = replace(
            dialect, online=True,
            max_results=loose_count(count) if count is not None else dialect.max_results,
            engine=_ours(engine, engines) or dialect.engine,
        )
    return dialect


def _ours(engine: Any, engines: EngineIndex) -> str | None:
    """The engine of ours an OpenRouter `engine` names (hub/search/service.py's rule), or None: its own
    engines ("native", "exa", …) and names we do not have mean the default engine, never a failed search."""
    if not isinstance(engine, str) or not engine.strip():
        return None
    found = engines.find(engine)
    if found is None:
        log.info("OpenRouter engine %r is not one of ours; the default engine searches", engine[:40])
    return found.id if found is not None else None

