"""``/healthz``, ``/livez`` and ``/readyz`` on one small plain-HTTP aiohttp server: the
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

from aiohttp import web

logger = logging.getLogger(__name__)


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        ready: Callable[[], bool],
    ) -> None:
        self.host = host
        self.port = port
        self._ready = ready
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    async def start(self) -> None:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        logger.info("health probes on http://%s:%d", self.host, self.port)

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
