"""PodGroup and ElasticQuota status, kept as scheduler-plugins' controller keeps them
(``pkg/controllers/podgroup_controller.go``, ``elasticquota_controller.go``, v0.28).

scheduler-plugins runs these reconcilers in a binary of their own; multisched runs them
in the leader, so a cluster that moves over needs only multisched (``--group-status=false``
when scheduler-plugins' controller still runs). A change to a group's pods, a PodGroup or
an ElasticQuota marks what it affects; the marked objects are reconciled in a batch: their
pods listed from the API a page at a time and summed (the controller counts finished pods
too, which the scheduler's view drops) and the status patched when it differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from multisched.cache import ELASTIC_QUOTA, POD_GROUP, POD_GROUP_LABEL, GroupStore, Resource
from multisched.cache.resources import format_amount
from multisched.meta import now_time
from multisched.transport import MERGE_PATCH, Api, ApiError, NotSent

logger = logging.getLogger(__name__)

API = "/apis/scheduling.x-k8s.io/v1alpha1"
#: Pods per page of a status read: a page is summed, then let go.
STATUS_PAGE_SIZE = 500
PENDING, SCHEDULING, RUNNING, FAILED, FINISHED = (
    "Pending",
    "Scheduling",
    "Running",
    "Failed",
    "Finished",
)


# -- what the status should be ------------------------------------------------------------


@dataclass(slots=True)
class GroupPods:
    """What the PodGroup reconcile reads of a group's pods, summed a page at a time."""

    listed: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    #: The first pod's owners (the controller reads ``pods[0]``).
    occupied_by: str = ""

    def add(self, pods: Iterable[Mapping[str, Any]]) -> None:
        for pod in pods:
            if not self.listed:
                self.occupied_by = _occupied_by(pod)
            self.listed += 1
            phase = (pod.get("status") or {}).get("phase")
            self.running += phase == "Running"
            self.succeeded += phase == "Succeeded"
            self.failed += phase == "Failed"


