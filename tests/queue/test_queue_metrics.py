"""What the queue keeps for the metrics (upstream scheduling_queue.go): pods entering each
queue by event, when a pod's scheduling SLI starts, whether it left the pool by timeout,
and the pods each plugin holds back."""

from __future__ import annotations

from builders import make_pod
from multisched.cache import PodInfo
from multisched.framework.events import NODE_ADD
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fifo(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    return a.timestamp < b.timestamp


def gate_named_gated(pod: PodInfo) -> str | None:
    return "SchedulingGates" if pod.labels.get("gated") else None


def queue(clock: Clock) -> SchedulingQueue:
    return SchedulingQueue(fifo, gate_named_gated, initial_backoff=1, max_backoff=10, clock=clock)


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi


def test_every_move_into_a_queue_is_counted_by_its_event() -> None:
    clock = Clock()
    q = queue(clock)
    q.add(make_pod("a"))
    gated = make_pod("g", labels={"gated": "yes"})
    q.add(gated)
    q.add(make_pod("b"))
    a, b = pop(q), pop(q)
    q.add_unschedulable(a, {"NodeResourcesFit"})
    q.add_unschedulable(b, set(), error=True)
    clock.now += 2  # its 1 s backoff's window (100-101) is over
    q.flush_backoff_completed()  # b's backoff is over
    q.move_all_to_active_or_backoff(NODE_ADD)  # a's too; g stays gated: no move
    ungated = make_pod("g")
    ungated.uid = gated.uid
    q.update(ungated)
    assert q.incoming == {
        ("active", "UnscheduledPodAdd"): 2,
        ("unschedulable", "UnscheduledPodAdd"): 1,
        ("unschedulable", "ScheduleAttemptFailure"): 1,
        ("backoff", "ScheduleAttemptFailure"): 1,
        ("active", "BackoffComplete"): 1,
        ("active", "NodeAdd"): 1,
        ("active", "UnscheduledPodUpdate"): 1,
    }


def test_activation_and_the_pools_timeout_are_counted_too() -> None:
    clock = Clock()
    q = queue(clock)
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    a, b = pop(q), pop(q)
    q.add_unschedulable(a, {"X"})
    q.add_unschedulable(b, {"X"})
    q.activate([a.pod.uid])
    clock.now += 301
    assert q.flush_unschedulable_left_over() == 1
    assert q.incoming[("active", "ForceActivate")] == 1
    assert q.incoming[("active", "UnschedulableTimeout")] == 1


def test_the_sli_starts_when_the_pod_first_enters_active_q() -> None:
    clock = Clock()
    q = queue(clock)
    q.add(make_pod("waits"))
    gated = make_pod("g", labels={"gated": "yes"})
    q.add(gated)
    clock.now += 5
    waits = pop(q)
    assert waits.initial_attempt_timestamp == 100.0  # entered activeQ, not popped
    q.add_unschedulable(waits, {"X"})
    clock.now += 5
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert waits.initial_attempt_timestamp == 100.0  # its first entry only
    info = q.info(gated.uid)
    assert info is not None and info.initial_attempt_timestamp is None  # gated: not yet
    ungated = make_pod("g")
    ungated.uid = gated.uid
    q.update(ungated)
    assert info.initial_attempt_timestamp == 110.0


def test_a_flushed_pod_is_marked_until_its_next_failure() -> None:
    clock = Clock()
    q = queue(clock)
    q.add(make_pod("p"))
    qpi = pop(q)
    q.add_unschedulable(qpi, {"X"})
    assert not qpi.flushed
    clock.now += 301
    q.flush_unschedulable_left_over()
    assert pop(q) is qpi and qpi.flushed
    q.add_unschedulable(qpi, {"X"})
    assert not qpi.flushed


def test_unschedulable_reasons_count_queued_pods_by_plugin_and_profile() -> None:
    clock = Clock()
    q = queue(clock)
    for name, profile in (("a", "s"), ("b", "s"), ("c", "t")):
        q.add(make_pod(name, scheduler_name=profile))
    q.add(make_pod("g", scheduler_name="s", labels={"gated": "yes"}))
    a, b, c = pop(q), pop(q), pop(q)
    q.add_unschedulable(a, {"NodeResourcesFit", "TaintToleration"})
    q.add_unschedulable(b, {"NodeResourcesFit"})
    q.add_unschedulable(c, {"NodeResourcesFit"}, error=True)  # in backoffQ: still counted
    assert q.unschedulable_reasons() == {
        ("NodeResourcesFit", "s"): 2,
        ("TaintToleration", "s"): 1,
        ("NodeResourcesFit", "t"): 1,
        ("SchedulingGates", "s"): 1,
    }
    q.move_all_to_active_or_backoff(NODE_ADD)
    clock.now += 20
    pop(q)  # in flight: counted again only if it fails again
    assert sum(q.unschedulable_reasons().values()) == 4
