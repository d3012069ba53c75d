"""Cluster events that may make an unschedulable pod schedulable (upstream ``ClusterEvent``).

A plugin registers the events that can resolve its own rejections (``events_to_register``);
the queue moves a pod out of the unschedulable pool only for an event that one of the
plugins that rejected it registered for. Action types are plain int flags: the check runs
for every pooled pod on every event.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE
from multisched.cache.volumes import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
)

#: Upstream ``framework.ActionType`` bits.
ADD = 1
DELETE = 1 << 1
UPDATE_NODE_ALLOCATABLE = 1 << 2
UPDATE_NODE_LABEL = 1 << 3
UPDATE_NODE_TAINT = 1 << 4
UPDATE_NODE_CONDITION = 1 << 5
UPDATE_NODE_DECLARED_FEATURE = 1 << 6
UPDATE_NODE_ANNOTATION = 1 << 7
UPDATE_NODE_PREEMPTION_POLICY = 1 << 8
#: Pod-only update bits (v1.37 ``UpdatePodXYZ``): a hint registered for one runs only for
#: that kind of change.
UPDATE_POD_LABEL = 1 << 9
UPDATE_POD_SCALE_DOWN = 1 << 10
UPDATE_POD_SCALE_UP = 1 << 11
UPDATE_POD_TOLERATION = 1 << 12
UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 13
UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 14
#: Any update (of a pod, or any scheduling-relevant field of a node).
UPDATE = (
    UPDATE_NODE_ALLOCATABLE
    | UPDATE_NODE_LABEL
    | UPDATE_NODE_TAINT
    | UPDATE_NODE_CONDITION
    | UPDATE_NODE_DECLARED_FEATURE
    | UPDATE_NODE_ANNOTATION
    | UPDATE_NODE_PREEMPTION_POLICY
    | UPDATE_POD_LABEL
    | UPDATE_POD_SCALE_DOWN
    | UPDATE_POD_SCALE_UP
    | UPDATE_POD_TOLERATION
    | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    | UPDATE_POD_GENERATED_RESOURCE_CLAIM
)
ALL = ADD | DELETE | UPDATE

#: Resources (upstream ``GVK``); plugins may name others (e.g. "PersistentVolumeClaim").
POD = "Pod"
#: The pending pod's own update (upstream ``TargetPod``): a ``POD`` registration covers it
#: too, a ``TARGET_POD`` one covers nothing else (bound pods' events are ``POD``'s).
TARGET_POD = "TargetPod"
NODE = "Node"
WILDCARD = "*"


_ACTION_NAMES = (
    (ADD, "Add"),
    (DELETE, "Delete"),
    (UPDATE_NODE_ALLOCATABLE, "UpdateNodeAllocatable"),
    (UPDATE_NODE_LABEL, "UpdateNodeLabel"),
    (UPDATE_NODE_TAINT, "UpdateNodeTaint"),
    (UPDATE_NODE_CONDITION, "UpdateNodeCondition"),
    (UPDATE_NODE_DECLARED_FEATURE, "UpdateNodeDeclaredFeature"),
    (UPDATE_NODE_ANNOTATION, "UpdateNodeAnnotation"),
    (UPDATE_NODE_PREEMPTION_POLICY, "UpdateNodePreemptionPolicy"),
    (UPDATE_POD_LABEL, "UpdatePodLabel"),
    (UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown"),
    (UPDATE_POD_SCALE_UP, "UpdatePodScaleUp"),
    (UPDATE_POD_TOLERATION, "UpdatePodToleration"),
    (UPDATE_POD_SCHEDULING_GATES_ELIMINATED, "UpdatePodSchedulingGatesEliminated"),
    (UPDATE_POD_GENERATED_RESOURCE_CLAIM, "UpdatePodGeneratedResourceClaim"),
)


def _action_names(action: int) -> str:
    """Upstream's ActionType names; "Update" and "All" for the usual unions."""
    if action & ALL == ALL:
        return "All"
    parts = [n for bit, n in _ACTION_NAMES if bit & action]
    if action & UPDATE == UPDATE:
        parts = [p for p in parts if not p.startswith("Update")] + ["Update"]
    return ",".join(parts)


