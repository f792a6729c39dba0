"""webSearch.sideRequests: the operator's rules for telling a client's utility calls from real turns, compiled at load (hub/injection/side_requests.py applies them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..injection.side_requests import Shape  # the type only: a request's shape is read there


@dataclass(frozen=True, slots=True)
class SideRule:
    """An operator rule: every given condition must hold; `side` is the decision when they do."""

    name: str
    side: bool
    system: re.Pattern[str] | None = None
    user: re.Pattern[str] | None = None  # the last user message
    model: re.Pattern[str] | None = None
    max_tokens_at_most: int | None = None
    tools: bool | None = None  # True: tools offered; False: none
    structured_output: bool | None = None

    def matches(self, shape: Shape) -> bool:
        if self.system is not None and not self.system.search(shape.system):
            return False
        if self.user is not None and not self.user.search(shape.last_user):
            return False
        if self.model is not None and not self.model.search(shape.model):
            return False
        if self.max_tokens_at_most is not None and (shape.max_tokens is None
                                                    or shape.max_tokens > self.max_tokens_at_most):
            return False
        if self.tools is not None and self.tools != shape.has_tools:
            return False
        return self.structured_output is None or self.structured_output == bool(shape.structured)


@dataclass(frozen=True, slots=True)
class SideConfig:
    enabled: bool = True
    rules: tuple[SideRule, ...] = ()


def compile_side_config(raw: object, errors: list[str]) -> SideConfig:
    """`webSearch.sideRequests` -> SideConfig; problems are appended to `errors` with their path."""
    if raw is None:
        return SideConfig()
    if not isinstance(raw, dict):
        errors.append("webSearch.sideRequests: must be an object")
        return SideConfig()
    rules: list[SideRule] = []
    for i, r in enumerate(raw.get("rules") or ()):
        path = f"webSearch.sideRequests.rules[{i}]"
        if not isinstance(r, dict):
            errors.append(f"{path}: must be an object")
            continue
        patterns: dict[str, re.Pattern[str] | None] = {}
        for key in ("system", "user", "model"):
            text = r.get(key)
            try:
                patterns[key] = re.compile(text, re.I) if isinstance(text, str) and text else None
            except re.error as e:
                errors.append(f"{path}.{key}: not a valid regular expression ({e})")
                patterns[key] = None
        decision = r.get("decision", "side")
        rules.append(SideRule(
            name=str(r.get("name") or f"rule {i}"), side=decision != "main", system=patterns["system"],
            user=patterns["user"], model=patterns["model"], max_tokens_at_most=r.get("maxTokensAtMost"),
            tools=r.get("tools"), structured_output=r.get("structuredOutput"),
        ))
    return SideConfig(enabled=raw.get("enabled", True) is not False, rules=tuple(rules))
