"""VolumeRestrictions (upstream ``volumerestrictions/volume_restrictions.go``): a
ReadWriteOncePod claim another pod already uses keeps this pod out (preemption may free it),
and an inline disk another pod on the node mounts conflicts (GCE PD, EBS, iSCSI, RBD).

Pods with none of these volumes are skipped in PreFilter and cost nothing after that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.volumes import PERSISTENT_VOLUME_CLAIM
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from multisched.framework.status import SKIP

NAME = "VolumeRestrictions"
STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


class _State:
    __slots__ = ("conflicting", "rwop_claims")

    def __init__(self, rwop_claims: frozenset[str], conflicting: int) -> None:
        #: Names of the pod's claims with the ReadWriteOncePod access mode.
        self.rwop_claims = rwop_claims
        #: How many of them other pods use (kept current by AddPod/RemovePod).
        self.conflicting = conflicting

    def count_for(self, pod: PodInfo) -> int:
        return sum(1 for claim in pod.pvc_names() if claim in self.rwop_claims)


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(kind) is not None for kind in _DISKS)


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return bool(a.get("readOnly") and b.get("readOnly"))


def _same_disk(kind: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two volume sources of ``kind`` name one disk that cannot be shared."""
    if kind == "gcePersistentDisk":
        return a.get("pdName") == b.get("pdName") and not _both_read_only(a, b)
    if kind == "awsElasticBlockStore":  # EBS attaches to one node, read-only or not
        return bool(a.get("volumeID") == b.get("volumeID"))
    if kind == "iscsi":
        return a.get("iqn") == b.get("iqn") and not _both_read_only(a, b)
    return bool(  # rbd: the API server defaults the pool to "rbd"
        set(a.get("monitors") or ()) & set(b.get("monitors") or ())
        and (a.get("pool") or "rbd") == (b.get("pool") or "rbd")
        and a.get("image") == b.get("image")
        and not _both_read_only(a, b)
    )


def is_volume_conflict(volume: Mapping[str, Any], pod: PodInfo) -> bool:
    """``isVolumeConflict``: another pod's volume is the same disk."""
    for existing in pod.volumes:
        for kind in _DISKS:
            mine, theirs = volume.get(kind), existing.get(kind)
            if mine is not None and theirs is not None and _same_disk(kind, mine, theirs):
                return True
    return False


class VolumeRestrictions:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Volumes are immutable, so a pod's update never frees one; any new node may fit.
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, DELETE), is_schedulable_after_assigned_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ADD)),
            # The claim must exist to read its access modes; they cannot change after.
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ADD),
                is_schedulable_after_persistent_volume_claim_added,
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, SKIP
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        pvcs = self.handle.snapshot.volumes.pvcs
        rwop = set()
        for name in pod.pvc_names():
            claim = pvcs.get_api_obj(f"{pod.namespace}/{name}")
            if claim is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            if "ReadWriteOncePod" in ((claim.get("spec") or {}).get("accessModes") or ()):
                rwop.add(name)
        conflicting = 0
        if rwop:
            nodes_all = self.handle.snapshot.node_info_list
            conflicting = sum(
                1
                for name in rwop
                if any(n.pvc_ref_counts.get(f"{pod.namespace}/{name}") for n in nodes_all)
            )
        if not needs_check and conflicting == 0:
            return None, SKIP
        state.write(STATE_KEY, _State(frozenset(rwop), conflicting))
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is not None:  # by claim name alone, as upstream counts
            data.conflicting += data.count_for(pod_to_add)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is not None:
            data.conflicting -= data.count_for(pod_to_remove)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        for volume in pod.volumes:
            if needs_restrictions_check(volume) and any(
                is_volume_conflict(volume, other) for other in node.pods
            ):
                return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        data: _State | None = state.get(STATE_KEY)
        if data is not None and data.conflicting > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None


def is_schedulable_after_assigned_pod_deleted(
    pod: PodInfo, old: PodInfo | None, new: object
) -> QueueingHint:
    """A same-namespace pod whose disk conflicted with one of ``pod``'s, or that used one of
    its claims (by name: reading the claim's access mode is left to the next attempt)."""
    if old is None or old.namespace != pod.namespace or not pod.volumes or not old.volumes:
        return QueueingHint.QUEUE_SKIP
    for volume in pod.volumes:
        if needs_restrictions_check(volume) and is_volume_conflict(volume, old):
            return QueueingHint.QUEUE
    claims = pod.pvc_names()
    if claims and any(name in claims for name in old.pvc_names()):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_persistent_volume_claim_added(
    pod: PodInfo, old: object, new: Mapping[str, Any] | None
) -> QueueingHint:
    """A claim the pod names was created."""
    meta = (new or {}).get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if meta.get("name") in pod.pvc_names() else QueueingHint.QUEUE_SKIP


PLUGIN = VolumeRestrictions
