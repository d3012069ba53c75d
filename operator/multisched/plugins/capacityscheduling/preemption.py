"""CapacityScheduling's PostFilter: upstream's preemption ``Evaluator`` with the quota-aware
``preemptor`` of scheduler-plugins v0.34.7.

Everything but choosing victims is DefaultPreemption's (candidates, picking a node,
evicting); the differences are that every node that might help is dry-run (offset 0, no
minimum-candidates cut) and that victims are chosen by quota:

- a pod whose quota would go over its min preempts only lower-priority pods of its own
  namespace;
- a pod still within its min reclaims it from other quotas, taking only pods of quotas
  that use more than their min (borrowing), never what a quota is guaranteed;
- a pod of a namespace without a quota preempts only lower-priority pods of such
  namespaces.
"""

from __future__ import annotations

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Handle, NodeToStatus, Status
from multisched.plugins._preemption_victims import (
    Pdb,
    importance_key,
    split_by_pdb_violation,
)
from multisched.plugins.default_preemption import (
    MSG_NOT_ELIGIBLE_NEVER,
    MSG_NOT_ELIGIBLE_TERMINATING,
    PREEMPT_NEVER,
    DefaultPreemption,
)

from .elastic_quota import ElasticQuotaInfos
from .state import NAME, elastic_quota_snapshot, pre_filter_state

MSG_NOT_ELIGIBLE_STATE = "not eligible due to failed to read from cycleState"
MSG_READ_SNAPSHOT = "Failed to read elasticQuotaSnapshot from cycleState"
MSG_READ_PRE_FILTER = "Failed to read preFilterState from cycleState"
MSG_QUOTA_EXCEEDED = "global quota max exceeded"


def msg_no_victims(node: str, pod: str) -> str:
    return f"No victims found on node {node} for preemptor pod {pod}"


