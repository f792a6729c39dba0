"""The one composition root: a Runtime is everything built from one config, for `serve` (swapped
atomically on reload by Gateway), the CLI's search commands and MCP over stdio (`running`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

from . import config as cfgmod
from . import fetcher
from .access.budget import Budget
from .backends.registry import FAMILIES
from .config.keys import ApiKey
from .fetcher.direct import DirectFetch
from .fetcher.reading import PageReader
from .observability import metrics
from .observability.activity import Activity
from .observability.telemetry import Telemetry
from .observability.trace import Trace
from .observability.traces import TraceRecorder
from .routing.dispatch import Dispatcher, Gate
from .routing.router import Cooldowns, Router
from .search.metered import MeteredSearch, SearchBill
from .search.registry import ENGINE_KINDS
from .search.service import SearchService
from .store import Store, open_store
from .tools.kind import Parts
from .tools.registry import TOOLS, settings_types
from .tools.registry import build as build_tools
from .tools.search_execution import Summarizer
from .turn.pipeline import Pipeline
from .upstream.http import make_client

log = logging.getLogger("searchhub.runtime")


@dataclass
class Shared:
    """What outlives a config reload: connections, cooldowns, in-flight counts, the state store,
    the trace ring, recent activity and the telemetry exporter."""

    client: httpx.AsyncClient
    store: Store
    cooldowns: Cooldowns = field(default_factory=Cooldowns)
    gate: Gate = field(default_factory=Gate)
    traces: TraceRecorder = field(default_factory=lambda: TraceRecorder(cfgmod.TraceConfig(enabled=False)))
    activity: Activity = field(default_factory=Activity)
    telemetry: Telemetry = field(default_factory=Telemetry)

    def finished(self, trace: Trace | None, family: str) -> None:
        """A model call's end, with its batch of finished requests (hub/observability/requests.py):
        its client family counted, the status page's activity, its trace kept and exported."""
        metrics.child(metrics.CLIENT_REQUESTS, family).inc()
        self.activity.request()
        if trace is not None:
            if self.traces.enabled:
                self.traces.finish(trace)
            try:  # the OpenTelemetry SDK's code: a failure of it must not cost the batch its lines
                self.telemetry.export(trace)
            except Exception:
                log.exception("exporting the spans of request %s failed", trace.id)


def state_store(spec: dict | None) -> Store:
    """The config's state store, its outages and lost writes counted on /metrics."""
    return open_store(spec, on_outage=metrics.STATE_OUTAGES.inc, on_lost_write=metrics.STATE_LOST_WRITES.inc)


class Runtime:
    """Everything built from one config. A request takes a reference at its start and finishes on it,
    even if a reload swaps in a new one meanwhile."""

    def __init__(self, config: cfgmod.Config, shared: Shared) -> None:
        self.config = config
        self.shared = shared
        self.client = shared.client
        self.store = shared.store
        self.router = Router(config, shared.cooldowns)
        self.dispatcher = Dispatcher(shared.client, self.router, shared.gate, shared.activity)
        self.search = SearchService(config, shared.client, self.router, self.dispatcher, shared.store,
                                    activity=shared.activity)
        self.budget = Budget(shared.store)
        # the page fetcher keeps its own guarded connection pool (hub/fetcher/connect.py)
        ws = config.web_search
        reading = any(limits.read_pages.enabled for limits in (ws.limits, *ws.per_backend.values()))
        self.fetch = fetcher.build(config.web_fetch, shared.store) if config.web_fetch.enabled or reading else None
        direct = DirectFetch(*self.fetch, self.budget) if self.fetch else None
        self.direct_fetch = direct if config.web_fetch.enabled else None  # the MCP and Ollama web_fetch
        # reads the top result pages of a search; also when it is off in the config, for /v1/search's read_pages
        self.reader = PageReader(direct) if direct else None
        self.tools = build_tools(Parts(config, shared.client, self.search, self.budget, self.fetch, self.reader))
        self.pipeline = Pipeline(config, self.router, self.dispatcher, self.tools, shared.store)
        self.summarizer = Summarizer(self.pipeline.complete, self.pipeline.stream)
        metrics.config_series(config)  # built: this config's keys and engines on /metrics at 0 from now on

    def metered(self, key: ApiKey | None, bill: SearchBill | None = None) -> MeteredSearch:
        """This config's search on behalf of one API key (its budget and cost)."""
        return MeteredSearch(self.search, self.budget, key, bill)

    async def aclose(self, delay_s: float = 0.0) -> None:
        """Close what this config built for itself (the fetcher's connections), after `delay_s` so
        requests still running on it finish first."""
        if self.fetch is None:
            return
        if delay_s:
            await asyncio.sleep(delay_s)
        await self.fetch[0].aclose()


# What engines.json may name: the search engines of hub/search/engines/, the backend families of
# hub/backends/families/ and the settings of the server tools of hub/tools/ (the config layer lists none).
PLUGINS = cfgmod.Plugins(engines=ENGINE_KINDS, families=FAMILIES, tools=settings_types(TOOLS))


