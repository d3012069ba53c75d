"""VolumeBinding's queueing hints (upstream ``volumebinding/volume_binding.go``).

The storage objects arrive raw (mappings), as the informers keep them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.framework.events import QueueingHint

from .binder import claim_names
from .pv_helpers import storage_of

QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP
#: ``v1.MigratedPluginsAnnotationKey``: the in-tree plugins a CSINode's drivers took over.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def is_schedulable_after_csi_node_change(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """Any new CSINode; an updated one only when its migrated plugins changed."""
    if old is None:
        return QUEUE
    before = ((old.get("metadata") or {}).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION)
    after = ((new.get("metadata") or {}).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION)
    return QUEUE if (before or "") != (after or "") else QUEUE_SKIP


def is_schedulable_after_persistent_volume_claim_change(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """A claim the pod uses (named, or its generic ephemeral volume's): nearly any change
    of it (created, bound, resized) may help."""
    meta = new.get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return QUEUE_SKIP
    name = meta.get("name")
    for claim, _ in claim_names(pod):
        if claim == name:
            return QUEUE
    return QUEUE_SKIP


def is_schedulable_after_storage_class_change(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """Any new class; an updated one only when its allowedTopologies changed (the rest of
    a StorageClass is immutable)."""
    if old is None:
        return QUEUE
    # Semantic equality: an absent list equals an empty one.
    if (new.get("allowedTopologies") or []) != (old.get("allowedTopologies") or []):
        return QUEUE
    return QUEUE_SKIP


def _volume_limit(capacity: Mapping[str, Any]) -> int | None:
    """``volumeLimit``: maximumVolumeSize when set, else capacity (bytes; None: unknown)."""
    raw = capacity.get("maximumVolumeSize")
    if raw is None:
        raw = capacity.get("capacity")
    return None if raw is None else storage_of({"storage": raw})


def is_schedulable_after_csi_storage_capacity_change(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """Any new capacity; an updated one only when its limit appeared or grew."""
    if old is None:
        return QUEUE
    before, after = _volume_limit(old), _volume_limit(new)
    if after is not None and (before is None or after > before):
        return QUEUE
    return QUEUE_SKIP


def is_schedulable_after_csi_driver_change(
    pod: PodInfo, old: Mapping[str, Any], new: Mapping[str, Any]
) -> QueueingHint:
    """The driver of one of the pod's inline CSI volumes stopped tracking storage capacity
    (its capacity check no longer applies)."""
    name = (new.get("metadata") or {}).get("name")
    was = bool((old.get("spec") or {}).get("storageCapacity"))
    now = bool((new.get("spec") or {}).get("storageCapacity"))
    for vol in pod.volumes:
        csi = vol.get("csi")
        if csi is None or csi.get("driver") != name:
            continue
        if was and not now:
            return QUEUE
    return QUEUE_SKIP
