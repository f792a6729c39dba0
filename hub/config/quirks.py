"""What a backend family accepts (Quirks) and a provider's overrides of it, resolved at config load
(hub/backends/quirks.py applies them).

The types only: each family module of hub/backends/families/ declares its BackendFamily (its name,
its quirk defaults, whether it is self-hosted, how doctor names it), and hub/backends/registry.py
collects them into the table the callers of the loader pass in (hub/config/plugins.py). So
hub/config/ holds no list of families: a new family is one module in hub/backends/families/."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

# How a forced tool call is expressed: a named function choice, "required" (the only tool we leave
# forcing is ours), or neither with a stronger instruction (servers that ignore tool_choice).
FORCING = ("named", "required", "instruction")


TOOL_RESULTS = ("tool", "user")


TEXT_TOOL_CALLS = ("server", "all", "off")


@dataclass(frozen=True, slots=True)
class Quirks:
    """One family's behaviour; every field can be overridden per provider."""

    family: str = ""  # the family's name, filled in by its BackendFamily
    null_content: bool = True  # an assistant message with `content: null` is accepted
    tool_choice_auto: bool = False  # tools are ignored unless tool_choice says "auto"
    forcing: str = "named"
    parallel_tool_calls: bool = True  # the field is accepted (else removed)
    drop_fields: tuple[str, ...] = ()  # request fields the family rejects
    tool_results: str = "tool"  # "user": the template drops role "tool", results go in a user turn
    text_tool_calls: str = "server"  # which calls written as text are recovered (text_calls.py)
    estimate_usage: bool = True  # no usage from the backend: estimate rather than report zeros
    stream_tools: bool = True  # tools with tool_choice "auto" can be streamed (else: asked whole, replayed)
    # said after "upstream stream ended before any content" when a stream of this family's servers
    # ends without a single event: how they fail silently, and where to look (hub/streams/watch.py)
    silent_end: str = ""


@dataclass(frozen=True, slots=True)
class BackendFamily:
    """A kind of model server, declared by its module of hub/backends/families/ as `FAMILY`."""

    name: str  # engines.json's provider `type`, and the `quirks.family` that starts from its quirks
    display: str  # how `searchhub doctor` names the server to start ("vLLM", "llama.cpp's llama-server")
    quirks: Quirks = field(default_factory=Quirks)  # what it accepts; its `family` is set to `name`
    self_hosted: bool = True  # a provider of this type is self-hosted unless it says `selfHosted: false`
    any_model: bool = False  # answers whatever model a request names: its /models list proves nothing

    def __post_init__(self) -> None:
        object.__setattr__(self, "quirks", replace(self.quirks, family=self.name))


# The commercial APIs (settings.COMMERCIAL_TYPES) take OpenAI's Chat Completions as documented: every
# default. `quirks.family: "openai"` names this table too.
COMMERCIAL_FAMILY = "openai"
COMMERCIAL_QUIRKS = Quirks(COMMERCIAL_FAMILY)


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


def quirk_families(families: Mapping[str, BackendFamily]) -> list[str]:
    """The names `providers.*.quirks.family` may take: the build's families and the commercial table."""
    return sorted({*families, COMMERCIAL_FAMILY})


def resolve(provider_type: str, overrides: dict | None, families: Mapping[str, BackendFamily]) -> Quirks:
    """The family's quirks with a provider's engines.json overrides applied (the loader has checked
    the names against `families`); a commercial type starts from COMMERCIAL_QUIRKS."""
    overrides = overrides or {}
    family = families.get(overrides.get("family") or provider_type)
    base = family.quirks if family else COMMERCIAL_QUIRKS
    changes = {}
    for key, (attr, _) in _KEYS.items():
        if key in overrides:
            value = overrides[key]
            changes[attr] = tuple(value) if isinstance(value, list) else value
    return replace(base, **changes) if changes else base
