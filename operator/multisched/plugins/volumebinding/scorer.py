"""Storage capacity scoring (upstream ``volumebinding/scorer.go``, StorageCapacityScoring):
each storage class the pod's volumes use on a node is scored by its utilization, requested
over capacity, through the configured shape; the node's score is the classes' mean."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from .._resource_allocation import broken_linear

MAX_UTILIZATION = 100

#: Storage class -> (requested bytes, capacity bytes) of the pod's volumes on one node.
ClassResources = Mapping[str, tuple[int, int]]
VolumeCapacityScorer = Callable[[ClassResources], int]


def build_scorer(shape: Sequence[tuple[int, int]]) -> VolumeCapacityScorer:
    """``buildScorerFunction`` over (utilization, score) points already in node score
    scale (0..100)."""
    raw = broken_linear(shape)
    full = raw(MAX_UTILIZATION)

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return full
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(classes: ClassResources) -> int:
        if not classes:
            return 0
        # Every class weighs the same (upstream: "in alpha stage").
        mean = sum(class_score(r, c) for r, c in classes.values()) / len(classes)
        whole = math.floor(mean)
        return whole + (1 if mean - whole >= 0.5 else 0)  # math.Round: halves go up

    return score