class QuotaPreemption(DefaultPreemption):
    """One PostFilter call's evaluator (upstream builds its ``preemptor`` per call too,
    holding the cycle state that PodEligibleToPreemptOthers reads)."""

    name = NAME
    # scheduler-plugins v0.34.7 builds its evaluator with enableAsyncPreemption false, on
    # v1.34's executor: victims are deleted inside the cycle, and one waiting at Permit is
    # rejected (in CapacityScheduling's name) rather than preempted.
    async_preemption = False
    preempt_waiting = False

    def __init__(self, handle: Handle, state: CycleState) -> None:
        super().__init__(None, handle)
        self._state = state

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[bool, str]:
        """Not while a pod it may have preempted for is still terminating on its nominated
        node: the room it frees may already be enough."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, MSG_NOT_ELIGIBLE_NEVER
        pre = pre_filter_state(self._state)
        if pre is None:
            return False, MSG_NOT_ELIGIBLE_STATE
        nominated = pod.nominated_node_name or self._handle.nominator.nominated_node(pod.uid)
        if not nominated:
            return True, ""
        status = statuses.get(nominated)
        if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        snapshot = elastic_quota_snapshot(self._state)
        node = self._handle.snapshot.get(nominated)
        if snapshot is None or node is None:
            return True, ""
        infos = snapshot.elastic_quota_infos
        preemptor_eq = infos.get(pod.namespace)
        if preemptor_eq is None:
            for p in node.pods:
                if p.namespace not in infos and p.terminating and p.priority < pod.priority:
                    return False, MSG_NOT_ELIGIBLE_TERMINATING
            return True, ""
        over_min = preemptor_eq.used_over_min_with(pre.nominated_pods_req_in_eq_with_pod_req)
        for p in node.pods:
            eq = infos.get(p.namespace)
            if not p.terminating or eq is None:
                continue
            if p.namespace == pod.namespace:
                if p.priority < pod.priority:
                    return False, MSG_NOT_ELIGIBLE_TERMINATING
            elif not over_min and eq.used_over_min():
                return False, MSG_NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: list[Pdb], now: float
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream ``preemptor.SelectVictimsOnNode``; ``state`` and ``node`` are copies.

        Removing a pod runs the PreFilter extensions, so this quota snapshot's ``used``
        follows the dry run and the quota checks below see the node without its victims.
        """
        snapshot = elastic_quota_snapshot(state)
        if snapshot is None:
            return [], 0, Status.unschedulable(MSG_READ_SNAPSHOT)
        pre = pre_filter_state(state)
        if pre is None:
            return [], 0, Status.unschedulable(MSG_READ_PRE_FILTER)
        infos = snapshot.elastic_quota_infos
        preemptor_eq = infos.get(pod.namespace)
        # Decided once, before any removal: over its min, the pod competes in its own
        # namespace; within it, it reclaims from the quotas that borrow.
        over_min = preemptor_eq is not None and preemptor_eq.used_over_min_with(
            pre.nominated_pods_req_in_eq_with_pod_req
        )
        key = importance_key(now)
        potential: list[PodInfo] = []
        # Least important first, as upstream sorts the node's pods before picking.
        for p in sorted(node.pods, key=key, reverse=True):
            if not _potential_victim(pod, p, preemptor_eq is not None, over_min, infos):
                continue
            potential.append(p)
            if (st := self._remove_victim(state, pod, p, node)) is not None:
                return [], 0, st
        if not potential:
            return [], 0, Status.unresolvable(msg_no_victims(node.name, pod.name))
        handle = self._handle
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None and not status.is_success():
            return [], 0, status
        if preemptor_eq is not None and (
            preemptor_eq.used_over_max_with(pre.pod_req)
            or infos.aggregated_used_over_min_with(pre.pod_req)
        ):
            return [], 0, Status.unschedulable(MSG_QUOTA_EXCEEDED)

        potential.sort(key=key)
        victims: list[PodInfo] = []
        num_violating = 0
        violating, non_violating = split_by_pdb_violation(potential, pdbs)
        # Reprieve as many as fit, PDB-protected pods first, most important first; a pod
        # that fits but would put the quotas back over their bounds stays a victim.
        for group, is_violating in ((violating, True), (non_violating, False)):
            for p in group:
                fits, st = self.reprieve(state, pod, p, node)
                if st is not None:
                    return [], 0, st
                if not fits:
                    if (st := self._remove_victim(state, pod, p, node)) is not None:
                        return [], 0, st
                    victims.append(p)
                    if is_violating:
                        num_violating += 1
                if preemptor_eq is not None and (
                    preemptor_eq.used_over_max_with(pre.nominated_pods_req_in_eq_with_pod_req)
                    or infos.aggregated_used_over_min_with(pre.nominated_pods_req_with_pod_req)
                ):
                    if (st := self._remove_victim(state, pod, p, node)) is not None:
                        return [], 0, st
                    victims.append(p)
        # Reprieving went group by group: keep the victims most important first (v0.34).
        if violating and non_violating:
            victims.sort(key=key)
        return victims, num_violating, None

    def _remove_victim(
        self, state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo
    ) -> Status | None:
        # Upstream's NodeInfo.RemovePod fails for a pod no longer there (a pod that failed
        # the filters and still leaves the quotas over their bounds is removed twice).
        if not node.remove_pod(victim):
            return Status.error(f"no corresponding pod {victim.name} in pods of node {node.name}")
        st = self._handle.run_pre_filter_extension_remove_pod(state, pod, victim, node)
        if st is not None and not st.is_success():
            return _as_error(st)
        return None


def _potential_victim(
    pod: PodInfo, p: PodInfo, with_quota: bool, over_min: bool, infos: ElasticQuotaInfos
) -> bool:
    """Whether ``p`` may make room for ``pod``; read as the dry run removes pods, so a
    borrowing quota stops giving up pods once it is back within its min."""
    eq = infos.get(p.namespace)
    if not with_quota:
        return eq is None and p.priority < pod.priority
    if eq is None:
        return False
    if over_min:
        return p.namespace == pod.namespace and p.priority < pod.priority
    return p.namespace != pod.namespace and eq.used_over_min()


def _as_error(status: Status) -> Status:
    return status if status.code == Code.ERROR else Status.error(status.message())
