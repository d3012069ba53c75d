"""NodeResourcesFit's queueing-hint arithmetic (upstream ``noderesources/fit.go``: ``isFit``,
``haveAnyRequestedResourcesIncreased``, ``haveEnoughRelevantResourcesDecreased``).

Each compares the pooled pod's requests (``PodInfo.requests``, parsed once) with a node's
allocatable or another pod's requests: a few int comparisons per event and pooled pod.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from multisched.cache import NodeInfo, PodInfo

from ._resource_allocation import is_scalar_resource_name

#: The DeviceClass backing an extended resource (DRAExtendedResource, GA in v1.37):
#: ``DraStore.device_class_for_extended_resource``; None without a DRA store.
Backed = Callable[[str], Mapping[str, Any] | None] | None


def delegated_to_dra(name: str, node: NodeInfo, backed: Backed) -> bool:
    """Upstream ``shouldDelegateResourceToDRA``: a resource the node does not advertise (a
    device plugin would) and a DeviceClass backs is DynamicResources' to allocate."""
    return (
        backed is not None
        and node.allocatable.scalar.get(name, 0) <= 0
        and backed(name) is not None
    )


def fits_empty_node(
    pod: PodInfo, node: NodeInfo, ignored: Callable[[str], bool], backed: Backed = None
) -> bool:
    """Whether ``pod`` would fit ``node`` were it empty (upstream ``isFit``: a NodeInfo with
    the node alone). ``ignored`` resources are left out, as Filter leaves them out, and so
    are those DRA provides on this node."""
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
        and not delegated_to_dra(name, node, backed)
        for name, qty in req.scalar.items()
    )


def any_requested_resource_increased(
    pod: PodInfo, old: NodeInfo, new: NodeInfo, backed: Backed = None
) -> bool:
    """Whether the node's allocatable grew in the pod count or in a resource ``pod`` asks for
    (upstream ``haveAnyRequestedResourcesIncreased``); a resource DRA provides on the new
    node counts as grown (its devices are not in the Node object)."""
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
        qty != 0
        and (
            after.scalar.get(name, 0) > before.scalar.get(name, 0)
            or delegated_to_dra(name, new, backed)
        )
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
