"""The tool_choice a request and each of its rounds send upstream: decided here and nowhere else.
hub/backends/quirks.py then writes the decision in the backend family's form (a named function,
"required", or an instruction for servers that ignore tool_choice)."""

from __future__ import annotations

from ..injection.decide import tool_name

DROP = object()  # the round sends no tool_choice at all


def forced(name: str) -> dict:
    """A choice that forces the function `name`."""
    return {"type": "function", "function": {"name": name}}


def opening(choice: object, *, force: str | None) -> object:
    """The first round's choice: the client's, or our search tool `force` when the client forced its
    hosted search without a choice of its own."""
    return forced(force) if force is not None and choice is None else choice


def for_round(choice: object, *, served: frozenset[str], allow: bool, first: bool, tools_left: bool) -> object:
    """A round's choice (DROP: none). Once our tools are no longer offered, a choice that forced them
    goes; after the first round a forcing choice becomes "auto", else the model calls our tools forever."""
    forces_ours = choice == "required" or tool_name(choice) in served
    if not allow:
        return DROP if forces_ours or not tools_left else choice
    if not first and forces_ours:
        return "auto"
    return choice
