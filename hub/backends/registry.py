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

from dataclasses import dataclass
from types import ModuleType

from ..config.quirks import COMMERCIAL_FAMILY, BackendFamily
from ..config.settings import COMMERCIAL_TYPES
from ..core.plugins import declarations
from . import families as families_package


@dataclass(frozen=True, slots=True)
class Catalog:
    """The backend families of one package."""

    families: dict[str, BackendFamily]  # by name: a provider `type`, a `quirks.family`
    modules: dict[str, BackendFamily]  # module name -> the family it declares


def discover(package: ModuleType) -> Catalog:
    """Import every module of `package` and collect the family each declares as FAMILY. A module that
    declares none, a name declared twice, or a name that is a commercial type is a bug: ValueError."""
    modules = declarations(package, "FAMILY", BackendFamily, "backend family", "hub/backends/registry.py")
    for module, family in modules.items():
        if family.name in COMMERCIAL_TYPES or family.name == COMMERCIAL_FAMILY:
            raise ValueError(f"{package.__name__}.{module}.FAMILY: '{family.name}' is a commercial provider type "
                             "(hub/config/settings.py's COMMERCIAL_TYPES)")
    return Catalog({f.name: f for f in modules.values()}, modules)


CATALOG = discover(families_package)
FAMILIES: dict[str, BackendFamily] = CATALOG.families  # what the config loader is given (hub/runtime.py)
