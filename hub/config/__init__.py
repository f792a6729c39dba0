"""engines.json -> a typed, validated Config. The bottom layer: it imports nothing else of the gateway.

`settings` holds the typed model, `loader` reads, expands (`env`) and checks a file, `engine_kinds`, `keys`,
`proxy`, `quirks` and `side_requests` the parts of the file that are compiled at load. Which search
engines and backend families a file may name is passed to `load`/`parse`/`build` as `plugins` (a
Plugins: hub/config/plugins.py)."""

from .engine_kinds import EngineKind, EngineKinds
from .env import env_names, expand_env, format_path
from .loader import (
    BUILTIN_CONFIG,
    CONFIG_ENV,
    CONFIG_NAME,
    SCHEMA_PATH,
    ConfigError,
    ConfigLocation,
    build,
    load,
    locate,
    parse,
    schema,
    user_config_path,
    with_defaults,
)
from .plugins import Plugins
from .quirks import BackendFamily, Quirks
from .settings import (
    COMMERCIAL_TYPES,
    ROUTE_CLASSES,
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
    mask,
    mask_url,
)

__all__ = [
    "BUILTIN_CONFIG", "COMMERCIAL_TYPES", "CONFIG_ENV", "CONFIG_NAME", "ROUTE_CLASSES", "SCHEMA_PATH", "SEARCH_ROUTE",
    "BackendFamily", "Config", "ConfigError", "ConfigLocation", "EngineConfig", "EngineKind", "EngineKinds",
    "FetchOffer", "Limits", "Plugins", "Pool", "Provider", "Quirks", "ReadPages", "RouterConfig", "ServerConfig",
    "StrippedURL", "Target",
    "TelemetryConfig", "TraceConfig", "WebFetchConfig", "WebSearchConfig", "build", "env_names", "expand_env",
    "format_path", "load", "locate", "mask", "mask_url", "parse", "schema", "user_config_path", "with_defaults",
]
