"""What the cluster tells the engine (upstream ``eventhandlers.go``): pods, nodes,
namespaces, PDBs, storage and DRA objects, PodGroups and ElasticQuotas in, each handed to
the queue with the object before and after, for the hints of the plugins that rejected its
pods.
``feed.EngineFeed`` is this surface; the operator, simulate and explain come in only through
it (``Scheduler.feed``).
The schedule-one path is scheduler.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from multisched.cache import Cache, PodInfo
from multisched.framework import Framework
from multisched.framework.events import (
    ADD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    DELETE,
    DRA_DELETE_EVENTS,
    DRA_EVENTS,
    NODE_ADD,
    NODE_DELETE,
    RESOURCE_CLAIM_UPDATE,
    RESOURCE_SLICE_UPDATE,
    STORAGE_DELETE_EVENTS,
    STORAGE_EVENTS,
    UPDATE,
    ClusterEvent,
)
from multisched.meta import object_key
from multisched.queue import SchedulingQueue

from .binding_cycle import BindingCycles
from .cluster_events import (
    assigned_pod_properties_change,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from .failure import FailureHandler


class EventHandlers:
    """The scheduler's cache and queue as the cluster changes them; a watch's answer for a
    binding whose response was lost goes to the binding cycles."""

    __slots__ = ("_binding", "_failure", "_profiles", "cache", "queue")

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: Callable[[], Mapping[str, Framework]],
        binding: BindingCycles,
        failure: FailureHandler,
    ) -> None:
        self.cache = cache
        self.queue = queue
        #: The scheduler's live profiles (``set_config`` swaps them).
        self._profiles = profiles
        self._binding = binding
        self._failure = failure
        # A claim the scheduler assumes (PreBind's write) or restores is an event too, as
        # upstream's assume cache raises it: the pods waiting for that claim move.
        cache.dra.on_claim_assumed = self._claim_assumed
        # A DeviceTaintRule change that retaints a slice is that slice's update, as
        # upstream's slice tracker reports it: pods waiting for a device may fit now.
        cache.dra.on_slice_retainted = self._slice_retainted

    @property
    def profiles(self) -> Mapping[str, Framework]:
        return self._profiles()

    def responsible_for(self, pod: PodInfo) -> bool:
        return pod.scheduler_name in self.profiles

    # -- cluster events -------------------------------------------------------------------
    # What the cluster tells the engine: ``feed.EngineFeed``, the only way in for the
    # operator, simulate and explain.

    def serves(self, scheduler_name: str) -> bool:
        """Whether a profile has this schedulerName (a pod of another name is not ours)."""
        return scheduler_name in self.profiles

    def on_pod(self, pod: PodInfo) -> None:
        """A pod was added or changed (watch event or simulate input)."""
        self.cache.groups.track_pod(pod)
        if pod.node_name:
            self.queue.delete(pod.uid)
            old = self.cache.get_pod(pod.uid)
            newly = old is None or self.cache.is_assumed(pod.uid)
            self.cache.add_pod(pod)  # confirms an assumption, wherever it was
            self._binding.confirmed(pod.uid, pod.node_name)
            # Upstream raises these with no pod in the pool too: pods in flight see them.
            if newly:
                self._assigned_pod_added(pod)
            elif old is not None:
                for event in assigned_pod_properties_change(old, pod):
                    self.queue.move_all_to_active_or_backoff(event, old=old, new=pod)
            return
        if pod.terminating or not self.responsible_for(pod):
            self.queue.delete(pod.uid)
            return
        if self.cache.is_assumed(pod.uid):
            return  # being bound right now; the bound update will follow
        queued = self.queue.info(pod.uid)
        if queued is None:
            self.queue.add(pod)
        else:
            old = queued.pod
            self.queue.update(pod, pod_scheduling_properties_change(old, pod))
            self._nomination_left(old, pod)

    def on_pod_status(self, pod: PodInfo) -> None:
        """Only the status (or bookkeeping metadata) of a pending pod changed: a queued pod
        keeps its place and is read from this object from now on."""
        old = self.queue.update_status(pod)
        if old is not None:
            self._nomination_left(old, pod)

    def _nomination_left(self, old: PodInfo, new: PodInfo | None) -> None:
        """A pending pod left the node it was nominated to (another nomination, none, or
        the pod deleted): pods of lower or equal priority counted it there as if assigned,
        so it is an AssignedPodDelete for them (upstream ``hasNominatedNodeNameChanged``
        and ``deletePodFromSchedulingQueue``)."""
        node = old.nominated_node_name
        if not node or (new is not None and new.nominated_node_name == node):
            return
        priority = old.priority
        self.queue.move_all_to_active_or_backoff(
            ASSIGNED_POD_DELETE, only=lambda q: q.pod.priority <= priority, old=old
        )

    def on_unreadable_pod(self, uid: str) -> None:
        """The pod's latest version could not be read: it leaves the queue."""
        self.queue.delete(uid)

    def on_nominated_pod(self, pod: PodInfo) -> None:
        """A pending pod that is not queued holds the node its status nominates, for the
        filters of pods of lower priority (explain: the other pods' nominations)."""
        self.queue.nominator.add_nominated_pod(pod, pod.nominated_node_name)

    def track_group_member(self, pod: PodInfo) -> None:
        """Count the pod in its PodGroup (``on_pod`` does so too), pending or bound."""
        self.cache.groups.track_pod(pod)

    def untrack_group_member(self, uid: str) -> None:
        """The pod no longer counts in its PodGroup (deleted or finished while pending)."""
        self.cache.groups.untrack_pod(uid)

    def forget_pending(self, uid: str, deleted: bool = False) -> None:
        """The pod is no longer waiting for a scheduler (bound, finished, deleted or not
        ours); what it holds on a node is the assigned-pod view's to say. ``deleted``: not
        bound but gone (upstream's ``deletePodFromSchedulingQueue``)."""
        queued = self.queue.info(uid) if deleted else None
        self.queue.delete(uid)
        self._failure.forget(uid)
        for fwk in self.profiles.values():
            waiting = fwk.get_waiting_pod(uid)
            if waiting is not None:
                waiting.reject("", "pod was deleted while waiting at Permit")
        if queued is not None and self.cache.get_pod(uid) is None:
            self._nomination_left(queued.pod, None)  # an assumed one frees its node as such

    def on_pod_deleted(self, uid: str) -> None:
        self.cache.groups.untrack_pod(uid)
        self.forget_pending(uid, deleted=True)
        self._binding.confirmed(uid)
        gone = self.cache.remove_pod(uid)
        if gone is not None:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=gone)

    def _assigned_pod_added(self, pod: PodInfo) -> None:
        """A pod was bound: the hints of the plugins that registered it decide whom it may
        help (v1.37 ``addAssignedPodToCache``; InterPodAffinity's, for one, looks for a
        required affinity term it matches)."""
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, new=pod)

    def on_node(self, raw: dict[str, object]) -> None:
        """A node was added or changed; only scheduling-relevant changes requeue pods, one
        event per changed property, with the node before and after for the hints."""
        meta = raw.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        old = self.cache.snapshot.get(name)
        old_raw = old.raw if old is not None else None
        if not old_raw:
            self.queue.move_all_to_active_or_backoff(NODE_ADD, new=self.cache.add_node(raw))
            return
        events = node_scheduling_properties_change(old_raw, raw)
        # The cache updates its NodeInfo in place: the hints' old node is a copy from before
        # (made only for a change that is an event: heartbeats cost nothing).
        before = old.clone() if events and old is not None else None
        new = self.cache.add_node(raw)
        for event in events:
            self.queue.move_all_to_active_or_backoff(event, old=before, new=new)

    def on_node_deleted(self, name: str) -> None:
        gone = self.cache.snapshot.get(name)
        self.cache.remove_node(name)
        self.queue.move_all_to_active_or_backoff(NODE_DELETE, old=gone)

    def on_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """A namespace was added or changed: its labels (namespace selectors read them)."""
        self.cache.set_namespace(name, labels)

    def on_namespace_deleted(self, name: str) -> None:
        self.cache.set_namespace(name, None)

    def on_pdb(self, key: str, raw: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget (``key``: ``namespace/name``) was added or changed."""
        self.cache.set_pdb(key, raw)

    def on_pdb_deleted(self, key: str) -> None:
        self.cache.set_pdb(key, None)

    def on_storage_object(self, kind: str, raw: dict[str, Any]) -> None:
        """A PV, claim, StorageClass or CSI object was added or changed: pods a volume
        plugin rejected may fit now (upstream's storage event handlers)."""
        volumes = self.cache.volumes
        old = volumes.get(kind, object_key(raw))
        if not volumes.upsert(kind, raw):
            return  # not newer than what the binder assumed: nothing changed for readers
        add, update = STORAGE_EVENTS[kind]
        if old is None:
            self.queue.move_all_to_active_or_backoff(add, new=raw)
        else:
            self.queue.move_all_to_active_or_backoff(update, old=old, new=raw)

    def on_dra_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice or
        DeviceTaintRule was added, changed or (``deleted``) deleted: pods DynamicResources
        (or NodeResourcesFit, for a class's extended resource) rejected may fit now.
        Templates raise no event: upstream watches none (the resourceclaim controller turns
        them into claims); a rule raises the updates of the slices it retaints."""
        dra = self.cache.dra
        old = dra.get(kind, object_key(raw))
        if deleted:
            dra.delete(kind, raw)
            event = DRA_DELETE_EVENTS.get(kind)
            if event is not None:
                self.queue.move_all_to_active_or_backoff(event, old=old or raw)
            return
        if not dra.upsert(kind, raw):
            return  # not newer than the claim the scheduler assumed: nothing changed
        events = DRA_EVENTS.get(kind)
        if events is None:
            return
        add, update = events
        if old is None:
            self.queue.move_all_to_active_or_backoff(add, new=raw)
        else:
            self.queue.move_all_to_active_or_backoff(update, old=old, new=raw)

    def _claim_assumed(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.move_all_to_active_or_backoff(RESOURCE_CLAIM_UPDATE, old=old, new=new)

    def _slice_retainted(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.move_all_to_active_or_backoff(RESOURCE_SLICE_UPDATE, old=old, new=new)

    def on_group_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A PodGroup or ElasticQuota was added, changed or deleted: the gang and quota
        plugins' rejections may no longer hold (scheduler-plugins registers these events)."""
        groups = self.cache.groups
        if deleted:
            groups.delete(kind, raw)
            self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, DELETE), old=raw)
            return
        meta = raw.get("metadata") or {}
        old = groups.get(kind, meta.get("namespace") or "default", meta.get("name") or "")
        groups.upsert(kind, raw)
        action = ADD if old is None else UPDATE
        self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, action), old=old, new=raw)

    def on_workload_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
        """A Service or pod controller changed: only scores read it (default spreading), so
        no rejected pod may fit because of it, and none moves (upstream registers no event)."""
        if deleted:
            self.cache.workloads.delete(kind, raw)
        else:
            self.cache.workloads.upsert(kind, raw)

    def on_storage_object_deleted(self, kind: str, raw: dict[str, Any]) -> None:
        """The readers forget it; only a VolumeAttachment's going moves pods (a node's
        attach slot freed, for NodeVolumeLimits), as upstream watches no other deletion."""
        self.cache.volumes.delete(kind, raw)
        event = STORAGE_DELETE_EVENTS.get(kind)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event, old=raw)
