"""One watch on a run's pods: when each was first seen, first seen bound, and first seen
reported unschedulable (its PodScheduled condition False)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import aiohttp

from .kube import ApiError, Kube


class BindingWatch:
    """Times are this process's monotonic clock at the moment an event is read.

    Creation and binding are observed on the same stream, so the API server's and the
    watch's delays appear on both sides of a creation-to-bound latency.
    """

    def __init__(self, kube: Kube, namespace: str, label_selector: str) -> None:
        self._kube = kube
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._selector = label_selector
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.unschedulable: dict[str, float] = {}
        #: What ``wait_for`` waits on: ``bound`` or ``unschedulable`` reaching a count.
        self._goal: dict[str, float] = self.bound
        self._target = 0
        self._reached = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> BindingWatch:
        rv = await self._relist()
        self._task = asyncio.create_task(self._run(rv))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def first_bound(self) -> float | None:
        return min(self.bound.values(), default=None)

    @property
    def last_bound(self) -> float | None:
        return max(self.bound.values(), default=None)

    async def wait_bound(self, count: int, timeout: float) -> bool:
        """True once ``count`` pods are bound; False after ``timeout`` seconds."""
        return await self.wait_for(self.bound, count, timeout)

    async def wait_for(self, goal: dict[str, float], count: int, timeout: float) -> bool:
        """True once ``goal`` (``bound`` or ``unschedulable``) holds ``count`` pods; False
        after ``timeout`` seconds."""
        self._goal, self._target = goal, count
        if len(goal) >= count:
            return True
        self._reached.clear()
        try:
            await asyncio.wait_for(self._reached.wait(), timeout)
        except TimeoutError:
            return len(goal) >= count
        return True

    def _see(self, kind: str, pod: dict[str, Any], now: float) -> None:
        name = pod["metadata"]["name"]
        if kind == "ADDED":
            self.added.setdefault(name, now)
        if (pod.get("spec") or {}).get("nodeName") and name not in self.bound:
            self.bound[name] = now
        elif name not in self.unschedulable and _reported_unschedulable(pod):
            self.unschedulable[name] = now
        if self._target and len(self._goal) >= self._target:
            self._reached.set()

    async def _relist(self) -> str:
        items, rv = await self._kube.list(self._path, self._selector)
        now = time.monotonic()
        for pod in items:
            self._see("ADDED", pod, now)
        return rv

    async def _run(self, rv: str) -> None:
        while True:
            try:
                rv = await self._follow(rv)
            except ApiError as exc:
                if exc.status != 410:
                    raise
                rv = await self._relist()
            except aiohttp.ClientError:
                await asyncio.sleep(0.5)

    async def _follow(self, rv: str) -> str:
        """Reads one watch stream; the resourceVersion to resume from when it ends."""
        stream = self._kube.watch(self._path, self._selector, rv)
        async with contextlib.aclosing(stream) as lines:
            async for line in lines:
                now = time.monotonic()
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":  # 410 Gone: start over from a list
                    return await self._relist()
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if event.get("type") != "BOOKMARK":
                    self._see(event["type"], obj, now)
        return rv


def _reported_unschedulable(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions)
