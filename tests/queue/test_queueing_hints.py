"""Queueing hints (upstream ``podMatchesEvent``): an event moves only the pods that one of
their rejecting plugins registered for; the others wait for the pool's 5-minute flush."""

from builders import make_pod
from multisched.framework import events as ev
from multisched.framework.events import ClusterEvent
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fifo(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    return a.timestamp < b.timestamp


#: As the built-in plugins register them.
REGISTERED = {
    "NodeResourcesFit": (
        ClusterEvent(ev.POD, ev.DELETE),
        ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_ALLOCATABLE),
    ),
    "TaintToleration": (ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_TAINT),),
    "NodeAffinity": (ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_LABEL),),
    "SchedulingGates": (ClusterEvent(ev.POD, ev.UPDATE),),
}


def pooled(q: SchedulingQueue, clock: Clock, name: str, plugins: set[str]) -> str:
    """A pod that failed once, rejected by ``plugins``, waiting in the pool (backoff over)."""
    q.add(make_pod(name))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, plugins)
    assert q.where(qpi.pod.uid) == "unschedulable"
    return qpi.pod.uid


def queue_with_pool(clock: Clock) -> tuple[SchedulingQueue, dict[str, str]]:
    q = SchedulingQueue(fifo, clock=clock)
    q.plugin_events = REGISTERED
    uids = {
        "fit": pooled(q, clock, "fit", {"NodeResourcesFit"}),
        "taint": pooled(q, clock, "taint", {"TaintToleration"}),
        "affinity": pooled(q, clock, "affinity", {"NodeAffinity"}),
        "fit+taint": pooled(q, clock, "fit-taint", {"NodeResourcesFit", "TaintToleration"}),
    }
    clock.now += 20  # every backoff is over: a moved pod goes straight to activeQ
    return q, uids


def moved(q: SchedulingQueue, uids: dict[str, str]) -> set[str]:
    return {name for name, uid in uids.items() if q.where(uid) == "active"}


def test_node_label_change_moves_only_pods_rejected_by_label_readers() -> None:
    clock = Clock()
    q, uids = queue_with_pool(clock)
    assert q.move_all_to_active_or_backoff(ev.NODE_LABEL_CHANGE) == 1
    assert moved(q, uids) == {"affinity"}


def test_taint_change_moves_pods_any_of_whose_rejecting_plugins_care() -> None:
    clock = Clock()
    q, uids = queue_with_pool(clock)
    assert q.move_all_to_active_or_backoff(ev.NODE_TAINT_CHANGE) == 2
    assert moved(q, uids) == {"taint", "fit+taint"}


def test_assigned_pod_delete_moves_resource_fit_pods() -> None:
    clock = Clock()
    q, uids = queue_with_pool(clock)
    q.move_all_to_active_or_backoff("AssignedPodDelete")  # upstream label works too
    assert moved(q, uids) == {"fit", "fit+taint"}


def test_node_add_and_wildcard_move_everyone() -> None:
    clock = Clock()
    q, uids = queue_with_pool(clock)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD) == 4
    assert moved(q, uids) == set(uids)
    clock2 = Clock()
    q2, uids2 = queue_with_pool(clock2)
    assert q2.move_all_to_active_or_backoff(ev.WILDCARD_EVENT) == 4
    assert moved(q2, uids2) == set(uids2)


def test_an_event_nobody_registered_for_moves_nobody_until_the_flush() -> None:
    clock = Clock()
    q, uids = queue_with_pool(clock)
    assert q.move_all_to_active_or_backoff(ev.NODE_CONDITION_CHANGE) == 0
    assert moved(q, uids) == set()
    clock.now += 300  # 5 minutes after the attempt: the leftover flush takes them all
    assert q.flush_unschedulable_left_over() == 4
    assert moved(q, uids) == set(uids)


