"""VolumeZone (upstream ``volumezone/volume_zone.go``): a pod whose bound PVs carry zone or
region labels runs only on nodes in those zones and regions (a PV's beta label is matched
against the node's GA label when the node has no beta one, as v1.37 does).

Pods without bound PVs with topology labels are skipped in PreFilter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    NODE,
    UPDATE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from multisched.framework.status import SKIP

NAME = "VolumeZone"
STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
#: Beta and GA zone and region labels, in upstream's order.
TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
#: ``translateToGALabel``: a PV's beta label matches a node that has only the GA one.
GA_LABEL_OF = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
#: ``LabelMultiZoneDelimiter``: a PV label may name several zones.
ZONE_DELIMITER = "__"


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``; None when an element is empty (the label is then ignored)."""
    zones = [z.strip() for z in value.split(ZONE_DELIMITER)]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: Mapping[str, Any]) -> list[tuple[str, frozenset[str]]]:
    """``getPVTopologies``: (label key, zones) of the PV's parseable topology labels."""
    labels = (pv.get("metadata") or {}).get("labels") or {}
    out = []
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = label_zones_to_set(str(value))
        if zones is not None:
            out.append((key, zones))
    return out


class VolumeZone:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (
            # volumeBindingMode is immutable: only a new WaitForFirstConsumer class helps.
            ClusterEventWithHint(
                ClusterEvent(STORAGE_CLASS, ADD), is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL)),
            # A claim's volumeName being filled in may make the pod schedulable.
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ADD | UPDATE),
                is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME, ADD | UPDATE),
                is_schedulable_after_persistent_volume_change,
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, SKIP
        topologies, status = self._pv_topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(STATE_KEY, topologies)
        return None, None

    def pre_filter_extensions(self) -> None:
        # Upstream returns nil: the PV topologies do not depend on the pods on a node.
        return None

    def _pv_topologies(
        self, pod: PodInfo
    ) -> tuple[list[tuple[str, frozenset[str]]], Status | None]:
        """``getPVbyPod``: (label key, allowed values) of every bound PV of the pod."""
        volumes = self.handle.snapshot.volumes
        out: list[tuple[str, frozenset[str]]] = []
        for volume in pod.volumes:
            ref = volume.get("persistentVolumeClaim")
            if ref is None:
                continue
            name = str(ref.get("claimName") or "")
            if not name:
                return [], Status.unresolvable("PersistentVolumeClaim had no name")
            claim = volumes.pvcs.get_api_obj(f"{pod.namespace}/{name}")
            if claim is None:
                return [], Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            spec = claim.get("spec") or {}
            pv_name = str(spec.get("volumeName") or "")
            if not pv_name:
                notes = (claim.get("metadata") or {}).get("annotations") or {}
                class_name = str(
                    notes.get("volume.beta.kubernetes.io/storage-class")
                    or spec.get("storageClassName")
                    or ""
                )
                if not class_name:
                    return [], Status.unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                klass = volumes.get_storage_class(class_name)
                if klass is None:
                    return [], Status.unresolvable(
                        f'storageclass.storage.k8s.io "{class_name}" not found'
                    )
                mode = klass.get("volumeBindingMode")
                if mode is None:
                    return [], Status.unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"'
                    )
                if mode == "WaitForFirstConsumer":
                    continue  # the binder picks a PV that fits the node
                return [], Status.unresolvable("PersistentVolume had no name")
            pv = volumes.pvs.get_api_obj(pv_name)
            if pv is None:
                return [], Status.unresolvable(f'persistentvolume "{pv_name}" not found')
            out.extend(pv_topologies(pv))
        return out, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        topologies: list[tuple[str, frozenset[str]]] | None = state.get(STATE_KEY)
        if not topologies:
            return None
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None  # a node without zone labels is not constrained
        for key, values in topologies:
            value = labels.get(key)
            if value is None:
                value = labels.get(GA_LABEL_OF.get(key, key))
            if value not in values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None


def is_schedulable_after_persistent_volume_claim_change(
    pod: PodInfo, old: object, new: Mapping[str, Any]
) -> QueueingHint:
    """A claim the pod names (in its namespace) was created or changed."""
    meta = new.get("metadata") or {}
    if meta.get("namespace") == pod.namespace and meta.get("name") in pod.pvc_names():
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_storage_class_added(
    pod: PodInfo, old: object, new: Mapping[str, Any]
) -> QueueingHint:
    if new.get("volumeBindingMode") == "WaitForFirstConsumer":
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_persistent_volume_change(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """Any new PV; an updated one only when its topology labels changed."""
    if old is None or pv_topologies(old) != pv_topologies(new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


PLUGIN = VolumeZone
