"""The allocator's vocabulary: features, device ids, the allocated state and errors.

Ports structured/internal/types.go, internal/allocatedstate.go and schedulerapi/types.go.
Device ids are plain tuples (``DeviceID`` and ``SharedDeviceID`` compare equal to them), so
the store can hand over sets of tuples without converting them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import NamedTuple

#: resourceapi.AllocationResultsMaxSize: devices in one claim's allocation.
ALLOCATION_RESULTS_MAX_SIZE = 32


class AllocationError(Exception):
    """An error ``Allocate`` returns; ``str()`` is upstream's message."""


class FailedAllocationOnNode(AllocationError):
    """``errors.Is(err, ErrFailedAllocationOnNode)``: only this node is at fault."""


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class SharedDeviceID(NamedTuple):
    driver: str
    pool: str
    device: str
    share_id: str  # "" = none

    def __str__(self) -> str:
        text = f"{self.driver}/{self.pool}/{self.device}"
        return f"{text}/{self.share_id}" if self.share_id else text


@dataclass(frozen=True, slots=True)
class Features:
    """``internal.Features``: optional allocator behaviour, mostly one feature gate each."""

    admin_access: bool = False
    compatibility_groups: bool = False
    consumable_capacity: bool = False
    derived_attributes: bool = False
    device_binding_and_status: bool = False
    device_taints: bool = False
    fractional_capacity_range: bool = False
    list_type_attributes: bool = False
    optional_node_operations: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False

    @classmethod
    def v1_37_defaults(cls) -> Features:
        """What kube-scheduler v1.37.2 runs with (``AllocatorFeatures`` of the default gates)."""
        return INCUBATING_FEATURES

    def go_string(self) -> str:
        """``%+v`` of the Go struct, as upstream's errors print it."""
        parts = (f"{_go_field(f.name)}:{str(getattr(self, f.name)).lower()}" for f in fields(self))
        return "{" + " ".join(parts) + "}"

    def is_subset_of(self, other: Features) -> bool:
        return all(getattr(other, f.name) for f in fields(self) if getattr(self, f.name))


def _go_field(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


#: incubating.SupportedFeatures, which are also v1.37.2's defaults.
INCUBATING_FEATURES = Features(
    admin_access=True,
    consumable_capacity=True,
    device_binding_and_status=True,
    device_taints=True,
    fractional_capacity_range=True,
    partitionable_devices=True,
    prioritized_list=True,
)


class AllocatedState:
    """``AllocatedState``: what the claims already allocated (and in flight) hold."""

    __slots__ = ("aggregated_capacity", "allocated_devices", "allocated_shared_device_ids")

    def __init__(
        self,
        allocated_devices: set[tuple[str, str, str]] | None = None,
        allocated_shared_device_ids: set[tuple[str, str, str, str]] | None = None,
        aggregated_capacity: dict[tuple[str, str, str], dict[str, Decimal]] | None = None,
    ) -> None:
        self.allocated_devices = allocated_devices if allocated_devices is not None else set()
        self.allocated_shared_device_ids = (
            allocated_shared_device_ids if allocated_shared_device_ids is not None else set()
        )
        self.aggregated_capacity = aggregated_capacity if aggregated_capacity is not None else {}


def is_device_allocated(device: tuple[str, str, str], state: AllocatedState) -> bool:
    """``IsDeviceAllocated``: dedicated, or shared (a share id or consumed capacity)."""
    if device in state.allocated_devices:
        return True
    if any(shared[:3] == device for shared in state.allocated_shared_device_ids):
        return True
    return device in state.aggregated_capacity


def generate_share_id() -> str:
    """``GenerateShareID`` (upstream: ``uuid.NewUUID``)."""
    return str(uuid.uuid4())


def klog_kobj(obj: Mapping[str, object]) -> str:
    """``klog.KObj``: "namespace/name", or the name of a cluster-scoped object."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    return f"{namespace}/{name}" if namespace else name
