"""DefaultPreemption: when no node fits, evict lower-priority pods to make one fit.

Follows upstream ``defaultpreemption`` and ``framework/preemption``: nodes that failed
Filter with plain Unschedulable are dry-run (all lower-priority pods removed, then as many
as possible reprieved) from a random offset until enough candidates are found; the pod is
nominated to the least harmful candidate and its victims are deleted off the scheduling
cycle (``_preemption_executor``), the pod held at PreEnqueue until they are.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    FitError,
    Handle,
    NodeToStatus,
    PostFilterResult,
    QueueingHint,
    Status,
)
from multisched.framework.events import ASSIGNED_POD_DELETE
from multisched.validation.names import aggregate

from ._node_values import NodeValues
from ._preemption_executor import Executor, set_nominated_node
from ._preemption_victims import (
    Candidate,
    Pdb,
    importance_key,
    pick_one_node,
    split_by_pdb_violation,
)

NAME = "DefaultPreemption"
logger = logging.getLogger(__name__)

MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NO_NODES = "no nodes available"
MSG_WAITING = "waiting for the preemption for this pod to be finished"
PREEMPT_NEVER = "Never"


class DefaultPreemptionArgs(BaseModel):
    """Upstream ``DefaultPreemptionArgs`` (kubescheduler.config.k8s.io/v1 defaults)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @field_validator("min_candidate_nodes_percentage")
    @classmethod
    def _percentage(cls, value: int) -> int:
        if not 0 <= value <= 100:
            raise ValueError(f"Invalid value: {value}: not in valid range [0, 100]")
        return value

    @field_validator("min_candidate_nodes_absolute")
    @classmethod
    def _absolute(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"Invalid value: {value}: not in valid range [0, inf)")
        return value

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesAbsolute"
            )
        return self


