"""The queue's side of queueing hints, after upstream scheduling_queue_test.go
(TestPriorityQueue_isPodWorthRequeuing, TestPriorityQueue_AddUnschedulableIfNotPresent with
in-flight events, TestPriorityQueue_Update, TestPopFromBackoffQ) and backoff_queue_test.go
(the ordering windows)."""

from __future__ import annotations

import copy
from typing import Any

from builders import make_pod
from multisched.cache import PodInfo
from multisched.framework import events as ev
from multisched.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
NODE_ADD = ClusterEvent(ev.NODE, ev.ADD)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def by_priority(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


class Hint:
    """A hint that answers ``verdict`` (or raises) and records what it was asked."""

    def __init__(self, verdict: QueueingHint | None) -> None:
        self.verdict = verdict
        self.calls: list[tuple[str, Any, Any]] = []

    def __call__(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        self.calls.append((pod.name, old, new))
        if self.verdict is None:
            raise ValueError("broken hint")
        return self.verdict


def queue(clock: Clock, hints: dict[str, tuple[ClusterEventWithHint, ...]]) -> SchedulingQueue:
    q = SchedulingQueue(by_priority, clock=clock)
    q.queueing_hints = {"default-scheduler": hints}
    return q


def pooled(q: SchedulingQueue, name: str, plugins: set[str], priority: int = 0) -> QueuedPodInfo:
    q.add(make_pod(name, priority=priority))
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.pod.name == name
    q.add_unschedulable(qpi, plugins)
    assert q.where(qpi.pod.uid) == "unschedulable"
    return qpi


def test_a_hint_decides_and_gets_the_old_and_new_objects() -> None:
    clock = Clock()
    skip, take = Hint(SKIP), Hint(QUEUE)
    q = queue(clock, {"A": (ClusterEventWithHint(NODE_ADD, skip),)})
    a = pooled(q, "a", {"A"})
    assert q.move_all_to_active_or_backoff(NODE_ADD, new="node") == 0
    assert skip.calls == [("a", None, "node")]
    assert q.where(a.pod.uid) == "unschedulable"
    q.queueing_hints = {"default-scheduler": {"A": (ClusterEventWithHint(NODE_ADD, take),)}}
    assert q.move_all_to_active_or_backoff(NODE_ADD, old=None, new="node") == 1
    assert q.where(a.pod.uid) in ("active", "backoff")


def test_only_the_rejecting_plugins_hints_run_and_the_first_queue_stops_them() -> None:
    clock = Clock()
    first, second, other = Hint(QUEUE), Hint(QUEUE), Hint(QUEUE)
    q = queue(
        clock,
        {
            "A": (ClusterEventWithHint(NODE_ADD, first), ClusterEventWithHint(NODE_ADD, second)),
            "B": (ClusterEventWithHint(NODE_ADD, other),),
        },
    )
    pooled(q, "a", {"A"})
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 1
    assert len(first.calls) == 1 and second.calls == [] and other.calls == []


def test_a_registration_for_another_event_is_not_asked() -> None:
    clock = Clock()
    label = Hint(QUEUE)
    node_label = ClusterEvent(ev.NODE, ev.UPDATE_NODE_LABEL)
    q = queue(clock, {"A": (ClusterEventWithHint(node_label, label),)})
    pooled(q, "a", {"A"})
    assert q.move_all_to_active_or_backoff(ev.NODE_TAINT_CHANGE) == 0
    assert label.calls == []
    assert q.move_all_to_active_or_backoff(ev.NODE_LABEL_CHANGE) == 1


def test_no_hint_means_queue_and_a_raising_hint_counts_as_queue() -> None:
    clock = Clock()
    broken = Hint(None)
    q = queue(
        clock,
        {"A": (ClusterEventWithHint(NODE_ADD),), "B": (ClusterEventWithHint(NODE_ADD, broken),)},
    )
    pooled(q, "a", {"A"})
    pooled(q, "b", {"B"})
    seen: list[tuple[str, str, str]] = []
    q.hint_observer = lambda plugin, event, hint, seconds: seen.append((plugin, event, hint))
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 2
    assert len(broken.calls) == 1
    assert seen == [("B", "NodeAdd", "Error")]


def test_a_pod_rejected_for_no_plugins_reason_is_retried_after_its_backoff() -> None:
    """Upstream's ``determineSchedulingHintForInFlightPod``: no rejecting plugin (no node at
    all, say) means queueAfterBackoff, with no event needed; and the error backoffQ, which a
    pop never takes early from (SchedulerPopFromBackoffQ)."""
    clock = Clock()
    never = Hint(SKIP)
    q = queue(clock, {"A": (ClusterEventWithHint(NODE_ADD, never),)})
    q.add(make_pod("rejected"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, set())
    assert q.where(qpi.pod.uid) == "backoff"
    assert q.pop_nowait(from_backoff=True) is None  # activeQ is empty: still not taken early
    clock.now += 60
    q.flush_backoff_completed()
    assert q.where(qpi.pod.uid) == "active"
    assert never.calls == []


def test_events_during_the_attempt_are_checked_when_it_fails() -> None:
    clock = Clock()
    hint = Hint(SKIP)
    q = queue(clock, {"A": (ClusterEventWithHint(NODE_ADD, hint),)})
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.move_all_to_active_or_backoff(NODE_ADD, new="n1")  # in flight: kept
    assert q.in_flight_events == {"NodeAdd": 1}
    q.add_unschedulable(qpi, {"A"})
    assert hint.calls == [("p", None, "n1")]
    assert q.where(qpi.pod.uid) == "unschedulable"  # the hint said the event cannot help
    assert q.in_flight_events == {}  # nobody in flight: nothing kept
    hint.verdict = QUEUE
    again = q.pop_nowait()
    assert again is None  # pooled, not active
    q.move_all_to_active_or_backoff(NODE_ADD)
    again = q.pop_nowait(from_backoff=True)
    assert again is qpi
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.add_unschedulable(qpi, {"A"})
    assert q.where(qpi.pod.uid) == "backoff"  # this time it may help


def test_in_flight_events_are_kept_only_while_a_pod_that_saw_them_is_in_flight() -> None:
    clock = Clock()
    q = queue(clock, {})
    q.add(make_pod("first", priority=2))
    q.add(make_pod("second", priority=1))
    first = q.pop_nowait()
    q.move_all_to_active_or_backoff(NODE_ADD)
    second = q.pop_nowait()
    q.move_all_to_active_or_backoff(ev.NODE_LABEL_CHANGE)
    assert first is not None and second is not None
    assert q.in_flight_events == {"NodeAdd": 1, "NodeUpdateNodeLabel": 1}
    q.done(first.pod.uid)  # only the second still needs an event: the label change
    assert q.in_flight_events == {"NodeUpdateNodeLabel": 1}
    q.delete(second.pod.uid)
    assert q.in_flight_events == {}


def test_in_flight_events_wait_for_the_oldest_pod_in_flight_whichever_ends_first() -> None:
    clock = Clock()
    q = queue(clock, {})
    for name, priority in (("first", 3), ("second", 2), ("third", 1)):
        q.add(make_pod(name, priority=priority))
    first = q.pop_nowait()
    q.move_all_to_active_or_backoff(NODE_ADD)
    second = q.pop_nowait()
    q.move_all_to_active_or_backoff(ev.NODE_LABEL_CHANGE)
    third = q.pop_nowait()
    assert first is not None and second is not None and third is not None
    q.done(second.pod.uid)  # the first still needs both events
    assert q.in_flight_events == {"NodeAdd": 1, "NodeUpdateNodeLabel": 1}
    q.done(first.pod.uid)  # the third started after both
    assert q.in_flight_events == {}
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.in_flight_events == {"NodeAdd": 1}
    q.done(third.pod.uid)
    assert q.in_flight_events == {}


def test_activating_a_pod_in_flight_requeues_that_pod_only() -> None:
    clock = Clock()
    q = queue(clock, {"A": (ClusterEventWithHint(NODE_ADD, Hint(SKIP)),)})
    q.add(make_pod("a", priority=2))
    q.add(make_pod("b", priority=1))
    a, b = q.pop_nowait(), q.pop_nowait()
    assert a is not None and b is not None
    q.activate([a.pod.uid])
    q.add_unschedulable(a, {"A"})
    q.add_unschedulable(b, {"A"})
    assert (q.where(a.pod.uid), q.where(b.pod.uid)) == ("backoff", "unschedulable")


def test_a_gated_pod_waits_for_its_gates_events_then_for_its_rejectors_hints() -> None:
    clock = Clock()
    gated = {"on": True}

    def gate(pod: PodInfo) -> str | None:
        return "Gate" if gated["on"] else None

    fit = Hint(SKIP)
    q = SchedulingQueue(by_priority, gate, clock=clock)
    q.queueing_hints = {
        "default-scheduler": {
            "Gate": (ClusterEventWithHint(ev.ASSIGNED_POD_DELETE, Hint(SKIP)),),
            "Fit": (ClusterEventWithHint(ClusterEvent(ev.POD, ev.DELETE), fit),),
        }
    }
    gated["on"] = False
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    gated["on"] = True
    q.add_unschedulable(qpi, {"Fit"}, error=True)
    clock.now += 20
    q.flush_backoff_completed()  # PreEnqueue holds it back: gated, Fit still a rejector
    assert q.where(qpi.pod.uid) == "unschedulable" and qpi.gated
    assert qpi.unschedulable_plugins == {"Fit", "Gate"}
    q.move_all_to_active_or_backoff(NODE_ADD)  # not the gate's event: no hint asked
    assert fit.calls == []
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old="victim")
    assert fit.calls == [("p", "victim", None)]  # Fit decides; it says no
    assert q.where(qpi.pod.uid) == "unschedulable"
    fit.verdict = QUEUE
    gated["on"] = False
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old="victim")
    assert q.where(qpi.pod.uid) == "active"


def test_a_pending_pods_own_update_moves_it_only_if_a_hint_says_so() -> None:
    clock = Clock()
    scale_down = ClusterEvent(ev.POD, ev.UPDATE_POD_SCALE_DOWN, "TargetPodUpdatePodScaleDown")
    label = ClusterEvent(ev.POD, ev.UPDATE_POD_LABEL, "TargetPodUpdatePodLabel")
    hint = Hint(QUEUE)
    q = queue(clock, {"Fit": (ClusterEventWithHint(scale_down, hint),)})
    qpi = pooled(q, "p", {"Fit"})
    relabelled = make_pod("p", labels={"x": "y"})
    relabelled.uid = qpi.pod.uid
    q.update(relabelled, [label])
    assert q.where(qpi.pod.uid) == "unschedulable" and qpi.pod is relabelled
    smaller = make_pod("p")
    smaller.uid = qpi.pod.uid
    q.update(smaller, [scale_down])
    assert hint.calls == [("p", relabelled, smaller)]
    assert q.where(qpi.pod.uid) in ("active", "backoff")
    assert sum(n for (_, e), n in q.incoming.items() if e == "TargetPodUpdatePodScaleDown") == 1


def test_pop_takes_backoffs_head_when_active_q_is_empty_but_not_an_erred_pod() -> None:
    clock = Clock()
    q = queue(clock, {})
    low = pooled(q, "low", {"A"}, priority=1)
    high = pooled(q, "high", {"A"}, priority=5)
    q.add(make_pod("erred"))
    erred = q.pop_nowait()
    assert erred is not None
    q.add_unschedulable(erred, set(), error=True)
    q.move_all_to_active_or_backoff(NODE_ADD)  # both back off, in the same window
    assert q.pop_nowait() is None  # a driver on a still clock leaves them
    # Same window: activeQ's order (priority) decides.
    assert q.pop_nowait(from_backoff=True) is high
    assert q.pop_nowait(from_backoff=True) is low
    assert q.pop_nowait(from_backoff=True) is None  # the erred pod waits out its backoff
    assert q.incoming[("active", "PopFromBackoffQ")] == 2


def test_backoff_is_ordered_by_window_then_as_active_q_orders() -> None:
    clock = Clock()
    q = queue(clock, {})
    clock.now = 99.5
    early_low = pooled(q, "early-low", {"A"}, priority=1)  # expires 100.5: window 100
    clock.now = 100.6
    late_high = pooled(q, "late-high", {"A"}, priority=9)  # 101.6: window 101
    clock.now = 100.9
    late_mid = pooled(q, "late-mid", {"A"}, priority=5)  # 101.9: window 101
    q.move_all_to_active_or_backoff(NODE_ADD)
    order = [q.pop_nowait(from_backoff=True) for _ in range(3)]
    assert order == [early_low, late_high, late_mid]


def test_a_window_completes_as_a_whole_at_its_end() -> None:
    clock = Clock()
    q = queue(clock, {})
    clock.now = 100.2
    a = pooled(q, "a", {"A"})  # expires 101.2: window [101, 102)
    clock.now = 100.9
    b = pooled(q, "b", {"A"})  # expires 101.9: the same window
    q.move_all_to_active_or_backoff(NODE_ADD)
    clock.now = 101.95
    q.flush_backoff_completed()
    assert (q.where(a.pod.uid), q.where(b.pod.uid)) == ("backoff", "backoff")
    clock.now = 102.0
    q.flush_backoff_completed()
    assert (q.where(a.pod.uid), q.where(b.pod.uid)) == ("active", "active")


def test_a_generic_update_of_the_pod_is_no_toleration_change() -> None:
    """Test_isPodWorthRequeuing: a pod update that changed nothing specific (an annotation)
    is ``TargetPodUpdate``, which a registration for toleration updates does not match;
    a toleration change does."""
    clock = Clock()
    take = Hint(QUEUE)
    toleration = ClusterEvent(ev.POD, ev.UPDATE_POD_TOLERATION)
    q = queue(clock, {"TT": (ClusterEventWithHint(toleration, take),)})
    p = pooled(q, "p", {"TT"})
    clock.now += 20  # backoff over
    raw = copy.deepcopy(p.pod.raw)
    raw["metadata"]["annotations"] = {"a": "b"}
    annotated = PodInfo.parse(raw)
    q.update(annotated, [ClusterEvent(ev.POD, ev.UPDATE, "TargetPodUpdate")])
    assert q.where(p.pod.uid) == "unschedulable" and take.calls == []
    q.update(annotated, [ClusterEvent(ev.POD, ev.UPDATE_POD_TOLERATION, "TargetPodUpdate")])
    assert q.where(p.pod.uid) == "active" and [c[0] for c in take.calls] == ["p"]
