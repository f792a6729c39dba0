"""Backend family name -> its declaration, found in hub/backends/families/: adding a family is adding
one module there.

Each module declares what names it in engines.json and how searchhub talks to it (hub/config/quirks.py's BackendFamily):

    FAMILY = BackendFamily("ollama", display="Ollama (`ollama serve`)",
                           quirks=Quirks(forcing="instruction", parallel_tool_calls=False))

FAMILIES is what the config loader checks `providers.*.type` and `providers.*.quirks.family`
against and resolves quirks and self-hosting from: hub/config/ imports nothing above it, so
hub/runtime.py passes it in (its PLUGINS). Modules whose name starts with "_" are helpers and
declare nothing."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from ..config.quirks import COMMERCIAL_FAMILY, BackendFamily
from ..config.settings import COMMERCIAL_TYPES
from . import families as families_package


@dataclass(frozen=True, slots=True)
class Catalog:
    """The backend families of one package."""

    families: dict[str, BackendFamily]  # by name: a provider `type`, a `quirks.family`
    modules: dict[str, BackendFamily]  # module name -> the family it declares


def discover(package: ModuleType) -> Catalog:
    """Import every module of `package` and collect the family each declares as FAMILY. A module that
    declares none, a name declared twice, or a name that is a commercial type is a bug: ValueError."""
    families: dict[str, BackendFamily] = {}
    modules: dict[str, BackendFamily] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        where = f"{package.__name__}.{info.name}"
        family = getattr(importlib.import_module(where), "FAMILY", None)
        if not isinstance(family, BackendFamily):
            raise ValueError(f"{where} declares no backend family: give it FAMILY = BackendFamily(...) "
                             "(hub/backends/registry.py), or start the module's name with '_'")
        if not isinstance(family.name, str) or not family.name:
            raise ValueError(f"{where}.FAMILY: its name must be a non-empty string")
        if family.name in COMMERCIAL_TYPES or family.name == COMMERCIAL_FAMILY:
            raise ValueError(f"{where}.FAMILY: '{family.name}' is a commercial provider type "
                             "(hub/config/settings.py's COMMERCIAL_TYPES)")
        if family.name in families:
            other = next(m for m, f in modules.items() if f is families[family.name])
            raise ValueError(f"{where}.FAMILY: '{family.name}' is already {package.__name__}.{other}.FAMILY")
        families[family.name] = family
        modules[info.name] = family
    return Catalog(families, modules)


CATALOG = discover(families_package)
FAMILIES: dict[str, BackendFamily] = CATALOG.families  # what the config loader is given (hub/runtime.py)
