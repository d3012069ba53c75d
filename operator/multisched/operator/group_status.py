"""PodGroup and ElasticQuota status, kept as scheduler-plugins' controller keeps them
(``pkg/controllers/podgroup_controller.go``, ``elasticquota_controller.go``, v0.28).

scheduler-plugins runs these reconcilers in a binary of their own; multisched runs them
in the leader, so a cluster that moves over needs only multisched (``--group-status=false``
when scheduler-plugins' controller still runs). A change to a group's pods, a PodGroup or
an ElasticQuota marks what it affects; the marked objects are reconciled in a batch: their
pods listed from the API (the controller counts finished pods too, which the scheduler's
view drops) and the status patched when it differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from multisched.cache import ELASTIC_QUOTA, POD_GROUP, POD_GROUP_LABEL, GroupStore, Resource
from multisched.cache.resources import format_amount
from multisched.transport import ApiError

from .client import MERGE_PATCH, Api, NotLeader

logger = logging.getLogger(__name__)

API = "/apis/scheduling.x-k8s.io/v1alpha1"
PENDING, SCHEDULING, RUNNING, FAILED, FINISHED = (
    "Pending",
    "Scheduling",
    "Running",
    "Failed",
    "Finished",
)


# -- what the status should be ------------------------------------------------------------


def pod_group_status(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One step of scheduler-plugins' PodGroup reconcile: the status to patch in."""
    spec, status = group.get("spec") or {}, dict(group.get("status") or {})
    min_member = int(spec.get("minMember") or 0)
    phase = status.get("phase") or ""
    if phase in (FINISHED, FAILED):
        return status
    if phase == "":
        status["phase"] = PENDING
    elif phase == PENDING:
        if len(pods) >= min_member:
            status["phase"] = SCHEDULING
            occupied = _occupied_by(pods[0]) if pods else ""
            if occupied:
                status["occupiedBy"] = occupied
    else:
        running, succeeded, failed = _phase_counts(pods)
        status.update(running=running, succeeded=succeeded, failed=failed)
        if len(pods) < min_member:
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
        status["scheduleStartTime"] = _now()
    return status


def _phase_counts(pods: Iterable[Mapping[str, Any]]) -> tuple[int, int, int]:
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    return phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")


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
    spec = quota.get("spec") or {}
    used = Resource()
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Running":
            used.add(_pod_request(pod))
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


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        except NotLeader:
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
        pods = await self._pods(namespace, [("labelSelector", selector)])
        status = pod_group_status(group, pods)
        if status != (group.get("status") or {}):
            await self._patch("podgroups", namespace, name, status)

    async def _reconcile_quota(self, namespace: str) -> None:
        quota = self.groups.quota_for(namespace)
        if quota is None:
            return
        pods = await self._pods(namespace, [("fieldSelector", "status.phase=Running")])
        used = elastic_quota_used(quota, pods)
        if used != ((quota.get("status") or {}).get("used") or {}):
            name = str((quota.get("metadata") or {}).get("name"))
            await self._patch("elasticquotas", namespace, name, {"used": used})

    async def _pods(self, namespace: str, query: list[tuple[str, str]]) -> list[dict[str, Any]]:
        page = await self.api.request(
            "GET", f"/api/v1/namespaces/{quote(namespace)}/pods", query=query, kind="status reads"
        )
        return list(page.get("items") or [])

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
