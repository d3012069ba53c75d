"""Queue behaviour after upstream scheduling_queue_test.go."""

import copy
from typing import Any

from builders import make_pod
from multisched.cache import PodInfo
from multisched.framework.events import WILDCARD_EVENT
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def by_priority(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def test_active_queue_orders_by_priority_then_arrival() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    for name, prio in (("low", 1), ("high", 10), ("low2", 1)):
        clock.now += 1
        q.add(make_pod(name, priority=prio))
    popped = []
    while (qpi := q.pop_nowait()) is not None:
        popped.append(qpi.pod.name)
    assert popped == ["high", "low", "low2"]


def _drain(q: SchedulingQueue) -> list[str]:
    popped = []
    while (qpi := q.pop_nowait()) is not None:
        popped.append(qpi.pod.name)
    return popped


def test_a_first_listing_is_queued_in_key_order_as_an_informer_lists_it() -> None:
    """kopf hands the listing over in its own order; the queue then takes the API server's
    (by namespace/name), priority first, and the pods that came after it stay behind."""
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    for name, prio in (("c", 1), ("a", 1), ("z-top", 10), ("b", 1), ("late", 1)):
        clock.now += 1
        q.add(make_pod(name, priority=prio))
    listed = {"default/c", "default/a", "default/z-top", "default/b"}
    assert q.order_as_listed(listed) == 4
    assert _drain(q) == ["z-top", "a", "b", "c", "late"]


def test_the_listing_order_is_not_imposed_once_scheduling_started() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    for name in ("c", "b", "a"):
        clock.now += 1
        q.add(make_pod(name, priority=1))
    assert q.pop_nowait() is not None  # the first cycle: "c"
    assert q.order_as_listed({"default/a", "default/b"}) == 0
    assert _drain(q) == ["b", "a"]


def test_backoff_doubles_up_to_max() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, initial_backoff=1, max_backoff=10, clock=clock)
    q.add(make_pod("p"))
    durations = []
    for _ in range(6):
        qpi = q.pop_nowait()
        assert qpi is not None
        q.add_unschedulable(qpi, {"X"}, error=True)
        assert q.where(qpi.pod.uid) == "backoff"
        durations.append(q.backoff_expiry(qpi) - clock.now)
        assert q.pop_nowait() is None  # still backing off
        clock.now = q.backoff_expiry(qpi)
    # Upstream truncates an expiry to its 1 s ordering window and completes the window as
    # a whole: a backoff of d seconds from a whole second ends after d + 1 seconds.
    assert durations == [2, 3, 5, 9, 11, 11]


def test_backoff_without_ordering_windows_ends_at_its_expiry() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock, backoff_ordering_window=0)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"X"}, error=True)
    clock.now += 0.999
    assert q.pop_nowait() is None
    clock.now += 0.001
    assert q.pop_nowait() is qpi


def test_unschedulable_pod_waits_for_an_event() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"NodeResourcesFit"})
    assert q.where(qpi.pod.uid) == "unschedulable"
    clock.now += 60
    assert q.pop_nowait() is None  # no event: stays in the pool
    q.move_all_to_active_or_backoff("NodeAdd")
    again = q.pop_nowait()
    assert again is not None and again.attempts == 2


def test_a_pod_is_in_flight_from_its_pop_until_bound_or_requeued() -> None:
    """Its binding cycle included: ``done`` comes when the binding ends."""
    q = SchedulingQueue(by_priority, clock=Clock())
    for name in ("bound", "requeued", "deleted"):
        q.add(make_pod(name))
    popped = {}
    while (qpi := q.pop_nowait()) is not None:
        popped[qpi.pod.name] = qpi
    assert q.in_flight_count() == 3
    q.done(popped["bound"].pod.uid)
    q.add_unschedulable(popped["requeued"], {"NodeResourcesFit"})
    assert q.in_flight_count() == 1
    q.delete(popped["deleted"].pod.uid)
    assert q.in_flight_count() == 0


def test_event_during_cycle_sends_pod_to_backoff_not_pool() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.move_all_to_active_or_backoff("NodeAdd")  # arrives while the pod is in flight
    q.add_unschedulable(qpi, {"NodeResourcesFit"})
    assert q.where(qpi.pod.uid) == "backoff"


def test_unschedulable_pool_flushed_after_five_minutes() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"X"})
    clock.now += 299
    assert q.flush_unschedulable_left_over() == 0
    clock.now += 2
    assert q.flush_unschedulable_left_over() == 1
    assert q.pop_nowait() is not None


