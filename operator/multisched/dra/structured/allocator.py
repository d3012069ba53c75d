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

from .pools import NodeView, Pool, gather_pools
from .requests import ALL
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
from .validate import claim_constraints, prepare_claims

__all__ = ["Allocator"]


class Allocator:
    """``NewAllocator``: built once per scheduling cycle, then ``allocate`` per node."""

    __slots__ = (
        "_prepared",
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
        self._prepared: _Prepared | None = None

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
        view, pools = self._pools(node)
        search = Search(self, view, claims, pools, deadline)
        self._prepare(search)
        if not search.run():
            # Invalid pools only count when nothing else could satisfy the claims.
            if any(pool.is_invalid for pool in pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return []
        return build_results(search)

    def _pools(self, node: Mapping[str, Any] | None) -> tuple[NodeView, list[Pool]]:
        """``GatherPools`` for the node, gathered once per node object and slice index
        (the slices and the node's labels are all it reads), for this and later cycles."""
        index = self.index
        name = ((node or {}).get("metadata") or {}).get("name") or ""
        cached = index.pools_by_node.get(name)
        if cached is None or cached[0] is not node or cached[1] is not self.features:
            view = NodeView(node)
            slices_for_node = index.on_node.get(view.name or "", []) + index.shared
            gathered: list[Pool] | str
            try:
                gathered = gather_pools(slices_for_node, view, self.features, index)
            except AllocationError as err:
                gathered = f"gather pool information: {err}"
            cached = index.pools_by_node[name] = (node, self.features, (view, gathered))
        view, gathered = cached[2]
        if isinstance(gathered, str):
            raise AllocationError(gathered)
        return view, gathered

    def _prepare(self, search: Search) -> None:
        """``prepare_claims``, or its result for the same claims on the previous node: it
        depends on the claims and classes alone unless a request asks for all devices. The
        constraints hold the search's state, so they are made anew."""
        claims = search.claims
        last = self._prepared
        if (
            last is not None
            and len(last.claims) == len(claims)
            and all(a is b for a, b in zip(last.claims, claims, strict=True))
        ):
            search.kobjs = last.kobjs
            search.claim_requests = last.claim_requests
            search.configured = last.configured
            search.request_data = last.request_data
            for data in last.request_data.values():
                data.selected_sub_request_index = 0
            search.constraints = [
                claim_constraints(kobj, claim)
                for kobj, claim in zip(last.kobjs, claims, strict=True)
            ]
            return
        prepare_claims(search)
        if all(d.request.allocation_mode != ALL for d in search.request_data.values()):
            self._prepared = _Prepared(search)
        else:
            self._prepared = None


class _Prepared:
    """What ``prepare_claims`` made of a list of claims."""

    __slots__ = ("claim_requests", "claims", "configured", "kobjs", "request_data")

    def __init__(self, search: Search) -> None:
        self.claims = tuple(search.claims)
        self.kobjs = search.kobjs
        self.claim_requests = search.claim_requests
        self.configured = search.configured
        self.request_data = search.request_data
