"""NodeResourcesFit's queueing-hint arithmetic (upstream ``noderesources/fit.go``: ``isFit``,
``haveAnyRequestedResourcesIncreased``, ``haveEnoughRelevantResourcesDecreased``).

Each compares the pooled pod's requests (``PodInfo.requests``, parsed once) with a node's
allocatable or another pod's requests: a few int comparisons per event and pooled pod.
"""

from __future__ import annotations

from collections.abc import Callable

from multisched.cache import NodeInfo, PodInfo

from ._resource_allocation import is_scalar_resource_name


def fits_empty_node(pod: PodInfo, node: NodeInfo, ignored: Callable[[str], bool]) -> bool:
    """Whether ``pod`` would fit ``node`` were it empty (upstream ``isFit``: a NodeInfo with
    the node alone). ``ignored`` resources are left out, as Filter leaves them out."""
    alloc = node.allocatable
    if alloc.allowed_pod_number < 1:
        return False
    req = pod.requests
    if (
        req.milli_cpu > alloc.milli_cpu
        or req.memory > alloc.memory
        or req.ephemeral_storage > alloc.ephemeral_storage
    ):
        return False
    scalar = alloc.scalar
    return not any(
        qty > 0
        and qty > scalar.get(name, 0)
        and is_scalar_resource_name(name)
        and not ignored(name)
        for name, qty in req.scalar.items()
    )


def any_requested_resource_increased(pod: PodInfo, old: NodeInfo, new: NodeInfo) -> bool:
    """Whether the node's allocatable grew in the pod count or in a resource ``pod`` asks for
    (upstream ``haveAnyRequestedResourcesIncreased``)."""
    before, after = old.allocatable, new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    req = pod.requests
    if (
        (req.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (req.memory > 0 and after.memory > before.memory)
        or (req.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        qty != 0 and after.scalar.get(name, 0) > before.scalar.get(name, 0)
        for name, qty in req.scalar.items()
    )


def relevant_resources_decreased(target: PodInfo, old: PodInfo, new: PodInfo) -> bool:
    """Whether a bound pod's resize freed some of a resource ``target`` asks for (upstream
    ``haveEnoughRelevantResourcesDecreased``); an unbound pod's frees nothing."""
    if not new.node_name:
        return False
    want, before, after = target.requests, old.requests, new.requests
    if (
        (want.milli_cpu != 0 and before.milli_cpu > after.milli_cpu)
        or (want.memory != 0 and before.memory > after.memory)
        or (want.ephemeral_storage != 0 and before.ephemeral_storage > after.ephemeral_storage)
    ):
        return True
    return any(
        qty != 0
        and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        and is_scalar_resource_name(name)
        for name, qty in want.scalar.items()
    )
