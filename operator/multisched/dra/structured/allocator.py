"""The structured allocator: ports structured/allocator.go and the search of
incubating/allocator_incubating.go (the implementation v1.37.2 runs with its default gates).

One Allocator serves a pod's scheduling cycle; ``allocate`` runs once per node. The search is
exhaustive with early exits: claims in order, their requests in order, and for each device a
request needs, the candidates in pool/slice/device order (only combinations, not
permutations, within one request). The first full solution wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from .pools import NodeView, gather_pools
from .result import build_results
from .search import Search
from .slices import SliceIndex, slice_index
from .types import (
    INCUBATING_FEATURES,
    AllocatedState,
    AllocationError,
    FailedAllocationOnNode,
    Features,
)
from .validate import prepare_claims

__all__ = ["Allocator"]


class Allocator:
    """``NewAllocator``: built once per scheduling cycle, then ``allocate`` per node."""

    __slots__ = (
        "allocated_state",
        "available_counters",
        "features",
        "get_device_class",
        "index",
        "num_allocate_one_invocations",
        "shared_in_use",
    )

    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        get_device_class: Callable[[str], Mapping[str, Any] | None],
        slices: Sequence[Mapping[str, Any]],
    ) -> None:
        if not features.is_subset_of(INCUBATING_FEATURES):
            raise AllocationError(
                f"internal error: no allocator available for feature set {features.go_string()}"
                ", enabled allocators: incubating"
            )
        self.features = features
        self.allocated_state = allocated_state
        self.get_device_class = get_device_class
        self.index: SliceIndex = slice_index(slices)
        #: Devices with a persisted share (their ids without the share id).
        self.shared_in_use = {s[:3] for s in allocated_state.allocated_shared_device_ids}
        #: Per pool: what its counter sets have left after the allocated devices. Filled on
        #: first use and kept for all nodes, as upstream's ``availableCounters``.
        self.available_counters: dict[tuple[str, str], dict[str, dict[str, Decimal]]] = {}
        #: Upstream's Stats: how much searching the allocator did.
        self.num_allocate_one_invocations = 0

    def is_allocated(self, device_id: tuple[str, str, str]) -> bool:
        """``IsDeviceAllocated`` with the shared ids looked up in a set."""
        state = self.allocated_state
        return (
            device_id in state.allocated_devices
            or device_id in self.shared_in_use
            or device_id in state.aggregated_capacity
        )

    def allocate(
        self,
        node: Mapping[str, Any],
        claims: Sequence[Mapping[str, Any]],
        deadline: float | None = None,
    ) -> list[dict[str, Any]]:
        """``Allocate``: one AllocationResult per claim, or [] when they do not all fit on
        this node. Raises AllocationError (FailedAllocationOnNode when only this node is at
        fault); past ``deadline`` (``time.monotonic()``), upstream's context error."""
        view = NodeView(node)
        index = self.index
        slices_for_node = index.on_node.get(view.name or "", []) + index.shared
        try:
            pools = gather_pools(slices_for_node, view, self.features, index)
        except AllocationError as err:
            raise AllocationError(f"gather pool information: {err}") from None
        search = Search(self, view, claims, pools, deadline)
        prepare_claims(search)
        if not search.run():
            # Invalid pools only count when nothing else could satisfy the claims.
            if any(pool.is_invalid for pool in pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return []
        return build_results(search)
