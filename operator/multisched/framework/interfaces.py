"""One protocol per extension point, as in upstream ``framework/interface.go``.

A plugin is a class with a ``name`` and the methods of the points it implements; the
registry reads which points those are from the methods present. Success is ``None``.
Score plugins return an int and raise ``PluginError`` on internal errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from multisched.cache import NodeInfo, PodInfo
from multisched.queue.events import ClusterEvent
from multisched.queue.queued_pod import QueuedPodInfo

from .cycle_state import CycleState
from .status import Status

#: Node score range after NormalizeScore (upstream MinNodeScore/MaxNodeScore).
MIN_NODE_SCORE = 0
MAX_NODE_SCORE = 100


class PreFilterResult:
    """Nodes a PreFilter plugin narrows the cycle to; ``None`` means all nodes."""

    __slots__ = ("node_names", "plugins")

    def __init__(self, node_names: frozenset[str] | None) -> None:
        self.node_names = node_names
        #: Plugins that narrowed the set (filled in by the runtime).
        self.plugins: tuple[str, ...] = ()

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        merged = PreFilterResult(self.node_names & other.node_names)
        merged.plugins = self.plugins + other.plugins
        return merged


class PostFilterResult:
    __slots__ = ("nominated_node_name",)

    def __init__(self, nominated_node_name: str) -> None:
        self.nominated_node_name = nominated_node_name


#: Filter verdicts of the nodes that failed, by node name.
NodeToStatus = Mapping[str, Status]


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """The cluster events that may make a pod this plugin rejected schedulable.

    Only those move such a pod out of the unschedulable pool; the rest wait for the
    pool's periodic flush. A plugin without this method is moved by every event
    (upstream's default for plugins that do not implement EnqueueExtensions). A plain
    sequence attribute of that name is accepted too.
    """

    def events_to_register(self) -> Sequence[ClusterEvent]: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


class PreFilterExtensions(Protocol):
    """Incremental updates of PreFilter state when preemption adds or removes pods."""

    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin that can also judge many nodes in one call (as ``score_nodes`` does
    for Score): a pass over a list at comprehension speed instead of a call per node."""

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        """What ``filter`` returns for the nodes that do not pass, by index in ``nodes``;
        a node not in the answer passes. No side effects: a node past the cycle's last
        may be judged and ignored."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin that can also score many nodes in one call; the runtime then calls
    it instead of ``score`` per node."""

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """What ``score`` returns for each of ``nodes``, in their order."""
        ...


@runtime_checkable
class NormalizeScorePlugin(Plugin, Protocol):
    """Score extensions: rescale a plugin's raw scores (in place) to 0..MAX_NODE_SCORE."""

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


#: Extension point (config spelling) -> the method that marks a plugin as implementing it.
EXTENSION_METHODS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}
