"""modelAliases: Claude model names -> backend models, for Anthropic clients (docs/claude-code.md).

Claude Code hard-codes Anthropic model ids (`claude-opus-5-5`, `claude-haiku-4-5-20251001` for
WebFetch's summarizer, ...). On a gateway serving self-hosted models each would otherwise land on
the default route by accident or, pinned, fail. Applied on the Messages endpoint only.

Order: exact -> reasoning (thinking enabled/adaptive) -> haiku -> opus -> sonnet -> default;
family rules match a case-insensitive substring. A name the router already knows (a route or a
pinned provider.model) is only rewritten by an exact entry: the operator asked for it by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

log = logging.getLogger("searchhub.aliases")
FAMILIES = ("haiku", "opus", "sonnet")


def rewrite(
    model: str, aliases: Mapping[str, object] | None, *, thinking: bool = False,
    known: Callable[[str], bool] | None = None,
) -> str:
    """The model name to route with; logs every rewrite at info."""
    if not aliases or not model:
        return model
    target, rule = _match(model, aliases, thinking=thinking, known=known)
    if target is None or target == model:
        return model
    log.info("model alias (%s): %s -> %s", rule, model, target)
    return target


def _match(
    model: str, aliases: Mapping[str, object], *, thinking: bool, known: Callable[[str], bool] | None,
) -> tuple[str | None, str]:
    exact = aliases.get("exact")
    if isinstance(exact, Mapping):
        hit = exact.get(model)
        if hit is None:
            low = model.lower()
            hit = next((v for k, v in exact.items() if isinstance(k, str) and k.lower() == low), None)
        if isinstance(hit, str) and hit:
            return hit, "exact"
    if known is not None and known(model):
        return None, ""
    if thinking and _name(aliases, "reasoning"):
        return _name(aliases, "reasoning"), "reasoning"
    low = model.lower()
    for family in FAMILIES:
        if family in low and _name(aliases, family):
            return _name(aliases, family), family
    return _name(aliases, "default"), "default"


def _name(aliases: Mapping[str, object], key: str) -> str | None:
    value = aliases.get(key)
    return value if isinstance(value, str) and value else None
