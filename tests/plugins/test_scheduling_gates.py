"""Cases from upstream schedulinggates/scheduling_gates_test.go."""

from __future__ import annotations

from builders import make_pod
from multisched.framework import Code
from multisched.plugins.scheduling_gates import SchedulingGates


def test_pod_without_gates_is_enqueued() -> None:
    assert SchedulingGates(None, None).pre_enqueue(make_pod()) is None


def test_pod_with_gates_waits() -> None:
    pod = make_pod(schedulingGates=[{"name": "foo"}, {"name": "bar"}])
    status = SchedulingGates(None, None).pre_enqueue(pod)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("waiting for scheduling gates: [foo bar]",)
