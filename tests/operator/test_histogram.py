"""``LocklessHistogram`` exposes what prometheus_client's own Histogram would, for the same
observations: the same buckets (an upper bound is inclusive), count, sum and text."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry, Histogram, disable_created_metrics, generate_latest

from multisched.operator.histogram import LocklessHistogram

BOUNDS = (0.001, 0.002, 0.004, 0.008)


def test_the_exposition_is_the_librarys_for_the_same_observations() -> None:
    disable_created_metrics()  # type: ignore[no-untyped-call]  # as the operator runs
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    lockless = LocklessHistogram("x_seconds", "X.", ["point"], buckets=BOUNDS, registry=ours)
    library = Histogram("x_seconds", "X.", ["point"], buckets=BOUNDS, registry=theirs)
    rng = random.Random(7)
    values = [*BOUNDS, 0.0, 0.5, *(rng.uniform(0, 0.01) for _ in range(200))]
    for point in ("Filter", "Score"):
        for v in values:
            if rng.random() < 0.5:
                lockless.labels(point).observe(v)
                library.labels(point).observe(v)
    assert generate_latest(ours) == generate_latest(theirs)


def test_a_value_on_a_bound_counts_in_that_bucket() -> None:
    registry = CollectorRegistry()
    h = LocklessHistogram("y", "Y.", buckets=BOUNDS, registry=registry)
    h.observe(0.002)
    h.observe(9.0)
    assert registry.get_sample_value("y_bucket", {"le": "0.001"}) == 0
    assert registry.get_sample_value("y_bucket", {"le": "0.002"}) == 1
    assert registry.get_sample_value("y_bucket", {"le": "+Inf"}) == 2
    assert registry.get_sample_value("y_count", {}) == 2
    assert registry.get_sample_value("y_sum", {}) == 9.002


def test_wrong_label_values_are_refused() -> None:
    h = LocklessHistogram("z", "Z.", ["a", "b"], buckets=BOUNDS, registry=CollectorRegistry())
    with pytest.raises(ValueError, match=r"z: label values \('x',\) for labels \('a', 'b'\)"):
        h.labels("x")
