"""NodeResourcesFit: filter nodes without room for the pod's requests; score by allocation.

Follows upstream ``noderesources/fit.go``. PreFilter reduces the pod's request vector to the
checks Filter makes (non-zero, not ignored), so Filter is a few int comparisons per node.
PreScore resolves the pod's scoring requests for the configured strategy
(LeastAllocated, MostAllocated or RequestedToCapacityRatio, see ``_resource_allocation``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator, model_validator

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.cache.dra import DEVICE_CLASS, DEVICE_CLASS_RESOURCE_PREFIX
from multisched.framework import Code, CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_POD_SCALE_DOWN,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._batch import failing, snapshot_of
from ._device_totals import DeviceTotals, device_totals
from ._fit_hints import (
    Backed,
    any_requested_resource_increased,
    fits_empty_node,
    relevant_resources_decreased,
)
from ._function_shape import shape_errors
from ._hints import is_assigned, is_target_pod
from ._label_validation import aggregate, invalid, label_name_errors, not_supported, required
from ._node_values import NodeValues
from ._resource_allocation import (
    KIND_SCALAR,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    ArgsModel,
    Entry,
    NullableList,
    ResourceSpec,
    Scorer,
    UsageScorer,
    default_resources,
    is_extended_resource_name,
    is_scalar_resource_name,
    least_allocated,
    least_allocated_nodes,
    least_allocated_usage,
    most_allocated,
    most_allocated_usage,
    pod_requests,
    requested_to_capacity_ratio,
    requested_to_capacity_ratio_usage,
    resolve_specs,
    score_entries,
    usage,
)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

REASON_TOO_MANY_PODS = "Too many pods"

#: Sorted, as ``sets.List`` prints them in the NotSupported message.
SUPPORTED_SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


# -- args ------------------------------------------------------------------------------------


class UtilizationShapePoint(ArgsModel):
    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(ArgsModel):
    shape: NullableList[UtilizationShapePoint] = []


class ScoringStrategy(ArgsModel):
    """v1 ``ScoringStrategy``: no resources (or weight 0) default as upstream; no type does not."""

    type: str = ""
    resources: NullableList[ResourceSpec] = Field(default_factory=default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources")
    @classmethod
    def _default_resources(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        return value or default_resources()


def _default_strategy() -> ScoringStrategy:
    return ScoringStrategy(type=LEAST_ALLOCATED)


class NodeResourcesFitArgs(ArgsModel):
    """Upstream ``NodeResourcesFitArgs`` with v1 defaults and ``ValidateNodeResourcesFitArgs``."""

    ignored_resources: NullableList[str] = []
    ignored_resource_groups: NullableList[str] = []
    scoring_strategy: ScoringStrategy = Field(default_factory=_default_strategy)

    @field_validator("scoring_strategy", mode="before")
    @classmethod
    def _null_strategy(cls, value: Any) -> Any:
        return _default_strategy() if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesFitArgs:
        errs: list[str] = []
        for i, ignored in enumerate(self.ignored_resources):
            errs += label_name_errors(f"ignoredResources[{i}]", ignored)
        for i, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{i}]"
            if "/" in group:
                errs.append(invalid(path, group, "resource group name can't contain '/'"))
            errs += label_name_errors(path, group)
        strategy = self.scoring_strategy
        if strategy.type not in SUPPORTED_SCORING_STRATEGY_TYPES:
            errs.append(
                not_supported(
                    "scoringStrategy.type", strategy.type, SUPPORTED_SCORING_STRATEGY_TYPES
                )
            )
        for i, res in enumerate(strategy.resources):
            if not 0 < res.weight <= 100:
                errs.append(
                    invalid(
                        f"scoringStrategy.resources[{i}].weight",
                        res.weight,
                        f"resource weight of {res.name} not in valid range (0, 100]",
                    )
                )
        param = strategy.requested_to_capacity_ratio
        if param is not None:
            errs += shape_errors(param.shape, "scoringStrategy.requestedToCapacityRatio.shape")
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream would dereference the missing parameter; say what is missing instead.
            errs.append(
                required(
                    "scoringStrategy.requestedToCapacityRatio",
                    f"a shape is needed for type {REQUESTED_TO_CAPACITY_RATIO}",
                )
            )
        if errs:
            raise ValueError(aggregate(errs))
        return self


# -- cycle state -----------------------------------------------------------------------------


#: Why a node cannot hold the pod: the reasons, in upstream's order.
#: (whether a request exceeds the node's whole allocatable, the reasons).
Verdict = tuple[bool, tuple[str, ...]]
#: Distinct verdicts kept (combinations of a few reasons: far fewer in practice).
MAX_SHARED_STATUSES = 256


class PreFilterState:
    """The checks Filter makes for this pod (upstream ``preFilterState``, pre-digested).

    ``scalars`` holds (name, request, reason) for every scalar request that is non-zero and
    not ignored; ``checks`` is false when only the pod count matters. ``backed`` names the
    scalars a DeviceClass backs: a node that does not advertise one leaves it to DRA.
    """

    __slots__ = ("backed", "checks", "ephemeral_storage", "memory", "milli_cpu", "scalars")

    def __init__(
        self,
        milli_cpu: int,
        memory: int,
        ephemeral_storage: int,
        scalars: tuple[tuple[str, int, str], ...],
        backed: frozenset[str] = frozenset(),
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.scalars = scalars
        self.backed = backed
        self.checks = bool(milli_cpu > 0 or memory > 0 or ephemeral_storage > 0 or scalars)


class PreScoreState:
    """The pod's scoring requests for the configured resources (upstream ``preScoreState``);
    ``devices`` counts the extended resources DRA provides (None: none is scored)."""

    __slots__ = ("devices", "entries")

    def __init__(self, entries: tuple[Entry, ...], devices: DeviceTotals | None = None) -> None:
        self.entries = entries
        self.devices = devices


# -- plugin ----------------------------------------------------------------------------------


class NodeResourcesFit:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Handle) -> None:
        args = args or NodeResourcesFitArgs()
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self._specs = resolve_specs(strategy.resources, use_requested=False)
        self._scorer: Scorer
        #: The same strategy over ``usage``, for nodes scored by their devices.
        self._usage_scorer: UsageScorer
        if strategy.type == MOST_ALLOCATED:
            self._scorer = most_allocated
            self._usage_scorer = most_allocated_usage
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            param = strategy.requested_to_capacity_ratio
            shape = [(p.utilization, p.score) for p in (param.shape if param is not None else [])]
            self._scorer = requested_to_capacity_ratio(shape)
            self._usage_scorer = requested_to_capacity_ratio_usage(shape)
        else:
            self._scorer = least_allocated
            self._usage_scorer = least_allocated_usage
        self._handle = handle
        #: Scores and the filter's screen per request, kept while a node is unchanged.
        self._scores: NodeValues[int] = NodeValues()
        self._cleared: NodeValues[bool] = NodeValues()
        self._verdicts: NodeValues[Status | None] = NodeValues()
        #: One status object per distinct verdict, shared by nodes and cycles: when no node
        #: fits, every node holds one of a few, and the cycle's diagnosis, its
        #: FailedScheduling message and preemption then handle each object once.
        self._shared: dict[Verdict, Status] = {}

    # -- PreFilter / Filter ------------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Room frees up when a pod goes or a bound pod shrinks (InPlacePodVerticalScaling,
        # GA), or a node comes or grows; or the pod itself asks for less. A DeviceClass
        # that comes or changes may back an extended resource no node advertises.
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, DELETE), is_schedulable_after_assigned_pod_delete
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(DEVICE_CLASS, ADD | UPDATE), is_schedulable_after_device_class_event
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_SCALE_DOWN),
                is_schedulable_after_assigned_pod_scale_down,
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_SCALE_DOWN), is_schedulable_after_target_pod_scale_down
            ),
        )

    def is_schedulable_after_node_change(
        self, pod: PodInfo, old: NodeInfo | None, new: NodeInfo
    ) -> QueueingHint:
        """Upstream ``isSchedulableAfterNodeChange``: the pod fits the node's allocatable,
        and the node is new or grew in something the pod asks for."""
        backed = self._backed()
        if not fits_empty_node(pod, new, self._ignored, backed):
            return QueueingHint.QUEUE_SKIP
        if old is not None and not any_requested_resource_increased(pod, old, new, backed):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def requests_devices(self, pod: PodInfo) -> bool:
        """Upstream ``SignPod``'s refusal: the pod asks for an extended resource a
        DeviceClass backs (its devices are allocated per pod, so no batch may share them)."""
        resolve = self._backed()
        return resolve is not None and any(
            qty != 0 and resolve(name) is not None for name, qty in pod.requests.scalar.items()
        )

    def _backed(self) -> Backed:
        """The DRA store's DeviceClass lookup; None when no DRA object exists, or for a
        plugin built without a handle (upstream's nil draManager: nothing is delegated)."""
        if self._handle is None:
            return None
        dra = self._handle.snapshot.dra
        return None if dra.is_empty() else dra.device_class_for_extended_resource

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, self._pre_filter_state(pod))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _pre_filter_state(self, pod: PodInfo) -> PreFilterState:
        req = pod.requests
        scalars = tuple(
            (name, qty, f"Insufficient {name}")
            for name, qty in req.scalar.items()
            if qty != 0 and is_scalar_resource_name(name) and not self._ignored(name)
        )
        backed: frozenset[str] = frozenset()
        resolve = self._backed() if scalars else None
        if resolve is not None:
            backed = frozenset(name for name, _, _ in scalars if resolve(name) is not None)
        return PreFilterState(req.milli_cpu, req.memory, req.ephemeral_storage, scalars, backed)

    def _ignored(self, name: str) -> bool:
        """Only extended resources can be ignored, by name or by their domain prefix."""
        if not is_extended_resource_name(name):
            return False
        return name in self.ignored_resources or (
            bool(self.ignored_resource_groups)
            and name.split("/", 1)[0] in self.ignored_resource_groups
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(
                f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
            )
        verdict = _insufficient(s, node)
        return None if verdict is None else _status(verdict)

    # -- PreScore / Score --------------------------------------------------------------------

    def _entries(self, pod: PodInfo) -> tuple[Entry, ...]:
        return score_entries(self._specs, pod_requests(self._specs, pod))

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return failing(self.filter, state, pod, nodes, range(len(nodes)))
        if s.scalars:
            suspects: Sequence[int] = range(len(nodes))
            verdicts = self._judged(s, nodes)
        else:
            request = (s.milli_cpu, s.memory, s.ephemeral_storage)
            # ``filter``'s fast path as a screen; the nodes it does not clear are judged in
            # full, and their verdicts kept while the node is unchanged (a backlog's pods
            # mostly ask alike, and a full cluster fails every node for each of them).
            snapshot = self._snapshot()
            cleared = self._cleared.values(snapshot, request, nodes, partial(_clear, request))
            if all(cleared):
                return {}
            suspects = [i for i, ok in enumerate(cleared) if not ok]
            verdicts = self._verdicts.values(
                snapshot, request, [nodes[i] for i in suspects], partial(self._judged, s)
            )
        return {
            i: status for i, status in zip(suspects, verdicts, strict=True) if status is not None
        }

    def _judged(self, s: PreFilterState, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for each of ``nodes``, with the shared status of each verdict."""
        shared = self._shared
        out: list[Status | None] = []
        for node in nodes:
            verdict = _insufficient(s, node)
            if verdict is None:
                out.append(None)
                continue
            status = shared.get(verdict)
            if status is None:
                if len(shared) >= MAX_SHARED_STATUSES:
                    shared.clear()
                status = shared[verdict] = _status(verdict)
            out.append(status)
        return out

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self._pre_score_state(pod))
        return None

    def _pre_score_state(self, pod: PodInfo) -> PreScoreState:
        entries = self._entries(pod)
        devices = None
        if self._handle is not None and any(kind == KIND_SCALAR for kind, _, _, _ in entries):
            devices = device_totals(self._handle.snapshot.dra, entries)
        return PreScoreState(entries, devices)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            s = self._pre_score_state(pod)
        if s.devices is not None:
            return self._usage_scorer(usage(s.entries, node, s.devices))
        return self._scorer(s.entries, node)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` for every node at once (the framework's batch path)."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            s = self._pre_score_state(pod)
        if s.devices is not None:
            # Not kept per node: claims take devices without changing any Node.
            return [self._usage_scorer(usage(s.entries, n, s.devices)) for n in nodes]
        entries = s.entries
        return self._scores.values(
            self._snapshot(), entries, nodes, partial(self._score_nodes, entries)
        )

    def _score_nodes(self, entries: tuple[Entry, ...], nodes: Sequence[NodeInfo]) -> list[int]:
        scorer = self._scorer
        if scorer is least_allocated:
            return least_allocated_nodes(entries, nodes)
        return [scorer(entries, node) for node in nodes]

    def _snapshot(self) -> Snapshot | None:
        return snapshot_of(self._handle)


def _insufficient(s: PreFilterState, node: NodeInfo) -> Verdict | None:
    """``filter``'s judgement (upstream ``fitsRequest``); None when the node holds the pod."""
    alloc = node.allocatable
    used = node.requested
    # Fast path, no allocation: the node holds the pod (most nodes, most cycles). The
    # checks are the ones below; a failing node takes the slow path for its reasons.
    if (
        len(node.pods) < alloc.allowed_pod_number
        and not s.scalars
        and s.milli_cpu <= alloc.milli_cpu - used.milli_cpu
        and s.memory <= alloc.memory - used.memory
        and s.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage
    ):
        return None
    too_many_pods = len(node.pods) + 1 > alloc.allowed_pod_number
    if not s.checks:
        return (False, (REASON_TOO_MANY_PODS,)) if too_many_pods else None
    reasons = [REASON_TOO_MANY_PODS] if too_many_pods else []
    # A request beyond the node's whole allocatable: no preemption can help (v1.34+,
    # kubernetes#131345), so the node answers UnschedulableAndUnresolvable.
    unresolvable = False
    cpu = s.milli_cpu
    if cpu > 0 and cpu > alloc.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
        unresolvable |= cpu > alloc.milli_cpu
    memory = s.memory
    if memory > 0 and memory > alloc.memory - used.memory:
        reasons.append("Insufficient memory")
        unresolvable |= memory > alloc.memory
    storage = s.ephemeral_storage
    if storage > 0 and storage > alloc.ephemeral_storage - used.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
        unresolvable |= storage > alloc.ephemeral_storage
    if s.scalars:
        alloc_scalar = alloc.scalar
        used_scalar = used.scalar
        for name, qty, reason in s.scalars:
            capacity = alloc_scalar.get(name, 0)
            if qty > capacity - used_scalar.get(name, 0):
                if capacity <= 0 and name in s.backed:
                    continue  # DynamicResources allocates it from devices
                reasons.append(reason)
                unresolvable |= qty > capacity
    return (unresolvable, tuple(reasons)) if reasons else None


def _status(verdict: Verdict) -> Status:
    unresolvable, reasons = verdict
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, *reasons)


def _clear(request: tuple[int, int, int], nodes: Sequence[NodeInfo]) -> list[bool]:
    """Whether each node surely has room for ``request`` (cpu, memory, storage) and a pod."""
    cpu, memory, storage = request
    return [
        len(n.pods) < n.allocatable.allowed_pod_number
        and cpu <= n.allocatable.milli_cpu - n.requested.milli_cpu
        and memory <= n.allocatable.memory - n.requested.memory
        and storage <= n.allocatable.ephemeral_storage - n.requested.ephemeral_storage
        for n in nodes
    ]


def is_schedulable_after_assigned_pod_delete(
    pod: PodInfo, old: PodInfo | None, new: None
) -> QueueingHint:
    """Upstream ``isSchedulableAfterAssignedPodDelete``: any bound or nominated pod's
    going frees room somewhere."""
    return QueueingHint.QUEUE if is_assigned(old) else QueueingHint.QUEUE_SKIP


def is_schedulable_after_device_class_event(
    pod: PodInfo, old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> QueueingHint:
    """Upstream ``isSchedulableAfterDeviceClassEvent``: the class (now) backs an extended
    resource the pod asks for, by its extendedResourceName or, when added, its implicit
    name."""
    if not isinstance(new, Mapping) or not isinstance(old, Mapping | None):
        raise TypeError(f"unexpected objects for a DeviceClass event: {old!r}, {new!r}")
    name = (new.get("spec") or {}).get("extendedResourceName")
    requested = pod.requests.scalar
    if old is not None:
        if ((old.get("spec") or {}).get("extendedResourceName") or "") == (name or ""):
            return QueueingHint.QUEUE_SKIP
    elif (
        DEVICE_CLASS_RESOURCE_PREFIX + str((new.get("metadata") or {}).get("name", "")) in requested
    ):
        return QueueingHint.QUEUE
    if name is not None and name in requested:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_assigned_pod_scale_down(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterAssignedPodScaleDown``: a bound pod shrank in a
    resource the pod asks for."""
    if relevant_resources_decreased(pod, old, new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_target_pod_scale_down(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterTargetPodScaleDown``: the pod itself asks for less."""
    return QueueingHint.QUEUE if is_target_pod(pod, new) else QueueingHint.QUEUE_SKIP


PLUGIN = NodeResourcesFit
