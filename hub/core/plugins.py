"""Plug-in packages: a folder whose every module declares one thing of a kind (a search engine,
a backend family, a server tool), found by importing the folder, not by a list to keep.

hub/search/registry.py, hub/backends/registry.py and hub/tools/registry.py each discover their own
folder through these two functions. Modules whose name starts with "_" are helpers and declare
nothing."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any


def plugin_modules(package: ModuleType) -> Iterator[tuple[str, str, ModuleType]]:
    """(module name, dotted path, the module) of each plug-in module of `package`, by name."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            where = f"{package.__name__}.{info.name}"
            yield info.name, where, importlib.import_module(where)


def declarations(package: ModuleType, attr: str, kind: type, what: str, registry: str) -> dict[str, Any]:
    """module name -> the `kind` each module of `package` declares as `attr` (e.g. FAMILY), each with a
    non-empty `name` of its own. A module that declares none, a nameless declaration or a name
    declared twice is a bug: ValueError naming the module. `what` ("backend family") and `registry`
    (the registry's file) are for the message."""
    found: dict[str, Any] = {}
    owner: dict[str, str] = {}  # name -> the module that declared it
    for module, where, imported in plugin_modules(package):
        value = getattr(imported, attr, None)
        if not isinstance(value, kind):
            raise ValueError(f"{where} declares no {what}: give it {attr} = {kind.__name__}(...) "
                             f"({registry}), or start the module's name with '_'")
        name = getattr(value, "name", None)
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}.{attr}: its name must be a non-empty string")
        if name in owner:
            raise ValueError(f"{where}.{attr}: '{name}' is already {package.__name__}.{owner[name]}.{attr}")
        owner[name] = module
        found[module] = value
    return found
