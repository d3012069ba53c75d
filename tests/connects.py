"""Loopback API servers for the transport tests (``Serve``, the ``serve`` fixture's type),
and a connection pool whose first connection is slow to open (the send-order tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client as k8s

from multisched.transport.internals import session_of

#: Serves an app on loopback; returns a client of it, as of an API server.
Serve = Callable[[web.Application], Awaitable[k8s.ApiClient]]


def slow_first_connect(client: k8s.ApiClient, delay: float = 0.3) -> None:
    """The client's first connection takes ``delay`` to open (a TLS handshake to a busy API
    server); the ones after it open at once."""
    connector: Any = session_of(client).connector
    connect = connector.connect
    calls = 0

    async def slow_first(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(delay)
        return await connect(*args, **kwargs)

    connector.connect = slow_first
