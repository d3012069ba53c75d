"""The structured DRA allocator (k8s.io/dynamic-resource-allocation/structured, v0.37.2).

A port of upstream's "incubating" allocator, the one kube-scheduler v1.37.2 selects with its
default feature gates. ``Allocator`` is built once per scheduling cycle from the cluster's
ResourceSlices and allocated devices, then ``allocate`` finds, per node, an AllocationResult
for each of a pod's unallocated claims.
"""

from .allocator import Allocator
from .pools import node_matches
from .requests import claim_requests
from .types import (
    AllocatedState,
    AllocationError,
    DeviceID,
    FailedAllocationOnNode,
    Features,
    SharedDeviceID,
    is_device_allocated,
    klog_kobj,
)

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "FailedAllocationOnNode",
    "Features",
    "SharedDeviceID",
    "claim_requests",
    "is_device_allocated",
    "klog_kobj",
    "node_matches",
]