def load_config(path: str) -> cfgmod.Config:
    """The config file, its search engines and backend families checked against the build's PLUGINS."""
    return cfgmod.load(path, plugins=PLUGINS)


@contextlib.asynccontextmanager
async def running(config: cfgmod.Config, store: Store | None = None) -> AsyncIterator[Runtime]:
    """A Runtime outside the server (`searchhub search`, `engines --probe`, `doctor`, `mcp`), built as
    `serve` builds it and closed after; `store` replaces the config's state store (the CLI's one-shot
    searches keep theirs in memory)."""
    shared = Shared(client=make_client(), store=store if store is not None else state_store(config.state))
    runtime = Runtime(config, shared)
    try:
        yield runtime
    finally:
        await runtime.aclose()
        await shared.client.aclose()
        await shared.store.close()


class Gateway:
    """Holds the current Runtime and watches engines.json for changes."""

    def __init__(self, config_path: str, config: cfgmod.Config | None = None) -> None:
        self.config_path = config_path
        self._initial = config
        self.runtime: Runtime | None = None
        self.loaded_at: float = 0.0
        self.last_reload_error: str | None = None
        self.last_reload_attempt: float | None = None
        self._stamp: tuple | None = None
        self._watch_task: asyncio.Task | None = None
        self._state_errors_seen = 0
        self._state_degraded = False
        self._closing: set[asyncio.Task] = set()  # retired runtimes waiting to close

    def _file_stamp(self) -> tuple | None:
        try:
            st = os.stat(self.config_path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    async def start(self) -> None:
        config = self._initial or load_config(self.config_path)
        self._stamp = self._file_stamp()
        store = state_store(config.state)
        # One read now, so a shared store that is down shows on /health before a request needs it.
        await store.get("probe")
        traces = TraceRecorder(config.trace, store if config.state.get("backend") == "redis" else None)
        shared = Shared(client=make_client(), store=store, traces=traces,
                        telemetry=Telemetry.from_config(config.telemetry))
        traces.start_flusher()
        self.runtime = Runtime(config, shared)
        self.observe_state()
        self.loaded_at = time.time()
        self._watch_task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        if self._watch_task:
            self._watch_task.cancel()
        for task in list(self._closing):
            task.cancel()
        if self.runtime:
            await self.runtime.aclose()
            await self.runtime.shared.traces.stop()
            self.runtime.shared.telemetry.shutdown()
            await self.runtime.shared.client.aclose()
            await self.runtime.shared.store.close()

    def observe_state(self) -> dict:
        """The store's health, copied into the state metrics and logged when it changes. Runs on the
        watcher's tick and when /metrics is scraped, so the request path pays nothing for it."""
        assert self.runtime is not None
        state = self.runtime.store.health()
        errors = state.get("errors", 0)
        if errors > self._state_errors_seen:
            metrics.STATE_ERRORS.inc(errors - self._state_errors_seen)
        self._state_errors_seen = errors
        degraded = bool(state.get("degraded"))
        if degraded != self._state_degraded:
            self._state_degraded = degraded
            if degraded:
                log.warning("state store unreachable; chains, stored responses and the search cache live in "
                            "this process until it answers: %s", state.get("last_error"))
            else:
                log.info("state store reachable again")
        metrics.STATE_DEGRADED.set(1 if degraded else 0)
        return state

    async def _watch(self) -> None:
        while True:
            assert self.runtime is not None
            await asyncio.sleep(self.runtime.config.server.reload_interval_s)
            self.observe_state()
            stamp = self._file_stamp()
            if stamp is None or stamp == self._stamp:
                continue
            self._stamp = stamp
            self.reload()

    def _retire(self, runtime: Runtime, grace_s: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # reloaded from outside the event loop (a test): nothing to schedule on
            return
        task = loop.create_task(runtime.aclose(grace_s))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def reload(self) -> bool:
        """Load the file again; swap it in if valid, else keep serving the previous config."""
        assert self.runtime is not None
        self.last_reload_attempt = time.time()
        try:
            config = load_config(self.config_path)
            if config.state != self.runtime.config.state:
                log.warning("the 'state' section changed; it takes effect at the next restart")
            runtime = Runtime(config, self.runtime.shared)
        except cfgmod.ConfigError as e:
            self.last_reload_error = str(e)
            metrics.CONFIG_RELOADS.labels("rejected").inc()
            log.error("config reload rejected, still serving the previous config: %s", e)
            return False
        except Exception as e:  # a bug in building must not take the gateway down either
            self.last_reload_error = f"{type(e).__name__}: {e}"
            metrics.CONFIG_RELOADS.labels("rejected").inc()
            log.exception("config reload failed, still serving the previous config")
            return False
        runtime.shared.traces.configure(config.trace)
        retired, self.runtime = self.runtime, runtime  # one reference assignment: atomic for every request that starts after it
        self._retire(retired, config.server.shutdown_grace_s)
        self.loaded_at = time.time()
        self.last_reload_error = None
        metrics.CONFIG_RELOADS.labels("ok").inc()
        log.info("config reloaded (%s)", config.raw_hash)
        return True
