"""The transport tests' loopback API server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from connects import Serve


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serves an app on loopback; a client of it, as of an API server."""
    servers: list[TestServer] = []
    clients: list[k8s.ApiClient] = []

    async def start(app: web.Application) -> k8s.ApiClient:
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        client = k8s.ApiClient(k8s.Configuration(host=str(server.make_url("")).rstrip("/")))
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()
    for server in servers:
        await server.close()
