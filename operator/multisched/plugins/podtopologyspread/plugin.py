"""PodTopologySpread: spread matching pods across topology domains.

Follows upstream ``podtopologyspread`` (plugin.go, common.go, filtering.go, scoring.go):
DoNotSchedule constraints filter, ScheduleAnyway constraints score. A pod without
constraints of its own gets the profile's default constraints over its default selector:
the Services that select it and its ReplicaSet, StatefulSet or ReplicationController
(``default_selector``, from the cache's ``WorkloadStore``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

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
    UPDATE_NODE_TAINT,
    UPDATE_POD_LABEL,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from .._batch import for_every_node, snapshot_of
from .._hints import is_assigned, is_target_pod
from .args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from .common import (
    Constraint,
    PodCountMemo,
    build_default_constraints,
    filter_constraints,
    honors_taints,
    node_has_keys,
)
from .filtering import (
    PreFilterState,
    compute_pre_filter_state,
    failing_nodes,
    fits,
    indexed_pre_filter_state,
)
from .scoring import (
    PreScoreState,
    compute_pre_score_state,
    indexed_pre_score_state,
    normalize,
    score_node,
    score_nodes,
)

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

#: What reading a malformed constraint raises (SelectorError is a ValueError).
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError)


class PodTopologySpread:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle | None) -> None:
        args = args or PodTopologySpreadArgs()
        self._handle = handle
        self._counts = PodCountMemo()
        #: Read the cache's per-node counts instead of scanning every node's pods (the
        #: equivalence tests turn it off to compare the two).
        self.use_index = True
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        defaults: tuple[dict[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS
            if self.system_defaulted
            else tuple(c.as_raw() for c in args.default_constraints)
        )
        self._defaults = {
            action: tuple(c for c in defaults if c.get("whenUnsatisfiable") == action)
            for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
        }

    def _snapshot(self) -> Snapshot | None:
        return snapshot_of(self._handle)

    def _constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's constraints for ``action``, else the defaults.

        PodInfo keeps the constraints raw, so a malformed one raises here (``_MALFORMED``).
        """
        own = pod.topology_spread_constraints
        if own:
            return filter_constraints(own, pod.labels, action)
        defaults = self._defaults[action]
        if not defaults:
            return []
        snapshot = self._snapshot()
        workloads = snapshot.workloads if snapshot is not None else None
        return build_default_constraints(defaults, pod, action, workloads)

    # -- PreFilter / Filter ----------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Matching pods and topology domains move the skew; taints count under nodeTaintsPolicy.
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, ADD | UPDATE_POD_LABEL | DELETE),
                self.is_schedulable_after_assigned_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_TOLERATION | UPDATE_POD_LABEL),
                self.is_schedulable_after_target_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | DELETE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
        )

    # -- Queueing hints (a malformed constraint raises: the queue then requeues) ----------

    def is_schedulable_after_target_pod_change(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """The pod's own update: a new toleration counts under nodeTaintsPolicy Honor, a new
        label when it changes what a constraint's selector says of the pod."""
        if old is None or new is None or not is_target_pod(pod, new):
            return QueueingHint.QUEUE_SKIP  # the framework files all pod updates under Pod
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if _tolerations(old) != _tolerations(new) and honors_taints(constraints):
            return QueueingHint.QUEUE
        return _label_change(old, new, constraints)

    def is_schedulable_after_assigned_pod_change(
        self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """A same-namespace pod on a node (or nominated) that a constraint selects was added
        or deleted, or relabelled into or out of a selector."""
        for changed in (old, new):
            if changed is not None and (
                not is_assigned(changed) or changed.namespace != pod.namespace
            ):
                return QueueingHint.QUEUE_SKIP
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            return _label_change(old, new, constraints)
        changed = new if new is not None else old
        if changed is None:
            return QueueingHint.QUEUE
        for c in constraints:
            if c.selector.matches(changed.labels):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: PodInfo, old: NodeInfo | None, new: NodeInfo | None
    ) -> QueueingHint:
        """A node with every topology key added or deleted, gaining or losing one, or
        keeping them all while a key's value or its taints change."""
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        old_matching = old is not None and node_has_keys(old.labels, constraints)
        new_matching = new is not None and node_has_keys(new.labels, constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return QueueingHint.QUEUE
            if new_matching and (
                any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key)
                    for c in constraints)
                or _taints(old) != _taints(new)
            ):  # fmt: skip
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        matching = new_matching if new is not None else old_matching
        return QueueingHint.QUEUE if matching else QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except _MALFORMED as exc:
            return None, Status.error(f"obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, Status.skip()
        s = None
        snapshot = self._snapshot()
        if self.use_index and snapshot is not None and nodes is snapshot.node_info_list:
            s = indexed_pre_filter_state(constraints, pod, snapshot)
        if s is None:
            self._counts.trim(len(nodes))
            s = compute_pre_filter_state(constraints, pod, nodes, self._counts)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        s.update_with_pod(pod_to_add, pod, node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        s.update_with_pod(pod_to_remove, pod, node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return _verdict(fits(s, node))

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return for_every_node(
                nodes, Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
            )
        # One status per reason: the cycle only names them (nodes may share one).
        skew = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        label = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        return failing_nodes(s, nodes, self._snapshot(), skew, label)

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        all_nodes = self._handle.snapshot.node_info_list if self._handle is not None else nodes
        if not all_nodes:
            return Status.skip()
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except _MALFORMED as exc:
            return Status.error(
                f"calculating preScoreState: obtaining pod's soft topology spread "
                f"constraints: {exc}"
            )
        if not constraints:
            return Status.skip()
        # Only non-system-default rules need every topology label on a node, so nodes
        # without a zone label still get hostname spreading from the system defaults.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        s = None
        snapshot = self._snapshot()
        if self.use_index and snapshot is not None:
            s = indexed_pre_score_state(constraints, pod, nodes, snapshot, require_all)
        if s is None:
            self._counts.trim(len(all_nodes))
            s = compute_pre_score_state(
                constraints, pod, nodes, all_nodes, require_all, self._counts
            )
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise PluginError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return score_node(s, pod, node, self._counts)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise PluginError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return score_nodes(s, pod, nodes, self._counts, self._snapshot())

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status.error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        normalize(s, nodes, scores, MAX_NODE_SCORE)
        return None


def _verdict(fit: int) -> Status | None:
    """``fits``' answer as Filter's status."""
    if fit == 0:
        return None
    if fit == 2:
        return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
    return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


def _label_change(old: PodInfo, new: PodInfo, constraints: Sequence[Constraint]) -> QueueingHint:
    """``isSchedulableAfterPodLabelChange``: some selector's verdict on the pod flipped."""
    if old.labels == new.labels:
        return QueueingHint.QUEUE_SKIP
    for c in constraints:
        if c.selector.matches(old.labels) != c.selector.matches(new.labels):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _tolerations(pod: PodInfo) -> list[tuple[str, str, str, str]]:
    return [(t.key, t.operator, t.value, t.effect) for t in pod.tolerations]


def _taints(node: NodeInfo) -> list[tuple[str, str, str]]:
    return [(t.key, t.value, t.effect) for t in node.taints]


PLUGIN = PodTopologySpread
