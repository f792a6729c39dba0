"""The protocols: every folder of hub/protocols/ is one, declared by `PROTOCOL = ProtocolKind(...)` in
its `endpoints` module (hub/protocols/serving.py). Found by looking, not by a list to keep: adding a
protocol is adding its folder. routes/protocols.py serves them."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from .serving import ProtocolKind

ENDPOINTS_MODULE = "endpoints"


def discover(package: ModuleType) -> tuple[ProtocolKind, ...]:
    """The ProtocolKind each sub-package of `package` declares, by folder name. A folder without an
    `endpoints` module declaring one, a name or a (method, path) declared twice: ValueError naming it."""
    found: list[ProtocolKind] = []
    names: dict[str, str] = {}
    paths: dict[tuple[str, str], str] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        where = f"{package.__name__}.{info.name}.{ENDPOINTS_MODULE}"
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name != where:
                raise
            raise ValueError(f"{package.__name__}.{info.name} is a protocol folder without an "
                             f"'{ENDPOINTS_MODULE}' module declaring PROTOCOL = ProtocolKind(...) "
                             f"(hub/protocols/serving.py)") from None
        kind = getattr(module, "PROTOCOL", None)
        if not isinstance(kind, ProtocolKind):
            raise ValueError(f"{where} declares no protocol: give it PROTOCOL = ProtocolKind(...) "
                             f"(hub/protocols/serving.py)")
        if not kind.name or kind.name in names:
            raise ValueError(f"{where}.PROTOCOL: name '{kind.name}' is empty or already {names.get(kind.name)}'s")
        names[kind.name] = where
        for ep in kind.endpoints:
            for path in ep.paths:
                key = (ep.method, path)
                if key in paths:
                    raise ValueError(f"{where}.PROTOCOL: {ep.method} {path} is already served by {paths[key]}")
                paths[key] = where
        found.append(kind)
    return tuple(found)


def _protocols() -> tuple[ProtocolKind, ...]:
    from hub import protocols

    return discover(protocols)


PROTOCOLS = _protocols()


def shaping(path: str, kinds: tuple[ProtocolKind, ...] = PROTOCOLS, default: str = "chat") -> ProtocolKind:
    """The protocol whose error shape a response on `path` takes: the longest of their `prefixes`
    that `path` starts with, else `default`'s (OpenAI's shape)."""
    best: tuple[int, ProtocolKind] | None = None
    fallback = None
    for kind in kinds:
        if kind.name == default:
            fallback = kind
        for prefix in kind.prefixes:
            if path.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), kind)
    if best is not None:
        return best[1]
    assert fallback is not None, f"no protocol named '{default}'"
    return fallback
