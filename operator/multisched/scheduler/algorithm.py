"""Pick a node for one pod: upstream ``schedulePod`` (filter, then score, then select).

Runs synchronously on the live snapshot: nothing can change the cache mid-cycle because
the event loop does not switch tasks inside it.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Sequence
from functools import partial
from itertools import compress, count, filterfalse, islice
from operator import eq, not_
from time import perf_counter
from weakref import WeakKeyDictionary

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.framework import (
    Code,
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    PluginError,
    PluginScores,
    PreFilterResult,
    Status,
)
from multisched.framework.runtime import BatchFilterFn, FilterFn

from .batching import OpportunisticBatch

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
#: v1.29's status of a node outside a PreFilter plugin's result.
#: Nodes outside a PreFilter result (v1.37's ``findNodesThatFitPod``); the plugins follow.
MSG_OUTSIDE_PRE_FILTER = "node(s) didn't satisfy plugin(s)"
#: In a cycle that records plugin metrics, the Filter plugins are timed at one node in this
#: many (the first, then every tenth): an unbiased sample of per-call durations for a tenth
#: of the cost of timing them all.
FILTER_TIMING_STRIDE = 10


class SchedulingError(Exception):
    """An internal error in a cycle (plugin Error status); the pod is retried with backoff."""


class NoNodesAvailable(SchedulingError):
    """The cluster has no node: upstream's ``ErrNoNodesAvailable``, which it reports as
    UnschedulableAndUnresolvable (the pod is Unschedulable, not in error)."""


class Explain:
    """Per-node filter verdicts and per-plugin scores, only collected when asked for."""

    __slots__ = ("scores", "verdicts")

    def __init__(self) -> None:
        #: Node name -> None when it passed every filter, else the failing Status.
        self.verdicts: dict[str, Status | None] = {}
        #: Scored node names and each plugin's raw and weighted scores in that order.
        self.scores: tuple[list[str], list[PluginScores], list[int]] | None = None


class ScheduleResult:
    __slots__ = ("evaluated_nodes", "explain", "feasible_nodes", "suggested_host")

    def __init__(self, host: str, evaluated: int, feasible: int, explain: Explain | None) -> None:
        self.suggested_host = host
        self.evaluated_nodes = evaluated
        self.feasible_nodes = feasible
        self.explain = explain


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes are enough (upstream ``numFeasibleNodesToFind``)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class Algorithm:
    """Holds the rotating start index shared by all cycles (upstream ``nextStartNodeIndex``)."""

    def __init__(
        self,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        opportunistic_batching: bool = True,
    ):
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = rng or random.Random()
        #: v1.35+ ``OpportunisticBatching`` (on by default): see batching.py.
        self.opportunistic_batching = opportunistic_batching
        #: Cycles run, any profile (upstream ``CurrentCycle``): a batch serves the next one.
        self.scheduling_cycle = 0
        #: Each profile's batch (a profile rebuilt by a new configuration starts afresh).
        self._batches: WeakKeyDictionary[Framework, OpportunisticBatch] = WeakKeyDictionary()

    def batch(self, fwk: Framework) -> OpportunisticBatch:
        """The profile's batch state."""
        batch = self._batches.get(fwk)
        if batch is None:
            batch = self._batches[fwk] = OpportunisticBatch(fwk)
        return batch

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        explain: bool = False,
    ) -> ScheduleResult:
        """Return the chosen node, or raise FitError / SchedulingError."""
        all_nodes = snapshot.node_info_list
        if not all_nodes:
            raise NoNodesAvailable(NO_NODES_AVAILABLE)
        self.scheduling_cycle += 1
        record = Explain() if explain else None
        batch = None
        if self.opportunistic_batching and record is None:
            batch = self.batch(fwk)
            batch.sign(pod)
        feasible, diagnosis, reused = self._find_nodes_that_fit(
            fwk, state, pod, snapshot, record, batch
        )
        if reused is not None:
            assert batch is not None
            host = self._pick(fwk, state, pod, feasible, record)
            if batch.host_fits(state, pod, snapshot, host):
                batch.store(True, host, feasible, reused, True, snapshot, self.scheduling_cycle)
                return ScheduleResult(host, reused, len(feasible), record)
            # The hint did not hold: the cycle runs as if there were none.
            feasible, diagnosis, _ = self._find_nodes_that_fit(fwk, state, pod, snapshot, record)
        if not feasible:
            raise FitError(pod.key, len(all_nodes), diagnosis)
        evaluated = len(feasible) + diagnosis.rejected_count()
        host = self._pick(fwk, state, pod, feasible, record)
        if batch is not None:
            searched_all = evaluated == len(all_nodes)
            cycle = self.scheduling_cycle
            batch.store(False, host, feasible, evaluated, searched_all, snapshot, cycle)
        return ScheduleResult(host, evaluated, len(feasible), record)

    def _pick(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        feasible: list[NodeInfo],
        record: Explain | None,
    ) -> str:
        """The feasible node to place the pod on (the only one, or the best scored)."""
        if len(feasible) == 1:
            return feasible[0].name
        scores = self._prioritize(fwk, state, pod, feasible, record)
        return self._select_host(feasible, scores)

    def _find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        record: Explain | None,
        batch: OpportunisticBatch | None = None,
    ) -> tuple[list[NodeInfo], Diagnosis, int | None]:
        """The feasible nodes, the rejections, and when the nodes are a batch's (reused from
        an earlier cycle), how many nodes the search that found them evaluated."""
        diagnosis = Diagnosis()
        all_nodes = snapshot.node_info_list
        pre_result, status = fwk.run_pre_filter(state, pod, all_nodes)
        if status is not None:
            if not status.is_rejected():
                raise SchedulingError(status.message())
            # Every node gets the PreFilter verdict; the message shows it once.
            diagnosis.pre_filter_msg = status.message()
            diagnosis.unschedulable_plugins.add(status.plugin)
            for node in all_nodes:
                diagnosis.node_to_status[node.name] = status
            if record is not None:
                record.verdicts = dict.fromkeys(diagnosis.node_to_status, status)
            return [], diagnosis, None

        # Upstream asks for the batch's hint before trying the nominated node.
        if batch is not None:
            reused = batch.candidates(state, pod, snapshot, self.scheduling_cycle)
            if reused is not None:
                return reused[0], diagnosis, reused[1]

        if pod.nominated_node_name:
            nominated = snapshot.get(pod.nominated_node_name)
            if nominated is not None:
                st = fwk.run_filter_plugins_with_nominated_pods(state, pod, nominated)
                if st is None:
                    return [nominated], diagnosis, None
                if st.code == Code.ERROR:
                    raise SchedulingError(st.message())
        feasible = self._search(fwk, state, pod, snapshot, pre_result, diagnosis, record)
        return feasible, diagnosis, None

    def _search(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        pre_result: PreFilterResult | None,
        diagnosis: Diagnosis,
        record: Explain | None,
    ) -> list[NodeInfo]:
        """Upstream's search of the nodes PreFilter left (``findNodesThatPassFilters``)."""
        all_nodes = snapshot.node_info_list
        nodes: Sequence[NodeInfo] = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            names = pre_result.node_names
            nodes = [n for n in all_nodes if n.name in names]
            # v1.37: every node outside the result is unresolvable, named by the plugins that
            # narrowed the search, so preemption does not try it (a name no node has, as a
            # PV's affinity naming a deleted node, is simply left out).
            plugins = sorted(set(pre_result.plugins))
            outside = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"{MSG_OUTSIDE_PRE_FILTER} [{' '.join(plugins)}]",
            )
            left_out = [n.name for n in all_nodes if n.name not in names]
            diagnosis.node_to_status.update(dict.fromkeys(left_out, outside))
            if record is not None:
                shown = outside.with_plugin(" ".join(plugins))
                record.verdicts.update(dict.fromkeys(left_out, shown))
        # One Filter observation for the whole search, as upstream records it.
        begin = perf_counter()
        code = "Error"
        try:
            feasible = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes, record)
            code = "Success"
        finally:
            fwk.recorder.extension_point("Filter", code, perf_counter() - begin)
        return feasible

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        record: Explain | None,
    ) -> list[NodeInfo]:
        num_all = len(nodes)
        if not num_all:
            return []
        percentage = fwk.profile.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(percentage, num_all)
        start = self.next_start_node_index % num_all
        rotated = [*nodes[start:], *nodes[:start]] if start else nodes
        filters = fwk.active_filters(state)
        if not filters:
            chosen = list(rotated[:to_find])
            self.next_start_node_index = (start + len(chosen)) % num_all
            if record is not None:
                record.verdicts.update(dict.fromkeys((n.name for n in chosen), None))
            return chosen
        # A sampled cycle times one node's filters in FILTER_TIMING_STRIDE: timing every
        # call would cost more than the filters themselves.
        timed = fwk.timed_filters(state, filters)
        feasible: list[NodeInfo] = []
        # Nominated pods change the verdict only where they are (and only those at least
        # as important as this pod): elsewhere one Filter pass decides, as with none.
        crowded = fwk.nodes_with_nominated_pods(pod) if fwk.nominator else set()
        batches = fwk.batch_filters(state)
        if batches is None:
            processed = _filter_node_by_node(
                fwk, state, pod, rotated, filters, timed, to_find, feasible, diagnosis, crowded
            )
        else:
            # The nodes with nominated pods get both passes where the batches reach them.
            beside = _Beside(fwk, filters, crowded) if crowded else None
            processed = _filter_in_batches(
                fwk, state, pod, rotated, batches, to_find, feasible, diagnosis, beside
            )
            if timed is not None:
                _time_filters(state, pod, rotated[:processed], timed)
        self.next_start_node_index = (start + processed) % num_all
        if record is not None:
            record.verdicts.update(diagnosis.node_to_status)
            record.verdicts.update(dict.fromkeys((n.name for n in feasible), None))
        return feasible

    def _prioritize(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: list[NodeInfo],
        record: Explain | None,
    ) -> list[int]:
        if not fwk.score_plugins:
            return [1] * len(nodes)
        status = fwk.run_pre_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status.message())
        try:
            totals, detail = fwk.run_score(state, pod, nodes, explain=record is not None)
        except PluginError as exc:
            raise SchedulingError(str(exc)) from exc
        if record is not None:
            record.scores = ([n.name for n in nodes], detail, totals)
        return totals

    def _select_host(self, nodes: list[NodeInfo], scores: list[int]) -> str:
        """Highest total wins; ties are broken uniformly at random, as upstream's reservoir
        sampling does, with one draw rather than one per tied node."""
        best = max(scores)
        ties = scores.count(best)
        if ties == 1:
            return nodes[scores.index(best)].name
        # The k-th tied node, found at C speed (a backlog on like nodes ties hundreds).
        k = self.rng.randrange(ties)
        tied = compress(count(), map(partial(eq, best), scores))
        return nodes[next(islice(tied, k, None))].name


