"""The event handlers: what the cluster's watches bring, turned into calls of the engine.

As upstream's ``eventhandlers.go``: each watch event of a pod, node, namespace, PDB,
storage or DRA object, PodGroup or ElasticQuota becomes calls of ``EngineFeed``
(scheduler/feed.py), the narrow interface ``simulate`` and ``explain`` feed the engine
through too. Events come by two routes, one meaning each:

- kopf brings *unscheduled* pods (``on_pod``, ``on_pending_pod_gone``): they are queued
  when their schedulerName is served; of the others only the identity is kept
  (other_schedulers.py), and they are listed again if a SchedulerProfile takes that name.
- The intake's informers bring assigned pods, nodes, namespaces, PDBs, the storage
  objects the volume plugins read, the DRA objects DynamicResources reads, and the
  Services and pod controllers whose selectors PodTopologySpread's default constraints
  use: what the engine counts. Bound pods are kept compact (the plugins' slots and the
  pod's identity).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from multisched.cache import NodeError, PodError, PodInfo
from multisched.cache.dra import RESOURCE_CLAIM_TEMPLATE
from multisched.informer.kinds import DRA, GROUPS, STORAGE, WORKLOADS
from multisched.scheduler.feed import EngineFeed
from multisched.transport import ApiError, TransportError

from .client import KubeClient
from .group_status import GroupStatusController
from .intake import ASSIGNED_PODS, NAMESPACES, NODES, PDBS, PODS, Feed
from .options import COMPONENT
from .other_schedulers import OtherSchedulerPod, PendingPodLister, pending_pod_lister, pod_key

logger = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
DEFAULT_SCHEDULER_NAME = "default-scheduler"

#: Metadata that changes without the pod changing for scheduling (upstream ``isPodUpdated``).
_VOLATILE_METADATA = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})


#: Status fields that are scheduling properties (upstream ``PodSchedulingPropertiesChange``:
#: ``UpdatePodGeneratedResourceClaim``): the claims generated for the pod are named there.
_SCHEDULING_STATUS = ("resourceClaimStatuses", "extendedResourceClaimStatus")


def _pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether anything but the status and bookkeeping changed (our own PodScheduled
    patches come back as updates and must not count as "the pod may fit now"), or the
    status names other generated claims (DynamicResources waits for that)."""
    if old.get("spec") != new.get("spec"):
        return True
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if any(old_status.get(f) != new_status.get(f) for f in _SCHEDULING_STATUS):
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    keys = (set(old_meta) | set(new_meta)) - _VOLATILE_METADATA
    return any(old_meta.get(k) != new_meta.get(k) for k in keys)


