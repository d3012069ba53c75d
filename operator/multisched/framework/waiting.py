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

    def preempt(self, plugin: str, message: str) -> bool:
        """Preemption took the pod's room (upstream ``Preempt``, v1.36): unlike ``reject`` it
        ends with an error, so the pod backs off and is retried rather than parked as
        unschedulable. False when its wait had already ended (the caller deletes it)."""
        if self._result.done():
            return False
        self._finish(Status(Code.ERROR, message, plugin=plugin))
        return True

    def _finish(self, status: Status | None) -> None:
        for timer in self._timers:
            timer.cancel()
        self._result.set_result(status)

    async def wait(self) -> Status | None:
        return await self._result


class PodInPreBind:
    """A pod whose PreBind plugins are running (v1.36, upstream ``PodInPreBind``):
    preemption may cancel it there, before it is bound, instead of deleting it."""

    __slots__ = ("_task", "canceled", "finished", "message")

    def __init__(self, task: asyncio.Future[Status | None]) -> None:
        self._task = task
        self.canceled = False
        self.finished = False
        self.message = ""

    def cancel_pod(self, message: str) -> bool:
        """Stop its PreBind; False when PreBind is over (the pod is on its way to Bind)."""
        if self.finished:
            return False
        if not self.canceled:
            self.canceled, self.message = True, message
            self._task.cancel()
        return True

    def mark_prebound(self) -> bool:
        """PreBind ended: from now on the pod cannot be cancelled. False if it was."""
        if self.canceled:
            return False
        self.finished = True
        return True


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
