"""The hardened web fetcher: policy (policy.py, addresses.py, urls.py), the guarded connection
(connect.py), bounded reading (body.py), extraction (extract.py), the cache (cache.py), and the
entry point (fetcher.py). Built from the config's webFetch section by build()."""

from __future__ import annotations

import ssl
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from .addresses import AddressPolicy
from .connect import Resolver, SystemResolver
from .content import UNTRUSTED_NOTE, tool_content
from .fetcher import Fetcher, FetchLimits
from .policy import DomainRules, FetchScope, UrlPolicy
from .result import ERROR_CODES, FetchResult, Refusal
from .urls import normalize, redact, urls_in_text

if TYPE_CHECKING:
    from ..config.settings import WebFetchConfig
    from ..store.base import Store

__all__ = [
    "ERROR_CODES", "UNTRUSTED_NOTE", "AddressPolicy", "DomainRules", "FetchLimits", "FetchResult", "FetchScope",
    "Fetcher", "Refusal", "Resolver", "SystemResolver", "UrlPolicy", "build", "normalize", "redact",
    "tool_content", "urls_in_text",
]


def build(
    config: WebFetchConfig, store: Store, *, resolver: Resolver | None = None,
    ssl_context: ssl.SSLContext | None = None, executor: Executor | None = None,
) -> tuple[Fetcher, UrlPolicy]:
    """The fetcher and the operator's URL policy for one config."""
    limits = FetchLimits(
        max_bytes=config.max_bytes, timeout_s=config.timeout_s, connect_timeout_s=config.connect_timeout_s,
        max_redirects=config.max_redirects, max_chars=config.max_chars,
        allowed_ports=frozenset(config.allow_ports), cache_ttl_s=config.cache_ttl_s,
    )
    addresses = AddressPolicy.build(config.allow_private, config.allow_hosts)
    fetcher = Fetcher(limits, addresses, store, resolver=resolver, ssl_context=ssl_context, executor=executor)
    policy = UrlPolicy(DomainRules.build(config.allowed_domains, config.blocked_domains),
                       config.require_prior_context)
    return fetcher, policy