def _filter_node_by_node(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    rotated: Sequence[NodeInfo],
    filters: list[tuple[str, FilterFn]],
    timed: list[tuple[str, FilterFn]] | None,
    to_find: int,
    feasible: list[NodeInfo],
    diagnosis: Diagnosis,
    crowded: set[str],
) -> int:
    """Each node through the filters in turn, until ``to_find`` are feasible (upstream's
    search, one node at a time); the ``crowded`` nodes (nodes_with_nominated_pods) get
    both passes. Returns how many nodes were evaluated."""
    run = fwk.run_filter_plugins_with_nominated_pods
    append = feasible.append
    failed = diagnosis.node_to_status
    processed = 0
    success = Code.SUCCESS
    for processed, node in enumerate(rotated, 1):
        status = None
        fns = filters
        if timed is not None and processed % FILTER_TIMING_STRIDE == 1:
            fns = timed
        if node.name not in crowded:
            # ``run_filter_plugins`` inlined (one call less per node, most of a cycle).
            for name, fn in fns:
                st = fn(state, pod, node)
                if st is not None and st.code != success:
                    status = fwk.filter_verdict(name, st)
                    break
        else:
            status = run(state, pod, node, fns)
        if status is None:
            append(node)
            if len(feasible) >= to_find:
                break
            continue
        if status.code == Code.ERROR:
            raise SchedulingError(status.message())
        failed[node.name] = status
        diagnosis.unschedulable_plugins.add(status.plugin)
    return processed


