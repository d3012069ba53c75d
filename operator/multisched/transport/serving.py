"""A small HTTP(S) server for the operator's own endpoints (the probes, the secure port), on
aiohttp.web, so that nothing above transport imports aiohttp.

- ``routes``: (method, path) -> ``Handler``; a GET route answers HEAD too, as aiohttp's.
- ``Request``: what a handler reads (method, path, query, headers, peer, the body up to
  ``max_body`` bytes); ``Reply``: what it answers (status, body, content type, headers).
- ``guard``: when given, every request goes to it first, routed or not (``unrouted`` then
  says 404 or 405), so that a path no handler serves is answered before any other check;
  it calls the handler or answers instead.
- ``ssl_context``: HTTPS with it (its certificate may be swapped while serving).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

#: aiohttp's default request body limit (1 MiB); a larger body is answered 413.
MAX_BODY = 1024**2


class Request:
    """One request as a handler sees it (a view of aiohttp's)."""

    __slots__ = ("_request",)

    def __init__(self, request: web.Request) -> None:
        self._request = request

    @property
    def method(self) -> str:
        return self._request.method

    @property
    def path(self) -> str:
        """The decoded path, without the query."""
        return self._request.path

    @property
    def query(self) -> Mapping[str, str]:
        """The query's parameters (the first value of a repeated one)."""
        return self._request.query

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers; names are case-insensitive."""
        return self._request.headers

    @property
    def peer(self) -> str | None:
        """The caller's address."""
        return self._request.remote

    @property
    def unrouted(self) -> tuple[int, str] | None:
        """(404, "Not Found") or (405, "Method Not Allowed") when no route serves the
        path or its method; None when one does."""
        refused = self._request.match_info.http_exception
        return None if refused is None else (refused.status, refused.reason)

    async def read(self) -> bytes:
        """The body, up to the server's ``max_body`` bytes (beyond: a 413 answer)."""
        return await self._request.read()


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer. A ``str`` body is sent as UTF-8 with ``content_type`` (text/plain when
    None) and its charset; ``bytes`` as they are, typed by ``content_type`` or by a
    Content-Type in ``headers``."""

    status: int = 200
    body: str | bytes = b""
    content_type: str | None = None
    headers: Mapping[str, str] | None = None


Handler = Callable[[Request], Awaitable[Reply]]
#: Sees every request first, with the handler of its route (None when unrouted).
Guard = Callable[[Request, Handler | None], Awaitable[Reply]]
_Served = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _response(reply: Reply) -> web.Response:
    if isinstance(reply.body, str):
        return web.Response(
            status=reply.status,
            text=reply.body,
            content_type=reply.content_type or "text/plain",
            headers=reply.headers,
        )
    return web.Response(
        status=reply.status,
        body=reply.body,
        content_type=reply.content_type,
        headers=reply.headers,
    )


class HttpServer:
    __slots__ = (
        "_handlers",
        "_runner",
        "guard",
        "host",
        "max_body",
        "port",
        "routes",
        "ssl_context",
    )

    def __init__(
        self,
        host: str,
        port: int,
        routes: Mapping[tuple[str, str], Handler],
        *,
        ssl_context: ssl.SSLContext | None = None,
        guard: Guard | None = None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.host = host
        #: The port bound once started (0 asks for any free one).
        self.port = port
        self.routes = dict(routes)
        self.ssl_context = ssl_context
        self.guard = guard
        self.max_body = max_body
        self._runner: web.AppRunner | None = None
        #: aiohttp's handler of each route -> ours, for the guard.
        self._handlers: dict[_Served, Handler] = {}

    def _application(self) -> web.Application:
        middlewares = [self._guarded] if self.guard is not None else []
        app = web.Application(middlewares=middlewares, client_max_size=self.max_body)
        self._handlers.clear()
        for (method, path), handler in self.routes.items():
            serve = _adapt(handler)
            self._handlers[serve] = handler
            if method == "GET":
                app.router.add_get(path, serve)
            else:
                app.router.add_route(method, path, serve)
        return app

    @web.middleware
    async def _guarded(self, request: web.Request, handler: _Served) -> web.StreamResponse:
        if self.guard is None:
            return await handler(request)
        match = request.match_info
        routed = None if match.http_exception else self._handlers.get(match.handler)
        return _response(await self.guard(Request(request), routed))

    async def start(self) -> None:
        runner = web.AppRunner(self._application(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        self._runner = runner
        if self.port == 0:  # tests ask for any free port
            self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _adapt(handler: Handler) -> _Served:
    async def serve(request: web.Request) -> web.StreamResponse:
        return _response(await handler(Request(request)))

    return serve