def test_gated_pod_parks_until_gates_removed() -> None:
    clock = Clock()
    gated = make_pod("p", schedulingGates=[{"name": "example.com/gate"}])
    q = SchedulingQueue(
        by_priority,
        pre_enqueue=lambda pod: "SchedulingGates" if pod.scheduling_gates else None,
        clock=clock,
    )
    q.add(gated)
    assert q.pop_nowait() is None
    assert q.pending_counts()["gated"] == 1
    q.move_all_to_active_or_backoff("NodeAdd")  # gates still there
    assert q.pop_nowait() is None
    ungated = make_pod("p")
    ungated.uid = gated.uid
    q.update(ungated)
    assert q.pop_nowait() is not None


def test_delete_removes_from_every_queue() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    q.delete(a.uid)
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.pod.name == "b"
    assert q.pop_nowait() is None
    q.add_unschedulable(qpi, set())
    q.delete(b.uid)
    assert b.uid not in q
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_a_pod_deleted_and_added_again_is_popped_once_in_its_new_place() -> None:
    """Deletion leaves the old heap entry behind; it must never pop the pod again."""
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    a, b, c = make_pod("a", priority=5), make_pod("b", priority=3), make_pod("c", priority=1)
    for pod in (a, b, c):
        clock.now += 1
        q.add(pod)
    q.delete(a.uid)
    clock.now += 1
    q.add(make_pod("a", priority=0))  # back, now the least important
    popped = []
    while (qpi := q.pop_nowait()) is not None:
        popped.append(qpi.pod.name)
    assert popped == ["b", "c", "a"]
    assert q.scheduling_cycle == 3  # pops of pods, not of the stale entry left behind


def test_a_pod_deleted_while_backing_off_does_not_come_back() -> None:
    clock = Clock()
    q = SchedulingQueue(by_priority, initial_backoff=1, clock=clock)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"X"}, error=True)
    assert q.where(qpi.pod.uid) == "backoff"
    q.delete(qpi.pod.uid)
    clock.now += 60
    assert q.pop_nowait() is None
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_a_retried_pod_keeps_the_timestamp_of_its_failure() -> None:
    """TestRecentlyTriedPodsGoBack / TestPodTimestamp: a pod's timestamp is set when it
    arrives and when an attempt fails, not when it enters activeQ again; so a pod that
    failed before another arrived is popped first (same priority)."""
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    q.add(make_pod("tried", priority=1))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"X"})  # failed at 100
    clock.now = 105.0
    q.add(make_pod("newer", priority=1))
    clock.now = 110.0  # its backoff is over
    assert q.move_all_to_active_or_backoff(WILDCARD_EVENT) == 1
    assert _drain(q) == ["tried", "newer"]


def test_the_leftover_flush_is_an_event_for_the_pods_in_flight() -> None:
    """Upstream's flushUnschedulableEntitiesLeftover moves the pods as
    EventUnschedulableTimeout, a wildcard recorded for the pods in flight: a pod whose
    attempt spans the flush backs off rather than waiting in the pool."""
    clock = Clock()
    q = SchedulingQueue(by_priority, clock=clock)
    q.add(make_pod("left", priority=1))
    left = q.pop_nowait()
    assert left is not None
    q.add_unschedulable(left, {"X"})
    clock.now += 301
    q.add(make_pod("flying", priority=1))
    flying = q.pop_nowait()
    assert flying is not None and flying.pod.name == "flying"
    assert q.flush_unschedulable_left_over() == 1
    assert q.in_flight_events == {"UnschedulableTimeout": 1}
    q.add_unschedulable(flying, {"X"})
    assert q.where(flying.pod.uid) == "backoff"


def _with_status(pod: PodInfo, **status: Any) -> PodInfo:
    raw = copy.deepcopy(pod.raw)
    raw.setdefault("status", {}).update(status)
    return PodInfo.parse(raw)


def test_a_nomination_follows_the_pods_updates() -> None:
    """TestPriorityQueue_UpdateNominatedPodForNode: the nominator holds the pod's latest
    object, and its nomination as the pod's status has it (added, changed, removed)."""
    q = SchedulingQueue(by_priority, clock=Clock())
    pod = make_pod("p", labels={"a": "1"}, status={"nominatedNodeName": "n1"})
    q.add(pod)
    relabelled = PodInfo.parse(
        {**pod.raw, "metadata": {**pod.raw["metadata"], "labels": {"a": "2"}}}
    )
    q.update(relabelled)
    assert [p.labels for p in q.nominator.nominated_pods_for_node("n1")] == [{"a": "2"}]
    q.update_status(_with_status(relabelled, nominatedNodeName="n2"))
    assert q.nominator.nominated_pods_for_node("n1") == []
    assert q.nominator.nominated_node(pod.uid) == "n2"
    q.update_status(_with_status(relabelled, nominatedNodeName=""))
    assert q.nominator.nominated_node(pod.uid) is None


