"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Follows upstream ``noderesources`` (resource_allocation.go, least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go and helper/shape_score.go; BalancedAllocation
scores in its own module). Resource names are resolved once per plugin into a kind code and
the pod's requests once per cycle (PreScore) into ``Entry`` tuples, so the per-node score
is a short loop over ints with upstream's integer arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from multisched.framework import MAX_NODE_SCORE

from ._label_validation import is_qualified_name

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"

#: Upper bound of a shape point's score in the config (upstream ``MaxCustomPriorityScore``).
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

# How a configured resource is read from the pod and the node.
KIND_CPU = 0  # requested cpu (BalancedAllocation)
KIND_MEMORY = 1
KIND_CPU_NON_ZERO = 2  # cpu with the 100m default for unset requests (NodeResourcesFit)
KIND_MEMORY_NON_ZERO = 3
KIND_EPHEMERAL_STORAGE = 4
KIND_SCALAR = 5  # extended, hugepages, kubernetes.io/ prefixed, attachable volumes
KIND_IGNORED = 6  # anything else ("pods", "storage", ...): never scored upstream

#: A configured resource: (kind, name, weight).
ResourceSpecTuple = tuple[int, str, int]
#: A resource to score for this pod: (kind, name, weight, pod request).
Entry = tuple[int, str, int, int]


class ArgsModel(BaseModel):
    """Plugin args as KubeSchedulerConfiguration spells them (camelCase, strict types)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


class ResourceSpec(ArgsModel):
    """Upstream ``ResourceSpec``; v1 defaulting turns an unset or zero weight into 1."""

    name: str = ""
    weight: int = 1

    @field_validator("weight")
    @classmethod
    def _default_weight(cls, value: int) -> int:
        return value or 1


def default_resources() -> list[ResourceSpec]:
    """Upstream ``defaultResourceSpec``: cpu and memory, weight 1 each."""
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


def _none_as_empty(value: Any) -> Any:
    return [] if value is None else value


_T = TypeVar("_T")
#: A list field where YAML ``null`` means empty, as Go's nil slice does.
NullableList = Annotated[list[_T], BeforeValidator(_none_as_empty)]


# -- resource names (v1helper / schedutil) ------------------------------------------------


def is_prefixed_native_resource(name: str) -> bool:
    return "kubernetes.io/" in name


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a qualified, domain-prefixed, non-native name."""
    if "/" not in name or is_prefixed_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


#: ``resourceapi.ResourceDeviceClassPrefix``: every DeviceClass's implicit extended resource.
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: a name a DeviceClass may back."""
    return name.startswith(DEVICE_CLASS_RESOURCE_PREFIX) or is_extended_resource_name(name)


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: the names kept in ``Resource.ScalarResources``."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or is_prefixed_native_resource(name)
        or name.startswith("attachable-volumes-")
    )


def resolve_specs(
    resources: Sequence[ResourceSpec], use_requested: bool
) -> tuple[ResourceSpecTuple, ...]:
    """Configured resources as (kind, name, weight), in config order.

    ``use_requested`` picks plain requests for cpu/memory (BalancedAllocation) instead of
    the non-zero defaults (NodeResourcesFit).
    """
    out = []
    for spec in resources:
        name = spec.name
        if name == CPU:
            kind = KIND_CPU if use_requested else KIND_CPU_NON_ZERO
        elif name == MEMORY:
            kind = KIND_MEMORY if use_requested else KIND_MEMORY_NON_ZERO
        elif name == EPHEMERAL_STORAGE:
            kind = KIND_EPHEMERAL_STORAGE
        elif is_scalar_resource_name(name):
            kind = KIND_SCALAR
        else:
            kind = KIND_IGNORED
        out.append((kind, name, spec.weight))
    return tuple(out)


def pod_requests(specs: Sequence[ResourceSpecTuple], pod: PodInfo) -> list[int]:
    """``calculatePodResourceRequestList``: the pod's request per configured resource."""
    requests = pod.requests
    out = []
    for kind, name, _ in specs:
        if kind == KIND_CPU_NON_ZERO:
            out.append(pod.non_zero_cpu)
        elif kind == KIND_MEMORY_NON_ZERO:
            out.append(pod.non_zero_memory)
        else:
            out.append(requests.get(name))
    return out


