"""WaitForHandlersSync for the pending pods: no scheduling cycle before kopf has handed the
handler every pod of its first listing of unscheduled pods.

kube-scheduler v1.28 waits for its informers' caches (WaitForCacheSync) and then for every
event handler to have taken in its informer's initial list (WaitForHandlersSync,
``cmd/kube-scheduler/app/server.go``) before its first cycle. After a restart its queue holds
the whole backlog, and the pod of highest priority goes first. A scheduler that starts while
the listing is still coming in binds whatever was listed first (by name), and a pod of higher
priority listed later may then find the room taken and preempt what was just bound.

kopf hands its listing over as events of type None and says nothing when it is over. So the
runtime lists the unscheduled pods itself, metadata only, and waits until the handler has
seen each of them (any event type). A pod that stops being pending meanwhile (bound by
another scheduler, deleted) may never reach the handler: when no listed pod has come for a
while, the list is taken again and what left it is no longer waited for. kopf hands over
every pod that is still pending, whichever of the two lists came first, so the wait ends; a
deadline still bounds it, should kopf never deliver.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from multisched.meta import object_key
from multisched.transport import (
    JSON,
    METADATA_ONLY,
    ApiClient,
    ApiError,
    TransportError,
    list_pages,
)

from .intake import PODS, UNASSIGNED_PODS

logger = logging.getLogger(__name__)

#: No pod of the first listing for this long: list the pending pods again, and stop waiting
#: for those no longer pending. Also how long a failed list waits before the next.
QUIET_SECONDS = 1.0
#: Schedule anyway after this long (logged): kopf delivers every pending pod, but a stuck
#: watch must not hold the scheduler off for good.
MAX_WAIT_SECONDS = 60.0
#: From the API server's watch cache, as the reflector's first list: a field-selected list
#: from etcd reads every pod of the cluster, beside the informers' own start-up listing.
ANY_RECENT = "0"
NOT_ACCEPTABLE = 406

#: The pending pods' keys (namespace/name), as one list of them reads now.
PendingLister = Callable[[], Awaitable[set[str]]]


def pending_lister(api_client: ApiClient) -> PendingLister:
    """The unscheduled pods kopf watches, listed as their metadata only (whole, from a server
    that does not offer that: 406 Not Acceptable)."""
    accept = METADATA_ONLY

    async def pending() -> set[str]:
        nonlocal accept
        keys: set[str] = set()
        try:
            async for page in list_pages(
                api_client,
                PODS,
                field_selector=UNASSIGNED_PODS,
                accept=accept,
                resource_version=ANY_RECENT,
            ):
                keys.update(object_key(item) for item in page.items)
        except ApiError as exc:
            if exc.status != NOT_ACCEPTABLE or accept == JSON:
                raise
            accept = JSON
            return await pending()
        return keys

    return pending


class HandlersSync:
    """``seen`` is called by the pending-pod handler for every event while ``waiting``;
    ``run`` ends once each pod pending at start-up was seen (or is no longer pending)."""

    __slots__ = ("_expected", "_lister", "_progress", "_seen", "_synced", "listed", "waiting")

    def __init__(self, lister: PendingLister) -> None:
        #: The handler reports what it is handed while this holds (one check per event).
        self.waiting = True
        self._lister = lister
        #: What the handler saw before the first list was in.
        self._seen: set[str] = set()
        #: The pods still waited for, once listed.
        self._expected: set[str] | None = None
        #: The pending pods of the first listing (keys), for the queue's order.
        self.listed: frozenset[str] = frozenset()
        self._progress = asyncio.Event()
        self._synced = asyncio.Event()

    def seen(self, body: Mapping[str, Any]) -> None:
        key = object_key(body)
        if self._expected is None:
            self._seen.add(key)
        elif key in self._expected:
            self._expected.discard(key)
            self._progress.set()

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        started = time.monotonic()
        deadline = started + MAX_WAIT_SECONDS
        try:
            expected = await self._list(deadline)
            if expected is None:
                return
            listed = len(expected)
            self.listed = frozenset(expected)
            expected -= self._seen
            self._seen = set()
            self._expected = expected
            while expected:
                self._progress.clear()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    logger.warning(
                        "scheduling starts without %d of the %d pending pods, which kopf has "
                        "not handed over in %.0f s; a pod of lower priority may go before them",
                        len(expected),
                        listed,
                        MAX_WAIT_SECONDS,
                    )
                    return
                try:
                    await asyncio.wait_for(self._progress.wait(), min(QUIET_SECONDS, remaining))
                except TimeoutError:
                    still = await self._list(deadline)
                    if still is None:
                        return
                    expected &= still
            if listed:
                logger.info(
                    "kopf handed over all %d pending pods of its first listing (%.1f s): "
                    "scheduling starts",
                    listed,
                    time.monotonic() - started,
                )
        finally:
            self.waiting = False
            self._seen = set()
            self._expected = None
            self._synced.set()

    async def _list(self, deadline: float) -> set[str] | None:
        """The pending pods now; None if the API did not answer before ``deadline``."""
        while True:
            try:
                return await self._lister()
            except (ApiError, TransportError, OSError, TimeoutError, ValueError) as exc:
                if time.monotonic() + QUIET_SECONDS >= deadline:
                    logger.warning(
                        "cannot list the pending pods (%s): scheduling starts without "
                        "waiting for kopf to hand them over",
                        exc,
                    )
                    return None
                await asyncio.sleep(QUIET_SECONDS)
