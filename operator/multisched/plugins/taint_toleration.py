"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Follows upstream ``tainttoleration/taint_toleration.go`` (v1.37). The Filter reason names
no taint, as since v1.35: ``node(s) had untolerated taint(s)`` (keys and values can be private
to the node's owner; the -v=4 log names it upstream). Score
counts the node's PreferNoSchedule taints the pod does not tolerate; NormalizeScore reverses
it so the node with the fewest wins. Toleration comparison operators (Gt/Lt, an alpha feature
gate upstream) are off, as in upstream's default.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from multisched.cache import NodeInfo, PodInfo, Toleration
from multisched.framework import MAX_NODE_SCORE, CycleState, Handle, PluginError, Status
from multisched.framework.events import (
    ADD,
    NODE,
    POD,
    UPDATE_NODE_TAINT,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._batch import failing, marked, snapshot_of
from ._hints import is_target_pod
from ._normalize import default_normalize_score
from ._untolerated_taint import untolerated_taint

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

_PREFER_NO_SCHEDULE = "PreferNoSchedule"
_TAINTS = attrgetter("taints")


class TaintToleration:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # A node's taints and the pod's own tolerations decide it.
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_TAINT), is_schedulable_after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_TOLERATION),
                is_schedulable_after_target_pod_toleration_change,
            ),
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.taints or untolerated_taint(node, pod.tolerations) is None:
            return None
        return Status.unresolvable(ERR_REASON_UNTOLERATED)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        return failing(
            self.filter, state, pod, nodes, marked(nodes, _TAINTS, snapshot_of(self._handle))
        )

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        # An empty effect tolerates every effect, PreferNoSchedule included.
        prefer: tuple[Toleration, ...] = tuple(
            t for t in pod.tolerations if not t.effect or t.effect == _PREFER_NO_SCHEDULE
        )
        state.write(PRE_SCORE_STATE_KEY, prefer)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        taints = node.taints
        if not taints:
            return 0
        try:
            tolerations: tuple[Toleration, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            raise PluginError(
                f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found'
            ) from None
        count = 0
        for taint in taints:
            if taint.effect != _PREFER_NO_SCHEDULE:
                continue
            if not any(t.tolerates(taint) for t in tolerations):
                count += 1
        return count

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` for every node at once; most nodes have no taints and score 0."""
        scores = [0] * len(nodes)
        for i in marked(nodes, _TAINTS, snapshot_of(self._handle)):
            scores[i] = self.score(state, pod, nodes[i])
        return scores

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None


def is_schedulable_after_node_change(
    pod: PodInfo, old: NodeInfo | None, new: NodeInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: the node now has no NoSchedule/NoExecute
    taint the pod does not tolerate, and had one before (or is new)."""
    tolerations = pod.tolerations
    if new.taints and untolerated_taint(new, tolerations) is not None:
        return QueueingHint.QUEUE_SKIP
    if old is not None and (not old.taints or untolerated_taint(old, tolerations) is None):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_target_pod_toleration_change(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterTargetPodTolerationChange``: any new toleration of the
    pod itself may be the one it lacked."""
    return QueueingHint.QUEUE if is_target_pod(pod, new) else QueueingHint.QUEUE_SKIP


PLUGIN = TaintToleration
