"""NodeResourcesBalancedAllocation: favour nodes the pod leaves more evenly used.

Follows upstream v1.37 ``noderesources/balanced_allocation.go``: a node's balance is
(1 - std) * MaxNodeScore over requested/allocatable of the configured resources (plain
requests, not the non-zero defaults), and the score is how much placing the pod changes it,
MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2: 75 when the balance stays, towards
100 when the pod evens the node out, towards 50 when it skews it. PreScore skips pods that
request none of those resources, as upstream does to keep best-effort pods from piling onto
one node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from pydantic import BaseModel, Field, field_validator, model_validator

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import MAX_NODE_SCORE, CycleState, Handle, Status

from ._batch import snapshot_of
from ._label_validation import aggregate, duplicate, invalid
from ._node_values import NodeValues
from ._resource_allocation import (
    KIND_CPU,
    KIND_EPHEMERAL_STORAGE,
    KIND_MEMORY,
    ArgsModel,
    Entry,
    NullableList,
    ResourceSpec,
    default_resources,
    pod_requests,
    resolve_specs,
    score_entries,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    """Upstream ``NodeResourcesBalancedAllocationArgs`` (v1 default: cpu and memory)."""

    resources: NullableList[ResourceSpec] = Field(default_factory=default_resources)

    @field_validator("resources")
    @classmethod
    def _default_resources(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        return value or default_resources()

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesBalancedAllocationArgs:
        """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``."""
        errs: list[str] = []
        seen: set[str] = set()
        for i, res in enumerate(self.resources):
            if res.name in seen:
                errs.append(duplicate(f"resources[{i}].name", res.name))
            else:
                seen.add(res.name)
            if res.weight != 1:
                errs.append(invalid(f"resources[{i}].weight", res.weight, "must be 1"))
        if errs:
            raise ValueError(aggregate(errs))
        return self


class PreScoreState:
    """The pod's requests for the configured resources (upstream
    ``balancedAllocationPreScoreState``)."""

    __slots__ = ("entries",)

    def __init__(self, entries: tuple[Entry, ...]) -> None:
        self.entries = entries


class NodeResourcesBalancedAllocation:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        self._specs = resolve_specs(args.resources, use_requested=True)
        self._handle = handle
        #: Scores per request, kept while a node is unchanged.
        self._scores: NodeValues[int] = NodeValues()

    def _entries(self, pod: PodInfo) -> tuple[Entry, ...] | None:
        """Scoring entries, or None for a pod that requests none of the resources."""
        requests = pod_requests(self._specs, pod)
        if not any(requests):
            return None
        return score_entries(self._specs, requests)

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        entries = self._entries(pod)
        if entries is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(entries))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is not None:
            return balanced(s.entries, node)
        entries = self._entries(pod)
        return 0 if entries is None else balanced(entries, node)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` for every node at once (the framework's batch path)."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        entries = s.entries if s is not None else self._entries(pod)
        if entries is None:
            return [0] * len(nodes)
        return self._scores.values(
            snapshot_of(self._handle), entries, nodes, partial(balanced_nodes, entries)
        )


# -- scoring (upstream ``balancedResourceScorer``) ------------------------------------------

_HALF = MAX_NODE_SCORE // 2


def balance(fractions: Sequence[float], total: float) -> int:
    """``balancedResourceScore``: (1 - std of the capped usage fractions) * 100, in float64
    and in upstream's order of operations, so scores truncate alike."""
    n = len(fractions)
    if n == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / n
        acc = 0.0
        for fraction in fractions:
            acc = acc + (fraction - mean) * (fraction - mean)
        std = math.sqrt(acc / n)
    else:
        std = 0.0
    return int((1 - std) * float(MAX_NODE_SCORE))


def improvement(with_pod: int, without_pod: int) -> int:
    """Both balances are in [50, 100], so the difference maps back onto [50, 100]."""
    return _HALF + (_HALF + with_pod - without_pod) // 2


def balanced(entries: Sequence[Entry], node: NodeInfo) -> int:
    """The score of one node; entries use plain requests (cpu/memory kinds are
    ``KIND_CPU``/``KIND_MEMORY``)."""
    alloc = node.allocatable
    used = node.requested
    after: list[float] = []
    before: list[float] = []
    total_after = total_before = 0.0
    for kind, name, _, req in entries:
        if kind == KIND_CPU:
            capacity, allocated = alloc.milli_cpu, used.milli_cpu
        elif kind == KIND_MEMORY:
            capacity, allocated = alloc.memory, used.memory
        elif kind == KIND_EPHEMERAL_STORAGE:
            capacity, allocated = alloc.ephemeral_storage, used.ephemeral_storage
        else:
            capacity = alloc.scalar.get(name, 0)
            allocated = used.scalar.get(name, 0)
        if capacity == 0:
            continue  # a resource the node has none of does not count
        fraction = min((allocated + req) / capacity, 1.0)
        total_after += fraction
        after.append(fraction)
        fraction = min(allocated / capacity, 1.0)
        total_before += fraction
        before.append(fraction)
    return improvement(balance(after, total_after), balance(before, total_before))


def balanced_nodes(entries: Sequence[Entry], nodes: Sequence[NodeInfo]) -> list[int]:
    """``[balanced(entries, n) for n in nodes]``, inlined for the default entries (cpu, then
    memory); the arithmetic is ``balance``'s two-fraction case, step for step."""
    if len(entries) != 2 or entries[0][0] != KIND_CPU or entries[1][0] != KIND_MEMORY:
        return [balanced(entries, n) for n in nodes]
    cpu_req = entries[0][3]
    mem_req = entries[1][3]
    top = float(MAX_NODE_SCORE)
    out = []
    for node in nodes:
        alloc = node.allocatable
        cpu_cap = alloc.milli_cpu
        mem_cap = alloc.memory
        if not (cpu_cap and mem_cap):
            out.append(balanced(entries, node))  # one fraction or none
            continue
        used = node.requested
        cpu = used.milli_cpu
        mem = used.memory
        a = min((cpu + cpu_req) / cpu_cap, 1.0)
        b = min((mem + mem_req) / mem_cap, 1.0)
        with_pod = int((1 - abs((a - b) / 2)) * top)
        a = min(cpu / cpu_cap, 1.0)
        b = min(mem / mem_cap, 1.0)
        out.append(improvement(with_pod, int((1 - abs((a - b) / 2)) * top)))
    return out


PLUGIN = NodeResourcesBalancedAllocation