def test_a_nomination_made_in_memory_is_kept_until_the_api_shows_one() -> None:
    """UpdateNominatedPod: an update that names no nomination, on a pod whose old object
    named none either, keeps the one this scheduler reserved before the API echoed it."""
    q = SchedulingQueue(by_priority, clock=Clock())
    pod = make_pod("p")
    q.add(pod)
    q.nominator.add_nominated_pod(pod, "n1")  # set by this scheduler's preemption
    q.update_status(_with_status(pod, conditions=[]))
    assert q.nominator.nominated_node(pod.uid) == "n1"


def test_the_backoff_counts_errors_apart_from_rejections() -> None:
    """TestBackoffQueue_getBackoffTime: the backoff doubles with the consecutive errors
    while there are any (an error after three rejections backs off as a first error), and
    with the rejections otherwise (a rejection ends the run of errors)."""
    clock = Clock()
    q = SchedulingQueue(
        by_priority, initial_backoff=1, max_backoff=10, clock=clock, backoff_ordering_window=0
    )
    q.add(make_pod("p"))
    durations = []
    for plugins in ({"X"}, {"X"}, {"X"}, set(), set(), {"X"}):
        qpi = q.pop_nowait(from_backoff=True)
        assert qpi is not None
        q.add_unschedulable(qpi, plugins, error=not plugins)
        durations.append(q.backoff_expiry(qpi) - clock.now)
        clock.now = q.backoff_expiry(qpi)
        q.move_all_to_active_or_backoff(WILDCARD_EVENT)  # a rejected pod waits in the pool
    assert durations == [1, 2, 4, 1, 2, 8]


class Gate:
    """A PreEnqueue plugin held shut or open by the test."""

    def __init__(self) -> None:
        self.shut = False

    def __call__(self, pod: PodInfo) -> str | None:
        return "Gate" if self.shut else None


def gated_queue(clock: Clock) -> tuple[SchedulingQueue, Gate]:
    gate = Gate()
    return SchedulingQueue(by_priority, pre_enqueue=gate, clock=clock), gate


def test_the_leftover_flush_asks_gated_pods_again() -> None:
    """TestFlushUnschedulablePodsLeftoverSetsFlag_GatedPod, TestGatedPodFlushFrequency: a
    gated pod is flushed too, PreEnqueue asked again, and 5 minutes later again (from its
    last flush, not its arrival)."""
    clock = Clock()
    q, gate = gated_queue(clock)
    gate.shut = True
    q.add(make_pod("p"))
    assert q.pending_counts()["gated"] == 1
    clock.now += 301
    assert q.flush_unschedulable_left_over() == 1  # asked again: still gated
    assert q.pending_counts()["gated"] == 1
    clock.now += 200
    assert q.flush_unschedulable_left_over() == 0  # 200 s after its last flush
    gate.shut = False
    clock.now += 101
    assert q.flush_unschedulable_left_over() == 1
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.pod.name == "p"


def test_a_pod_let_through_while_backing_off_goes_to_backoff() -> None:
    """MoveAllToActiveOrBackoffQueueWithQueueingHint, "no longer gated and the event is
    wildcard": a pod still backing off goes to backoffQ, gated or not before."""
    clock = Clock()
    q, gate = gated_queue(clock)
    q.add(make_pod("p"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"X"})
    gate.shut = True
    q.activate([qpi.pod.uid])
    assert q.pending_counts()["gated"] == 1
    gate.shut = False
    q.move_all_to_active_or_backoff(WILDCARD_EVENT)
    assert q.where(qpi.pod.uid) == "backoff"


def test_pre_enqueue_runs_on_the_way_into_backoff_not_out() -> None:
    """TestPriorityQueue_moveToActiveQ (SchedulerPopFromBackoffQ): PreEnqueue runs when a
    pod enters backoffQ, and not when it leaves for activeQ."""
    clock = Clock()
    q, gate = gated_queue(clock)
    q.add(make_pod("open-at-failure"))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, set(), error=True)
    assert q.where(qpi.pod.uid) == "backoff"
    gate.shut = True
    clock.now += 10
    q.flush_backoff_completed()
    assert q.where(qpi.pod.uid) == "active"  # not asked again on the way out
    shut = q.pop_nowait()
    assert shut is qpi
    q.add_unschedulable(shut, set(), error=True)  # the gate is shut now
    assert q.pending_counts()["gated"] == 1