def score_entries(specs: Sequence[ResourceSpecTuple], requests: Sequence[int]) -> tuple[Entry, ...]:
    """The resources that can score for this pod.

    Upstream scores a scalar resource only when the pod requests it, and never a name it
    does not keep in ``Resource`` (kind ignored); both are dropped here once per pod.
    """
    return tuple(
        (kind, name, weight, req)
        for (kind, name, weight), req in zip(specs, requests, strict=True)
        if kind != KIND_IGNORED and (kind != KIND_SCALAR or req != 0)
    )


#: (resource, node) -> (devices, devices allocated) of the DeviceClass backing it.
DeviceTotals = Callable[[str, NodeInfo], tuple[int, int]]


def usage(
    entries: Sequence[Entry], node: NodeInfo, devices: DeviceTotals | None = None
) -> list[tuple[int, int, int]]:
    """``calculateResourceAllocatableRequest`` per entry as (weight, requested, allocatable).

    Requested includes the incoming pod; resources the node has none of are left out, as
    upstream skips zero allocatable. ``devices`` counts an extended resource the node does
    not advertise from the devices of its DeviceClass (DRAExtendedResource).
    """
    alloc = node.allocatable
    used = node.requested
    out = []
    for kind, name, weight, req in entries:
        if kind == KIND_CPU_NON_ZERO:
            cap, total = alloc.milli_cpu, node.non_zero_cpu + req
        elif kind == KIND_MEMORY_NON_ZERO:
            cap, total = alloc.memory, node.non_zero_memory + req
        elif kind == KIND_CPU:
            cap, total = alloc.milli_cpu, used.milli_cpu + req
        elif kind == KIND_MEMORY:
            cap, total = alloc.memory, used.memory + req
        elif kind == KIND_EPHEMERAL_STORAGE:
            cap, total = alloc.ephemeral_storage, used.ephemeral_storage + req
        else:
            cap = alloc.scalar.get(name, 0)
            total = used.scalar.get(name, 0) + req
            if cap == 0 and devices is not None:
                count, allocated = devices(name, node)
                if count > 0:
                    cap, total = count, allocated + req
        if cap != 0:
            out.append((weight, total, cap))
    return out


# -- scorers: (entries, node) -> score ------------------------------------------------------

Scorer = Callable[[Sequence[Entry], NodeInfo], int]


def _allocation_scorer(most: bool) -> Scorer:
    """``leastResourceScorer`` / ``mostResourceScorer``: a weighted mean of per-resource
    scores, (allocatable - requested) * 100 / allocatable or requested * 100 / allocatable.

    The hot default path, so it reads the node inline rather than through ``usage``; it
    serves NodeResourcesFit, whose cpu/memory entries are always the non-zero kinds.
    """

    def scorer(entries: Sequence[Entry], node: NodeInfo) -> int:
        alloc = node.allocatable
        used = node.requested
        node_score = weight_sum = 0
        for kind, name, weight, req in entries:
            if kind == KIND_CPU_NON_ZERO:
                capacity, requested = alloc.milli_cpu, node.non_zero_cpu + req
            elif kind == KIND_MEMORY_NON_ZERO:
                capacity, requested = alloc.memory, node.non_zero_memory + req
            elif kind == KIND_EPHEMERAL_STORAGE:
                capacity, requested = alloc.ephemeral_storage, used.ephemeral_storage + req
            else:
                capacity = alloc.scalar.get(name, 0)
                requested = used.scalar.get(name, 0) + req
            if capacity == 0:
                continue
            if most:
                score = min(requested, capacity) * MAX_NODE_SCORE // capacity
            elif requested <= capacity:
                score = (capacity - requested) * MAX_NODE_SCORE // capacity
            else:
                score = 0
            node_score += score * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return scorer


least_allocated = _allocation_scorer(most=False)
most_allocated = _allocation_scorer(most=True)

#: A scorer over ``usage``'s (weight, requested, allocatable) triples.
UsageScorer = Callable[[Sequence[tuple[int, int, int]]], int]


