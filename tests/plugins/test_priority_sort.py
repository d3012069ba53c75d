"""Cases from upstream queuesort/priority_sort_test.go."""

from __future__ import annotations

import pytest

from builders import make_pod
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.plugins.priority_sort import PrioritySort

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


@pytest.mark.parametrize(
    ("p1", "t1", "p2", "t2", "expected"),
    [
        (LOW, T1, HIGH, T1, False),  # p2 ahead: higher priority
        (HIGH, T1, LOW, T1, True),  # p1 ahead: higher priority
        (HIGH, T1, HIGH, T2, True),  # equal priority, p1 queued earlier
        (HIGH, T2, HIGH, T1, False),  # equal priority, p2 queued earlier
        (HIGH, T1, HIGH, T1, False),  # a strict order: equal pods are not less
    ],
    ids=[
        "p1.priority less than p2.priority",
        "p1.priority greater than p2.priority",
        "equal priority. p1 is added to schedulingQ earlier than p2",
        "equal priority. p2 is added to schedulingQ earlier than p1",
        "equal priority and timestamp",
    ],
)
def test_less(p1: int, t1: float, p2: int, t2: float, expected: bool) -> None:
    a = QueuedPodInfo(make_pod("a", priority=p1), t1)
    b = QueuedPodInfo(make_pod("b", priority=p2), t2)
    assert PrioritySort(None, None).less(a, b) is expected