def _time_filters(
    state: CycleState,
    pod: PodInfo,
    evaluated: Sequence[NodeInfo],
    timed: list[tuple[str, FilterFn]],
) -> None:
    """The node-by-node loop's timing sample, for a cycle the batches decided: the timed
    filters at one evaluated node in FILTER_TIMING_STRIDE (the same nodes the loop times),
    each node's chain stopping at its first failure; the verdicts are the batches' already."""
    success = Code.SUCCESS
    for node in evaluated[::FILTER_TIMING_STRIDE]:
        for _, fn in timed:
            status = fn(state, pod, node)
            if status is not None and status.code != success:
                break


def _filter_in_batches(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    rotated: Sequence[NodeInfo],
    batches: list[tuple[str, BatchFilterFn]],
    to_find: int,
    feasible: list[NodeInfo],
    diagnosis: Diagnosis,
    beside: _Beside | None = None,
) -> int:
    """The node-by-node loop's outcome (same feasible nodes, statuses and count of nodes
    evaluated), judged a batch at a time (``beside``: the nodes with nominated pods, each
    judged with both of upstream's passes).

    A batch holds as many nodes as should yield the feasible ones still wanted at the pass
    rate seen so far (at first, exactly as many as are wanted). Nodes judged past the one
    that completes the search are dropped unrecorded, as if never evaluated: judging has no
    side effects (``BatchFilterPlugin``).

    Returns how many nodes were evaluated."""
    total = len(rotated)
    processed = judged = passed = 0
    while processed < total and len(feasible) < to_find:
        wanted = to_find - len(feasible)
        size = wanted
        if judged:  # a rejecting cluster: ask for enough nodes to find them in one go
            rate = max(passed / judged, 0.05)
            size = min(total - processed, int(wanted / rate * 1.1) + 1)
        chunk = rotated[processed : processed + size]
        verdicts = _judge_batch(fwk, state, pod, chunk, batches, beside)
        judged += len(chunk)
        passed += len(chunk) - len(verdicts)
        if not verdicts:
            take = min(wanted, len(chunk))
            feasible.extend(chunk[:take])
            processed += take
            continue
        alive = list(filterfalse(verdicts.__contains__, range(len(chunk))))
        # The search ends at the node that completes it: nodes after it are not evaluated.
        end = alive[wanted - 1] + 1 if len(alive) >= wanted else len(chunk)
        rejected = sorted(verdicts)
        del rejected[bisect_left(rejected, end) :]
        statuses = list(map(verdicts.__getitem__, rejected))
        # Whole-list steps (a spread constraint may reject most of a batch); the few
        # distinct statuses are checked once each.
        for status in dict.fromkeys(statuses):  # each shared status object once
            if status.code == Code.ERROR:
                raise SchedulingError(status.message())
            diagnosis.unschedulable_plugins.add(status.plugin)
        diagnosis.add_rejected(list(map(chunk.__getitem__, rejected)), statuses)
        feasible.extend(map(chunk.__getitem__, alive[:wanted]))
        processed += end
    return processed


