"""``InstrumentedFramework``: a ``Framework`` that times every extension point it runs, in
every cycle, for its ``FrameworkRecorder`` (upstream's runtime records
``framework_extension_point_duration_seconds`` in each Run*Plugins). A class of its own, so
a scheduler without metrics (simulate, explain, the bench) pays nothing for it.

Filter is timed by the scheduling algorithm instead: upstream records one observation for
the whole search over the nodes, not one per node.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.config.resolved import ResolvedProfile

from .cycle_state import CycleState
from .handle import ClusterClient, PodNominator
from .interfaces import NodeToStatus, PostFilterResult, PreFilterResult
from .recorder import FrameworkRecorder
from .registry import Registry
from .runtime import Framework, PluginScores
from .status import PluginError, Status, code_label

_SUCCESS = code_label(None)


class InstrumentedFramework(Framework):
    def __init__(
        self,
        profile: ResolvedProfile,
        registry: Registry,
        snapshot: Snapshot,
        recorder: FrameworkRecorder,
        client: ClusterClient | None = None,
        nominator: PodNominator | None = None,
        rng: random.Random | None = None,
        activator: Callable[[Iterable[PodInfo]], None] | None = None,
    ) -> None:
        # Before the plugins are built: a plugin may keep its handle's recorder.
        self.recorder = recorder
        self._point = recorder.extension_point
        super().__init__(profile, registry, snapshot, client, nominator, rng, activator)

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        start = perf_counter()
        status = super().run_pre_enqueue(pod)
        self._point("PreEnqueue", code_label(status), perf_counter() - start)
        return status

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        start = perf_counter()
        result, status = super().run_pre_filter(state, pod, nodes)
        self._point("PreFilter", code_label(status), perf_counter() - start)
        return result, status

    async def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        start = perf_counter()
        result, status = await super().run_post_filter(state, pod, statuses)
        self._point("PostFilter", status.code.label, perf_counter() - start)
        return result, status

    def run_pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        start = perf_counter()
        status = super().run_pre_score(state, pod, nodes)
        self._point("PreScore", code_label(status), perf_counter() - start)
        return status

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], explain: bool = False
    ) -> tuple[list[int], list[PluginScores]]:
        start = perf_counter()
        try:
            out = super().run_score(state, pod, nodes, explain)
        except PluginError:
            self._point("Score", "Error", perf_counter() - start)
            raise
        self._point("Score", _SUCCESS, perf_counter() - start)
        return out

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = perf_counter()
        status = super().run_reserve(state, pod, node_name)
        self._point("Reserve", code_label(status), perf_counter() - start)
        return status

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        start = perf_counter()
        super().run_unreserve(state, pod, node_name)
        self._point("Unreserve", _SUCCESS, perf_counter() - start)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = perf_counter()
        status = super().run_permit(state, pod, node_name)
        self._point("Permit", code_label(status), perf_counter() - start)
        return status

    async def wait_on_permit(self, pod: PodInfo) -> Status | None:
        if pod.uid not in self.waiting_pods:
            return None
        start = perf_counter()
        status = await super().wait_on_permit(pod)
        self.recorder.permit_wait(code_label(status), perf_counter() - start)
        return status

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> Status | None:
        start = perf_counter()
        status = super().run_pre_bind_pre_flights(state, pod, node_name)
        self._point("PreBindPreFlight", code_label(status), perf_counter() - start)
        return status

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = perf_counter()
        status = await super().run_pre_bind(state, pod, node_name)
        self._point("PreBind", code_label(status), perf_counter() - start)
        return status

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = perf_counter()
        status = await super().run_bind(state, pod, node_name)
        self._point("Bind", code_label(status), perf_counter() - start)
        return status

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        start = perf_counter()
        super().run_post_bind(state, pod, node_name)
        self._point("PostBind", _SUCCESS, perf_counter() - start)
