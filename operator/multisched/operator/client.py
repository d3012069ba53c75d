"""The scheduler's writes to the API server: bindings, preemption, storage updates, events
and status patches, in the scheduler's terms, on transport's ``Api``.

Bodies are plain JSON both ways: the generated models cannot read a Binding response
("Invalid value for `target`, must not be `None`"), and MicroTime round-trips are lossy.
Writes happen only while ``may_write()`` holds (the leader elector owns that truth): it is
the guard of every write, asked before it and again right before it goes on the wire.
Transport's failures become the scheduler's: no answer is ``ApiUnreachable``
(``ApiUnavailable``), a guard that did not hold is ``NotLeader`` (``NotLeading``).
Scheduling events and PodScheduled patches are queued in the ``Recorder``, which sends
them itself (off the hot path).
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable, Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM
from multisched.framework import ApiUnavailable, BindingConflict, NotLeading
from multisched.meta import now_time
from multisched.transport import MERGE_PATCH, Api, ApiError, NotSent, RecordWrites, Unreachable

from .options import COMPONENT
from .pod_status import disruption_target
from .recorder import Recorder

logger = logging.getLogger(__name__)

#: Upstream truncates event notes to 1 kB (events.k8s.io validation).
EVENT_MESSAGE_LIMIT = 1024


class NotLeader(NotLeading):
    """This replica lost the lease; it must not write bindings any more."""


class ApiUnreachable(Unreachable, ApiUnavailable):
    """No answer from the API server (status 0). An ``ApiError`` for callers that handle
    those, an ``ApiUnavailable`` for the scheduler (``maybe_sent``: outcome unknown)."""


def scheduler_error(exc: Unreachable | NotSent) -> Exception:
    """Transport's failure as the scheduler knows it, with the same text."""
    if isinstance(exc, Unreachable):
        return ApiUnreachable(exc.message, exc.maybe_sent)
    return NotLeader(str(exc))


#: 409 text of pods/binding when the pod already has a node (registry/core/pod/storage).
_ASSIGNED = re.compile(r'already assigned to node "([^"]*)"')


