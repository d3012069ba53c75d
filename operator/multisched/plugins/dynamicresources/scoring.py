"""DynamicResources' Score (upstream ``computeScore``, DRAPrioritizedList GA in v1.37): a
request with ``firstAvailable`` alternatives scores ``8 - i`` for the ``i``-th subrequest a
node's allocation used, so nodes that can give the preferred devices come first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .claims import FIRST_AVAILABLE_MAX_SIZE, ClaimStore, allocation_of


def _requests(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    requests: list[Mapping[str, Any]] = ((claim.get("spec") or {}).get("devices") or {}).get(
        "requests"
    ) or []
    return requests


def has_prioritized_list(claims: ClaimStore) -> bool:
    """Whether any request has alternatives: without one every node scores 0."""
    return any(r.get("firstAvailable") for _, c in claims.all() for r in _requests(c))


def compute_score(claims: ClaimStore, allocations: list[dict[str, Any]]) -> int:
    """The node's score from its allocation results (those of the claims to allocate, in
    order; allocated claims bring their own). ValueError when the results are too few."""
    score = 0
    unallocated = 0
    for _, claim in claims.all():
        allocation = allocation_of(claim)
        if allocation is None:
            if unallocated >= len(allocations):
                raise ValueError(
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation"
                )
            allocation = allocations[unallocated]
            unallocated += 1
        used = {
            str(r.get("request") or "")
            for r in (allocation.get("devices") or {}).get("results") or ()
            if len(str(r.get("request") or "").split("/")) == 2
        }
        for request in _requests(claim):
            if request.get("exactly") is not None:
                continue
            for i, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request.get('name')}/{sub.get('name')}" in used:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
