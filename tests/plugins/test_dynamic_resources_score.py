"""DynamicResources' Score and NormalizeScore: upstream's Test_computesScore and
TestNormalizeScore (v1.37.2)."""

from __future__ import annotations

from typing import Any

import pytest
from dra_support import CLASS, allocated_claim, allocation, claim, owned_by_pod

from multisched.framework import CycleState
from multisched.plugins.dynamicresources import DynamicResources
from multisched.plugins.dynamicresources.claims import ClaimStore
from multisched.plugins.dynamicresources.scoring import compute_score


def _prioritized(*requests: tuple[str, int]) -> dict[str, Any]:
    """``NamedRequestWithPrioritizedList(name, subreq-1..n)`` per (name, n)."""
    obj = claim("c")
    obj["spec"]["devices"]["requests"] = [
        {
            "name": name,
            "firstAvailable": [
                {"name": f"subreq-{i}", "deviceClassName": CLASS, "count": 1}
                for i in range(1, n + 1)
            ],
        }
        for name, n in requests
    ]
    return obj


def _result(*requests: str) -> dict[str, Any]:
    return {"devices": {"results": [{"request": r} for r in requests]}}


@pytest.mark.parametrize(
    ("claims", "allocations", "want"),
    [
        pytest.param(
            [allocated_claim(), owned_by_pod(claim("c2"))],
            [allocation("instance-2", request="req-2")], 0,
            id="mix-of-allocated-and-unallocated-claims",
        ),
        pytest.param(
            [_prioritized(("req-1", 1)), allocated_claim(), owned_by_pod(claim("c2"))],
            [_result("req-1/subreq-1"), _result("req-1")], 8,
            id="mix-with-a-prioritized-list-first",
        ),
        pytest.param(
            [_prioritized(("req-1", 1))], [_result("req-1/subreq-1")], 8,
            id="single-request-only-subrequest-allocated",
        ),
        pytest.param(
            [_prioritized(("req-1", 8))], [_result("req-1/subreq-8")], 1,
            id="single-request-last-subrequest-allocated",
        ),
        pytest.param(
            [_prioritized(("req-1", 4), ("req-2", 5))],
            [_result("req-1/subreq-4", "req-2/subreq-5")], 9,
            id="multiple-requests-with-middle-subrequests-allocated",
        ),
        pytest.param(
            [_prioritized(("req-1", 8), ("req-2", 1))],
            [_result("req-1/subreq-8", "req-2/subreq-1")], 9,
            id="multiple-requests-with-top-subrequests-allocated",
        ),
        pytest.param(
            [_prioritized(("req-1", 8)), _prioritized(("req-2", 8))],
            [_result("req-1/subreq-8"), _result("req-2/subreq-8")], 2,
            id="multiple-claims-with-last-subrequests-allocated",
        ),
        pytest.param(
            [_prioritized(("req-1", 1)), _prioritized(("req-2", 1))],
            [_result("req-1/subreq-1"), _result("req-2/subreq-1")], 16,
            id="multiple-claims-with-top-subrequests-allocated",
        ),
    ],
)  # fmt: skip
def test_compute_score(
    claims: list[dict[str, Any]], allocations: list[dict[str, Any]], want: int
) -> None:
    assert compute_score(ClaimStore(claims), allocations) == want


def test_more_claims_than_allocations_is_an_error() -> None:
    claims = ClaimStore([_prioritized(("req-1", 1)), _prioritized(("req-2", 1))])
    with pytest.raises(ValueError, match="number of allocations 0 is smaller than number of"):
        compute_score(claims, [])


def test_an_allocated_claims_own_allocation_counts() -> None:
    done = _prioritized(("req-1", 2))
    done["status"] = {"allocation": {**allocation(request="req-1/subreq-2")}}
    assert compute_score(ClaimStore([done]), []) == 7


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([42], [100], id="single-score"),
        pytest.param([8, 8], [100, 100], id="all-same"),
        pytest.param([2**31 - 1, 2**31 - 1], [100, 100], id="all-same-very-large"),
        pytest.param([2**31 - 1, 0], [100, 0], id="max-and-min-values"),
        pytest.param([99, 98, 97], [100, 98, 97], id="mid-value"),
    ],
)
def test_normalize_score(scores: list[int], want: list[int]) -> None:
    plugin = DynamicResources(None, None)
    assert plugin.normalize_score(CycleState(), None, [], scores) is None  # type: ignore[arg-type]
    assert scores == want
