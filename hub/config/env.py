"""${VAR} and ${VAR:-default} in engines.json: expanded at load, and the variables a value was written
with, so an error can name a variable instead of showing its value (which could be a key)."""

from __future__ import annotations

import re
from typing import Any

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def format_path(parts: list[str | int] | tuple) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(root)"


def expand_env(node: Any, env: dict[str, str], path: tuple = (), errors: list[str] | None = None) -> Any:
    """Expand ${VAR} and ${VAR:-default} in every string; missing variables are collected as errors."""
    if errors is None:
        errors = []
    if isinstance(node, str):
        if "${" not in node:
            return node

        def sub(m: re.Match) -> str:
            name, default = m.group(1), m.group(2)
            value = env.get(name)
            if value is None or (value == "" and default is not None):
                if default is not None:
                    return default
                errors.append(f"{format_path(path)}: environment variable {name} is not set")
                return ""
            return value

        return _VAR.sub(sub, node)
    if isinstance(node, dict):
        return {k: expand_env(v, env, (*path, k), errors) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_env(v, env, (*path, i), errors) for i, v in enumerate(node)]
    return node


def env_names(text: Any) -> tuple[str, ...]:
    """The environment variables a string of the config is written with (`${VAR}`, `${VAR:-default}`),
    in order, each once: what an error can tell an operator to set."""
    if not isinstance(text, str) or "${" not in text:
        return ()
    return tuple(dict.fromkeys(m.group(1) for m in _VAR.finditer(text)))