def _allocation_usage_scorer(most: bool) -> UsageScorer:
    """``_allocation_scorer``'s arithmetic over ``usage`` (the path that counts devices)."""

    def scorer(used: Sequence[tuple[int, int, int]]) -> int:
        node_score = weight_sum = 0
        for weight, requested, capacity in used:
            if most:
                score = min(requested, capacity) * MAX_NODE_SCORE // capacity
            elif requested <= capacity:
                score = (capacity - requested) * MAX_NODE_SCORE // capacity
            else:
                score = 0
            node_score += score * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return scorer


least_allocated_usage = _allocation_usage_scorer(most=False)
most_allocated_usage = _allocation_usage_scorer(most=True)


def _go_div(a: int, b: int) -> int:
    """Integer division truncated toward zero, as Go's ``/`` on int64."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _go_round(x: float) -> int:
    """``math.Round`` for x >= 0: halves go away from zero."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """``helper.BuildBrokenLinearFunction`` over (utilization, score) points."""
    points = tuple(shape)

    def fn(p: int) -> int:
        for i, (util, score) in enumerate(points):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = points[i - 1]
                return prev_score + _go_div(
                    (score - prev_score) * (p - prev_util), util - prev_util
                )
        return points[-1][1]

    return fn


def scaled_utilization(requested: int, capacity: int) -> int:
    """``scaledUtilization``: requested * 100 / capacity, clamped to [0, 100]."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return MAX_UTILIZATION
    return requested * MAX_UTILIZATION // capacity


def requested_to_capacity_ratio(shape: Sequence[tuple[int, int]]) -> Scorer:
    """``requestedToCapacityRatioScorer``; shape scores are scaled from 0..10 to 0..100."""
    from_usage = requested_to_capacity_ratio_usage(shape)

    def scorer(entries: Sequence[Entry], node: NodeInfo) -> int:
        return from_usage(usage(entries, node))

    return scorer


def requested_to_capacity_ratio_usage(shape: Sequence[tuple[int, int]]) -> UsageScorer:
    """``requested_to_capacity_ratio`` over ``usage``'s triples. Utilization is an int in
    [0, 100], so the broken linear function is tabulated once."""
    raw = broken_linear(
        [(util, score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for util, score in shape]
    )
    table = [raw(p) for p in range(MAX_UTILIZATION + 1)]

    def scorer(used: Sequence[tuple[int, int, int]]) -> int:
        node_score = weight_sum = 0
        for weight, requested, capacity in used:
            # requested > capacity scores as full utilization, like scaledUtilization's clamp.
            score = table[scaled_utilization(requested, capacity)]
            if score > 0:
                node_score += score * weight
                weight_sum += weight
        return _go_round(node_score / weight_sum) if weight_sum else 0

    return scorer


# -- batch forms for the default cpu+memory entries (the framework's score_nodes path) ------


def least_allocated_nodes(entries: Sequence[Entry], nodes: Sequence[NodeInfo]) -> list[int]:
    """``[least_allocated(entries, n) for n in nodes]``, inlined for the default entries
    (non-zero cpu, then non-zero memory): scoring is most of a cycle on big clusters."""
    if (
        len(entries) != 2
        or entries[0][0] != KIND_CPU_NON_ZERO
        or entries[1][0] != (KIND_MEMORY_NON_ZERO)
    ):
        return [least_allocated(entries, n) for n in nodes]
    _, _, cpu_weight, cpu_req = entries[0]
    _, _, mem_weight, mem_req = entries[1]
    out = []
    for node in nodes:
        alloc = node.allocatable
        node_score = weight_sum = 0
        capacity = alloc.milli_cpu
        if capacity:
            requested = node.non_zero_cpu + cpu_req
            if requested <= capacity:
                node_score += (capacity - requested) * MAX_NODE_SCORE // capacity * cpu_weight
            weight_sum += cpu_weight
        capacity = alloc.memory
        if capacity:
            requested = node.non_zero_memory + mem_req
            if requested <= capacity:
                node_score += (capacity - requested) * MAX_NODE_SCORE // capacity * mem_weight
            weight_sum += mem_weight
        out.append(node_score // weight_sum if weight_sum else 0)
    return out