class DefaultPreemption:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = DefaultPreemptionArgs
    #: SchedulerAsyncPreemption (on by default since v1.33): victims are deleted off the
    #: scheduling cycle. An evaluator built per call (CapacityScheduling's) deletes in it.
    async_preemption: ClassVar[bool] = True
    #: v1.36: a victim waiting at Permit is preempted, not rejected (``Executor``).
    preempt_waiting: ClassVar[bool] = True

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        args = args or DefaultPreemptionArgs()
        self.min_candidate_nodes_percentage = args.min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = args.min_candidate_nodes_absolute
        self._handle = handle
        self._own_rng = random.Random()
        self._lowest: NodeValues[float] = NodeValues()
        self.executor = Executor(handle, self.name, self.preempt_waiting)

    @property
    def rng(self) -> random.Random:
        """The framework's random source when it has one (tests seed it)."""
        rng = getattr(self._handle, "rng", None)
        return rng if isinstance(rng, random.Random) else self._own_rng

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Hold a preemptor back while its victims are being deleted."""
        if self.executor.is_pod_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_WAITING, plugin=NAME)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A deleted pod may un-gate a preemptor. The hint always skips: the plugins that
        rejected the pod decide whether the deletion helps it (upstream)."""
        return [ClusterEventWithHint(ASSIGNED_POD_DELETE, _skip)]

    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status = await self.preempt(state, pod, statuses)
        if status is not None and status.message():
            return result, Status(status.code, "preemption: " + status.message())
        return result, status

    async def preempt(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt`` (without extenders)."""
        # Every call counts, eligible or not, as upstream's (and CapacityScheduling's) do.
        self._handle.recorder.preemption_attempt()
        eligible, msg = self.pod_eligible_to_preempt_others(pod, statuses)
        if not eligible:
            return None, Status.unschedulable(msg)
        all_nodes = self._handle.snapshot.node_info_list
        if not all_nodes:
            return None, Status.error(MSG_NO_NODES)
        # Upstream ``NodesForStatusCode(Unschedulable)``: the nodes rejected as Unschedulable
        # alone. A node without a status counts as UnschedulableAndUnresolvable, the default
        # of v1.37's NodeToStatus (the scheduler gives every node one, those outside a
        # PreFilter result included). Nodes share status objects: when none is resolvable
        # (a request no node could ever hold), no node is walked.
        potential: list[NodeInfo] = []
        if any(s.code == Code.UNSCHEDULABLE for s in set(statuses.values())):
            potential = [
                n
                for n in all_nodes
                if (s := statuses.get(n.name)) is not None and s.code == Code.UNSCHEDULABLE
            ]
        if not potential:
            await self._clear_nominated_node(pod)
            return PostFilterResult(""), Status.unschedulable(self._fit_message(pod, {}))
        now = time.time()
        offset, num_candidates = self.get_offset_and_num_candidates(len(potential))
        pdbs = Pdb.parse_all(self._handle.snapshot.pdbs)
        candidates, node_statuses, errors = self.dry_run_preemption(
            state, pod, potential, pdbs, offset=offset, num_candidates=num_candidates, now=now
        )
        if not candidates:
            if errors:
                return None, Status.error(aggregate(errors))
            return PostFilterResult(""), Status.unschedulable(self._fit_message(pod, node_statuses))
        best = candidates[0] if len(candidates) == 1 else pick_one_node(candidates, now)
        if best is None or not best.name:
            return None, Status.unschedulable("no candidate node for preemption")
        if self.async_preemption:
            self.executor.prepare_candidate_async(best, pod)
        elif (status := await self.prepare_candidate(best, pod)) is not None:
            return None, status
        # v1.37 says a found placement: it ends the pod's FailedScheduling message.
        found = f"found a potential placement for pod on node {best.name}"
        return PostFilterResult(best.name), Status(
            Code.SUCCESS, f"{found}, preempting {len(best.victims)} victims"
        )

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``.

        A pod whose earlier preemption is still evicting victims on its nominated node
        waits for them rather than preempting more.
        """
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, MSG_NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name or _nominated_node(self._handle, pod)
        if not nominated:
            return True, ""
        status = statuses.get(nominated)
        # A node absent from the map counts as UnschedulableAndUnresolvable upstream.
        if status is None or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        node = self._handle.snapshot.get(nominated)
        if node is not None:
            for p in node.pods:
                if p.priority < pod.priority and p.preempted_by_scheduler:
                    return False, MSG_NOT_ELIGIBLE_TERMINATING
        return True, ""

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: list[NodeInfo],
        pdbs: list[Pdb],
        *,
        offset: int,
        num_candidates: int,
        now: float,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Candidates (non-PDB-violating first), failed nodes' statuses, and errors.

        Stops once it has ``num_candidates`` including at least one that violates no PDB.
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[str] = []
        n = len(potential)
        priority = pod.priority
        lowest = self.lowest_priorities(potential)
        no_victims = Status.unresolvable(MSG_NO_VICTIMS)
        if lowest is not None and min(lowest, default=math.inf) >= priority:
            # No victim on any node: what the walk below would find, at once.
            return [], dict.fromkeys(map(_NAME, potential), no_victims), []
        for i in range(n):
            at = (offset + i) % n
            node = potential[at]
            if lowest is not None and lowest[at] >= priority:
                node_statuses[node.name] = no_victims  # found without copying the node
                continue
            node = node.clone()
            victims, num_violations, status = self.select_victims_on_node(
                state.clone(), pod, node, pdbs, now
            )
            if status is None and victims:
                bucket = violating if num_violations else non_violating
                if len(bucket) < num_candidates:
                    bucket.append(Candidate(node.name, victims, num_violations))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status.error(f'expected at least one victim pod on node "{node.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            node_statuses[node.name] = status
        return non_violating + violating, node_statuses, errors

    def lowest_priorities(self, nodes: list[NodeInfo]) -> list[float] | None:
        """The lowest priority of a pod on each node (infinity on an empty one), kept while
        the node is unchanged: ``select_victims_on_node`` finds no victim where it is not
        below the preemptor's, and a full cluster of equal priority has none anywhere, so
        each of its pending pods would otherwise copy every node and its cycle state to find
        that out. None when a subclass picks its own victims (a quota over its min gives up
        pods whatever their priority)."""
        if type(self).select_victims_on_node is not DefaultPreemption.select_victims_on_node:
            return None
        return self._lowest.values(self._handle.snapshot, _LOWEST, nodes, _lowest_priorities)

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: list[Pdb], now: float
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream ``SelectVictimsOnNode``; ``state`` and ``node`` are copies it may change."""
        handle = self._handle
        potential: list[PodInfo] = []
        for p in list(node.pods):
            if p.priority < pod.priority:
                potential.append(p)
                if (st := self._remove(state, pod, p, node)) is not None:
                    return [], 0, st
        if not potential:
            return [], 0, Status.unresolvable(MSG_NO_VICTIMS)
        # Without every lower-priority pod the pod still does not fit: nothing to gain here.
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None and not status.is_success():
            return [], 0, status
        key = importance_key(now)
        potential.sort(key=key)
        violating, non_violating = split_by_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        # Reprieve as many as fit, PDB-protected pods first, most important first.
        for group, is_violating in ((violating, True), (non_violating, False)):
            for p in group:
                fits, st = self.reprieve(state, pod, p, node)
                if st is not None:
                    return [], 0, st
                if fits:
                    continue
                if (st := self._remove(state, pod, p, node)) is not None:
                    return [], 0, st
                victims.append(p)
                if is_violating:
                    num_violating += 1
        if violating and non_violating:
            victims.sort(key=key)
        return victims, num_violating, None

    def reprieve(
        self, state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo
    ) -> tuple[bool, Status | None]:
        """Put a potential victim back on the (copied) node: whether the pod still fits
        with it there, or the error of the PreFilter extension that took it back."""
        node.add_pod(victim)
        st = self._handle.run_pre_filter_extension_add_pod(state, pod, victim, node)
        if st is not None and not st.is_success():
            return False, _as_error(st)
        fits = self._handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        return fits is None or fits.is_success(), None

    def _remove(
        self, state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo
    ) -> Status | None:
        node.remove_pod(victim)
        st = self._handle.run_pre_filter_extension_remove_pod(state, pod, victim, node)
        if st is not None and not st.is_success():
            return _as_error(st)
        return None

    async def prepare_candidate(self, c: Candidate, pod: PodInfo) -> Status | None:
        """Preempt the victims inside the cycle (the synchronous path)."""
        return await self.executor.prepare_candidate(c, pod)

    async def _clear_nominated_node(self, pod: PodInfo) -> None:
        if pod.nominated_node_name:
            await set_nominated_node(self._handle, pod, "")

    def _fit_message(self, pod: PodInfo, node_statuses: dict[str, Status]) -> str:
        """Upstream FitError text; nodes not dry-run count as "not helpful"."""
        all_nodes = self._handle.snapshot.node_info_list
        diagnosis = Diagnosis()
        # The dry-run nodes are some of ``all_nodes``: the rest are "not helpful".
        not_helpful = Status.unresolvable(MSG_NOT_HELPFUL)
        diagnosis.node_to_status = dict.fromkeys(map(_NAME, all_nodes), not_helpful)
        diagnosis.node_to_status.update(node_statuses)
        return FitError(pod.key, len(all_nodes), diagnosis).message()


_NAME = attrgetter("name")
_PRIORITY = attrgetter("priority")
#: ``NodeValues`` key of the lowest priorities (they depend on the node alone).
_LOWEST = "lowest priority"


def _lowest_priorities(nodes: Sequence[NodeInfo]) -> list[float]:
    return [min(map(_PRIORITY, node.pods), default=math.inf) for node in nodes]


def _skip(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def _nominated_node(handle: Handle, pod: PodInfo) -> str:
    """The nominator's record (set by this scheduler before the API echoes it back)."""
    lookup: Any = getattr(handle.nominator, "nominated_node", None)
    if lookup is None:
        return ""
    return str(lookup(pod.uid) or "")


def _as_error(status: Status) -> Status:
    return status if status.code == Code.ERROR else Status.error(status.message())


PLUGIN = DefaultPreemption
