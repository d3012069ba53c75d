"""Which cluster event a Node update is (upstream ``nodeSchedulingPropertiesChange``).

Kubelets rewrite node status every few seconds (heartbeats, images, addresses); only
changes to what plugins read may help an unschedulable pod, so only those are events, one
per changed property, each sent to the queue with the old and the new node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.resources import Resource
from multisched.framework.events import (
    NODE_ALLOCATABLE_CHANGE,
    NODE_ANNOTATION_CHANGE,
    NODE_CONDITION_CHANGE,
    NODE_DECLARED_FEATURE_CHANGE,
    NODE_LABEL_CHANGE,
    NODE_PREEMPTION_POLICY_CHANGE,
    NODE_TAINT_CHANGE,
    POD,
    TARGET_POD,
    UPDATE,
    UPDATE_POD_GENERATED_RESOURCE_CLAIM,
    UPDATE_POD_LABEL,
    UPDATE_POD_SCALE_DOWN,
    UPDATE_POD_SCALE_UP,
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
)


def _conditions(status: Mapping[str, Any]) -> dict[str, Any]:
    """Type -> status only: heartbeat and transition times change without meaning."""
    return {c.get("type"): c.get("status") for c in status.get("conditions") or ()}


def node_scheduling_properties_change(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[ClusterEvent]:
    """One event per changed scheduling property, in upstream's order (v1.37
    ``NodeSchedulingPropertiesChange``); none for status churn."""
    events: list[ClusterEvent] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    # Only a node becoming schedulable again (its unschedulable taint in disguise gone).
    if bool(old_spec.get("unschedulable")) and not new_spec.get("unschedulable"):
        events.append(NODE_TAINT_CHANGE)
    # The cache reads capacity where allocatable is absent, so a change there counts too.
    old_alloc = old_status.get("allocatable") or old_status.get("capacity") or {}
    if old_alloc != (new_status.get("allocatable") or new_status.get("capacity") or {}):
        events.append(NODE_ALLOCATABLE_CHANGE)
    if (old_meta.get("labels") or {}) != (new_meta.get("labels") or {}):
        events.append(NODE_LABEL_CHANGE)
    if (old_spec.get("taints") or []) != (new_spec.get("taints") or []):
        events.append(NODE_TAINT_CHANGE)
    if _conditions(old_status) != _conditions(new_status):
        events.append(NODE_CONDITION_CHANGE)
    if (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}):
        events.append(NODE_ANNOTATION_CHANGE)
    if old_spec.get("podPreemptionPolicy") != new_spec.get("podPreemptionPolicy"):
        events.append(NODE_PREEMPTION_POLICY_CHANGE)
    # The API server keeps the list sorted, so list equality is set equality.
    if (old_status.get("declaredFeatures") or []) != (new_status.get("declaredFeatures") or []):
        events.append(NODE_DECLARED_FEATURE_CHANGE)
    return events


def _target_pod(action: int, name: str) -> ClusterEvent:
    # Upstream names the pending pod's own change "TargetPod" (it matches Pod registrations).
    return ClusterEvent(TARGET_POD, action, f"TargetPod{name}")


TARGET_POD_LABEL = _target_pod(UPDATE_POD_LABEL, "UpdatePodLabel")
TARGET_POD_SCALE_DOWN = _target_pod(UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown")
TARGET_POD_SCALE_UP = _target_pod(UPDATE_POD_SCALE_UP, "UpdatePodScaleUp")
TARGET_POD_GATES_ELIMINATED = _target_pod(
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED, "UpdatePodSchedulingGatesEliminated"
)
TARGET_POD_TOLERATION = _target_pod(UPDATE_POD_TOLERATION, "UpdatePodToleration")
TARGET_POD_GENERATED_CLAIM = _target_pod(
    UPDATE_POD_GENERATED_RESOURCE_CLAIM, "UpdatePodGeneratedResourceClaim"
)
TARGET_POD_UPDATE = _target_pod(UPDATE, "Update")
#: The same changes of a bound pod (upstream's ``AssignedPod`` resource): they may help
#: pending pods whose affinity, spread or fit reads the pods on a node.
_ASSIGNED = {
    e: ClusterEvent(POD, e.action, "AssignedPod" + e.label.removeprefix("TargetPod"))
    for e in (
        TARGET_POD_LABEL,
        TARGET_POD_SCALE_DOWN,
        TARGET_POD_SCALE_UP,
        TARGET_POD_GATES_ELIMINATED,
        TARGET_POD_TOLERATION,
        TARGET_POD_GENERATED_CLAIM,
        TARGET_POD_UPDATE,
    )
}


def _scaled(smaller: Resource, larger: Resource) -> bool:
    """Whether ``larger`` requests a resource ``smaller`` does not, or more of one."""
    return any(larger.get(n) > smaller.get(n) for n in larger.names())


def assigned_pod_properties_change(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
    """What a bound pod's update changed (``PodSchedulingPropertiesChange`` of an assigned
    pod): the events pooled pods' hints are asked about."""
    return [_ASSIGNED[e] for e in pod_scheduling_properties_change(old, new)]


def pod_scheduling_properties_change(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
    """What a pending pod's own update changed, for its rejecting plugins' hints (v1.37
    ``PodSchedulingPropertiesChange`` with the pod as target); a change of nothing they
    name is the general Update."""
    events: list[ClusterEvent] = []
    if old.labels != new.labels:
        events.append(TARGET_POD_LABEL)
    if _scaled(new.requests, old.requests):
        events.append(TARGET_POD_SCALE_DOWN)
    if _scaled(old.requests, new.requests):
        events.append(TARGET_POD_SCALE_UP)
    if old.scheduling_gates and not new.scheduling_gates:
        events.append(TARGET_POD_GATES_ELIMINATED)
    # The API lets tolerations only be added: a new count is a new toleration.
    if len(old.tolerations) != len(new.tolerations):
        events.append(TARGET_POD_TOLERATION)
    old_status, new_status = old.raw.get("status") or {}, new.raw.get("status") or {}
    for field in ("resourceClaimStatuses", "extendedResourceClaimStatus"):
        if old_status.get(field) != new_status.get(field):
            events.append(TARGET_POD_GENERATED_CLAIM)
            break
    return events or [TARGET_POD_UPDATE]
