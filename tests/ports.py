"""Loopback ports for the processes and servers the tests start."""

from __future__ import annotations

import asyncio
import socket

_GIVEN: set[int] = set()


def free_port() -> int:
    """A free loopback port, never one this process was given before: the kernel may hand
    the same port to two binds in a row, and two servers then collide (make e2e failed once
    with kube-apiserver's "address already in use" on etcd's port)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


async def closed_port() -> int:
    """A loopback port nothing listens on any more (an API server that is down)."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port
