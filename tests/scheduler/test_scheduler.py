"""The schedule-one loop: assume, bind, failures, events, live profile swaps."""

from typing import Any

from builders import make_pod, node_dict
from fakes import ALL, RecordingBinder, config, profile
from multisched.cache import Cache, PodInfo
from multisched.framework import Registry, Status
from multisched.scheduler import Scheduler
from multisched.scheduler.algorithm import FILTER_TIMING_STRIDE
from multisched.scheduler.events import NullObserver
from multisched.scheduler.scheduler import PLUGIN_METRICS_SAMPLE


class Events:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        self.log.append(("Scheduled", profile, pod.key, node_name))

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        self.log.append(("FailedScheduling", profile, pod.key, reason, message))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _scheduler(**kw: Any) -> tuple[Scheduler, Events]:
    RecordingBinder.bound = []
    RecordingBinder.fail_with = None
    events = Events()
    cache = Cache()
    cache.add_node(node_dict("small", cpu="1", labels={"score": "10"}))
    cache.add_node(node_dict("big", cpu="4", labels={"score": "90"}))
    sched = Scheduler(kw.pop("cfg", config()), Registry(ALL), cache=cache, events=events, **kw)
    return sched, events


async def _drain(sched: Scheduler) -> None:
    while (qpi := sched.queue.pop_nowait()) is not None:
        await sched.schedule_one(qpi)
        await sched.wait_for_bindings()


async def test_pod_is_assumed_then_bound_with_scheduled_event() -> None:
    sched, events = _scheduler()
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "2"})
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    outcome = await sched.schedule_one(qpi)
    # Assumed at once: the next cycle already counts the pod on "big".
    assert outcome.node == "big"
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 2000
    await sched.wait_for_bindings()
    assert RecordingBinder.bound == [("default/web", "big")]
    assert events.log == [("Scheduled", "test", "default/web", "big")]
    assert pod.uid not in sched.queue


async def test_assumed_pods_count_for_the_next_pod() -> None:
    sched, _ = _scheduler()
    for i in range(3):
        sched.feed.on_pod(make_pod(f"p{i}", scheduler_name="test", requests={"cpu": "2"}))
    await _drain(sched)
    # big fits two 2-CPU pods; the third fits nowhere.
    assert [n for _, n in RecordingBinder.bound] == ["big", "big"]


async def test_unknown_scheduler_name_is_left_alone() -> None:
    sched, events = _scheduler()
    sched.feed.on_pod(make_pod("theirs", scheduler_name="default-scheduler"))
    sched.feed.on_pod(make_pod("nameless"))
    await _drain(sched)
    assert RecordingBinder.bound == []
    assert events.log == []


async def test_same_failure_not_reposted_within_max_backoff() -> None:
    clock = Clock()
    sched, events = _scheduler(clock=clock)
    pod = make_pod("huge", scheduler_name="test", requests={"cpu": "16"})
    sched.feed.on_pod(pod)
    await _drain(sched)
    expected = (
        "FailedScheduling",
        "test",
        "default/huge",
        "Unschedulable",
        "0/2 nodes are available: 2 Insufficient cpu.",
    )
    assert events.log == [expected]

    async def retry(after: float) -> None:
        clock.now += after
        sched.queue.move_all_to_active_or_backoff("NodeUpdate")
        sched.queue.flush_backoff_completed()
        await _drain(sched)

    # Retried after its 1 s backoff (ended with its 1 s ordering window), same message: not
    # posted again.
    await retry(2)
    assert sched.queue.info(pod.uid).attempts == 2  # type: ignore[union-attr]
    assert events.log == [expected]
    await retry(10)  # past podMaxBackoffSeconds: posted again
    assert events.log == [expected, expected]
    sched.cache.add_node(node_dict("third", cpu="1"))
    await retry(10)
    assert events.log[-1][-1] == "0/3 nodes are available: 3 Insufficient cpu."


async def test_binding_failure_forgets_assumption_and_requeues() -> None:
    sched, events = _scheduler()
    RecordingBinder.fail_with = Status.error('pods "web" already bound (409)')
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "2"})
    sched.feed.on_pod(pod)
    await _drain(sched)
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 0
    assert not sched.cache.is_assumed(pod.uid)
    assert sched.queue.where(pod.uid) == "backoff"
    assert events.log[-1][3] == "SchedulerError"


async def test_bound_pod_observed_confirms_and_leaves_queue() -> None:
    sched, _ = _scheduler()
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "2"})
    sched.feed.on_pod(pod)
    await _drain(sched)
    bound = make_pod("web", scheduler_name="test", requests={"cpu": "2"}, node_name="big")
    bound.uid = pod.uid
    sched.feed.on_pod(bound)
    assert not sched.cache.is_assumed(pod.uid)
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 2000
    sched.feed.on_pod_deleted(pod.uid)
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 0


async def test_profile_swap_applies_to_next_pod_and_retires_names() -> None:
    sched, _ = _scheduler()
    sched.feed.on_pod(make_pod("a", scheduler_name="test"))
    await _drain(sched)
    assert RecordingBinder.bound[-1] == ("default/a", "big")
    # New profile: score weights flipped by scoring nothing -> ties; plus a second name.
    sched.set_config(config(profile("test", score=()), profile("other")))
    sched.feed.on_pod(make_pod("b", scheduler_name="other"))
    await _drain(sched)
    assert RecordingBinder.bound[-1][0] == "default/b"
    # Retiring "other" drops its pending pods from the queue, untouched.
    pending = make_pod("c", scheduler_name="other", requests={"cpu": "64"})
    sched.feed.on_pod(pending)
    await _drain(sched)
    assert pending.uid in sched.queue
    sched.set_config(config(profile("test")))
    assert pending.uid not in sched.queue


class Recorder(NullObserver):
    def __init__(self) -> None:
        self.plugins: list[tuple[str, str, str]] = []

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.plugins.append((plugin, extension_point, status))


async def test_plugin_execution_time_sampled_one_cycle_in_ten() -> None:
    recorder = Recorder()
    sched, _ = _scheduler(observer=recorder)
    for i in range(9):
        sched.feed.on_pod(make_pod(f"p{i}", scheduler_name="test"))
    await _drain(sched)
    assert recorder.plugins == []  # cycles 1-9: nothing timed
    sched.feed.on_pod(make_pod("tenth", scheduler_name="test", requests={"cpu": "64"}))
    await _drain(sched)
    seen = set(recorder.plugins)
    # The tenth cycle fails Filter on both nodes: PreFilter is timed, and Filter at the
    # first node evaluated (one node in FILTER_TIMING_STRIDE).
    assert ("OnlyNamed", "PreFilter", "Success") in seen
    assert [p for p in recorder.plugins if p[1] == "Filter"] == [
        ("CpuFit", "Filter", "Unschedulable")
    ]


async def test_sampled_cycle_times_filters_at_one_node_in_stride() -> None:
    recorder = Recorder()
    sched, _ = _scheduler(observer=recorder)
    for i in range(23):  # 25 nodes: the first evaluated, the 11th and the 21st are timed
        sched.cache.add_node(node_dict(f"extra-{i:02d}", cpu="1"))
    sched._cycles = PLUGIN_METRICS_SAMPLE - 1  # the next cycle records plugin metrics
    sched.feed.on_pod(make_pod("big-one", scheduler_name="test", requests={"cpu": "64"}))
    await _drain(sched)
    filters = [p for p in recorder.plugins if p[1] == "Filter"]
    assert len(filters) == len(range(1, 26, FILTER_TIMING_STRIDE)) == 3
    assert set(filters) == {("CpuFit", "Filter", "Unschedulable")}
