"""The cluster view's feed: one informer per kind the scheduler reads, and its freshness.

kopf only watches *unscheduled* pods (see handlers.py). Everything else the plugins read
comes from here, as kube-scheduler's informers feed its cache:

- nodes;
- assigned, non-terminal pods (kube-scheduler's own field selector);
- namespaces (labels, for namespaceSelector) and PodDisruptionBudgets (preemption);
- PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities
  (the volume plugins);
- Services, ReplicationControllers, ReplicaSets and StatefulSets (the selectors of
  PodTopologySpread's default constraints).

The scheduling loop passes ``gate`` before every cycle: it holds the loop until every kind
is listed (WaitForCacheSync) and while any kind is between a failure and its recovery. A
process that was frozen (SIGSTOP, a VM pause) cannot tell what it missed, so a stall of the
event loop longer than ``stall_seconds`` forces every kind to list again and reconcile
before the next node is chosen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from multisched.informer.informer import Handler, Informer, InformerSettings
from multisched.transport import ApiClient, Resource

logger = logging.getLogger(__name__)

NODES = Resource("", "v1", "nodes")
PODS = Resource("", "v1", "pods")
NAMESPACES = Resource("", "v1", "namespaces")
PDBS = Resource("policy", "v1", "poddisruptionbudgets")

#: kube-scheduler's assigned-pod informer: bound, and not finished.
ASSIGNED_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
#: What kopf watches for us: the pods waiting for a scheduler.
UNASSIGNED_PODS = "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True, slots=True)
class Feed:
    """Where one kind's objects go."""

    resource: Resource
    on_upsert: Handler
    on_delete: Handler
    field_selector: str = ""
    #: The kind may not be served (a CRD not installed) or granted (RBAC): read as none
    #: until it is, and scheduling goes on without it.
    optional: bool = False


class Intake:
    def __init__(
        self,
        api_client: ApiClient,
        feeds: list[Feed],
        *,
        settings: InformerSettings | None = None,
        on_relisted: Callable[[], None] | None = None,
        stall_seconds: float = 5.0,
        tick_seconds: float = 0.5,
    ) -> None:
        self.informers = [
            Informer(
                api_client,
                feed.resource,
                feed.on_upsert,
                feed.on_delete,
                field_selector=feed.field_selector,
                settings=settings,
                on_relisted=on_relisted,
                on_outage=self._on_outage,
                optional=feed.optional,
            )
            for feed in feeds
        ]
        self._outage_since: float | None = None
        self._outage_attempts = 0
        self.stall_seconds = stall_seconds
        self.tick_seconds = tick_seconds
        self.stalls = 0
        self._on_relisted = on_relisted
        self._tasks: list[asyncio.Task[None]] = []
        self._last_tick = time.monotonic()
        self._changed = asyncio.Event()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._last_tick = time.monotonic()
        for informer in self.informers:
            self._tasks.append(
                asyncio.create_task(self._guarded(informer), name=f"informer {informer.resource}")
            )
        self._tasks.append(asyncio.create_task(self._tick(), name="intake stall detector"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    async def _guarded(self, informer: Informer) -> None:
        """An informer that crashed (a bug, not an API failure) starts over with a list."""
        while True:
            try:
                await informer.run()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("informer for %s crashed; listing again", informer.resource)
                informer.resync()
                await asyncio.sleep(informer.backoff.next_delay())

    # -- one log line when the API is lost, one when every watch is back -------------------

    def _on_outage(self, informer: Informer, what: str) -> None:
        logger.debug("%s: %s", informer.resource, what)
        if not informer.in_outage:
            self._outage_attempts += informer.outage_failures
        down = [str(i.resource) for i in self.informers if i.in_outage]
        if down and self._outage_since is None:
            self._outage_since = time.monotonic()
            logger.warning("watches failing (%s): %s", ", ".join(down), what)
        elif not down and self._outage_since is not None:
            logger.warning(
                "every watch is back after %.1f s (%d failed attempts)",
                time.monotonic() - self._outage_since,
                self._outage_attempts,
            )
            self._outage_since = None
            self._outage_attempts = 0

    # -- freshness ------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    @property
    def fresh(self) -> bool:
        return all(i.healthy for i in self.informers)

    def resync(self) -> None:
        for informer in self.informers:
            informer.resync()
        self._changed.set()

    async def wait_synced(self) -> None:
        for informer in self.informers:
            await informer.synced.wait()

    async def gate(self) -> None:
        """Return when the view can be trusted to choose a node."""
        self._check_stall()
        while not self.fresh:
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), self.tick_seconds)
            self._check_stall()

    async def _tick(self) -> None:
        while True:
            self._check_stall()
            if self.fresh:
                self._changed.set()
            await asyncio.sleep(self.tick_seconds)

    def _check_stall(self) -> None:
        now = time.monotonic()
        gap, self._last_tick = now - self._last_tick, now
        if gap > self.stall_seconds:
            self.stalls += 1
            logger.warning(
                "the process stood still for %.1f s: listing every kind again before the "
                "next scheduling cycle",
                gap,
            )
            self.resync()
            if self._on_relisted is not None:
                self._on_relisted()
