"""``/healthz``, ``/readyz`` and ``/metrics`` on one small aiohttp server.

- ``/healthz``: the process and its event loop answer.
- ``/readyz``: the caches are synced (pods, nodes, namespaces and PDBs listed). A standby
  replica is ready too: it only waits for the lease, and failing readiness would take it
  out of Services for nothing.
- ``/metrics``: Prometheus text format.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

logger = logging.getLogger(__name__)


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        ready: Callable[[], bool],
        metrics: Callable[[], bytes],
    ) -> None:
        self.host = host
        self.port = port
        self._ready = ready
        self._metrics = metrics
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics_handler)
        return app

    async def start(self) -> None:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        logger.info("health and metrics on http://%s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="caches not synced yet")

    async def _metrics_handler(self, request: web.Request) -> web.Response:
        body = self._metrics()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
