"""Cases from upstream schedulinggates/scheduling_gates_test.go."""

from __future__ import annotations

from builders import make_pod, pod_dict
from multisched.cache import PodInfo
from multisched.framework import Code
from multisched.framework.events import (
    POD,
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    ClusterEvent,
    QueueingHint,
)
from multisched.plugins.scheduling_gates import (
    SchedulingGates,
    is_schedulable_after_target_pod_gates_eliminated,
)


def test_pod_without_gates_is_enqueued() -> None:
    assert SchedulingGates(None, None).pre_enqueue(make_pod()) is None


def test_pod_with_gates_waits() -> None:
    pod = make_pod(schedulingGates=[{"name": "foo"}, {"name": "bar"}])
    status = SchedulingGates(None, None).pre_enqueue(pod)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("waiting for scheduling gates: [foo bar]",)


def test_is_schedulable_after_update_target_pod_scheduling_gates_eliminated() -> None:
    gated = pod_dict("p", schedulingGates=[{"name": "foo"}])
    pod, old = PodInfo.parse(gated), PodInfo.parse(gated)
    new = PodInfo.parse(
        {**gated, "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"}}
    )
    assert is_schedulable_after_target_pod_gates_eliminated(pod, old, new) is QueueingHint.QUEUE
    # Ours: Pod stands in for upstream's TargetPod; another pod's gates are not this one's.
    other = make_pod("q")
    assert (
        is_schedulable_after_target_pod_gates_eliminated(pod, other, other)
        is QueueingHint.QUEUE_SKIP
    )


def test_events_to_register() -> None:
    (registration,) = SchedulingGates(None, None).events_to_register()
    assert registration.event == ClusterEvent(POD, UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    assert registration.hint is is_schedulable_after_target_pod_gates_eliminated
