"""engines.json -> a typed, validated Config. Everything a request needs is decided here, at load."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema

from .engine_kinds import EngineKind, EngineKinds
from .env import env_names, expand_env, format_path
from .keys import parse_keys
from .plugins import Plugins, tool_settings, unknown_names
from .proxy import DIRECT, parse_proxy
from .quirks import BackendFamily
from .quirks import resolve as resolve_quirks
from .settings import (
    FIRST_TOKEN_TIMEOUT_MS,
    SEARCH_ROUTE,
    Config,
    EngineConfig,
    FetchOffer,
    Limits,
    Pool,
    Provider,
    ReadPages,
    RouterConfig,
    ServerConfig,
    StrippedURL,
    Target,
    TelemetryConfig,
    TraceConfig,
    WebFetchConfig,
    WebSearchConfig,
)
from .side_requests import compile_side_config

SCHEMA_PATH = Path(__file__).with_name("engines.schema.json")

class ConfigError(Exception):
    """A config that cannot be served. Messages name the JSON path; they never contain secret values."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))



def _proxy(value: Any, where: str, errors: list[str]) -> str | None:
    """`proxy` of a provider or engine: false -> "direct", a URL -> itself (checked, never echoed)."""
    if value is None:
        return None
    if value is False:
        return DIRECT
    if value is True:
        errors.append(f"{where}: must be a proxy URL or false (true has no meaning)")
        return None
    try:
        parse_proxy(value)
    except ValueError as e:
        errors.append(f"{where}: {e}")
        return None
    return value


def _self_hosted(p: dict, families: Mapping[str, BackendFamily]) -> bool:
    """`selfHosted` as written, else what the provider type's family declares (a commercial type: no)."""
    family = families.get(p["type"])
    return p.get("selfHosted", family is not None and family.self_hosted)


def _first_token_timeout(p: dict, self_hosted: bool) -> float:
    """A provider's first-content deadline in seconds: `firstTokenTimeoutMs`, or the default for its
    kind (settings.FIRST_TOKEN_TIMEOUT_MS), never above its `timeoutMs` unless written so."""
    if "firstTokenTimeoutMs" in p:
        return p["firstTokenTimeoutMs"] / 1000
    default = FIRST_TOKEN_TIMEOUT_MS["self_hosted" if self_hosted else "commercial"]
    return min(default, p["timeoutMs"]) / 1000


_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)$", re.S)


def _url_credentials(url: str, where: str, api_key: str | None, headers: dict[str, str],
                     errors: list[str]) -> tuple[str, dict[str, str]]:
    """A baseURL without a trailing '/' and, when it was written with credentials
    (`http://user:pass@host/v1`), without them (a StrippedURL, which masks as written), and the
    headers with a Basic `authorization` made of them (percent-decoded). aiohttp refuses credentials
    in a URL beside an Authorization header, and an entry that already authenticates (an apiKey, an
    authorization header) would send two: that is an error naming `where`, never the value."""
    m = _AUTHORITY.match(url)
    if m is None or "@" not in m.group(2):
        return url.rstrip("/"), headers
    userinfo, _, host = m.group(2).rpartition("@")  # a raw '@' in the password stays in it
    bare = StrippedURL((m.group(1) + host + m.group(3)).rstrip("/"), url.rstrip("/"))
    if api_key:
        errors.append(f"{where}: credentials in the URL and an apiKey: keep one")
        return bare, headers
    if any(k.lower() == "authorization" for k in headers):
        errors.append(f"{where}: credentials in the URL and an authorization header: keep one")
        return bare, headers
    if not userinfo:
        return bare, headers
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return bare, {**headers, "authorization": f"Basic {token}"}


# ---------------------------------------------------------------- loading


@cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema())