def test_plugins_without_registration_move_on_any_event() -> None:
    """A plugin that names no event is registered for all of them (the framework gives it
    the wildcard, as upstream's): any event moves the pods it rejected, and only those."""
    clock = Clock()
    q = SchedulingQueue(fifo, clock=clock)
    q.plugin_events = {**REGISTERED, "SomeCustomPlugin": (ev.WILDCARD_EVENT,)}
    custom = pooled(q, clock, "custom", {"SomeCustomPlugin"})
    fit = pooled(q, clock, "fit", {"NodeResourcesFit"})
    clock.now += 20
    q.move_all_to_active_or_backoff(ev.NODE_CONDITION_CHANGE)
    assert q.where(custom) == "active"
    assert q.where(fit) == "unschedulable"


def test_an_event_no_plugin_registered_moves_nothing_and_is_not_kept() -> None:
    """isEventOfInterest: an event no registration matches returns before the pool is
    walked, and the pods in flight are not told of it."""
    clock = Clock()
    q = SchedulingQueue(fifo, clock=clock)
    q.plugin_events = REGISTERED
    fit = pooled(q, clock, "fit", {"NodeResourcesFit"})
    q.add(make_pod("flying"))
    flying = q.pop_nowait()
    assert flying is not None
    clock.now += 20
    assert q.move_all_to_active_or_backoff(ev.NODE_CONDITION_CHANGE) == 0
    assert q.in_flight_events == {}
    assert q.where(fit) == "unschedulable"
    # A pod no plugin rejected does not wait in the pool for an event at all: it backs off
    # and is retried (tests/queue/test_hint_functions.py).


def test_a_moved_pod_still_backing_off_goes_to_backoff() -> None:
    clock = Clock()
    q = SchedulingQueue(fifo, clock=clock)
    q.plugin_events = REGISTERED
    uid = pooled(q, clock, "fit", {"NodeResourcesFit"})
    q.move_all_to_active_or_backoff(ev.NODE_ALLOCATABLE_CHANGE)
    assert q.where(uid) == "backoff"


def test_node_events_leave_gated_pods_parked() -> None:
    clock = Clock()
    q = SchedulingQueue(
        fifo,
        pre_enqueue=lambda pod: "SchedulingGates" if pod.scheduling_gates else None,
        clock=clock,
    )
    q.plugin_events = REGISTERED
    gated = make_pod("g", schedulingGates=[{"name": "example.com/gate"}])
    q.add(gated)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD) == 0
    assert q.pending_counts()["gated"] == 1


def test_event_matching() -> None:
    fit_nodes = ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_ALLOCATABLE)
    assert fit_nodes.matches(ev.NODE_ADD)
    assert fit_nodes.matches(ev.NODE_ALLOCATABLE_CHANGE)
    assert not fit_nodes.matches(ev.NODE_LABEL_CHANGE)
    assert not fit_nodes.matches(ev.ASSIGNED_POD_DELETE)  # same action, other resource
    # Upstream's MatchClusterEvents: the incoming action must be as specific as the
    # registered one or more (framework/types_test.go, TestMatchClusterEvents).
    label = ClusterEvent(ev.NODE, ev.UPDATE_NODE_LABEL)
    assert ClusterEvent(ev.NODE, ev.UPDATE).matches(ev.NODE_LABEL_CHANGE)
    assert not label.matches(ClusterEvent(ev.NODE, ev.UPDATE))
    assert not label.matches(ClusterEvent(ev.NODE, ev.UPDATE_NODE_LABEL | ev.UPDATE_NODE_CONDITION))
    toleration = ClusterEvent(ev.POD, ev.UPDATE_POD_TOLERATION)
    assert not toleration.matches(ClusterEvent(ev.POD, ev.UPDATE))  # "TargetPodUpdate"
    # A registration for any resource still has to match on the action.
    assert ClusterEvent(ev.WILDCARD, ev.ADD).matches(ev.NODE_ADD)
    assert not ClusterEvent(ev.WILDCARD, ev.ADD).matches(ev.ASSIGNED_POD_DELETE)
    # An incoming wildcard is matched by a wildcard registration alone (the queue moves
    # every pod for it before asking any registration).
    assert ev.WILDCARD_EVENT.matches(ev.NODE_LABEL_CHANGE)
    assert ev.WILDCARD_EVENT.matches(ev.WILDCARD_EVENT)
    assert not fit_nodes.matches(ev.WILDCARD_EVENT)
