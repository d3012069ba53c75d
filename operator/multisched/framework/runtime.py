"""``Framework``: one profile's plugins, instantiated and run in upstream order.

Built from a ``ResolvedProfile`` (the config room already merged defaults and expanded
multiPoint). Per-cycle work that does not depend on the node - which plugins PreFilter
told to skip, bound methods - is done once, so the per-node loops stay tight.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import random
from collections.abc import Callable, Collection, Coroutine, Iterable, Sequence
from itertools import repeat
from time import perf_counter
from typing import Any, NoReturn

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.config.extension_points import BY_NAME
from multisched.config.resolved import ResolvedProfile

from .cycle_state import CycleState
from .events import WILDCARD_EVENT, ClusterEvent, ClusterEventWithHint
from .handle import ClusterClient, PodNominator
from .interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .queued_pod import QueuedPodInfo
from .recorder import NULL_RECORDER, FrameworkRecorder
from .registry import Registry
from .status import SKIP, Code, PluginError, Status, code_label
from .waiting import PodInPreBind, WaitingPod

#: Every valid integer score (``run_score`` checks a plugin's scores against it).
_VALID_SCORES = frozenset(range(MIN_NODE_SCORE, MAX_NODE_SCORE + 1))
#: Up to this weight a plugin's scores enter the totals that many times, not multiplied.
_REPEATED_WEIGHT_AT_MOST = 4

logger = logging.getLogger(__name__)

FilterFn = Callable[[CycleState, PodInfo, NodeInfo], "Status | None"]
#: ``BatchFilterPlugin.filter_nodes``: the failing nodes' statuses, by index.
BatchFilterFn = Callable[[CycleState, PodInfo, Sequence[NodeInfo]], "dict[int, Status]"]
#: ``BatchScorePlugin.score_nodes``: every node's score, in the order of ``nodes``.
ScoreNodesFn = Callable[[CycleState, PodInfo, Sequence[NodeInfo]], "list[int]"]
#: ``NormalizeScorePlugin.normalize_score``: rescales the scores in place.
NormalizeScoreFn = Callable[[CycleState, PodInfo, Sequence[NodeInfo], "list[int]"], "Status | None"]
PluginObserver = Callable[[str, str, str, float], None]


def _batch_judge(plugin: FilterPlugin) -> BatchFilterFn | None:
    """``filter_nodes`` when the class that defines it defines ``filter`` too: a subclass
    that overrides ``filter`` alone must not be judged by its parent's batch screen."""
    judge: BatchFilterFn | None = getattr(plugin, "filter_nodes", None)
    if judge is None:
        return None
    for klass in type(plugin).__mro__:
        has_filter, has_batch = "filter" in vars(klass), "filter_nodes" in vars(klass)
        if has_filter or has_batch:
            return judge if has_filter and has_batch else None
    return None


class FrameworkError(ValueError):
    """A profile that cannot be instantiated: a plugin failed to start or does not implement
    a point it is enabled at. A ValueError, as bad configuration is: the commands that build
    profiles report it as one line."""


def _unimplemented(profile: str, plugin: Plugin, point: str) -> FrameworkError:
    """The refusal of a plugin enabled at ``point`` without all of its Protocol's methods."""
    missing = [m for m in BY_NAME[point].methods if getattr(plugin, m, None) is None]
    return FrameworkError(
        f"profile {profile}: plugin {plugin.name} does not implement {point}: "
        f"it has no {', '.join(missing)}"
    )


#: The extension points at which a plugin can reject a pod (upstream
#: ``shouldHaveEnqueueExtensions``).
_REJECTING_POINTS = ("pre_enqueue", "pre_filter", "filter", "reserve", "permit")


