"""Test-only plugins and a profile builder for exercising the algorithm and scheduler."""

from __future__ import annotations

from typing import Any

from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config.resolved import ResolvedConfig, ResolvedProfile
from multisched.framework import CycleState, Framework, PreFilterResult, Registry, Status
from multisched.framework.queued_pod import QueuedPodInfo


class FifoSort:
    name = "FifoSort"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp


class CpuFit:
    """Filters on free CPU with upstream's reason."""

    name = "CpuFit"
    calls = 0

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        CpuFit.calls += 1
        free = node.allocatable.milli_cpu - node.requested.milli_cpu
        if pod.requests.milli_cpu > free:
            return Status.unschedulable("Insufficient cpu")
        return None


class LabelScore:
    """Scores a node by its integer label ``score`` (0..100)."""

    name = "LabelScore"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.labels.get("score", "0"))


class OnlyNamed:
    """PreFilter narrowing to nodes named in the pod's annotation-like label ``only``."""

    name = "OnlyNamed"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
        only = pod.labels.get("only")
        if only is None:
            return None, None
        if only == "reject":
            return None, Status.unresolvable("pod says no")
        return PreFilterResult(frozenset(only.split("."))), None

    def pre_filter_extensions(self) -> None:
        return None


class RecordingBinder:
    name = "RecordingBinder"
    bound: list[tuple[str, str]] = []
    fail_with: Status | None = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if RecordingBinder.fail_with is not None:
            return RecordingBinder.fail_with
        RecordingBinder.bound.append((pod.key, node_name))
        return None


ALL = [FifoSort, CpuFit, LabelScore, OnlyNamed, RecordingBinder]


def profile(
    name: str = "test",
    *,
    score: tuple[str, ...] = ("LabelScore",),
    percentage: int | None = None,
    weights: dict[str, int] | None = None,
) -> ResolvedProfile:
    return ResolvedProfile(
        scheduler_name=name,
        percentage_of_nodes_to_score=percentage,
        plugins={
            "queueSort": ("FifoSort",),
            "preFilter": ("OnlyNamed",),
            "filter": ("CpuFit",),
            "score": score,
            "bind": ("RecordingBinder",),
        },
        score_weights=weights or dict.fromkeys(score, 1),
    )


def config(*profiles: ResolvedProfile) -> ResolvedConfig:
    return ResolvedConfig(profiles=profiles or (profile(),))


def framework(cache: Cache, prof: ResolvedProfile | None = None) -> Framework:
    return Framework(prof or profile(), Registry(ALL), cache.snapshot)