def load(path: str | os.PathLike, env: dict[str, str] | None = None, *, plugins: Plugins) -> Config:
    """The config file at `path`. `plugins` are the search engines and backend families it may name,
    passed in by the caller (hub/runtime.py's PLUGINS): this layer imports nothing above it and lists none."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"cannot read {p}: {e.strerror or e}"]) from None
    return parse(text, env=env, path=str(p), plugins=plugins)


def parse(text: str, env: dict[str, str] | None = None, path: str | None = None, *,
          plugins: Plugins) -> Config:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError([f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"]) from None
    cfg = build(raw, env=os.environ if env is None else env, path=path, plugins=plugins)
    object.__setattr__(cfg, "raw_hash", hashlib.sha256(text.encode()).hexdigest()[:12])
    return cfg


def _schema_errors(raw: Any) -> list[tuple[list[str], str]]:
    """(path, message) of each way the config breaks the schema."""
    errors = []
    for err in _validator().iter_errors(raw):
        where = format_path(list(err.absolute_path))
        if err.validator == "oneOf" and "engines" in err.absolute_path:
            msg = "an engine needs exactly one of 'providerKey' (LLM search backend) or 'type' (API provider)"
        elif err.validator == "oneOf" and "apiKeys" in err.absolute_path:
            # jsonschema would echo the entry, and with it the key.
            msg = _api_key_error(err)
        elif err.validator == "additionalProperties":
            msg = err.message.replace(" were unexpected", " not allowed").replace(" was unexpected", " not allowed")
        elif err.validator in ("enum", "type", "pattern", "required", "minimum", "maximum", "minItems", "const"):
            # jsonschema echoes the offending value; keep it out in case it is a secret.
            msg = _describe(err)
        else:
            msg = err.message
        errors.append((list(map(str, err.absolute_path)), f"{where}: {msg}"))
    return errors


def _api_key_error(err: jsonschema.ValidationError) -> str:
    entry = err.instance
    if not isinstance(entry, dict):
        return "must be a non-empty string or an object {key, name, ...}"
    for sub in sorted(err.context, key=lambda e: list(map(str, e.absolute_path))):
        if sub.schema_path and sub.schema_path[0] == 1:  # the object form's complaint
            where = format_path(list(sub.relative_path))
            text = _describe(sub) if sub.validator != "additionalProperties" else (
                sub.message.replace(" were unexpected", " not allowed").replace(" was unexpected", " not allowed"))
            return f"{where}: {text}" if sub.relative_path else text
    return "must be a non-empty string or an object {key, name, ...}"


def _describe(err: jsonschema.ValidationError) -> str:
    v = err.validator
    if v == "enum":
        return "must be one of " + ", ".join(json.dumps(x) for x in err.validator_value)
    if v == "type":
        return f"must be of type {err.validator_value}"
    if v == "pattern":
        return f"does not match the pattern {err.validator_value}"
    if v == "required":
        return err.message
    if v in ("minimum", "maximum"):
        return f"must be {'>=' if v == 'minimum' else '<='} {err.validator_value}"
    if v == "minItems":
        return f"needs at least {err.validator_value} item(s)"
    return err.message


def with_defaults(node: Any, sch: dict | None = None) -> Any:
    """The config with every default engines.schema.json declares filled in: the one place defaults
    live. A missing section whose properties have defaults becomes an object of its defaults."""
    sch = _resolved(schema() if sch is None else sch)
    if isinstance(node, dict):
        props = sch.get("properties", {})
        out = dict(node)
        for key, sub in props.items():
            sub = _resolved(sub)
            if key in out:
                out[key] = with_defaults(out[key], sub)
            elif "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            elif any("default" in p for p in sub.get("properties", {}).values()):
                out[key] = with_defaults({}, sub)
        extra = sch.get("additionalProperties")
        if isinstance(extra, dict):
            for key in out.keys() - props.keys():
                out[key] = with_defaults(out[key], extra)
        return out
    if isinstance(node, list) and isinstance(sch.get("items"), dict):
        return [with_defaults(item, sch["items"]) for item in node]
    return node


def _resolved(sch: dict) -> dict:
    ref = sch.get("$ref")
    return schema()["$defs"][ref.rsplit("/", 1)[-1]] if ref else sch


def build(raw: Any, env: dict[str, str], path: str | None = None, *, plugins: Plugins) -> Config:
    if not isinstance(raw, dict):
        raise ConfigError(["(root): must be a JSON object"])
    env_errors: list[str] = []
    written = raw.get("providers")  # as written, before expansion: which variables each baseURL names
    as_written = raw
    raw = expand_env(raw, dict(env), (), env_errors)
    families = plugins.families
    found = _schema_errors(raw) + unknown_names(raw, as_written, plugins)
    errors = env_errors + [text for _, text in sorted(found, key=lambda f: f[0])]
    if errors:
        raise ConfigError(errors)
    raw = with_defaults(raw)

    srv = raw["server"]
    names = [e["name"] for e in srv.get("apiKeys", ()) if isinstance(e, dict)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"server.apiKeys: the name '{name}' is used by more than one key")
    server = ServerConfig(
        host=srv["host"],
        port=srv["port"],
        api_keys=parse_keys(srv.get("apiKeys", ())),
        admin_keys=parse_keys(srv.get("adminKeys", ()), "adminKeys"),
        max_body_bytes=srv["maxBodyBytes"],
        log_level=srv["logLevel"],
        reload_interval_s=srv["reloadIntervalMs"] / 1000,
        shutdown_grace_s=srv["shutdownGraceMs"] / 1000,
    )

    providers: dict[str, Provider] = {}
    for pid, p in raw["providers"].items():
        as_written = written.get(pid) if isinstance(written, dict) else None
        api_key = p.get("apiKey") or None
        base_url, headers = _url_credentials(p["baseURL"], f"providers.{pid}.baseURL", api_key,
                                             dict(p.get("headers", {})), errors)
        self_hosted = _self_hosted(p, families)
        providers[pid] = Provider(
            id=pid,
            type=p["type"],
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            timeout_s=p["timeoutMs"] / 1000,
            connect_timeout_s=p["connectTimeoutMs"] / 1000,
            self_hosted=self_hosted,
            max_concurrency=p.get("maxConcurrency"),
            proxy=_proxy(p.get("proxy"), f"providers.{pid}.proxy", errors),
            quirks=resolve_quirks(p["type"], p.get("quirks"), families),
            base_url_env=env_names(as_written.get("baseURL")) if isinstance(as_written, dict) else (),
            first_token_timeout_s=_first_token_timeout(p, self_hosted),
        )

    vr = raw["virtualrouter"]
    routes: dict[str, tuple[Pool, ...]] = {}
    for route, pools in vr["routing"].items():
        built = []
        for i, pool in enumerate(pools):
            targets = []
            for j, key in enumerate(pool["targets"]):
                pid, _, model = key.partition(".")
                if pid not in providers:
                    errors.append(
                        f"virtualrouter.routing.{route}[{i}].targets[{j}]: unknown provider '{pid}' "
                        f"(known: {', '.join(sorted(providers))})"
                    )
                    continue
                targets.append(Target(key, providers[pid], model))
            built.append(Pool(pool.get("id", f"{route}-{i}"), pool["priority"], tuple(targets)))
        # Stable sort: equal priorities keep file order.
        routes[route] = tuple(sorted(built, key=lambda p: -p.priority))
    router = RouterConfig(
        routes=routes,
        cooldown_s=vr["cooldownMs"] / 1000,
        retries=vr["retries"],
        long_context_threshold=vr["longContextThresholdTokens"],
        background_patterns=tuple(s.lower() for s in vr["backgroundModelPatterns"]),
    )

    web_search = _build_web_search(raw["webSearch"], providers, routes, plugins.engines, errors)
    web_fetch = _build_web_fetch(raw.get("webFetch", {}), providers, errors)
    tools = tool_settings(raw.get("tools"), plugins, errors)

    aliases = raw.get("modelAliases", {})
    state = dict(raw["state"])
    if errors:
        raise ConfigError(errors)
    return Config(
        path=path,
        server=server,
        providers=providers,
        router=router,
        web_search=web_search,
        model_aliases=aliases,
        state=state,
        responses_ttl_s=raw["responses"]["storeTtlMs"] / 1000,
        web_fetch=web_fetch,
        tools=tools,
        trace=_trace(raw["trace"]),
        telemetry=_telemetry(raw["telemetry"]),
    )


def _trace(d: dict) -> TraceConfig:
    return TraceConfig(
        enabled=d["enabled"],
        ring_size=d["ringSize"],
        sample_rate=float(d["sampleRate"]),
        bodies=d["bodies"],
        store_ttl_s=d["storeTtlMs"] / 1000,
    )


def _telemetry(d: dict) -> TelemetryConfig:
    return TelemetryConfig(otlp_endpoint=d.get("otlpEndpoint") or None,
                           service_name=d["serviceName"], headers=dict(d.get("headers", {})))


def _limits(d: dict, base: Limits | None) -> Limits:
    """webSearch's limits (defaults filled in), or a perBackend override of them: what the override
    leaves out it inherits from `base`."""

    def get(key: str, attr: str, scale: float = 1) -> Any:
        if key in d:
            return d[key] / scale if scale != 1 else d[key]
        return getattr(base, attr)

    return Limits(
        enabled=get("enabled", "enabled"),
        inject_policy=get("injectPolicy", "inject_policy"),
        max_tool_iterations=get("maxToolIterations", "max_tool_iterations"),
        loop_wall_clock_s=get("loopWallClockMs", "loop_wall_clock_s", 1000),
        max_total_result_bytes=get("maxTotalResultBytes", "max_total_result_bytes"),
        max_consecutive_errors=get("maxConsecutiveErrors", "max_consecutive_errors"),
        mode=get("mode", "mode"),
        read_pages=_read_pages(d.get("readPages"), base.read_pages if base else ReadPages()),
    )


def _read_pages(d: dict | None, base: ReadPages) -> ReadPages:
    """webSearch.readPages (or a perBackend override of it: what it leaves out it inherits)."""
    if not d:
        return base
    return ReadPages(enabled=d.get("enabled", base.enabled), top=d.get("top", base.top),
                     timeout_s=d["timeoutMs"] / 1000 if "timeoutMs" in d else base.timeout_s,
                     max_chars=d.get("maxChars", base.max_chars))


def _build_web_search(
    ws: dict, providers: dict[str, Provider], routes: dict[str, tuple[Pool, ...]], engine_kinds: EngineKinds,
    errors: list[str],
) -> WebSearchConfig:
    search_targets = {t.key for pool in routes.get(SEARCH_ROUTE, ()) for t in pool.targets}
    engines: list[EngineConfig] = []
    seen: set[str] = set()
    defaults = 0
    for i, e in enumerate(ws.get("engines", [])):
        where = f"webSearch.engines[{i}]"
        if e["id"] in seen:
            errors.append(f"{where}.id: duplicate engine id '{e['id']}'")
        seen.add(e["id"])
        defaults += bool(e.get("default"))
        pk = e.get("providerKey")
        google = e.get("google")
        if pk:
            if pk not in search_targets:
                errors.append(
                    f"{where}.providerKey: engine '{e['id']}' names '{pk}', which is not a target of "
                    f"virtualrouter.routing.{SEARCH_ROUTE}"
                )
                continue
            ptype = providers[pk.partition(".")[0]].type
            kind = engine_kinds.model.get(ptype)
            if kind is None:
                errors.append(
                    f"{where}.providerKey: engine '{e['id']}' needs a provider of a search-capable type "
                    f"({', '.join(sorted(engine_kinds.model)) or 'none'}), got '{ptype}'"
                )
                continue
        else:
            kind = engine_kinds.api[e["type"]]  # _engine_type_errors vouched for it
            if kind.needs_base_url and not e.get("baseURL"):
                errors.append(f"{where}.baseURL: a {e['type']} engine needs the URL of its instance")
            if not kind.keyless and not e.get("apiKey"):
                errors.append(f"{where}.apiKey: engine '{e['id']}' of type {e['type']} needs an apiKey")
            if e.get("engines") and not kind.members:
                errors.append(f"{where}.engines: only a multi engine has member engines")
            for price in ("costPerMillionInputTokens", "costPerMillionOutputTokens"):
                if price in e:
                    errors.append(f"{where}.{price}: only model engines (providerKey) report tokens; "
                                  "use costPerCall")
        api_key = e.get("apiKey") or None
        base_url, headers = (_url_credentials(e["baseURL"], f"{where}.baseURL", api_key, {}, errors)
                             if e.get("baseURL") else (None, {}))
        index = kind.index_for(e.get("options", {}))
        if google is None:
            google = index == "google"
        if "google" in e["id"].lower() and e.get("google") is None:
            google = True
        engines.append(
            EngineConfig(
                id=e["id"],
                description=e.get("description", ""),
                default=e["default"],
                google=bool(google),
                provider_key=pk,
                type=e.get("type"),
                api_key=api_key,
                base_url=base_url,
                headers=headers,
                max_results=e.get("maxResults"),
                timeout_s=e["timeoutMs"] / 1000 if "timeoutMs" in e else None,
                options=dict(e.get("options", {})),
                proxy=_proxy(e.get("proxy"), f"{where}.proxy", errors),
                members=tuple(e.get("engines", ())),
                baidu=index == "baidu",
                cost_per_call=e.get("costPerCall", 0.0),
                cost_per_input_token=e.get("costPerMillionInputTokens", 0.0) / 1e6,
                cost_per_output_token=e.get("costPerMillionOutputTokens", 0.0) / 1e6,
            )
        )
    if defaults > 1:
        errors.append("webSearch.engines: at most one engine may be the default")
    _check_members(engines, engine_kinds.api, errors)
    limits = _limits(ws, None)
    per_backend = {}
    for pid, override in ws.get("perBackend", {}).items():
        if pid not in providers:
            errors.append(f"webSearch.perBackend.{pid}: unknown provider '{pid}'")
            continue
        per_backend[pid] = _limits(override, limits)
    return WebSearchConfig(
        enabled=ws["enabled"],
        engines=tuple(engines),
        tool_name=ws["toolName"],
        limits=limits,
        per_backend=per_backend,
        result_char_cap=ws["resultCharCap"],
        max_results=ws["maxResults"],
        timeout_s=ws["timeoutMs"] / 1000,
        cache_ttl_s=ws["cacheTtlMs"] / 1000,
        chain_ttl_s=ws["chainTtlMs"] / 1000,
        fallback=ws["fallback"],
        exec_summary=ws["execSummary"],
        keepalive_s=ws["keepaliveMs"] / 1000,
        baidu_preference=ws["baiduPreference"],
        side_requests=compile_side_config(ws.get("sideRequests"), errors),
    )


def _fetch_offer(d: dict, base: FetchOffer) -> FetchOffer:
    return FetchOffer(
        enabled=d.get("enabled", base.enabled),
        inject_policy=d.get("injectPolicy", base.inject_policy),
        max_fetches_per_turn=d.get("maxFetchesPerTurn", base.max_fetches_per_turn),
    )


def _build_web_fetch(wf: dict, providers: dict[str, Provider], errors: list[str]) -> WebFetchConfig:
    import ipaddress

    offer = _fetch_offer(wf, FetchOffer())
    per_backend = {}
    for pid, override in wf.get("perBackend", {}).items():
        if pid not in providers:
            errors.append(f"webFetch.perBackend.{pid}: unknown provider '{pid}'")
            continue
        per_backend[pid] = _fetch_offer(override, offer)

    for i, entry in enumerate(wf.get("allowHosts", [])):
        e = entry.strip().strip("[]")
        if "/" in e:
            try:
                ipaddress.ip_network(e, strict=False)
            except ValueError:
                errors.append(f"webFetch.allowHosts[{i}]: '{entry}' is neither a host name nor a CIDR network")
    return WebFetchConfig(
        offer=offer,
        per_backend=per_backend,
        allow_private=wf.get("allowPrivate", False),
        allow_hosts=tuple(wf.get("allowHosts", ())),
        allow_ports=tuple(wf.get("allowPorts", (80, 443))),
        allowed_domains=tuple(wf.get("allowedDomains", ())),
        blocked_domains=tuple(wf.get("blockedDomains", ())),
        require_prior_context=wf.get("requirePriorContext", True),
        max_bytes=wf.get("maxBytes", 5 * 1024 * 1024),
        max_chars=wf.get("maxChars", 50_000),
        timeout_s=wf.get("timeoutMs", 15000) / 1000,
        connect_timeout_s=wf.get("connectTimeoutMs", 5000) / 1000,
        max_redirects=wf.get("maxRedirects", 5),
        cache_ttl_s=wf.get("cacheTtlMs", 900000) / 1000,
    )


def _check_members(engines: list[EngineConfig], api: Mapping[str, EngineKind], errors: list[str]) -> None:
    """A multi engine's members: other, existing, non-multi engines."""
    by_id = {e.id: e for e in engines}

    def holds_members(e: EngineConfig) -> bool:
        return e.type is not None and api[e.type].members

    for i, e in enumerate(engines):
        if not holds_members(e):
            continue
        where = f"webSearch.engines[{i}].engines"
        if not e.members:
            errors.append(f"{where}: a multi engine needs the ids of the engines it queries")
        for m in e.members:
            member = by_id.get(m)
            if member is None:
                errors.append(f"{where}: unknown engine '{m}' (known: {', '.join(sorted(by_id))})")
            elif holds_members(member):
                errors.append(f"{where}: '{m}' is a multi engine itself")
        if len(set(e.members)) != len(e.members):
            errors.append(f"{where}: an engine is listed twice")