def _events_to_register(
    profile: str, name: str, plugin: Plugin
) -> tuple[ClusterEventWithHint, ...]:
    """The plugin's registrations, each with its hint (a bare ClusterEvent has none)."""
    declared = getattr(plugin, "events_to_register", None)
    if declared is None:
        return (ClusterEventWithHint(WILDCARD_EVENT),)
    try:
        events = tuple(declared() if callable(declared) else declared)
    except Exception as exc:
        raise FrameworkError(
            f"profile {profile}: plugin {name}: events_to_register failed: {exc}"
        ) from exc
    bad = [e for e in events if not isinstance(e, ClusterEvent | ClusterEventWithHint)]
    if bad:
        raise FrameworkError(
            f"profile {profile}: plugin {name}: events_to_register returned {bad[0]!r}, "
            "not a ClusterEvent"
        )
    return tuple(
        e if isinstance(e, ClusterEventWithHint) else ClusterEventWithHint(e) for e in events
    )


class _NoNominator:
    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return ()

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None:
        pass

    def delete_nominated_pod(self, pod: PodInfo) -> None:
        pass

    def nominated_node(self, uid: str) -> str | None:
        return None

    def nominated_node_names(self) -> Collection[str]:
        return ()


class PluginScores:
    """One score plugin's raw and weighted scores for the nodes of a cycle (for --explain)."""

    __slots__ = ("plugin", "raw", "weight", "weighted")

    def __init__(self, plugin: str, weight: int, raw: list[int], weighted: list[int]) -> None:
        self.plugin = plugin
        self.weight = weight
        self.raw = raw
        self.weighted = weighted


