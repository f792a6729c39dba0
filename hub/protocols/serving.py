"""What a protocol folder declares to be served: its endpoints and the shape of its errors.

Each folder of hub/protocols/ (chat/, responses/, messages/, ...) has an `endpoints` module that
declares `PROTOCOL = ProtocolKind(...)`; hub/protocols/registry.py finds them, and routes/protocols.py
serves every endpoint over HTTP. A handler speaks no HTTP: it gets the request as a `Call` (the
decoded JSON body, path parameters, headers, the caller's options) and the parts of the runtime it
uses (`Runtime`), and returns an `Answer` (a JSON body) or a `Stream` (SSE bytes). Adding a protocol
is adding one folder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

if TYPE_CHECKING:  # types only: what routes/ and hub/runtime.py pass in
    from hub.config import Config
    from hub.config.keys import ApiKey
    from hub.fetcher.direct import DirectFetch
    from hub.fetcher.reading import PageReader
    from hub.routing.dispatch import Dispatcher
    from hub.routing.router import Router
    from hub.search.metered import MeteredSearch, SearchBill
    from hub.store import Store
    from hub.tools.events import Options
    from hub.tools.registry import ServerTools
    from hub.tools.search_execution import Summarizer


class Turns(Protocol):
    """The turn (hub/turn/pipeline.py's Pipeline): above the protocols, so passed in."""

    async def complete(self, body: dict, opts: Options) -> Any: ...
    async def stream(self, body: dict, opts: Options) -> Any: ...


class Runtime(Protocol):
    """The parts of hub/runtime.py's Runtime a handler may use."""

    config: Config
    router: Router
    dispatcher: Dispatcher
    pipeline: Turns
    store: Store
    client: Any
    tools: ServerTools
    summarizer: Summarizer
    direct_fetch: DirectFetch | None
    reader: PageReader | None

    def metered(self, key: ApiKey | None, bill: SearchBill | None = None) -> MeteredSearch: ...


class RequestReader(Protocol):
    """How routes/protocols.py reads one HTTP request for a Call (its `READER`)."""

    def path_params(self, request: Any) -> Mapping[str, str]: ...
    def query(self, request: Any) -> str: ...
    def headers(self, request: Any) -> Mapping[str, str]: ...
    def options(self, request: Any, body: dict) -> Options: ...
    def caller(self, request: Any) -> tuple[ApiKey | None, SearchBill]: ...


class Call:
    """One HTTP request as a handler sees it: the decoded JSON body (None: the endpoint reads none),
    and the rest read from the request when asked (most handlers need only the options)."""

    __slots__ = ("body", "_request", "_reader")

    def __init__(self, body: dict | None, request: Any, reader: RequestReader) -> None:
        self.body = body
        self._request = request
        self._reader = reader

    @property
    def json(self) -> dict:
        """The body of an endpoint that reads one (Endpoint.body): always a JSON object."""
        body = self.body
        assert body is not None, "this endpoint reads no body (Endpoint.body=False)"
        return body

    @property
    def path_params(self) -> Mapping[str, str]:
        return self._reader.path_params(self._request)

    @property
    def query(self) -> str:
        """The raw query string ("" without one)."""
        return self._reader.query(self._request)

    @property
    def headers(self) -> Mapping[str, str]:
        """Lower-case names; the first of a repeated header."""
        return self._reader.headers(self._request)

    def options(self) -> Options:
        """The turn's options: forcing headers and body field, chain id, trace, key and bill."""
        return self._reader.options(self._request, self.body or {})

    def caller(self) -> tuple[ApiKey | None, SearchBill]:
        """The key the request presented (None on a gateway without keys) and its search bill."""
        return self._reader.caller(self._request)


class Answer(msgspec.Struct):
    """A JSON answer: `body` is encoded (bytes go out as they are)."""

    body: Any
    status: int = 200
    headers: Mapping[str, str] | None = None


@dataclass(slots=True)
class Stream:
    """An SSE answer. `chunks` end with the protocol's end or error event; `interrupted(message)` is
    the error event that ends it when the graceful shutdown cuts it short. `relay`: the chunks are a
    plain relay's frames, written as they come (hub/streams/relay.py), with no encoder between that
    would end them: `broken(exc)` is then the error event a failure of the frames ends with."""

    chunks: AsyncIterator[bytes]
    interrupted: Callable[[str], bytes]
    headers: Mapping[str, str] | None = None
    relay: bool = False
    broken: Callable[[Exception], bytes] | None = None


SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

Handler = Callable[["Runtime", Call], Awaitable["Answer | Stream"]]


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: str
    paths: tuple[str, ...]
    handle: Handler
    what: str  # for the log line of a failure: "<what> failed"
    body: bool = True  # read the body as a JSON object first (a 400/413 in the protocol's shape otherwise)
    watched: bool = True  # a client that leaves cancels the work (and frees its upstream slot)
    direct: bool = False  # on every model call's path: served without Starlette's stack (routes/app.py)


@dataclass(frozen=True, slots=True)
class ProtocolKind:
    """A protocol: its endpoints, and `error(exc, call)`, any failure as its error answer (`call` is
    None when the request never reached a handler: a 401, 404, the graceful shutdown's 503).
    `prefixes`: the paths whose errors the gateway itself answers (a 401, 404, 405, 500, 503) in this
    shape. `models`: its own listing for GET /v1/models, with the header that asks for it."""

    name: str
    endpoints: tuple[Endpoint, ...]
    error: Callable[[Exception, Call | None], Answer]
    prefixes: tuple[str, ...] = ()
    models: Models | None = None


@dataclass(frozen=True, slots=True)
class Models:
    header: str  # a request with this header gets `listing`
    listing: Callable[[Runtime], dict] = field(repr=False)