CONFIG_ENV = "SEARCHHUB_CONFIG"
CONFIG_NAME = "engines.json"
BUILTIN_CONFIG = Path(__file__).with_name("engines.default.json")  # the repository's engines.json, packaged


@dataclass(frozen=True, slots=True)
class ConfigLocation:
    """Which config file a command uses, and why (logged, so nobody has to guess)."""

    path: str
    source: str  # "--config", "$SEARCHHUB_CONFIG", "./engines.json", "user config", "built-in default"

    def describe(self) -> str:
        if self.source == "built-in default":
            return f"the built-in default config ({self.path}); `searchhub init` writes an editable copy"
        return f"config {self.path} (from {self.source})"


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/searchhub/engines.json, ~/.config/searchhub/engines.json without it."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "searchhub" / CONFIG_NAME


def locate(cli_value: str | None, env: Mapping[str, str] | None = None, cwd: str | None = None) -> ConfigLocation:
    """The config to use, first found: --config, $SEARCHHUB_CONFIG, ./engines.json, the user config
    dir, the built-in default. A path named by --config or the variable is used even if it is missing
    (loading it then says so): a typo must not silently fall back to another file."""
    env = os.environ if env is None else env
    if cli_value:
        return ConfigLocation(cli_value, "--config")
    if env.get(CONFIG_ENV):
        return ConfigLocation(env[CONFIG_ENV], f"${CONFIG_ENV}")
    local = Path(cwd or os.getcwd()) / CONFIG_NAME
    if local.is_file():
        return ConfigLocation(CONFIG_NAME if cwd is None else str(local), f"./{CONFIG_NAME}")
    user = user_config_path(env)
    if user.is_file():
        return ConfigLocation(str(user), "user config")
    return ConfigLocation(str(BUILTIN_CONFIG), "built-in default")