class Framework:
    """Implements ``Handle`` for the plugins it builds."""

    #: Where the framework and its plugins report for the metrics (``InstrumentedFramework``
    #: binds one; this one records nothing).
    recorder: FrameworkRecorder = NULL_RECORDER

    def __init__(
        self,
        profile: ResolvedProfile,
        registry: Registry,
        snapshot: Snapshot,
        client: ClusterClient | None = None,
        nominator: PodNominator | None = None,
        rng: random.Random | None = None,
        activator: Callable[[Iterable[PodInfo]], None] | None = None,
    ) -> None:
        self.profile = profile
        self._activator = activator
        self._snapshot = snapshot
        self._client = client
        self._nominator: PodNominator = nominator if nominator is not None else _NoNominator()
        self.rng = rng or random.Random()
        self.waiting_pods: dict[str, WaitingPod] = {}
        #: Pods running PreBind that preemption may cancel, by uid.
        self.pods_in_pre_bind: dict[str, PodInPreBind] = {}
        #: Work plugins started off the cycle (``run_in_background``), until it ends.
        self.background: set[asyncio.Task[None]] = set()
        #: (plugin, extension point, status code, seconds) for cycles that record metrics.
        self.plugin_observer: PluginObserver | None = None
        self.plugins: dict[str, Plugin] = {}
        for name in profile.all_plugin_names():
            factory = registry[name].factory
            try:
                self.plugins[name] = factory(profile.plugin_args.get(name), self)
            except Exception as exc:
                raise FrameworkError(
                    f"profile {profile.scheduler_name}: plugin {name} failed to start: {exc}"
                ) from exc
        #: Plugin name -> the cluster events that may resolve its rejections (queueing hints):
        #: of the plugins that can reject a pod (PreEnqueue, PreFilter, Filter, Reserve,
        #: Permit), as upstream's ``fillEnqueueExtensions``; a scorer or binder waits for
        #: nothing, and would make every event one of interest.
        self.plugin_hints: dict[str, tuple[ClusterEventWithHint, ...]] = {
            name: _events_to_register(profile.scheduler_name, name, pl)
            for name, pl in self.plugins.items()
            if any(hasattr(pl, point) for point in _REJECTING_POINTS)
        }
        self.plugin_events: dict[str, tuple[ClusterEvent, ...]] = {
            name: tuple(h.event for h in hints) for name, hints in self.plugin_hints.items()
        }
        p = profile.plugins

        def at(point: str) -> list[Plugin]:
            return [self.plugins[n] for n in p.get(point, ())]

        def refuse(pl: Plugin, point: str) -> NoReturn:
            raise _unimplemented(profile.scheduler_name, pl, point)

        # The registry reads a plugin's points from one method each (EXTENSION_METHODS); a
        # point's Protocol may ask for more (unreserve, pre_filter_extensions). So each plugin
        # is checked here, once per point it is enabled at, and the cycles call unchecked.
        self.pre_enqueue_plugins = [
            pl if isinstance(pl, PreEnqueuePlugin) else refuse(pl, "preEnqueue")
            for pl in at("preEnqueue")
        ]
        queue_sort = [
            pl if isinstance(pl, QueueSortPlugin) else refuse(pl, "queueSort")
            for pl in at("queueSort")
        ]
        self.queue_sort_plugin: QueueSortPlugin | None = queue_sort[0] if queue_sort else None
        self.pre_filter_plugins = [
            pl if isinstance(pl, PreFilterPlugin) else refuse(pl, "preFilter")
            for pl in at("preFilter")
        ]
        self.filter_plugins = [
            pl if isinstance(pl, FilterPlugin) else refuse(pl, "filter") for pl in at("filter")
        ]
        self._batch_judges = {pl.name: _batch_judge(pl) for pl in self.filter_plugins}
        self.post_filter_plugins = [
            pl if isinstance(pl, PostFilterPlugin) else refuse(pl, "postFilter")
            for pl in at("postFilter")
        ]
        self.pre_score_plugins = [
            pl if isinstance(pl, PreScorePlugin) else refuse(pl, "preScore")
            for pl in at("preScore")
        ]
        self.score_plugins = [
            pl if isinstance(pl, ScorePlugin) else refuse(pl, "score") for pl in at("score")
        ]
        self.score_weights = [profile.score_weights.get(pl.name, 1) for pl in self.score_plugins]
        #: Per score plugin, looked up once: (plugin, weight, score_nodes, normalize_score).
        self._score_steps: list[
            tuple[ScorePlugin, int, ScoreNodesFn | None, NormalizeScoreFn | None]
        ] = [
            (pl, weight, getattr(pl, "score_nodes", None), getattr(pl, "normalize_score", None))
            for pl, weight in zip(self.score_plugins, self.score_weights, strict=True)
        ]
        self.reserve_plugins = [
            pl if isinstance(pl, ReservePlugin) else refuse(pl, "reserve") for pl in at("reserve")
        ]
        self.permit_plugins = [
            pl if isinstance(pl, PermitPlugin) else refuse(pl, "permit") for pl in at("permit")
        ]
        self.pre_bind_plugins = [
            pl if isinstance(pl, PreBindPlugin) else refuse(pl, "preBind") for pl in at("preBind")
        ]
        self.bind_plugins = [
            pl if isinstance(pl, BindPlugin) else refuse(pl, "bind") for pl in at("bind")
        ]
        self.post_bind_plugins = [
            pl if isinstance(pl, PostBindPlugin) else refuse(pl, "postBind")
            for pl in at("postBind")
        ]

    # -- Handle --------------------------------------------------------------------------

    @property
    def profile_name(self) -> str:
        return self.profile.scheduler_name

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def client(self) -> ClusterClient | None:
        return self._client

    @property
    def nominator(self) -> PodNominator:
        return self._nominator

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> list[WaitingPod]:
        return list(self.waiting_pods.values())

    def get_pod_in_pre_bind(self, uid: str) -> PodInPreBind | None:
        return self.pods_in_pre_bind.get(uid)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        if self._activator is not None:
            self._activator(pods)

    def run_in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def _observe(
        self, state: CycleState, plugin: str, point: str, status: Status | None, start: float
    ) -> None:
        if state.record_plugin_metrics and self.plugin_observer is not None:
            self.plugin_observer(plugin, point, code_label(status), perf_counter() - start)

    def _timed_filter(self, name: str, fn: FilterFn) -> FilterFn:
        observer = self.plugin_observer
        assert observer is not None

        def timed(state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
            start = perf_counter()
            status = fn(state, pod, node)
            observer(name, "Filter", code_label(status), perf_counter() - start)
            return status

        return timed

    # -- queue ---------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for pl in self.pre_enqueue_plugins:
            status: Status | None = pl.pre_enqueue(pod)
            if status is not None and not status.is_success():
                return status.with_plugin(pl.name)
        return None

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        assert self.queue_sort_plugin is not None
        return bool(self.queue_sort_plugin.less(a, b))

    # -- scheduling cycle ----------------------------------------------------------------

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        result: PreFilterResult | None = None
        narrowing: list[str] = []
        rejected: Status | None = None
        for pl in self.pre_filter_plugins:
            start = perf_counter()
            try:
                r, status = pl.pre_filter(state, pod, nodes)
            except PluginError as exc:
                return None, Status(Code.ERROR, str(exc), plugin=pl.name)
            self._observe(state, pl.name, "PreFilter", status, start)
            if status is not None and status.is_skip():
                state.skip_filter_plugins.add(pl.name)
                continue
            if status is not None and not status.is_success():
                status.with_plugin(pl.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status
                if status.code == Code.UNSCHEDULABLE:
                    # The rest still run, so that preemption has their state (v1.29+,
                    # kubernetes#119770); the last such status is the cycle's.
                    rejected = status
                    continue
                return None, Status(
                    Code.ERROR,
                    f'running PreFilter plugin "{pl.name}": {status.message()}',
                    plugin=pl.name,
                )
            if r is not None and not r.all_nodes():
                narrowing.append(pl.name)
                r.plugins = (pl.name,)
                result = r if result is None else result.merge(r)
                if result.node_names is not None and not result.node_names:
                    if len(narrowing) == 1:
                        msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    else:
                        names = " ".join(narrowing)
                        msg = f"node(s) didn't satisfy plugin(s) [{names}] simultaneously"
                    return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
        if rejected is not None:
            return None, rejected
        return result, None

    def active_filters(self, state: CycleState) -> list[tuple[str, FilterFn]]:
        """Filter plugins for this cycle, minus those PreFilter skipped."""
        skip = state.skip_filter_plugins
        return [(pl.name, pl.filter) for pl in self.filter_plugins if pl.name not in skip]

    def batch_filters(self, state: CycleState) -> list[tuple[str, BatchFilterFn]] | None:
        """The active filters' ``filter_nodes``, when every one of them has it."""
        skip = state.skip_filter_plugins
        judges = self._batch_judges
        out = []
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            judge = judges.get(pl.name)
            if judge is None:
                return None
            out.append((pl.name, judge))
        return out

    def timed_filters(
        self, state: CycleState, filters: list[tuple[str, FilterFn]]
    ) -> list[tuple[str, FilterFn]] | None:
        """``filters``, each call timed, when this cycle records plugin metrics."""
        if not state.record_plugin_metrics or self.plugin_observer is None:
            return None
        return [(name, self._timed_filter(name, fn)) for name, fn in filters]

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        filters: list[tuple[str, FilterFn]] | None = None,
    ) -> Status | None:
        if filters is None:
            filters = self.active_filters(state)
            filters = self.timed_filters(state, filters) or filters
        for name, fn in filters:
            status = fn(state, pod, node)
            if status is not None and status.code != Code.SUCCESS:
                return self.filter_verdict(name, status)
        return None

    @staticmethod
    def filter_verdict(name: str, status: Status) -> Status:
        """A failing Filter status as the cycle reports it: named, non-rejections as errors."""
        if not status.is_rejected():
            status = Status(Code.ERROR, f'running "{name}" filter plugin: {status.message()}')
        status.plugin = name
        return status

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        filters: list[tuple[str, FilterFn]] | None = None,
    ) -> Status | None:
        """Upstream's two passes: with higher-or-equal priority nominated pods, then without.

        A node must fit the pod both with the pods preemption promised it and without them
        (they may never arrive); only runs the first pass when such pods exist.
        """
        nominated = self._nominated_beside(pod, node.name)
        if filters is None:  # one list for both passes (the clone skips what state skips)
            filters = self.active_filters(state)
            filters = self.timed_filters(state, filters) or filters
        if nominated:
            extensions = self._extensions(state)
            node_with = node.clone()
            # Filters read the state: only the AddPod extensions change it.
            state_with = state.clone() if extensions else state
            for p in nominated:
                node_with.add_pod(p)
                status = _add_pod(extensions, state_with, pod, p, node_with)
                if status is not None and not status.is_success():
                    return status
            status = self.run_filter_plugins(state_with, pod, node_with, filters)
            if status is not None:
                return status
        return self.run_filter_plugins(state, pod, node, filters)

    def _nominated_beside(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """The pods nominated to the node that ``pod`` must fit beside: those of at least
        its priority, itself excepted (upstream ``addNominatedPods``)."""
        return [
            p
            for p in self._nominator.nominated_pods_for_node(node_name)
            if p.priority >= pod.priority and p.uid != pod.uid
        ]

    def nodes_with_nominated_pods(self, pod: PodInfo) -> set[str]:
        """The nodes where the first of the two Filter passes runs for ``pod``; everywhere
        else the second pass alone decides."""
        return {
            name
            for name in self._nominator.nominated_node_names()
            if self._nominated_beside(pod, name)
        }

    def _extensions(self, state: CycleState) -> list[tuple[str, PreFilterExtensions]]:
        out = []
        for pl in self.pre_filter_plugins:
            if pl.name in state.skip_filter_plugins:
                continue
            ext = pl.pre_filter_extensions()
            if ext is not None:
                out.append((pl.name, ext))
        return out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return _add_pod(self._extensions(state), state, pod, pod_to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return _run_extensions(
            self._extensions(state),
            "RemovePod",
            lambda ext: ext.remove_pod(state, pod, pod_to_remove, node),
        )

    async def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for pl in self.post_filter_plugins:
            start = perf_counter()
            r, status = await pl.post_filter(state, pod, statuses)
            self._observe(state, pl.name, "PostFilter", status, start)
            if status is None or status.is_success():
                # A success keeps its message (preemption's placement), as upstream's does.
                said = status.reasons if status is not None else ()
                return r, Status(Code.SUCCESS, *said, plugin=pl.name)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, status.with_plugin(pl.name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, status.message(), plugin=pl.name)
            reasons.extend(status.reasons)
            rejector = rejector or pl.name
            if r is not None and r.nominated_node_name:
                result = r
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    def run_pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        for pl in self.pre_score_plugins:
            start = perf_counter()
            status = pl.pre_score(state, pod, nodes)
            self._observe(state, pl.name, "PreScore", status, start)
            if status is None or status.is_success():
                continue
            if status.is_skip():
                state.skip_score_plugins.add(pl.name)
                continue
            return Status(
                Code.ERROR,
                f'running PreScore plugin "{pl.name}": {status.message()}',
                plugin=pl.name,
            )
        return None

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], explain: bool = False
    ) -> tuple[list[int], list[PluginScores]]:
        """Total weighted score per node (same order as ``nodes``), and per-plugin detail."""
        # Each plugin's scores, once per unit of weight (or multiplied, for a large weight):
        # the totals are then one ``sum`` per node over a zip, where adding plugin by plugin
        # would build a list per plugin (this runs per plugin per cycle).
        columns: list[Sequence[int]] = []
        # A plugin that gives every node the same integer score (ImageLocality with no
        # images, TaintToleration with no PreferNoSchedule taint, the resource scorers on
        # equal nodes) moves every total alike: it is added once, not summed per node.
        shift = 0
        detail: list[PluginScores] = []
        skip = state.skip_score_plugins
        timed = state.record_plugin_metrics
        for pl, weight, batch, normalize in self._score_steps:
            if pl.name in skip:
                continue
            start = perf_counter() if timed else 0.0
            try:
                # A plugin may score all nodes in one call (same results, no per-node calls).
                if batch is not None:
                    scores = batch(state, pod, nodes)
                else:
                    score = pl.score
                    scores = [score(state, pod, node) for node in nodes]
                if normalize is not None:
                    status = normalize(state, pod, nodes, scores)
                    if status is not None and not status.is_success():
                        raise PluginError(status.message())
            except PluginError as exc:
                raise PluginError(f'running Score plugin "{pl.name}": {exc}') from exc
            # One observation per plugin and cycle: all its nodes plus NormalizeScore.
            if timed:
                self._observe(state, pl.name, "Score", None, start)
            # Integer scores are checked by one set lookup each; min and max only judge the
            # rest (a float in range is accepted, as before).
            if not _VALID_SCORES.issuperset(scores) and (
                max(scores) > MAX_NODE_SCORE or min(scores) < MIN_NODE_SCORE
            ):
                bad = next(x for x in scores if not MIN_NODE_SCORE <= x <= MAX_NODE_SCORE)
                raise PluginError(
                    f'plugin "{pl.name}" returns an invalid score {bad}, it should in the '
                    f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
            if len(scores) != len(nodes):
                raise PluginError(
                    f'plugin "{pl.name}" returned {len(scores)} scores for {len(nodes)} nodes'
                )
            if explain:
                detail.append(PluginScores(pl.name, weight, scores, [x * weight for x in scores]))
            if not scores:
                continue
            first = scores[0]
            if type(first) is int and type(weight) is int and scores.count(first) == len(scores):
                shift += first * weight
            elif type(weight) is int and 0 < weight <= _REPEATED_WEIGHT_AT_MOST:
                columns.extend(repeat(scores, weight))
            else:
                columns.append(list(map(operator.mul, scores, repeat(weight))))
        if not columns:
            return [shift] * len(nodes), detail
        if len(columns) == 1:  # adding turns a plugin's booleans into integers, as sum does
            return list(map(operator.add, columns[0], repeat(shift))), detail
        totals = list(map(sum, zip(*columns, strict=True)))
        if shift:
            totals = list(map(operator.add, totals, repeat(shift)))
        return totals, detail

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.reserve_plugins:
            start = perf_counter()
            status: Status | None = pl.reserve(state, pod, node_name)
            self._observe(state, pl.name, "Reserve", status, start)
            if status is not None and not status.is_success():
                return _rejected_or_error("Reserve", pl.name, status)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception:
                logger.exception("Unreserve of plugin %s failed for pod %s", pl.name, pod.key)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Success, a rejection, or Wait (the pod is registered in ``waiting_pods``)."""
        timeouts: dict[str, float] = {}
        for pl in self.permit_plugins:
            start = perf_counter()
            status, timeout = pl.permit(state, pod, node_name)
            self._observe(state, pl.name, "Permit", status, start)
            if status is None or status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(pl.name)
            if status.code == Code.WAIT:
                timeouts[pl.name] = min(timeout, 15 * 60.0)
                continue
            return Status(
                Code.ERROR, f'running Permit plugin "{pl.name}": {status.message()}', plugin=pl.name
            )
        if timeouts:
            self.waiting_pods[pod.uid] = WaitingPod(pod, timeouts)
            return Status(Code.WAIT, f"one or more plugins asked to wait: {sorted(timeouts)}")
        return None

    async def wait_on_permit(self, pod: PodInfo) -> Status | None:
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        try:
            status = await waiting.wait()
        finally:
            self.waiting_pods.pop(pod.uid, None)
        if status is not None and status.code == Code.ERROR:  # preempted while waiting
            return Status(
                Code.ERROR, f"waiting on permit for pod: {status.message()}", plugin=status.plugin
            )
        return status

    def will_wait_on_permit(self, pod: PodInfo) -> bool:
        """Whether a Permit plugin holds the pod (upstream ``WillWaitOnPermit``)."""
        return pod.uid in self.waiting_pods

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> Status | None:
        """Whether PreBind will do anything for the pod (upstream ``RunPreBindPreFlights``):
        None (success) when any PreBind plugin will, Skip when none will, an Error when one
        fails or answers anything else. Those that say Skip are not called at PreBind. A
        plugin without ``pre_bind_pre_flight`` (upstream's interface requires it; Python
        plugins may leave it out) still runs at PreBind but announces nothing."""
        result: Status | None = SKIP
        skipped = state.skip_pre_bind_plugins
        for pl in self.pre_bind_plugins:
            pre_flight = getattr(pl, "pre_bind_pre_flight", None)
            if pre_flight is None:
                continue
            start = perf_counter()
            status: Status | None = pre_flight(state, pod, node_name)
            self._observe(state, pl.name, "PreBindPreFlight", status, start)
            if status is None or status.is_success():
                result = None
            elif status.is_skip():
                skipped.add(pl.name)
            elif status.code == Code.ERROR:
                return Status(
                    Code.ERROR,
                    f'running PreBindPreFlight "{pl.name}": {status.message()}',
                    plugin=pl.name,
                )
            else:
                return Status(
                    Code.ERROR,
                    f'PreBindPreFlight {pl.name} returned "{status.code.label}", which '
                    "is unsupported. It is supposed to return Success, Skip, or Error status",
                    plugin=pl.name,
                )
        return result

    async def run_pre_bind_preemptible(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> Status | None:
        """PreBind that preemption may cancel (v1.36 ``AddPodInPreBind``): when a plugin has
        work to do there, the pod is listed until PreBind ends; a pod cancelled meanwhile
        ends with the canceller's message (upstream ``context.Cause``) and is not bound."""
        skipped = state.skip_pre_bind_plugins
        if all(pl.name in skipped for pl in self.pre_bind_plugins):
            return await self.run_pre_bind(state, pod, node_name)
        task = asyncio.ensure_future(self.run_pre_bind(state, pod, node_name))
        entry = self.pods_in_pre_bind[pod.uid] = PodInPreBind(task)
        try:
            status = await task
        except asyncio.CancelledError:
            if not entry.canceled:
                raise  # the binding cycle itself is being stopped
            status = None
        finally:
            self.pods_in_pre_bind.pop(pod.uid, None)
        if status is None and not entry.mark_prebound():
            return Status.error(entry.message)
        return status

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        skipped = state.skip_pre_bind_plugins
        for pl in self.pre_bind_plugins:
            if pl.name in skipped:
                continue
            start = perf_counter()
            status: Status | None = await pl.pre_bind(state, pod, node_name)
            self._observe(state, pl.name, "PreBind", status, start)
            if status is not None and not status.is_success():
                return _rejected_or_error("PreBind", pl.name, status)
        return None

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.bind_plugins:
            start = perf_counter()
            status: Status | None = await pl.bind(state, pod, node_name)
            self._observe(state, pl.name, "Bind", status, start)
            if status is not None and status.is_skip():
                continue
            if status is not None and not status.is_success():
                return status.with_plugin(pl.name)
            return None
        return Status(Code.SKIP, "all bind plugins skipped the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:
                logger.exception("PostBind of plugin %s failed for pod %s", pl.name, pod.key)


def _rejected_or_error(point: str, plugin: str, status: Status) -> Status:
    """A rejection names its plugin; an error is wrapped with it, as upstream's runtime
    words it for Reserve and PreBind (the FailedScheduling message shows it)."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status(
        Code.ERROR,
        f'running {point} plugin "{plugin}": {status.message()}',
        plugin=plugin,
        cause=status.cause,
    )


def _add_pod(
    extensions: list[tuple[str, PreFilterExtensions]],
    state: CycleState,
    pod: PodInfo,
    pod_to_add: PodInfo,
    node: NodeInfo,
) -> Status | None:
    """``RunPreFilterExtensionAddPod`` over the cycle's active extensions."""
    return _run_extensions(
        extensions, "AddPod", lambda ext: ext.add_pod(state, pod, pod_to_add, node)
    )


def _run_extensions(
    extensions: list[tuple[str, PreFilterExtensions]],
    point: str,
    call: Callable[[PreFilterExtensions], Status | None],
) -> Status | None:
    """The first extension's failure, as an error naming its plugin (upstream's wording)."""
    for name, ext in extensions:
        status = call(ext)
        if status is not None and not status.is_success():
            return Status(
                Code.ERROR,
                f'running {point} on PreFilter plugin "{name}": {status.message()}',
                plugin=name,
            )
    return None
