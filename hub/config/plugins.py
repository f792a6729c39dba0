"""What a build holds that engines.json may name, passed to the loader (`load`/`parse`/`build`) as one
value by its callers: hub/runtime.py's load_config (serve, reload, CLI, workers) and the tests.
hub/config/ imports nothing above it, so the tables are made where the plug-ins live:
hub/search/registry.py (search engines), hub/backends/registry.py (backend families) and
hub/tools/registry.py (the settings server tools declare). The schema only says these names are
strings; `unknown_names` checks them against the tables, `tool_settings` decodes the `tools` section."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .engine_kinds import EngineKind, EngineKinds
from .env import env_names
from .quirks import BackendFamily, quirk_families
from .settings import COMMERCIAL_TYPES


@dataclass(frozen=True, slots=True)
class Plugins:
    engines: EngineKinds = field(default_factory=EngineKinds)  # webSearch.engines[].type, a model engine's provider type
    families: Mapping[str, BackendFamily] = field(default_factory=dict)  # providers.*.type, providers.*.quirks.family
    # tools.<name>: the settings type (a msgspec Struct with defaults) each server tool that has
    # settings declares (hub/tools/kind.py ToolKind.settings)
    tools: Mapping[str, type] = field(default_factory=dict)


Found = list[tuple[list[str], str]]  # (JSON path, message), sorted with the schema's errors


def unknown_names(raw: dict, as_written: dict, plugins: Plugins) -> Found:
    """Each name of an engine or a family that `plugins` do not hold, reported with the schema's
    errors so one run shows them all. `as_written` is the file before ${VAR} expansion."""
    return _provider_type_errors(raw, as_written, plugins.families) + _engine_type_errors(
        raw, as_written, plugins.engines.api)


def _shown(value: str, as_written: Any) -> str:
    """A name the file gave, for an error: quoted, or, when taken from the environment, named by its
    variable, not its value (which could be anything, a key too)."""
    variables = env_names(as_written)
    return f"'{value}'" if not variables else "from " + ", ".join(f"${{{v}}}" for v in variables)


def _engine_entries(raw: Any) -> list:
    ws = raw.get("webSearch") if isinstance(raw, dict) else None
    entries = ws.get("engines") if isinstance(ws, dict) else None
    return entries if isinstance(entries, list) else []


def _engine_type_errors(raw: dict, as_written: dict, api: Mapping[str, EngineKind]) -> Found:
    """An API engine's `type` names an engine of the build."""
    written = _engine_entries(as_written)
    errors = []
    for i, e in enumerate(_engine_entries(raw)):
        kind = e.get("type") if isinstance(e, dict) else None
        if not isinstance(kind, str) or kind in api:
            continue
        source = written[i].get("type") if i < len(written) and isinstance(written[i], dict) else None
        errors.append((["webSearch", "engines", str(i), "type"],
                       f"webSearch.engines[{i}].type: unknown engine type {_shown(kind, source)} "
                       f"(known: {', '.join(sorted(api)) or 'none'})"))
    return errors


def _provider_type_errors(raw: dict, as_written: dict, families: Mapping[str, BackendFamily]) -> Found:
    """A provider's `type` is a commercial type (settings.COMMERCIAL_TYPES) or a backend family of the
    build, and its `quirks.family` a family's name or the commercial table (quirks.COMMERCIAL_FAMILY)."""
    providers = raw.get("providers")
    written = as_written.get("providers") if isinstance(as_written, dict) else None
    if not isinstance(providers, dict):
        return []
    types = sorted({*COMMERCIAL_TYPES, *families})
    quirks = quirk_families(families)
    errors = []
    for pid, p in providers.items():
        if not isinstance(p, dict):
            continue
        w = written.get(pid) if isinstance(written, dict) else None
        w = w if isinstance(w, dict) else {}
        kind = p.get("type")
        if isinstance(kind, str) and kind not in types:
            errors.append((["providers", pid, "type"],
                           f"providers.{pid}.type: unknown provider type {_shown(kind, w.get('type'))} "
                           f"(known: {', '.join(types)})"))
        q = p.get("quirks")
        family = q.get("family") if isinstance(q, dict) else None
        if isinstance(family, str) and family not in quirks:
            wq = w.get("quirks")
            source = wq.get("family") if isinstance(wq, dict) else None
            errors.append((["providers", pid, "quirks", "family"],
                           f"providers.{pid}.quirks.family: unknown backend family {_shown(family, source)} "
                           f"(known: {', '.join(quirks)})"))
    return errors


# msgspec's " - at `$.x.y`" suffix, as hub/core/wire.py `located` reads it for requests: repeated
# here because hub/config/ imports nothing else of the gateway (tests/test_layout.py)
_AT = re.compile(r" - at `\$([^`]*)`$")


def tool_settings(section: Any, plugins: Plugins, errors: list[str]) -> dict[str, Any]:
    """The `tools` section: each server tool's settings decoded as the type it declares, by tool name;
    a tool the file leaves out gets its type's defaults. An entry no tool declares, or a value its
    type rejects, is an error naming the field (msgspec's messages never echo the value)."""
    section = section if isinstance(section, dict) else {}
    out: dict[str, Any] = {}
    for name, kind in plugins.tools.items():
        try:
            out[name] = msgspec.convert(section.get(name, {}), kind)
        except msgspec.ValidationError as e:
            message = str(e)
            at = _AT.search(message)
            path = f"tools.{name}{at.group(1) if at else ''}"
            errors.append(f"{path}: {message[: at.start()] if at else message}")
    for name in section:
        if name not in plugins.tools:
            errors.append(f"tools.{name}: no server tool with settings is named '{name}' "
                          f"(known: {', '.join(sorted(plugins.tools)) or 'none'})")
    return out
