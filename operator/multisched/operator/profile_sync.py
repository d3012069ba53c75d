"""SchedulerProfiles in, the live configuration and the objects' statuses out.

kopf's ``on.event`` handler brings each object whole; the book (profiles.py) decides what
changed. kopf reports no deletion made while its watch was down, so ``resync`` lists the
objects after any informer relisted (a gap) and periodically, and retires the missing.
Statuses and Warning events are written only while this replica may write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from multisched.meta import now_time
from multisched.scheduler import Scheduler
from multisched.transport import (
    ApiClient,
    ApiError,
    NotSent,
    Resource,
    TransportError,
    list_objects,
)

from .client import KubeClient
from .event_handlers import ClusterEventHandlers, object_identity
from .options import COMPONENT
from .profiles import GROUP, PLURAL, VERSION, ProfileBook
from .revisions import RevisionKeeper

logger = logging.getLogger(__name__)

PROFILES = Resource(GROUP, VERSION, PLURAL)


class ProfileSync:
    def __init__(
        self,
        book: ProfileBook,
        scheduler: Scheduler,
        client: KubeClient,
        api_client: ApiClient,
        cluster: ClusterEventHandlers,
        may_write: Callable[[], bool],
        revisions: RevisionKeeper | None = None,
    ) -> None:
        self.book = book
        self.revisions = revisions
        self.scheduler = scheduler
        self.client = client
        self.api_client = api_client
        self.cluster = cluster
        self.may_write = may_write
        #: Object name -> the (reason, message) last posted as a Warning event.
        self._warned: dict[str, tuple[str, str]] = {}
        self._resync: asyncio.Task[None] | None = None

    async def stop(self) -> None:
        if self._resync is not None:
            self._resync.cancel()
            await asyncio.gather(self._resync, return_exceptions=True)

    async def on_profile(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        name = object_identity(body)[1]
        changed = self.book.forget(body) if deleted else self.book.observe(body)
        if not changed:
            await self.sync_statuses((name,))
            return
        if deleted:
            logger.info("SchedulerProfile %s deleted: its schedulerNames retire", name)
            self._warned.pop(name, None)
        await self._reconfigure()
        await self._report_problems()
        await self.publish()

    async def _reconfigure(self) -> None:
        before = set(self.scheduler.profiles)
        combined = self.book.combine()
        self.scheduler.set_config(combined.config, combined.frameworks)
        served = set(combined.frameworks)
        logger.info("serving schedulerNames: %s", ", ".join(sorted(served)) or "(none)")
        await self.cluster.names_changed(served - before, before - served)

    async def _report_problems(self) -> None:
        """A Warning event per newly failing object (our own object, so kopf-like)."""
        for name, verdict in self.book.combined.verdicts.items():
            if verdict.ready:
                self._warned.pop(name, None)
                continue
            key = (verdict.reason, verdict.message)
            if self._warned.get(name) == key or not self.may_write():
                continue
            self._warned[name] = key
            logger.warning("SchedulerProfile %s: %s: %s", name, verdict.reason, verdict.message)
            try:
                await self.client.post_event(
                    self.book.involved(name),
                    "default",
                    "Warning",
                    verdict.reason,
                    verdict.message,
                    COMPONENT,
                )
            except Exception as exc:
                logger.warning("could not post an event for SchedulerProfile %s: %s", name, exc)

    async def publish(self) -> None:
        """Revisions of the specs newly in force, then every status that differs."""
        await self.record_revisions()
        await self.sync_statuses(self.book.objects)

    async def record_revisions(self) -> None:
        """A ControllerRevision for each spec newly put in force (revisions.py). A failure
        (RBAC, an outage) costs the history an entry, never the scheduling: it is logged
        and tried again with the next change or resync."""
        if self.revisions is None or not self.may_write():
            return
        for obj in self.book.unrecorded():
            try:
                obj.revision = await self.revisions.record(
                    obj.name, obj.uid, obj.generation, obj.applied_spec, obj.annotations
                )
            except (ApiError, NotSent) as exc:
                logger.warning(
                    "could not record a revision of SchedulerProfile %s: %s", obj.name, exc
                )
                continue
            obj.revision_generation = obj.generation

    async def sync_statuses(self, names: Iterable[str]) -> None:
        if not self.may_write():
            return
        for name in list(names):
            desired = self.book.desired_status(name, now_time)
            if desired is None:
                continue
            try:
                await self.client.patch_cluster_status(GROUP, VERSION, PLURAL, name, desired)
            except ApiError as exc:
                if exc.status != 404:
                    logger.warning("could not update SchedulerProfile %s status: %s", name, exc)
                continue
            obj = self.book.objects.get(name)
            if obj is not None:
                obj.status = desired  # until the watch shows it, do not write it again

    # -- SchedulerProfiles gone while no watch was looking ----------------------------------

    def resync(self) -> None:
        """List SchedulerProfiles and retire those gone: kopf lists again after a gap but
        reports no deletion it missed. Called after any informer relisted, and periodically.
        Pods of a newly served name that could not be listed then are listed again."""
        if self._resync is None or self._resync.done():
            self._resync = asyncio.ensure_future(self._resync_once())

    async def _resync_once(self) -> None:
        await self._list_and_retire()
        await self.cluster.claim_unclaimed()

    async def _list_and_retire(self) -> None:
        # Only what was known before the LIST can be missing from it for being deleted;
        # an object kopf brings in meanwhile is newer than the list.
        known = {name: obj.uid for name, obj in self.book.objects.items()}
        try:
            listed = await list_objects(self.api_client, PROFILES)
        except (TimeoutError, ApiError, TransportError, OSError) as exc:
            logger.info("could not list SchedulerProfiles to reconcile them: %s", exc)
            return
        except (ValueError, RecursionError) as exc:
            logger.warning("could not decode the SchedulerProfile list: %s", str(exc)[:200])
            return
        present = {str((o.get("metadata") or {}).get("name") or "") for o in listed.items}
        for name, uid in known.items():
            if name not in present:
                await self.on_profile({"metadata": {"name": name, "uid": uid}}, deleted=True)