def _ref(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": api_version, "kind": kind, "name": meta.get("name", "")}
    for key in ("namespace", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def _pod_path(pod: PodInfo, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
    return f"{path}/{sub}" if sub else path


def _real_uid(pod: PodInfo) -> str | None:
    """PodInfo falls back to ``ns/name`` without a uid; never send that as a precondition."""
    uid = (pod.raw.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


class KubeClient:
    """``framework.handle.ClusterClient`` and ``scheduler.events.SchedulingEvents``."""

    def __init__(
        self,
        api: Api,
        instance: str | None = None,
        is_pending: Callable[[str], bool] | None = None,
        may_write: Callable[[], bool] | None = None,
    ) -> None:
        self.api = api
        #: ``reportingInstance`` of our events.
        self.instance = instance or socket.gethostname()
        #: Whether a pod is still unbound and alive; failures of others are not reported.
        self.is_pending = is_pending
        #: Whether this replica may write now (it leads, or election is off).
        self.may_write: Callable[[], bool] = may_write or (lambda: True)
        #: Events and pod statuses, written through the Api under the write guard.
        self.writes = RecordWrites(api, self._guard)
        self.recorder = Recorder(
            self.writes,
            self._guard,
            reachable=lambda: api.reachability.reachable,
            is_pending=is_pending,
        )
        api.reachability.reporters.append(self.recorder.take_dropped)
        api.reachability.on_unreachable.append(self.recorder.release)

    def _guard(self) -> bool:
        return self.may_write()

    async def close(self) -> None:
        """Stop the recorder (what is still queued is not sent)."""
        await self.recorder.close()

    # -- ClusterClient --------------------------------------------------------------------

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST the binding; a 409 naming the same node means an earlier attempt (whose
        answer was lost) already bound it: success. Another node: ``BindingConflict``
        with ``bound_to``."""
        meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
        uid = _real_uid(pod)
        if uid:
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            # In order: the API server receives the bindings in the order they were made
            # (queue order), as kube-scheduler's arrive on its one HTTP/2 connection; one
            # of a lower priority only once those of a higher priority made before it are
            # answered (SendOrder).
            await self.api.request(
                "POST",
                _pod_path(pod, "binding"),
                body,
                guard=self._guard,
                kind="bindings",
                in_order=True,
                rank=pod.priority,
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None
        except ApiError as exc:
            if exc.status in (404, 409):
                match = _ASSIGNED.search(exc.message) if exc.status == 409 else None
                bound_to = match.group(1) if match else ""
                if bound_to == node_name:
                    logger.info("pod %s was already bound to %s", pod.key, node_name)
                    return
                raise BindingConflict(exc.status, exc.message or str(exc), bound_to) from None
            raise

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        """Mark the victim DisruptionTarget (unless it is already), delete it, and record
        ``Preempted``, as upstream's ``PreemptPod``: a victim that cannot be marked is not
        deleted (the error goes to the caller), and one already gone is left be."""
        if not self.may_write():
            raise NotLeader("not the leader any more; preemption skipped")
        condition = disruption_target(pod.raw, scheduler_name)
        if condition is not None:
            try:
                await self.writes.patch_pod_status(
                    pod.namespace, pod.name, {"conditions": [condition]}
                )
            except NotSent as exc:
                raise scheduler_error(exc) from None
            except ApiError as exc:
                if exc.status == 404:
                    return
                raise
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        uid = _real_uid(pod)
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.api.request(
                "DELETE", _pod_path(pod), body, guard=self._guard, kind="preemptions"
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None
        except ApiError as exc:
            if exc.status in (404, 409):  # gone, or a new pod took the name
                return
            raise
        self.record_preempted(pod, reason)

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        self._pod_event(pod, "Normal", "Preempted", message, COMPONENT, "Preempting")

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """Queued behind (or merged into) the pod's pending status patch, never beside it:
        a direct patch could land before a queued one it is newer than."""
        if not self.may_write():
            raise NotLeader("not the leader any more; nomination skipped")
        self.recorder.record_status(pod, None, node_name)

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT a PV or claim (the volume binder's PreBind writes); a 409 means it changed
        since the binder read it: the binding is undone and the pod tried again."""
        meta = obj.get("metadata") or {}
        if kind == PERSISTENT_VOLUME:
            path = f"/api/v1/persistentvolumes/{meta.get('name')}"
        elif kind == PERSISTENT_VOLUME_CLAIM:
            path = (
                f"/api/v1/namespaces/{meta.get('namespace')}/persistentvolumeclaims/"
                f"{meta.get('name')}"
            )
        else:
            raise ValueError(f"the scheduler writes no {kind}")
        try:
            return await self.api.request(
                "PUT", path, obj, guard=self._guard, kind="volume bindings"
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None

    # -- DRA-backed extended resources: the special ResourceClaim and the pod's status ----

    async def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """POST the claim DynamicResources makes for a pod's extended resources."""
        namespace = (claim.get("metadata") or {}).get("namespace")
        try:
            return await self.api.request(
                "POST",
                f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims",
                claim,
                guard=self._guard,
                kind="resource claims",
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None

    async def delete_claim(self, claim: dict[str, Any]) -> None:
        """DELETE that claim (its uid as precondition); 404: already gone."""
        meta = claim.get("metadata") or {}
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if meta.get("uid"):
            body["preconditions"] = {"uid": meta["uid"]}
        path = (
            f"/apis/resource.k8s.io/v1/namespaces/{meta.get('namespace')}/resourceclaims/"
            f"{meta.get('name')}"
        )
        try:
            await self.api.request("DELETE", path, body, guard=self._guard, kind="resource claims")
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        """Strategic-merge ``status.extendedResourceClaimStatus`` into the pod."""
        try:
            await self.writes.patch_pod_status(
                pod.namespace, pod.name, {"extendedResourceClaimStatus": status}
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None

    async def update_claim_status(self, claim: dict[str, Any]) -> dict[str, Any]:
        """PUT a ResourceClaim's status (DynamicResources' allocation and reservedFor); a
        409 means it changed since it was read: DynamicResources reads it again."""
        return await self._put_claim(claim, "/status")

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """PUT a ResourceClaim (DynamicResources' finalizer)."""
        return await self._put_claim(claim, "")

    async def _put_claim(self, claim: dict[str, Any], sub: str) -> dict[str, Any]:
        meta = claim.get("metadata") or {}
        path = (
            f"/apis/resource.k8s.io/v1/namespaces/{meta.get('namespace')}/resourceclaims/"
            f"{meta.get('name')}{sub}"
        )
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **claim}
        try:
            return await self.api.request(
                "PUT", path, body, guard=self._guard, kind="resource claim updates"
            )
        except (Unreachable, NotSent) as exc:
            raise scheduler_error(exc) from None

    # -- SchedulingEvents (queued: these never wait for the API server) --------------------

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        message = f"Successfully assigned {pod.key} to {node_name}"
        self._pod_event(pod, "Normal", "Scheduled", message, profile, "Binding")

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        """Queued: a nomination set just before (preemption's) goes out in the same patch
        as the PodScheduled=False (upstream ``updatePod`` writes both at once)."""
        if not self.may_write():
            return  # stepped down mid-cycle: the new leader reports for itself
        if self.is_pending is not None and not self.is_pending(pod.uid):
            return  # bound (maybe by someone else) or deleted meanwhile
        self._pod_event(pod, "Warning", "FailedScheduling", message, profile, "Scheduling")
        self.recorder.record_status(pod, (reason, message), None)
        await self.recorder.room()  # the scheduling loop keeps pace with its reports

    def _pod_event(
        self, pod: PodInfo, type_: str, reason: str, message: str, component: str, action: str
    ) -> None:
        ref = _ref(pod.raw, "v1", "Pod")
        ref.update(name=pod.name, namespace=pod.namespace)
        self.recorder.record_event(
            self._event_body(ref, pod.namespace, type_, reason, message, component, action)
        )

    # -- generic --------------------------------------------------------------------------

    async def post_event(
        self,
        involved: Mapping[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        component: str,
        action: str = "",
    ) -> None:
        """Post a core/v1 Event now (rare, already deduplicated reports such as a profile's
        problems); cluster-scoped objects' events go to ``default`` as kubectl expects."""
        body = self._event_body(involved, namespace, type_, reason, message, component, action)
        stamp = now_time()
        body.update(firstTimestamp=stamp, lastTimestamp=stamp, count=1)
        await self.writes.create_event(body)

    def _event_body(
        self,
        involved: Mapping[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        component: str,
        action: str,
    ) -> dict[str, Any]:
        if len(message) > EVENT_MESSAGE_LIMIT:
            message = message[: EVENT_MESSAGE_LIMIT - 3] + "..."
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": namespace},
            "involvedObject": dict(involved),
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": f"{component}-{self.instance}"[:128],
        }
        if action:
            body["action"] = action
        return body

    async def patch_cluster_status(
        self, group: str, version: str, plural: str, name: str, status: Mapping[str, Any]
    ) -> None:
        """JSON merge patch of a cluster-scoped custom object's status subresource."""
        await self.api.request(
            "PATCH",
            f"/apis/{group}/{version}/{plural}/{name}/status",
            {"status": dict(status)},
            content_type=MERGE_PATCH,
            guard=self._guard,
            kind="status patches",
        )
