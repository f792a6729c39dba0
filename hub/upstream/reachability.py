"""Whether each provider's base URL accepts a TCP connection, and so whether each route has a target
that can be reached: what /health reports beside its other fields (docs/deployment.md, "Health checks").

A probe opens a TCP connection to the base URL's host and port (80 or 443 when the URL names none) and
closes it at once: no request is sent, no key. A provider reached through a proxy (its own `proxy`, or
the environment's that applies to its URL, hub/upstream/proxy.py) is not probed: what the gateway can
reach is then the proxy's business, and a connection to the proxy says nothing about the provider.

Answers are kept `ttl_s` per host and port, so a load balancer polling /health costs nothing. When
/health asks and an answer is stale, every stale host is probed again at once, each connect bounded by
`timeout_s`; /health waits for them at most `timeout_s` (and a little), never longer: a probe not done
by then keeps running, and its answer serves the next call.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..config.settings import Config, Provider, mask_url
from .proxy import ProxyPolicy, choose

TTL_S = 10.0  # how long an answer is kept
TIMEOUT_S = 1.0  # one connect's deadline, and how long /health waits for the probes it started
GRACE_S = 0.1  # /health's wait beyond the connect deadline: the probes' own bookkeeping
THROUGH_PROXY = "through a proxy: not probed"
STILL_PROBING = "probe still running"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Answer:
    reachable: bool | None
    reason: str
    checked_at: float | None = None  # wall clock, as /health's other times
    at: float = 0.0  # monotonic: the cache's clock


def endpoint(base_url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a base URL; None when it names no host or an impossible port."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if not host:
        return None
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
        if port is None:
            return None
    return scheme, host, port


async def probe(host: str, port: int, timeout_s: float) -> tuple[bool, str]:
    """Whether host:port accepts a TCP connection within timeout_s, and in a few words why not."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except TimeoutError:
        return False, f"no TCP connection within {timeout_s:g} s"
    except socket.gaierror:
        return False, "cannot resolve the host name"
    except ConnectionRefusedError:
        return False, "connection refused"
    except OSError as e:
        return False, e.strerror or type(e).__name__
    writer.close()  # nothing was sent: the connection was the question
    return True, "accepts TCP connections"


class Reachability:
    """The probes' cache, one per process (each worker answers its own /health)."""

    def __init__(self, ttl_s: float = TTL_S, timeout_s: float = TIMEOUT_S) -> None:
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self._answers: dict[tuple[str, int], Answer] = {}
        self._running: dict[tuple[str, int], asyncio.Task] = {}

    async def report(self, config: Config, proxies: object = None,
                     env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """{"status", "reasons", "providers", "routes"} for /health. `proxies` is the environment's
        proxy policy the upstream client uses (read from `env`, by default the process's, without it)."""
        if not isinstance(proxies, ProxyPolicy):
            proxies = ProxyPolicy.from_env(os.environ if env is None else env)
        now = time.monotonic()
        where: dict[str, tuple[str, int] | Answer] = {}
        for pid, provider in config.providers.items():
            where[pid] = self._where(provider, proxies)
        keys = {k for k in where.values() if isinstance(k, tuple)}
        for key in keys:
            answer = self._answers.get(key)
            if (answer is None or now - answer.at >= self.ttl_s) and key not in self._running:
                self._running[key] = asyncio.ensure_future(self._probe(key))
        waiting = [self._running[k] for k in keys if k in self._running]
        if waiting:
            await asyncio.wait(waiting, timeout=self.timeout_s + GRACE_S)
        for key in list(self._answers):  # hosts a reloaded config no longer names
            if key not in keys:
                del self._answers[key]

        providers: dict[str, dict] = {}
        for pid, provider in config.providers.items():
            w = where[pid]
            answer = w if isinstance(w, Answer) else self._answers.get(w) or Answer(None, STILL_PROBING)
            providers[pid] = {"reachable": answer.reachable, "url": mask_url(provider.base_url),
                              "reason": answer.reason, "checkedAt": answer.checked_at}

        routes: dict[str, dict] = {}
        reasons: list[str] = []
        for name, pools in config.router.routes.items():
            targets = {t.key: providers[t.provider.id]["reachable"] for p in pools for t in p.targets}
            states = set(targets.values())
            reachable = True if True in states else None if None in states else False
            routes[name] = {"reachable": reachable, "targets": targets}
            if reachable is False:
                reasons.append(_why(name, [t.provider.id for p in pools for t in p.targets], providers))
        return {"status": "degraded" if reasons else "ok", "reasons": reasons,
                "providers": providers, "routes": routes}

    def _where(self, provider: Provider, proxies: ProxyPolicy) -> tuple[str, int] | Answer:
        """The host and port to probe for a provider, or its answer when there is nothing to probe."""
        ep = endpoint(provider.base_url)
        if ep is None:
            return Answer(False, "the base URL names no host and port", time.time())
        scheme, host, port = ep
        if choose(provider.proxy, proxies, scheme, host, port) is not None:
            return Answer(None, THROUGH_PROXY)
        return host, port

    async def _probe(self, key: tuple[str, int]) -> None:
        try:
            ok, reason = await probe(key[0], key[1], self.timeout_s)
            self._answers[key] = Answer(ok, reason, time.time(), time.monotonic())
        finally:
            self._running.pop(key, None)


def _why(route: str, provider_ids: list[str], providers: dict[str, dict]) -> str:
    if not provider_ids:
        return f"route '{route}' has no targets"
    seen = dict.fromkeys(provider_ids)
    return f"route '{route}' has no reachable target: " + "; ".join(
        f"{providers[pid]['url']}: {providers[pid]['reason']}" for pid in seen)
