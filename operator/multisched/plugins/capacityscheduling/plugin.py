"""CapacityScheduling: elastic quotas per namespace (scheduler-plugins v0.34.7).

An ElasticQuota gives its namespace a guaranteed ``min`` and a ceiling ``max``. A pod is
refused at PreFilter when its namespace would use more than ``max``, or when all quotas
together would use more than their mins add up to (a quota borrows only what others leave
unused). PostFilter preempts: within the namespace by priority once the quota is over its
min, otherwise from quotas that borrow. Namespaces without a quota are not limited.

``used`` is the namespace's charge in the scheduler cache, which counts every pod on a
node, bound or assumed: upstream's plugin keeps the same sum from its pod informer plus
Reserve/Unreserve, and multisched's cache already charges a pod when it is assumed (just
before Reserve) and uncharges it when forgotten or deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from multisched.cache import ELASTIC_QUOTA, NodeInfo, PodInfo, QuantityError, Resource
from multisched.framework import (
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from multisched.framework.events import ALL, DELETE, POD, ClusterEvent

from .elastic_quota import ElasticQuotaInfo, ElasticQuotaInfos, parse_bounds
from .preemption import QuotaPreemption
from .state import (
    ELASTIC_QUOTA_SNAPSHOT_KEY,
    NAME,
    PRE_FILTER_STATE_KEY,
    ElasticQuotaSnapshotState,
    PreFilterState,
    elastic_quota_snapshot,
    read_error,
)

logger = logging.getLogger(__name__)

Obj = Mapping[str, Any]
Bounds = tuple[Resource, Resource]


def msg_over_max(pod: PodInfo, quota_namespace: str) -> str:
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because ElasticQuota "
        f"{quota_namespace} is more than Max"
    )


def msg_over_min(pod: PodInfo) -> str:
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because total "
        "ElasticQuota used is more than min"
    )


class CapacityScheduling:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self._handle = handle
        #: "namespace/name" -> (the quota object, its parsed bounds or None if malformed):
        #: parsed once per version of the object, not every cycle.
        self._bounds: dict[str, tuple[Obj, Bounds | None]] = {}

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        # Room in a quota frees up when a pod goes or a quota changes.
        return (ClusterEvent(POD, DELETE), ClusterEvent(ELASTIC_QUOTA, ALL))

    # -- PreFilter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = self.snapshot_elastic_quota()
        state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, snapshot)
        infos = snapshot.elastic_quota_infos
        pod_req = pod.requests
        eq = infos.get(pod.namespace)
        if eq is None:
            state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req))
            return None, None

        # Pods preemption already made room for come first: those of this namespace that
        # are at least as important count against its max; with them, those of quotas still
        # within their min count against the sum of mins.
        in_eq, in_all = pod_req.clone(), pod_req.clone()
        nominator = self._handle.nominator
        # A nominator that says it is empty spares asking every node (most cycles).
        for node in nodes if nominator else ():
            for p in nominator.nominated_pods_for_node(node.name):
                info = infos.get(p.namespace)
                if p.uid == pod.uid or info is None:
                    continue
                if p.namespace == pod.namespace and p.priority >= pod.priority:
                    in_eq.add(p.requests)
                    in_all.add(p.requests)
                elif p.namespace != pod.namespace and not info.used_over_min():
                    in_all.add(p.requests)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req, in_eq, in_all))

        if eq.used_over_max_with(in_eq):
            return None, Status.unschedulable(msg_over_max(pod, eq.namespace))
        if infos.aggregated_used_over_min_with(in_all):
            return None, Status.unschedulable(msg_over_min(pod))
        return None, None

    def pre_filter_extensions(self) -> CapacityScheduling:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        snapshot = elastic_quota_snapshot(state)
        if snapshot is None:
            return Status.error(read_error(ELASTIC_QUOTA_SNAPSHOT_KEY))
        info = snapshot.elastic_quota_infos.get(pod_to_add.namespace)
        if info is not None:
            info.add_pod_if_not_present(pod_to_add)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        snapshot = elastic_quota_snapshot(state)
        if snapshot is None:
            return Status.error(read_error(ELASTIC_QUOTA_SNAPSHOT_KEY))
        info = snapshot.elastic_quota_infos.get(pod_to_remove.namespace)
        if info is not None:
            info.delete_pod_if_present(pod_to_remove)
        return None

    # -- PostFilter -----------------------------------------------------------------------

    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        # Upstream returns the evaluator's verdict as is (no "preemption: " prefix); its
        # evaluator (kube-scheduler v1.34.7's) says nothing of a placement it found.
        result, status = await QuotaPreemption(self._handle, state).preempt(state, pod, statuses)
        return result, None if status is not None and status.is_success() else status

    # -- Reserve --------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Nothing to do: upstream charges the pod to its quota here, but the cache did so
        when it assumed the pod a moment ago; charging again would count it twice."""
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Nothing to do: the cache uncharges the pod when it forgets the assumption."""

    # -- quotas ---------------------------------------------------------------------------

    def snapshot_elastic_quota(self) -> ElasticQuotaSnapshotState:
        """This cycle's copy of every namespace's quota, ``used`` read from the cache."""
        snap = self._handle.snapshot
        infos = ElasticQuotaInfos()
        known: dict[str, tuple[Obj, Bounds | None]] = {}
        for namespace, raw in snap.groups.quota_per_namespace().items():
            key = f"{namespace}/{(raw.get('metadata') or {}).get('name') or ''}"
            entry = self._bounds.get(key)
            if entry is None or entry[0] is not raw:
                entry = (raw, _parse(key, raw))
            known[key] = entry
            bounds = entry[1]
            if bounds is not None:
                used = snap.namespace_requests(namespace).clone()
                infos[namespace] = ElasticQuotaInfo(namespace, bounds[0], bounds[1], used)
        self._bounds = known
        return ElasticQuotaSnapshotState(infos)


def _parse(key: str, raw: Obj) -> Bounds | None:
    try:
        return parse_bounds(raw)
    except (QuantityError, AttributeError, TypeError) as exc:
        # The API server validates quantities; an object that slipped through is ignored.
        logger.warning("ElasticQuota %s ignored: %s", key, exc)
        return None
