"""Which cluster event a Node update is (upstream ``nodeSchedulingPropertiesChange``).

Kubelets rewrite node status every few seconds (heartbeats, images, addresses); only
changes to what plugins read may help an unschedulable pod, so only those are events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.framework.events import (
    NODE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_NODE_CONDITION,
    UPDATE_NODE_DECLARED_FEATURE,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    ClusterEvent,
)


def _conditions(status: Mapping[str, Any]) -> dict[str, Any]:
    """Type -> status only: heartbeat and transition times change without meaning."""
    return {c.get("type"): c.get("status") for c in status.get("conditions") or ()}


def node_scheduling_properties_change(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> ClusterEvent | None:
    """One event with every changed scheduling property's action bit, or None."""
    action = 0
    labels: list[str] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if bool(old_spec.get("unschedulable")) != bool(new_spec.get("unschedulable")):
        action |= UPDATE_NODE_TAINT
        labels.append("NodeSpecUnschedulableChange")
    old_alloc = old_status.get("allocatable") or old_status.get("capacity") or {}
    new_alloc = new_status.get("allocatable") or new_status.get("capacity") or {}
    if old_alloc != new_alloc:
        action |= UPDATE_NODE_ALLOCATABLE
        labels.append("NodeAllocatableChange")
    old_labels = (old.get("metadata") or {}).get("labels") or {}
    if old_labels != ((new.get("metadata") or {}).get("labels") or {}):
        action |= UPDATE_NODE_LABEL
        labels.append("NodeLabelChange")
    if (old_spec.get("taints") or []) != (new_spec.get("taints") or []):
        action |= UPDATE_NODE_TAINT
        labels.append("NodeTaintChange")
    if _conditions(old_status) != _conditions(new_status):
        action |= UPDATE_NODE_CONDITION
        labels.append("NodeConditionChange")
    # The API server keeps the list sorted, so list equality is set equality.
    if (old_status.get("declaredFeatures") or []) != (new_status.get("declaredFeatures") or []):
        action |= UPDATE_NODE_DECLARED_FEATURE
        labels.append("NodeDeclaredFeatureChange")
    if not action:
        return None
    return ClusterEvent(NODE, action, "+".join(labels))