#: API groups upstream's event resources carry (``fwk.EventResource``); the core group's
#: kinds (Pod, Node, PersistentVolume, PersistentVolumeClaim) have none.
_API_GROUPS = {
    CSI_NODE: "storage.k8s.io/",
    CSI_DRIVER: "storage.k8s.io/",
    CSI_STORAGE_CAPACITY: "storage.k8s.io/",
    STORAGE_CLASS: "storage.k8s.io/",
    VOLUME_ATTACHMENT: "storage.k8s.io/",
    RESOURCE_CLAIM: "resource.k8s.io/",
    RESOURCE_SLICE: "resource.k8s.io/",
    DEVICE_CLASS: "resource.k8s.io/",
}


class ClusterEvent:
    """A resource and the actions on it; ``label`` names it in logs and metrics."""

    __slots__ = ("action", "label", "resource")

    def __init__(self, resource: str, action: int, label: str = "") -> None:
        self.resource = resource
        self.action = action
        #: Upstream ``ClusterEvent.Label()``: "NodeAdd", "PersistentVolumeUpdate",
        #: "storage.k8s.io/CSINodeAdd" (``resource`` is the kind; its group is prefixed).
        self.label = label or f"{_API_GROUPS.get(resource, '')}{resource}{_action_names(action)}"

    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ALL

    def matches(self, event: ClusterEvent) -> bool:
        """Whether this registration covers ``event`` (upstream ``MatchClusterEvents``): the
        resource, and an action as specific as the registered one or more. A generic Update
        (nothing specific changed) is no label or taint update; and an incoming wildcard is
        matched by a wildcard registration only (the queue moves every pod for it anyway)."""
        if self.is_wildcard():
            return True
        resource = self.resource
        return (
            (
                resource in (WILDCARD, event.resource)
                or (resource == POD and event.resource == TARGET_POD)
            )
            and bool(self.action & event.action)
            and event.action <= self.action
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterEvent) and (self.resource, self.action) == (
            other.resource,
            other.action,
        )

    def __hash__(self) -> int:
        return hash((self.resource, self.action))

    def __repr__(self) -> str:
        return f"ClusterEvent({self.label})"


class QueueingHint(IntEnum):
    """A plugin's verdict on one event for one pod it rejected (upstream ``QueueingHint``)."""

    QUEUE_SKIP = 0
    QUEUE = 1


#: ``(pod, old, new) -> QueueingHint``: whether the change may make ``pod`` (the pooled pod)
#: schedulable for this plugin. ``old`` is None for an Add, ``new`` None for a Delete. The
#: changed object is a ``PodInfo`` for Pod events, a ``NodeInfo`` for Node events and the
#: raw object (a mapping) for every other kind. A hint that raises counts as QUEUE, as
#: upstream treats a hint's error.
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


class ClusterEventWithHint:
    """An event a plugin registers, with its hint (None: every such event requeues the pod,
    which is also what a bare ``ClusterEvent`` in ``events_to_register`` means)."""

    __slots__ = ("event", "hint")

    def __init__(self, event: ClusterEvent, hint: QueueingHintFn | None = None) -> None:
        self.event = event
        self.hint = hint

    def __repr__(self) -> str:
        name = getattr(self.hint, "__name__", None)
        return f"ClusterEventWithHint({self.event.label}, {name})"