def _judge_batch(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    chunk: Sequence[NodeInfo],
    batches: list[tuple[str, BatchFilterFn]],
    beside: _Beside | None = None,
) -> dict[int, Status]:
    """Each failing node of ``chunk`` (by index) with the first filter's verdict on it."""
    verdicts: dict[int, Status] = {}
    alive: Sequence[NodeInfo] = chunk
    where: Sequence[int] = range(len(chunk))  # alive[j] is chunk[where[j]]
    if beside is not None:
        where = beside.judge(state, pod, chunk, verdicts)
        alive = list(map(chunk.__getitem__, where))
        if not alive:
            return verdicts
    for name, judge in batches:
        out = judge(state, pod, alive)
        if not out:
            continue
        # Nodes mostly share a few status objects (hashed by identity): each is turned into
        # a verdict once, and the nodes are moved in whole-list steps.
        distinct = dict.fromkeys(out.values())
        if len(distinct) == 1:
            status = next(iter(distinct))
            if status.code == Code.SUCCESS:
                continue
            verdicts.update(
                dict.fromkeys(map(where.__getitem__, out), fwk.filter_verdict(name, status))
            )
        else:
            translated = {
                st: fwk.filter_verdict(name, st) for st in distinct if st.code != Code.SUCCESS
            }
            out = {j: translated[st] for j, st in out.items() if st in translated}
            verdicts.update(zip(map(where.__getitem__, out), out.values(), strict=True))
        passing = list(map(not_, map(out.__contains__, range(len(alive)))))
        alive = list(compress(alive, passing))
        where = list(compress(where, passing))
    return verdicts


class _Beside:
    """The nodes where pods nominated by preemption (at least as important as the pod) may
    change a Filter verdict: each is judged by upstream's two passes, the rest in batches.
    Before, one nomination anywhere sent every node of every cycle through the node-by-node
    loop until its pod bound (its victims' graceful termination: 30 s by default)."""

    __slots__ = ("crowded", "filters", "fwk")

    def __init__(
        self, fwk: Framework, filters: list[tuple[str, FilterFn]], crowded: set[str]
    ) -> None:
        self.fwk = fwk
        self.filters = filters
        self.crowded = crowded

    def judge(
        self,
        state: CycleState,
        pod: PodInfo,
        chunk: Sequence[NodeInfo],
        verdicts: dict[int, Status],
    ) -> list[int]:
        """Judges the crowded nodes of ``chunk`` into ``verdicts``; the others' indexes."""
        crowded = self.crowded
        rest = []
        for i, node in enumerate(chunk):
            if node.name not in crowded:
                rest.append(i)
                continue
            status = self.fwk.run_filter_plugins_with_nominated_pods(state, pod, node, self.filters)
            if status is not None:
                verdicts[i] = status
        return rest
