"""Pods held at Permit: each Wait-ing plugin must allow, one reject or a timeout ends it."""

from __future__ import annotations

import asyncio

from multisched.cache import PodInfo

from .status import Code, Status


class WaitingPod:
    def __init__(self, pod: PodInfo, timeouts: dict[str, float]) -> None:
        self.pod = pod
        self._timeouts = dict(timeouts)
        self._since = asyncio.get_running_loop().time()
        self._pending = dict(timeouts)
        self._result: asyncio.Future[Status | None] = asyncio.get_running_loop().create_future()
        self._timers = [
            asyncio.get_running_loop().call_later(
                seconds,
                self.reject,
                name,
                _timeout_message(name, seconds),
            )
            for name, seconds in timeouts.items()
        ]

    @property
    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def seconds_left(self) -> float:
        """Until the first pending plugin's timeout rejects the pod."""
        if not self._pending:
            return 0.0
        waited = asyncio.get_running_loop().time() - self._since
        return max(0.0, min(self._pending.values()) - waited)

    def expire(self) -> None:
        """Its time is up now (simulate's clock jumps): rejected as the timer would."""
        if self._pending:
            name = min(self._pending, key=lambda n: self._pending[n])
            self.reject(name, _timeout_message(name, self._timeouts[name]))

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


def _timeout_message(plugin: str, seconds: float) -> str:
    """Upstream's wording; Go prints a whole-second duration as ``60s`` (``15m0s`` past a
    minute)."""
    whole = int(seconds)
    if whole == seconds:
        minutes, rest = divmod(whole, 60)
        text = f"{minutes}m{rest}s" if minutes else f"{rest}s"
    else:
        text = f"{seconds:g}s"
    return f"rejected due to timeout after waiting {text} at plugin {plugin}"
