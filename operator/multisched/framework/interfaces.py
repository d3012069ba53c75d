"""One protocol per extension point, as in upstream ``framework/interface.go``.

A plugin is a class with a ``name`` and the methods of the points it implements; the
registry reads which points those are from the methods present. Success is ``None``.
Score plugins return an int and raise ``PluginError`` on internal errors.

Each point's Protocol is attached to its row of the one extension-point table
(``config.extension_points``); the import fails if a point has no Protocol, a Protocol no
point, or the two disagree on the methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from multisched.cache import NodeInfo, PodInfo
from multisched.config.extension_points import BY_NAME, POINTS, ExtensionPoint

from .cycle_state import CycleState
from .events import ClusterEvent, ClusterEventWithHint
from .queued_pod import QueuedPodInfo
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

#: Extension point name (the table's, ``config.extension_points``) -> its Protocol.
POINT_PROTOCOLS: dict[str, type] = {}

_P = TypeVar("_P", bound=type)


def _protocol_of(point: str) -> Callable[[_P], _P]:
    """Attach the decorated Protocol to ``point`` of the table; a point the table does not
    list, or one that already has its Protocol, stops the import."""

    def attach(protocol: _P) -> _P:
        known = BY_NAME.get(point)
        if known is None or known.pod_group:
            raise TypeError(f"{protocol.__name__}: {point!r} is no extension point multisched runs")
        if point in POINT_PROTOCOLS:
            raise TypeError(f"{protocol.__name__}: {point} is {POINT_PROTOCOLS[point].__name__}'s")
        POINT_PROTOCOLS[point] = protocol
        return protocol

    return attach


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

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]: ...


@_protocol_of("preEnqueue")
@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status | None: ...


@_protocol_of("queueSort")
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


@_protocol_of("preFilter")
@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@_protocol_of("filter")
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


@_protocol_of("postFilter")
@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@_protocol_of("preScore")
@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None: ...


@_protocol_of("score")
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


@_protocol_of("reserve")
@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@_protocol_of("permit")
@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]: ...


@_protocol_of("preBind")
@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@_protocol_of("bind")
@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@_protocol_of("postBind")
@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


def protocol_members(protocol: type) -> frozenset[str]:
    """What ``isinstance`` asks of a plugin for a Protocol: its public attributes and
    methods, its bases' included."""
    return frozenset(
        name
        for klass in protocol.__mro__
        for name in (*vars(klass).get("__annotations__", {}), *vars(klass))
        if not name.startswith("_")
    )


def _check_point_protocols(points: tuple[ExtensionPoint, ...]) -> None:
    """Every point multisched runs has its Protocol, named as upstream's interface and
    asking for the table's methods (and ``name``), or the framework does not import."""
    for point in points:
        if point.pod_group:
            continue
        protocol = POINT_PROTOCOLS.get(point.name)
        if protocol is None:
            raise TypeError(f"extension point {point.name} has no Protocol in {__name__}")
        if protocol.__name__ != f"{point.go_name}Plugin":
            raise TypeError(f"{protocol.__name__} is not named for {point.go_name}Plugin")
        if protocol_members(protocol) != {"name", *point.methods}:
            raise TypeError(
                f"{protocol.__name__} asks for {sorted(protocol_members(protocol))}, "
                f"the table for {point.name} {sorted({'name', *point.methods})}"
            )


_check_point_protocols(POINTS)

#: Extension point -> the method that marks a plugin as implementing it (the registry's).
EXTENSION_METHODS: dict[str, str] = {p.name: p.methods[0] for p in POINTS if not p.pod_group}
