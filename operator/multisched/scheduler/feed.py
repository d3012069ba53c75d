"""``EngineFeed``: the one way what the cluster holds goes into the scheduler.

Whatever brings the cluster - the operator's watches (``operator/event_handlers.py``), a
``simulate`` file (``simulate.py``) or a cluster read for ``explain`` (``live/explain.py``) -
tells the engine through these calls, and never writes the scheduler's queue or cache
itself. ``Scheduler.feed`` (``event_handlers.EventHandlers``) implements it: each call
updates the cache and moves the pods the change may help, as upstream's event handlers do.

Pods arrive parsed (``PodInfo``); every other object as the API's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from multisched.cache import PodInfo


class EngineFeed(Protocol):
    def serves(self, scheduler_name: str) -> bool:
        """Whether a profile has this schedulerName (a pod of another name is not ours)."""
        ...

    # -- pods ------------------------------------------------------------------------------

    def on_pod(self, pod: PodInfo) -> None:
        """A pod was added or changed: bound pods count on their node, pending pods of a
        served schedulerName are queued (``serves``)."""
        ...

    def on_pod_status(self, pod: PodInfo) -> None:
        """Only the status (or bookkeeping metadata) of a pending pod changed: a queued pod
        keeps its place and is read from this object from now on."""
        ...

    def on_pod_deleted(self, uid: str) -> None:
        """The pod is gone (deleted, or finished): it holds nothing any more."""
        ...

    def forget_pending(self, uid: str, deleted: bool = False) -> None:
        """The pod no longer waits for a scheduler (bound, finished, deleted or not ours);
        what it holds on a node is ``on_pod``'s and ``on_pod_deleted``'s to say.
        ``deleted``: it was deleted or finished while pending (not bound), which frees its
        nominated node for the pods that counted it there."""
        ...

    def on_unreadable_pod(self, uid: str) -> None:
        """The pod's latest version could not be read: it leaves the queue."""
        ...

    def on_nominated_pod(self, pod: PodInfo) -> None:
        """A pending pod that is not queued holds the node its status nominates, for the
        filters of pods of lower priority (``explain``: the other pods' nominations)."""
        ...

    def track_group_member(self, pod: PodInfo) -> None:
        """Count the pod in its PodGroup (``on_pod`` does so too), pending or bound."""
        ...

    def untrack_group_member(self, uid: str) -> None:
        """The pod no longer counts in its PodGroup (deleted or finished while pending)."""
        ...

    # -- nodes, namespaces, PodDisruptionBudgets -------------------------------------------

    def on_node(self, raw: dict[str, object]) -> None:
        """A node was added or changed; raises ``NodeError`` for one the cache cannot read."""
        ...

    def on_node_deleted(self, name: str) -> None: ...

    def on_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """A namespace was added or changed: its labels (namespace selectors read them)."""
        ...

    def on_namespace_deleted(self, name: str) -> None: ...

    def on_pdb(self, key: str, raw: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget (``key``: ``namespace/name``) was added or changed."""
        ...

    def on_pdb_deleted(self, key: str) -> None: ...

    # -- what the volume, DRA, gang and quota plugins read ---------------------------------

    def on_storage_object(self, kind: str, raw: dict[str, Any]) -> None:
        """A PV, claim, StorageClass or CSI object was added or changed."""
        ...

    def on_storage_object_deleted(self, kind: str, raw: dict[str, Any]) -> None: ...

    def on_dra_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice or
        DeviceTaintRule was added, changed or (``deleted``) deleted."""
        ...

    def on_group_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A PodGroup or ElasticQuota was added, changed or (``deleted``) deleted."""
        ...

    def on_workload_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A Service, ReplicationController, ReplicaSet or StatefulSet was added, changed or
        (``deleted``) deleted: what PodTopologySpread's default selectors read."""
        ...