def pod_group_status(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One step of scheduler-plugins' PodGroup reconcile: the status to patch in."""
    counted = GroupPods()
    counted.add(pods)
    return group_status(group, counted)


def group_status(group: Mapping[str, Any], pods: GroupPods) -> dict[str, Any]:
    """``pod_group_status`` from the pods' counts."""
    spec, status = group.get("spec") or {}, dict(group.get("status") or {})
    min_member = int(spec.get("minMember") or 0)
    phase = status.get("phase") or ""
    if phase in (FINISHED, FAILED):
        return status
    if phase == "":
        status["phase"] = PENDING
    elif phase == PENDING:
        if pods.listed >= min_member:
            status["phase"] = SCHEDULING
            if pods.occupied_by:
                status["occupiedBy"] = pods.occupied_by
    else:
        running, succeeded, failed = pods.running, pods.succeeded, pods.failed
        status.update(running=running, succeeded=succeeded, failed=failed)
        if pods.listed < min_member:
            status["phase"] = PENDING
            return status
        if succeeded + running < min_member:
            status["phase"] = SCHEDULING
        if succeeded + running >= min_member:
            status["phase"] = RUNNING
        if failed and failed + running + succeeded >= min_member:
            status["phase"] = FAILED
        if succeeded >= min_member:
            status["phase"] = FINISHED
    if status.get("phase") in (SCHEDULING, RUNNING) and not status.get("scheduleStartTime"):
        status["scheduleStartTime"] = now_time()
    return status


def _occupied_by(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    refs = sorted(
        f"{meta.get('namespace')}/{o.get('name')}" for o in meta.get("ownerReferences") or ()
    )
    return ",".join(refs)


def elastic_quota_used(
    quota: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """``status.used``: the requests of the namespace's Running pods, with every resource
    of min and max present (at least 0), as the controller computes it (``quota.Add``
    keeps the pods' other resources too)."""
    used = Resource()
    add_running(used, pods)
    return quota_used(quota, used)


def add_running(used: Resource, pods: Iterable[Mapping[str, Any]]) -> None:
    """Adds the requests of the Running ones of ``pods`` to ``used``."""
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Running":
            used.add(_pod_request(pod))


def quota_used(quota: Mapping[str, Any], used: Resource) -> dict[str, str]:
    """``elastic_quota_used`` from the Running pods' summed requests."""
    spec = quota.get("spec") or {}
    names = sorted({*(spec.get("min") or {}), *(spec.get("max") or {}), *used.names()})
    return {name: format_amount(name, used.get(name)) for name in names}


def _pod_request(pod: Mapping[str, Any]) -> Resource:
    """Containers summed, then the largest init container as a floor. The controller means
    to add the overhead too, but drops the sum it computes (v0.28.9): so is it here."""
    spec = pod.get("spec") or {}
    total = Resource()
    for container in spec.get("containers") or ():
        total.add(Resource.from_list((container.get("resources") or {}).get("requests")))
    for container in spec.get("initContainers") or ():
        total.set_max(Resource.from_list((container.get("resources") or {}).get("requests")))
    return total


# -- the reconciler ---------------------------------------------------------------------


class GroupStatusController:
    def __init__(
        self,
        api: Api,
        groups: GroupStore,
        may_write: Callable[[], bool],
        interval: float = 1.0,
    ) -> None:
        self.api = api
        self.groups = groups
        self.may_write = may_write
        self.interval = interval
        self._dirty_groups: set[tuple[str, str]] = set()
        self._dirty_namespaces: set[str] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_error = ""

    # -- what changed ---------------------------------------------------------------------

    def pod_changed(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
        if group:
            self._mark_group(namespace, group)
        elif "labels" not in meta:  # a tombstone: which group it was in is unknown
            for ns, name in self._groups_in(namespace):
                self._mark_group(ns, name)
        if self.groups.quota_for(namespace) is not None:
            self._dirty_namespaces.add(namespace)
            self._wake.set()

    def object_changed(self, kind: str, raw: Mapping[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if kind == POD_GROUP:
            self._mark_group(namespace, name)
        elif kind == ELASTIC_QUOTA:
            self._dirty_namespaces.add(namespace)
            self._wake.set()

    def mark_all(self) -> None:
        """After a relist or on taking the lead: everything may have moved meanwhile."""
        for raw in self.groups.all(POD_GROUP):
            self.object_changed(POD_GROUP, raw)
        for raw in self.groups.quotas():
            self.object_changed(ELASTIC_QUOTA, raw)

    def _mark_group(self, namespace: str, name: str) -> None:
        if self.groups.pod_group(namespace, name) is not None:
            self._dirty_groups.add((namespace, name))
            self._wake.set()

    def _groups_in(self, namespace: str) -> list[tuple[str, str]]:
        out = []
        for group in self.groups.all(POD_GROUP):
            meta = group.get("metadata") or {}
            if (meta.get("namespace") or "default") == namespace:
                out.append((namespace, str(meta.get("name"))))
        return out

    # -- the loop -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="multisched group status")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.interval)  # batch the burst of a gang's bindings
            self._wake.clear()
            if not self.may_write():
                continue  # the leader keeps them; marks wait for our turn (mark_all)
            await self.reconcile()

    async def reconcile(self) -> None:
        groups, self._dirty_groups = self._dirty_groups, set()
        namespaces, self._dirty_namespaces = self._dirty_namespaces, set()
        for namespace, name in sorted(groups):
            await self._attempt(self._reconcile_group(namespace, name), ("group", namespace, name))
        for namespace in sorted(namespaces):
            await self._attempt(self._reconcile_quota(namespace), ("quota", namespace, ""))

    async def _attempt(self, work: Any, key: tuple[str, str, str]) -> None:
        try:
            await work
        except NotSent:
            return
        except Exception as exc:
            kind, namespace, name = key
            if kind == "group":
                self._dirty_groups.add((namespace, name))
            else:
                self._dirty_namespaces.add(namespace)
            self._wake.set()  # try again after the interval
            if str(exc) != self._last_error:
                self._last_error = str(exc)
                logger.warning("cannot update the %s status in %s: %s", kind, namespace, exc)

    async def _reconcile_group(self, namespace: str, name: str) -> None:
        group = self.groups.pod_group(namespace, name)
        if group is None:
            return
        selector = f"{POD_GROUP_LABEL}={name}"
        pods = GroupPods()
        async for page in self._pod_pages(namespace, [("labelSelector", selector)]):
            pods.add(page)
        status = group_status(group, pods)
        if status != (group.get("status") or {}):
            await self._patch("podgroups", namespace, name, status)

    async def _reconcile_quota(self, namespace: str) -> None:
        quota = self.groups.quota_for(namespace)
        if quota is None:
            return
        running = Resource()
        async for page in self._pod_pages(namespace, [("fieldSelector", "status.phase=Running")]):
            add_running(running, page)
        used = quota_used(quota, running)
        if used != ((quota.get("status") or {}).get("used") or {}):
            name = str((quota.get("metadata") or {}).get("name"))
            await self._patch("elasticquotas", namespace, name, {"used": used})

    async def _pod_pages(
        self, namespace: str, query: list[tuple[str, str]]
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The namespace's selected pods, a page at a time (each is summed and let go).

        No ``resourceVersion=0``, though the controller reads an informer's cache: the
        watch cache ignores ``limit`` for it (apiserver ``cacher.go`` ``computeListLimit``)
        and answers every pod at once. A paginated list without one is a consistent read
        that v1.31+ API servers answer from the watch cache (ConsistentListFromCache; its
        continue pages from cache snapshots, ListFromCacheSnapshot, v1.34+)."""
        path = f"/api/v1/namespaces/{quote(namespace)}/pods"
        token = ""
        while True:
            paging = [("limit", str(STATUS_PAGE_SIZE)), *([("continue", token)] if token else [])]
            page = await self.api.request("GET", path, query=[*query, *paging], kind="status reads")
            yield [item for item in page.get("items") or () if isinstance(item, dict)]
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return

    async def _patch(self, plural: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        path = f"{API}/namespaces/{quote(namespace)}/{plural}/{quote(name)}/status"
        try:
            await self.api.request(
                "PATCH",
                path,
                {"status": status},
                content_type=MERGE_PATCH,
                guard=self.may_write,
                kind="status patches",
            )
        except ApiError as exc:
            if exc.status != 404:  # deleted meanwhile
                raise