def scheduler_name(body: Mapping[str, Any]) -> str:
    return str((body.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME)


def object_identity(body: Mapping[str, Any]) -> tuple[str, str, str]:
    """namespace, name and uid (``ns/name`` where an object has no uid)."""
    meta = body.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    return namespace, name, str(meta.get("uid") or f"{namespace or 'default'}/{name}")


class ClusterEventHandlers:
    """Watch events in, ``EngineFeed`` calls out; keeps the pending pods it has seen."""

    def __init__(
        self,
        engine: EngineFeed,
        client: KubeClient,
        may_write: Callable[[], bool],
        list_pending: PendingPodLister | None = None,
    ) -> None:
        self.engine = engine
        self.client = client
        self.may_write = may_write
        #: Unbound, live pods of served schedulerNames, by uid.
        self.unbound: dict[str, PodInfo] = {}
        #: Unbound pods of other schedulerNames, by uid: their identity only (any tenant can
        #: make many); listed again when their name appears.
        self.others: dict[str, OtherSchedulerPod] = {}
        self._list_pending = list_pending
        #: Newly served names whose pods could not be listed yet (tried again at resync).
        self.unclaimed: set[str] = set()
        #: Claims under way, and set when there are none: the first scheduling cycle waits
        #: for them (``claims_settled``).
        self._claims = 0
        self._claims_idle = asyncio.Event()
        self._claims_idle.set()
        #: Pods we could not read -> the message already reported.
        self._bad_pods: dict[str, str] = {}
        #: Told of every pod and group object that may change a PodGroup's or an
        #: ElasticQuota's status (None: their status is not ours to keep).
        self.group_status: GroupStatusController | None = None

    def feeds(self) -> list[Feed]:
        """What the intake's informers deliver, and where."""
        return [
            Feed(NODES, self.on_node, self.on_node_deleted),
            Feed(PODS, self.on_assigned_pod, self.on_assigned_pod_deleted, ASSIGNED_PODS),
            Feed(NAMESPACES, self.on_namespace, self.on_namespace_deleted),
            Feed(PDBS, self.on_pdb, self.on_pdb_deleted),
            *(
                Feed(resource, self._storage_upsert(kind), self._storage_delete(kind))
                for kind, resource in STORAGE.items()
            ),
            *(
                # Optional: a server that does not serve resource.k8s.io/v1 has no DRA
                # objects (its pods with claims wait, as they would for a missing claim);
                # one before v1.37 serves no DeviceTaintRules there, and taints nothing.
                # Templates are not watched: kube-scheduler neither reads them nor may list
                # them (the resourceclaim controller makes claims of them).
                Feed(resource, self._dra_upsert(kind), self._dra_delete(kind), optional=True)
                for kind, resource in DRA.items()
                if kind != RESOURCE_CLAIM_TEMPLATE
            ),
            *(
                Feed(resource, self._group_upsert(kind), self._group_delete(kind), optional=True)
                for kind, resource in GROUPS.items()
            ),
            *(
                # Optional: a role without them (rbac.create=false) costs default spreading
                # that kind's selectors, not all scheduling.
                Feed(
                    resource,
                    partial(self.engine.on_workload_object, kind),
                    partial(self.engine.on_workload_object, kind, deleted=True),
                    optional=True,
                )
                for kind, resource in WORKLOADS.items()
            ),
        ]

    def _group_upsert(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def upsert(body: dict[str, Any]) -> None:
            self.engine.on_group_object(kind, _without_managed_fields(body))
            if self.group_status is not None:
                self.group_status.object_changed(kind, body)

        return upsert

    def _group_delete(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def delete(body: dict[str, Any]) -> None:
            self.engine.on_group_object(kind, body, deleted=True)

        return delete

    def _storage_upsert(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def upsert(body: dict[str, Any]) -> None:
            # Kept for the binder's writes, which send the object back: no field history.
            self.engine.on_storage_object(kind, _without_managed_fields(body))

        return upsert

    def _storage_delete(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def delete(body: dict[str, Any]) -> None:
            self.engine.on_storage_object_deleted(kind, body)

        return delete

    def _dra_upsert(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def upsert(body: dict[str, Any]) -> None:
            # A claim is written back (PreBind's status PUT): no field history.
            self.engine.on_dra_object(kind, _without_managed_fields(body))

        return upsert

    def _dra_delete(self, kind: str) -> Callable[[dict[str, Any]], None]:
        def delete(body: dict[str, Any]) -> None:
            self.engine.on_dra_object(kind, body, deleted=True)

        return delete

    async def names_changed(self, added: set[str], retired: set[str]) -> None:
        """The served schedulerNames changed: pods of retired names are others' again, pods
        of added names are listed, parsed and queued."""
        for uid, pod in list(self.unbound.items()):
            if pod.scheduler_name in retired:
                del self.unbound[uid]
                key = f"{pod.namespace}/{pod.name}"
                self.others[uid] = OtherSchedulerPod(uid, key, pod.scheduler_name)
        self.unclaimed -= retired
        if added:
            await self.claim(added)

    async def claim_unclaimed(self) -> None:
        """List again what a failed listing left waiting (the profiles' resync calls it)."""
        if self.unclaimed:
            await self.claim(set(self.unclaimed))

    async def claims_settled(self) -> None:
        """Until no claim is under way. A name served while kopf hands over the first
        listing has its pods queued in two ways: those handed over after it by kopf, those
        handed over before it by a listing of their own (``claim``). The first cycle waits
        for the latter, so that the whole backlog is queued, and ordered as listed, before
        any of it is popped."""
        await self._claims_idle.wait()

    async def claim(self, names: Iterable[str]) -> None:
        """Parse and queue the pending pods of newly served names. Only their identity was
        kept: they are listed again, one list per name that has any."""
        # Counted from the start: the names are served now, and nothing has awaited since.
        self._claims += 1
        self._claims_idle.clear()
        try:
            await self._claim(names)
        finally:
            self._claims -= 1
            if not self._claims:
                self._claims_idle.set()

    async def _claim(self, names: Iterable[str]) -> None:
        asked = set(names)
        waiting = {p.scheduler_name for p in self.others.values()}
        todo = sorted(n for n in asked & waiting if self.engine.serves(n))
        self.unclaimed -= asked - set(todo)
        for name in todo:
            async with contextlib.aclosing(self._lister()(name)) as pages:
                while True:
                    # Only the listing's failures are caught here, not the handling's.
                    try:
                        items = await anext(pages)
                    except StopAsyncIteration:
                        self.unclaimed.discard(name)
                        break
                    except (TimeoutError, ApiError, TransportError, OSError, ValueError) as e:
                        self._unlisted(name, e)
                        break
                    for body in items:
                        await self._claim_listed(body)

    def _unlisted(self, name: str, exc: Exception) -> None:
        again = name in self.unclaimed
        self.unclaimed.add(name)
        logger.log(
            logging.INFO if again else logging.WARNING,
            "could not list the pending pods of %s (tried again at the next resync): %s",
            name,
            str(exc)[:200],
        )

    async def _claim_listed(self, body: Mapping[str, Any]) -> None:
        # Only a pod still held as another's: kopf's own event, if one came since the
        # listing was asked for, is newer (or said the pod is gone).
        known = self.others.get(object_identity(body)[2])
        if known is None or known.scheduler_name != scheduler_name(body):
            return
        if self.engine.serves(known.scheduler_name):
            await self.on_pod(body)

    def _lister(self) -> PendingPodLister:
        if self._list_pending is None:
            self._list_pending = pending_pod_lister(self.client.api.api_client)
        return self._list_pending

    # -- pending pods (kopf, unscheduled only) ---------------------------------------------

    async def on_pod(self, body: Mapping[str, Any]) -> None:
        """A pending pod was listed, added or modified (re-listing the same pod is a no-op)."""
        if self.group_status is not None:
            self.group_status.pod_changed(body)
        uid = object_identity(body)[2]
        spec = body.get("spec") or {}
        phase = (body.get("status") or {}).get("phase")
        if spec.get("nodeName") or phase in TERMINAL_PHASES:
            self.on_pending_pod_gone(body)  # the assigned-pod informer takes it from here
            return
        if not self.engine.serves(scheduler_name(body)):
            self.unbound.pop(uid, None)
            self.engine.forget_pending(uid)
            # Not ours (yet): its identity alone, listed again if its name appears.
            self.others[uid] = OtherSchedulerPod(uid, pod_key(body), scheduler_name(body))
            return
        self.others.pop(uid, None)
        try:
            pod = PodInfo.parse(body)
        except PodError as exc:
            await self._unreadable_pod(body, uid, str(exc))
            return
        self._bad_pods.pop(uid, None)
        if pod.terminating:
            self.unbound.pop(uid, None)
            self.engine.on_pod(pod)
            return
        old = self.unbound.get(uid)
        self.unbound[uid] = pod
        if old is not None and not _pod_updated(old.raw, pod.raw):
            # Status only: keep its place in the queue, just read the fresh object from now on.
            self.engine.on_pod_status(pod)
            return
        self.engine.on_pod(pod)

    def on_pending_pod_gone(self, body: Mapping[str, Any]) -> None:
        """The pod left the unscheduled selection: bound, finished or deleted. It is no
        longer pending; whether it holds resources is the assigned-pod informer's news."""
        _, _, uid = object_identity(body)
        if self.group_status is not None:
            self.group_status.pod_changed(body)
        self.unbound.pop(uid, None)
        self.others.pop(uid, None)
        self._bad_pods.pop(uid, None)
        bound = bool((body.get("spec") or {}).get("nodeName"))
        self.engine.forget_pending(uid, deleted=not bound)
        if not bound:
            # Deleted or finished while pending; a bound one stays its group's member.
            self.engine.untrack_group_member(uid)

    # -- informers: assigned pods, nodes, namespaces, PDBs ----------------------------------

    def on_assigned_pod(self, body: dict[str, Any]) -> None:
        if self.group_status is not None:
            self.group_status.pod_changed(body)
        spec = body.get("spec") or {}
        if not spec.get("nodeName"):
            return  # a pending pod (an API that ignored the field selector): kopf's
        if (body.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.on_assigned_pod_deleted(body)  # finished pods hold no resources
            return
        uid = object_identity(body)[2]
        try:
            pod = PodInfo.parse(body)
        except PodError as exc:
            if self._bad_pods.get(uid) != str(exc):
                self._bad_pods[uid] = str(exc)
                logger.warning("not counting a bound pod: %s", exc)
            return
        self._bad_pods.pop(uid, None)
        self.unbound.pop(uid, None)
        self.engine.on_pod(pod.compact())

    def on_assigned_pod_deleted(self, body: dict[str, Any]) -> None:
        if self.group_status is not None:
            self.group_status.pod_changed(body)
        _, _, uid = object_identity(body)
        self._bad_pods.pop(uid, None)
        self.engine.on_pod_deleted(uid)

    async def _unreadable_pod(self, body: Mapping[str, Any], uid: str, message: str) -> None:
        """Log it (once per problem), drop it, and tell the pod's owner if the pod is ours."""
        self.unbound.pop(uid, None)
        self.engine.on_unreadable_pod(uid)
        if self._bad_pods.get(uid) == message:
            return
        self._bad_pods[uid] = message
        logger.warning("%s", message)
        spec = body.get("spec") or {}
        ours = self.engine.serves(spec.get("schedulerName") or "default-scheduler")
        if not ours or spec.get("nodeName") or not self.may_write():
            return
        namespace, name, _ = object_identity(body)
        involved = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace}
        meta = body.get("metadata") or {}
        if meta.get("uid"):
            involved["uid"] = meta["uid"]
        try:
            await self.client.post_event(
                involved,
                namespace or "default",
                "Warning",
                "FailedScheduling",
                message,
                spec.get("schedulerName") or COMPONENT,
                "Scheduling",
            )
        except Exception as exc:
            logger.warning("could not post an event for %s/%s: %s", namespace, name, exc)

    def on_node(self, body: Mapping[str, Any]) -> None:
        try:
            self.engine.on_node(dict(body))
        except NodeError as exc:
            logger.warning("ignoring node %s: %s", object_identity(body)[1], exc)

    def on_node_deleted(self, body: Mapping[str, Any]) -> None:
        self.engine.on_node_deleted(object_identity(body)[1])

    def on_namespace(self, body: Mapping[str, Any]) -> None:
        labels = (body.get("metadata") or {}).get("labels") or {}
        self.engine.on_namespace(object_identity(body)[1], dict(labels))

    def on_namespace_deleted(self, body: Mapping[str, Any]) -> None:
        self.engine.on_namespace_deleted(object_identity(body)[1])

    def on_pdb(self, body: Mapping[str, Any]) -> None:
        namespace, name, _ = object_identity(body)
        self.engine.on_pdb(f"{namespace}/{name}", dict(body))

    def on_pdb_deleted(self, body: Mapping[str, Any]) -> None:
        namespace, name, _ = object_identity(body)
        self.engine.on_pdb_deleted(f"{namespace}/{name}")


def _without_managed_fields(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**body, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return body
