"""``/healthz``, ``/livez`` and ``/readyz`` on one small plain-HTTP server: the
probes, open to anyone, as kube-scheduler leaves them open. ``/metrics`` and the debug
handlers are on the secure port (secure.py).

- ``/healthz``, ``/livez``: the process and its event loop answer.
- ``/readyz``: the caches are synced (pods, nodes, namespaces and PDBs listed). A standby
  replica is ready too: it only waits for the lease, and failing readiness would take it
  out of Services for nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from multisched.transport.serving import HttpServer, Reply, Request

logger = logging.getLogger(__name__)


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        ready: Callable[[], bool],
    ) -> None:
        self._ready = ready
        self._server = HttpServer(
            host,
            port,
            {
                ("GET", "/healthz"): self._healthz,
                ("GET", "/livez"): self._healthz,
                ("GET", "/readyz"): self._readyz,
            },
        )

    @property
    def port(self) -> int:
        """The port bound once started (0 asks for any free one)."""
        return self._server.port

    async def start(self) -> None:
        await self._server.start()
        logger.info("health probes on http://%s:%d", self._server.host, self._server.port)

    async def stop(self) -> None:
        await self._server.stop()

    async def _healthz(self, request: Request) -> Reply:
        return Reply(body="ok")

    async def _readyz(self, request: Request) -> Reply:
        if self._ready():
            return Reply(body="ok")
        return Reply(503, "caches not synced yet")