#: Everything: profile changes, and plugins that do not say what they wait for.
WILDCARD_EVENT = ClusterEvent(WILDCARD, ALL, "WildCardEvent")
#: The pool's leftover flush (upstream ``EventUnschedulableTimeout``): a wildcard too.
UNSCHEDULABLE_TIMEOUT_EVENT = ClusterEvent(WILDCARD, ALL, "UnschedulableTimeout")
#: The events the scheduler itself emits (upstream ``framework/events.go``).
ASSIGNED_POD_ADD = ClusterEvent(POD, ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(POD, UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(POD, DELETE, "AssignedPodDelete")
#: Labels are v1.37's ``ClusterEvent.Label()``: the resource, then the action's name.
NODE_ADD = ClusterEvent(NODE, ADD)
NODE_DELETE = ClusterEvent(NODE, DELETE)
NODE_ALLOCATABLE_CHANGE = ClusterEvent(NODE, UPDATE_NODE_ALLOCATABLE)
NODE_LABEL_CHANGE = ClusterEvent(NODE, UPDATE_NODE_LABEL)
NODE_TAINT_CHANGE = ClusterEvent(NODE, UPDATE_NODE_TAINT)
#: Upstream files spec.unschedulable under UpdateNodeTaint (it is the node.kubernetes.io
#: /unschedulable taint in disguise).
NODE_SPEC_UNSCHEDULABLE_CHANGE = NODE_TAINT_CHANGE
NODE_CONDITION_CHANGE = ClusterEvent(NODE, UPDATE_NODE_CONDITION)
NODE_ANNOTATION_CHANGE = ClusterEvent(NODE, UPDATE_NODE_ANNOTATION)
NODE_PREEMPTION_POLICY_CHANGE = ClusterEvent(NODE, UPDATE_NODE_PREEMPTION_POLICY)
NODE_DECLARED_FEATURE_CHANGE = ClusterEvent(NODE, UPDATE_NODE_DECLARED_FEATURE)

#: Storage events (labels: "PersistentVolumeAdd", "storage.k8s.io/CSINodeUpdate", ...); of
#: their deletions only a VolumeAttachment's moves pods (NodeVolumeLimits registers it;
#: upstream watches no other storage deletion).
PV_ADD = ClusterEvent(PERSISTENT_VOLUME, ADD)
PV_UPDATE = ClusterEvent(PERSISTENT_VOLUME, UPDATE)
PVC_ADD = ClusterEvent(PERSISTENT_VOLUME_CLAIM, ADD)
PVC_UPDATE = ClusterEvent(PERSISTENT_VOLUME_CLAIM, UPDATE)
STORAGE_CLASS_ADD = ClusterEvent(STORAGE_CLASS, ADD)
STORAGE_CLASS_UPDATE = ClusterEvent(STORAGE_CLASS, UPDATE)
CSI_NODE_ADD = ClusterEvent(CSI_NODE, ADD)
CSI_NODE_UPDATE = ClusterEvent(CSI_NODE, UPDATE)
CSI_DRIVER_ADD = ClusterEvent(CSI_DRIVER, ADD)
CSI_DRIVER_UPDATE = ClusterEvent(CSI_DRIVER, UPDATE)
CSI_STORAGE_CAPACITY_ADD = ClusterEvent(CSI_STORAGE_CAPACITY, ADD)
CSI_STORAGE_CAPACITY_UPDATE = ClusterEvent(CSI_STORAGE_CAPACITY, UPDATE)
VOLUME_ATTACHMENT_ADD = ClusterEvent(VOLUME_ATTACHMENT, ADD)
VOLUME_ATTACHMENT_UPDATE = ClusterEvent(VOLUME_ATTACHMENT, UPDATE)
VOLUME_ATTACHMENT_DELETE = ClusterEvent(VOLUME_ATTACHMENT, DELETE)
#: kind -> (its add event, its update event).
STORAGE_EVENTS: dict[str, tuple[ClusterEvent, ClusterEvent]] = {
    PERSISTENT_VOLUME: (PV_ADD, PV_UPDATE),
    PERSISTENT_VOLUME_CLAIM: (PVC_ADD, PVC_UPDATE),
    STORAGE_CLASS: (STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE),
    CSI_NODE: (CSI_NODE_ADD, CSI_NODE_UPDATE),
    CSI_DRIVER: (CSI_DRIVER_ADD, CSI_DRIVER_UPDATE),
    CSI_STORAGE_CAPACITY: (CSI_STORAGE_CAPACITY_ADD, CSI_STORAGE_CAPACITY_UPDATE),
    VOLUME_ATTACHMENT: (VOLUME_ATTACHMENT_ADD, VOLUME_ATTACHMENT_UPDATE),
}
#: kind -> its delete event, for the kinds whose deletion moves pods.
STORAGE_DELETE_EVENTS: dict[str, ClusterEvent] = {VOLUME_ATTACHMENT: VOLUME_ATTACHMENT_DELETE}

#: DRA events (labels: "resource.k8s.io/ResourceClaimAdd", ...). Deletions: a claim's (it
#: frees devices) and a DeviceClass's (wildcard plugins watch it); upstream watches no
#: ResourceSlice deletion, and no ResourceClaimTemplate at all.
RESOURCE_CLAIM_ADD = ClusterEvent(RESOURCE_CLAIM, ADD)
RESOURCE_CLAIM_UPDATE = ClusterEvent(RESOURCE_CLAIM, UPDATE)
RESOURCE_CLAIM_DELETE = ClusterEvent(RESOURCE_CLAIM, DELETE)
RESOURCE_SLICE_ADD = ClusterEvent(RESOURCE_SLICE, ADD)
RESOURCE_SLICE_UPDATE = ClusterEvent(RESOURCE_SLICE, UPDATE)
DEVICE_CLASS_ADD = ClusterEvent(DEVICE_CLASS, ADD)
DEVICE_CLASS_UPDATE = ClusterEvent(DEVICE_CLASS, UPDATE)
DEVICE_CLASS_DELETE = ClusterEvent(DEVICE_CLASS, DELETE)
#: kind -> (its add event, its update event).
DRA_EVENTS: dict[str, tuple[ClusterEvent, ClusterEvent]] = {
    RESOURCE_CLAIM: (RESOURCE_CLAIM_ADD, RESOURCE_CLAIM_UPDATE),
    RESOURCE_SLICE: (RESOURCE_SLICE_ADD, RESOURCE_SLICE_UPDATE),
    DEVICE_CLASS: (DEVICE_CLASS_ADD, DEVICE_CLASS_UPDATE),
}
#: kind -> its delete event, for the kinds whose deletion moves pods.
DRA_DELETE_EVENTS: dict[str, ClusterEvent] = {
    RESOURCE_CLAIM: RESOURCE_CLAIM_DELETE,
    DEVICE_CLASS: DEVICE_CLASS_DELETE,
}

_BY_LABEL = {
    e.label: e
    for e in (
        WILDCARD_EVENT,
        ASSIGNED_POD_ADD,
        ASSIGNED_POD_UPDATE,
        ASSIGNED_POD_DELETE,
        NODE_ADD,
        NODE_DELETE,
        NODE_ALLOCATABLE_CHANGE,
        NODE_LABEL_CHANGE,
        NODE_TAINT_CHANGE,
        NODE_CONDITION_CHANGE,
        NODE_ANNOTATION_CHANGE,
        NODE_PREEMPTION_POLICY_CHANGE,
        NODE_DECLARED_FEATURE_CHANGE,
        *(e for pair in STORAGE_EVENTS.values() for e in pair),
        *STORAGE_DELETE_EVENTS.values(),
        *(e for pair in DRA_EVENTS.values() for e in pair),
        *DRA_DELETE_EVENTS.values(),
    )
}


def as_event(event: ClusterEvent | str) -> ClusterEvent:
    """A known event by its upstream label; any other label is a wildcard (moves every pod)."""
    if isinstance(event, ClusterEvent):
        return event
    return _BY_LABEL.get(event) or ClusterEvent(WILDCARD, ALL, event or "WildCardEvent")
