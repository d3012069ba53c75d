"""Pods held at Permit: each Wait-ing plugin must allow, one reject or a timeout ends it."""

from __future__ import annotations

import asyncio

from multisched.cache import PodInfo

from .status import Code, Status


class WaitingPod:
    def __init__(self, pod: PodInfo, timeouts: dict[str, float]) -> None:
        self.pod = pod
        self._pending = dict(timeouts)
        self._result: asyncio.Future[Status | None] = asyncio.get_running_loop().create_future()
        self._timers = [
            asyncio.get_running_loop().call_later(
                seconds,
                self.reject,
                name,
                f"rejected due to timeout after waiting {seconds}s at plugin {name}",
            )
            for name, seconds in timeouts.items()
        ]

    @property
    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        self._pending.pop(plugin, None)
        if not self._pending and not self._result.done():
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        if not self._result.done():
            self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def _finish(self, status: Status | None) -> None:
        for timer in self._timers:
            timer.cancel()
        self._result.set_result(status)

    async def wait(self) -> Status | None:
        return await self._result
