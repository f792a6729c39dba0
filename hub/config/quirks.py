"""Each backend family's quirks and a provider's overrides of them, resolved at config load (hub/backends/quirks.py applies them)."""

from __future__ import annotations

from dataclasses import dataclass, replace

# How a forced tool call is expressed: a named function choice, "required" (the only tool we leave
# forcing is ours), or neither with a stronger instruction (servers that ignore tool_choice).
FORCING = ("named", "required", "instruction")


TOOL_RESULTS = ("tool", "user")


TEXT_TOOL_CALLS = ("server", "all", "off")


@dataclass(frozen=True, slots=True)
class Quirks:
    """One family's behaviour; every field can be overridden per provider."""

    family: str
    null_content: bool = True  # an assistant message with `content: null` is accepted
    tool_choice_auto: bool = False  # tools are ignored unless tool_choice says "auto"
    forcing: str = "named"
    parallel_tool_calls: bool = True  # the field is accepted (else removed)
    drop_fields: tuple[str, ...] = ()  # request fields the family rejects
    tool_results: str = "tool"  # "user": the template drops role "tool", results go in a user turn
    text_tool_calls: str = "server"  # which calls written as text are recovered (text_calls.py)
    estimate_usage: bool = True  # no usage from the backend: estimate rather than report zeros
    stream_tools: bool = True  # tools with tool_choice "auto" can be streamed (else: asked whole, replayed)


FAMILIES: dict[str, Quirks] = {
    # vLLM: tool_choice "auto" needs --enable-auto-tool-choice on the server; named and "required"
    # choices are enforced by guided decoding.
    "vllm": Quirks("vllm"),
    # Ollama's OpenAI endpoint ignores tool_choice and parallel_tool_calls.
    "ollama": Quirks("ollama", forcing="instruction", parallel_tool_calls=False),
    # llama-server and llama-cpp-python's server: the latter rejects `content: null` (a pydantic
    # string) and ignores tools without an explicit tool_choice; its chatml-function-calling
    # template drops role "tool" messages; it cannot stream an automatic tool choice. Named
    # choices force a call through a grammar.
    "llamacpp": Quirks("llamacpp", null_content=False, tool_choice_auto=True, parallel_tool_calls=False,
                       tool_results="user", stream_tools=False),
    # LM Studio: "required" is supported, a named choice is not.
    "lmstudio": Quirks("lmstudio", null_content=False, forcing="required"),
    # SGLang: named and "required" choices with --tool-call-parser.
    "sglang": Quirks("sglang"),
    "openai": Quirks("openai"),
}


_TYPE_FAMILY = {"openai-compatible": "openai", "anthropic": "openai", "gemini": "openai", "glm": "openai"}


# engines.json key -> (Quirks field, accepted values or a type)
_KEYS: dict[str, tuple[str, object]] = {
    "nullContent": ("null_content", bool),
    "toolChoiceAuto": ("tool_choice_auto", bool),
    "forceTool": ("forcing", FORCING),
    "parallelToolCalls": ("parallel_tool_calls", bool),
    "dropFields": ("drop_fields", list),
    "toolResults": ("tool_results", TOOL_RESULTS),
    "textToolCalls": ("text_tool_calls", TEXT_TOOL_CALLS),
    "estimateUsage": ("estimate_usage", bool),
    "streamTools": ("stream_tools", bool),
}


def family_of(provider_type: str) -> str:
    return provider_type if provider_type in FAMILIES else _TYPE_FAMILY.get(provider_type, "openai")


def resolve(provider_type: str, overrides: dict | None) -> Quirks:
    """The family's quirks with a provider's engines.json overrides applied (already schema-checked)."""
    overrides = overrides or {}
    base = FAMILIES[overrides.get("family") or family_of(provider_type)]
    changes = {}
    for key, (attr, _) in _KEYS.items():
        if key in overrides:
            value = overrides[key]
            changes[attr] = tuple(value) if isinstance(value, list) else value
    return replace(base, **changes) if changes else base
