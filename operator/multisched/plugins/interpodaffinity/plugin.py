"""InterPodAffinity: required pod (anti-)affinity as a filter, preferred terms as a score.

Follows upstream ``interpodaffinity`` (filtering.go, scoring.go). PreFilter counts, per
topology pair, the existing pods relevant to the incoming pod so Filter is a few dict
look-ups per node; PreScore does the same with weights for Score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import add
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    PluginError,
    PreFilterResult,
    Status,
)
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE_NODE_LABEL,
    UPDATE_POD_LABEL,
    ClusterEvent,
    ClusterEventWithHint,
)

from .._batch import for_every_node, snapshot_of
from .._label_values import label_values, looked_up, positions_in
from .filtering import PreFilterState
from .queueing_hints import (
    is_schedulable_after_assigned_pod_change,
    is_schedulable_after_node_change,
    is_schedulable_after_target_pod_update_label,
)
from .scoring import PreScoreState, ScoreCounter, ScoreMap, indexed_scores

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


class InterPodAffinityArgs(BaseModel):
    """Upstream ``InterPodAffinityArgs`` (kubescheduler.config.k8s.io/v1 defaults)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
    )

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _weight(cls, value: int) -> int:
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= value <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(
                f"Invalid value: {value}: not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
            )
        return value


class InterPodAffinity:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = InterPodAffinityArgs

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        args = args or InterPodAffinityArgs()
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self._handle = handle
        #: Read the cache's per-node counts and term index instead of scanning every pod
        #: (the equivalence tests turn it off to compare the two).
        self.use_index = True

    def _snapshot(self) -> Snapshot | None:
        # Tests judge nodes without a framework behind the plugin.
        return snapshot_of(self._handle)

    # -- PreFilter / Filter ----------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # An assigned pod added (affinity), deleted (anti-affinity) or relabelled; the pod's
        # own labels (others' anti-affinity); a node's topology labels.
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, ADD | UPDATE_POD_LABEL | DELETE),
                is_schedulable_after_assigned_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_LABEL), is_schedulable_after_target_pod_update_label
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL), is_schedulable_after_node_change
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = self._handle.snapshot
        has_terms = bool(pod.affinity_terms or pod.anti_affinity_terms)
        s = PreFilterState(pod, snapshot.namespace_labels)
        if self.use_index and nodes is snapshot.node_info_list:
            if not has_terms and not snapshot.terms.anti_affinity:
                return None, Status.skip()
            s.count_existing_anti_affinity_indexed(snapshot)
            if not s.count_incoming_indexed(snapshot):
                s.count_incoming(snapshot.node_info_list)
        else:
            anti_nodes = snapshot.have_pods_with_required_anti_affinity_list()
            if not has_terms and not anti_nodes:
                return None, Status.skip()
            s.count_existing_anti_affinity(anti_nodes)
            s.count_incoming(snapshot.node_info_list)
        if not has_terms and not s.existing_anti_affinity_counts:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add, node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove, node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
        return _judge(s, node.labels)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return for_every_node(
                nodes, Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState')
            )
        return _failing(s, nodes, self._snapshot())

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        has_constraints = bool(pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        snapshot = self._handle.snapshot
        scores = None
        if self.use_index:
            scores = indexed_scores(pod, snapshot, self.hard_pod_affinity_weight)
        if scores is None:
            scores = self._scan_scores(pod, has_constraints)
        if not scores:
            return Status.skip()
        s = PreScoreState()
        s.topology_score = scores
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def _scan_scores(self, pod: PodInfo, has_constraints: bool) -> ScoreMap:
        """Every existing pod that could matter, through ``ScoreCounter`` (upstream's way)."""
        snapshot = self._handle.snapshot
        # Without preferred terms of its own, only pods with affinity can score the pod.
        all_nodes = (
            snapshot.node_info_list if has_constraints else snapshot.have_pods_with_affinity_list()
        )
        counter = ScoreCounter(pod, snapshot.namespace_labels, self.hard_pod_affinity_weight)
        process = counter.process
        for node in all_nodes:
            labels = node.labels
            if not labels:
                continue
            for existing in node.pods if has_constraints else node.pods_with_affinity:
                process(existing, labels)
        return counter.scores

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise PluginError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState')
        return _topology_score(s, node.labels)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise PluginError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState')
        totals = [0] * len(nodes)
        snapshot = self._snapshot()
        for key, by_value in s.topology_score.items():
            # A node without the key adds nothing (by_value has no None key).
            scores = looked_up(label_values(snapshot, key, nodes), by_value)
            totals = list(map(add, totals, scores))
        return totals

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState')
        if not s.topology_score or not scores:
            return None
        low, high = min(scores), max(scores)
        spread = high - low
        if spread > 0:
            scores[:] = [int(MAX_NODE_SCORE * ((score - low) / spread)) for score in scores]
        else:
            scores[:] = [0] * len(scores)
        return None


def _topology_score(s: PreScoreState, labels: Mapping[str, str]) -> int:
    total = 0
    for key, by_value in s.topology_score.items():
        value = labels.get(key)
        if value is not None:
            total += by_value.get(value, 0)
    return total


def _judge(s: PreFilterState, labels: Mapping[str, str]) -> Status | None:
    """Filter's verdict for a node with ``labels``."""
    if s.affinity_terms and not s.satisfies_affinity(labels):
        # Removing pods never creates a matching pod, so preemption cannot help.
        return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    if not s.satisfies_anti_affinity(labels):
        return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if not s.satisfies_existing_anti_affinity(labels):
        return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return None


def _failing(
    s: PreFilterState, nodes: Sequence[NodeInfo], snapshot: Snapshot | None
) -> dict[int, Status]:
    """``_judge`` for many nodes: the failing ones by index (one status per reason). The
    anti-affinity checks are whole-list passes over each topology key's values; a node keeps
    the first reason ``_judge`` would give."""
    anti, existing = s.anti_affinity_blocked(), s.existing_blocked()
    affinity = bool(s.affinity_terms)
    if not affinity and not anti and not existing:
        return {}
    out: dict[int, Status] = {}
    for blocked, status in (
        (existing, Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)),
        (anti, Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)),
    ):
        for key, values in blocked.items():
            out.update(
                dict.fromkeys(positions_in(label_values(snapshot, key, nodes), values), status)
            )
    if affinity:
        unmatched = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        satisfies = s.satisfies_affinity
        out.update((i, unmatched) for i, node in enumerate(nodes) if not satisfies(node.labels))
    return out


PLUGIN = InterPodAffinity
