"""The binding cycle: Permit waits hold no slot, nothing awaits between filter and assume,
and lost or conflicting binding responses keep the cache truthful."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from builders import RecordingClient, make_pod, node_dict
from fakes import ALL, RecordingBinder, config, profile
from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    ApiUnavailable,
    BindingConflict,
    Code,
    CycleState,
    NotLeading,
    Registry,
    Status,
)
from multisched.plugins.default_binder import DefaultBinder
from multisched.scheduler import Scheduler
from multisched.scheduler.events import NullObserver


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Events:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        self.log.append(("Scheduled", pod.key, node_name))

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        self.log.append(("FailedScheduling", pod.key, reason))


class Gang:
    """A coscheduling-like Permit plugin: pods labelled ``gang`` wait until allowed."""

    name = "Gang"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("gang"):
            return Status(Code.WAIT), 600.0
        return None, 0.0


def gang_profile() -> ResolvedProfile:
    prof = profile()
    plugins = dict(prof.plugins)
    plugins["permit"] = ("Gang",)
    return ResolvedProfile(prof.scheduler_name, None, plugins, prof.score_weights)


async def settle(until: Any, rounds: int = 200) -> bool:
    """Let background tasks run (no wall clock involved) until ``until()`` holds."""
    for _ in range(rounds):
        if until():
            return True
        await asyncio.sleep(0)
    return bool(until())


async def test_pods_waiting_at_permit_beyond_the_slots_do_not_stop_scheduling() -> None:
    RecordingBinder.bound = []
    RecordingBinder.fail_with = None
    slots = 2
    cache = Cache()
    cache.add_node(node_dict("big", cpu="64", labels={"score": "90"}))
    sched = Scheduler(
        config(gang_profile()), Registry([*ALL, Gang]), cache=cache, max_concurrent_binds=slots
    )
    stop = asyncio.Event()
    loop = asyncio.create_task(sched.run(stop))
    gang = [make_pod(f"g{i}", scheduler_name="test", labels={"gang": "a"}) for i in range(5)]
    for pod in gang:  # N > slots pods wait at Permit
        sched.feed.on_pod(pod)
    loner = make_pod("loner", scheduler_name="test")
    sched.feed.on_pod(loner)
    fwk = sched.profiles["test"]
    assert await settle(lambda: ("default/loner", "big") in RecordingBinder.bound)
    # The gang is assumed (its room counted) and still waiting; only the loner is bound.
    assert sorted(fwk.waiting_pods) == sorted(p.uid for p in gang)
    assert all(sched.cache.is_assumed(p.uid) for p in gang)
    assert RecordingBinder.bound == [("default/loner", "big")]
    for pod in gang:
        waiting = fwk.get_waiting_pod(pod.uid)
        assert waiting is not None
        waiting.allow("Gang")
    assert await settle(lambda: len(RecordingBinder.bound) == 6)
    assert {key for key, _ in RecordingBinder.bound} == {p.key for p in gang} | {loner.key}
    stop.set()
    await loop


async def test_deleting_a_pod_waiting_at_permit_rejects_it() -> None:
    RecordingBinder.bound = []
    RecordingBinder.fail_with = None
    cache = Cache()
    cache.add_node(node_dict("big", cpu="4", labels={"score": "90"}))
    sched = Scheduler(config(gang_profile()), Registry([*ALL, Gang]), cache=cache)
    pod = make_pod("g", scheduler_name="test", labels={"gang": "a"}, requests={"cpu": "2"})
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    sched.feed.on_pod_deleted(pod.uid)
    await sched.wait_for_bindings()
    assert RecordingBinder.bound == []
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 0
    assert pod.uid not in sched.queue


async def test_a_pod_seen_bound_between_pop_and_cycle_is_skipped_not_assumed() -> None:
    RecordingBinder.bound = []
    RecordingBinder.fail_with = None
    cache = Cache()
    cache.add_node(node_dict("big", cpu="4", labels={"score": "90"}))
    cache.add_node(node_dict("small", cpu="4", labels={"score": "10"}))
    sched = Scheduler(config(), Registry(ALL), cache=cache)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "1"})
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    bound = make_pod("web", scheduler_name="test", requests={"cpu": "1"}, node_name="small")
    bound.uid = pod.uid
    sched.feed.on_pod(bound)  # another replica bound it meanwhile
    outcome = await sched.schedule_one(qpi)
    assert outcome.result == "skipped"
    await sched.wait_for_bindings()
    assert RecordingBinder.bound == []
    assert sched.cache.snapshot.node_info_map["small"].requested.milli_cpu == 1000
    assert sched.cache.snapshot.node_info_map["big"].requested.milli_cpu == 0


# -- binding outcomes through DefaultBinder -------------------------------------------------


def binder_scheduler(**kw: Any) -> tuple[Scheduler, RecordingClient, Events, Clock]:
    prof = profile()
    plugins = dict(prof.plugins)
    plugins["bind"] = ("DefaultBinder",)
    prof = ResolvedProfile("test", None, plugins, prof.score_weights)
    cache = Cache()
    cache.add_node(node_dict("small", cpu="4", labels={"score": "10"}))
    cache.add_node(node_dict("big", cpu="4", labels={"score": "90"}))
    client, events, clock = RecordingClient(), Events(), Clock()
    sched = Scheduler(
        config(prof),
        Registry([*ALL, DefaultBinder]),
        cache=cache,
        client=client,
        events=events,
        clock=clock,
        **kw,
    )
    return sched, client, events, clock


async def schedule(sched: Scheduler, pod: PodInfo) -> None:
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    await sched.wait_for_bindings()


def cpu_on(sched: Scheduler, node: str) -> int:
    return sched.cache.snapshot.node_info_map[node].requested.milli_cpu


async def test_a_lost_binding_response_keeps_the_pod_assumed_until_the_watch_confirms() -> None:
    sched, client, events, _ = binder_scheduler()
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert sched.cache.is_assumed(pod.uid)
    assert cpu_on(sched, "big") == 3000  # its room is not given away
    assert sched.queue.where(pod.uid) == "in-flight"  # not retried behind the cache's back
    assert events.log == []  # the outage is logged once by the client, not per pod
    other = make_pod("other", scheduler_name="test", requests={"cpu": "3"})
    client.error = None
    await schedule(sched, other)
    assert client.bound[-1] == ("default/other", "small")
    bound = make_pod("web", scheduler_name="test", requests={"cpu": "3"}, node_name="big")
    bound.uid = pod.uid
    sched.feed.on_pod(bound)  # the watch shows the binding had landed
    assert not sched.cache.is_assumed(pod.uid)
    assert pod.uid not in sched.queue
    assert cpu_on(sched, "big") == 3000
    await sched.wait_for_bindings()
    # Bound where we sent it: the cycle ends as a successful one, its Scheduled event once.
    assert [e for e in events.log if e[1] == "default/web"] == [("Scheduled", "default/web", "big")]
    assert await sched.retry_unconfirmed_bindings(older_than=0) == 0  # nothing to resend
    sched.housekeep()  # nothing left to expire
    assert cpu_on(sched, "big") == 3000


async def test_an_unconfirmed_binding_expires_after_its_ttl_and_is_retried() -> None:
    sched, client, _, clock = binder_scheduler(unconfirmed_binding_ttl=120.0)
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    clock.now += 119
    sched.housekeep()
    assert sched.cache.is_assumed(pod.uid)
    clock.now += 2
    sched.housekeep()
    assert not sched.cache.is_assumed(pod.uid)
    assert cpu_on(sched, "big") == 0
    assert sched.queue.where(pod.uid) == "backoff"


async def test_a_lost_binding_is_sent_again_once_the_api_answers() -> None:
    """Not stored: the resent binding binds it, with its Scheduled event, long before the
    TTL. Stored after all: the API's 409 "already assigned" there counts as bound."""
    sched, client, events, clock = binder_scheduler()
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert await sched.retry_unconfirmed_bindings() == 0  # too soon to tell
    clock.now += 3
    client.error = ApiUnavailable("Cannot connect to host", maybe_sent=False)
    assert await sched.retry_unconfirmed_bindings() == 1  # still down: keep waiting
    assert sched.cache.is_assumed(pod.uid) and cpu_on(sched, "big") == 3000
    assert sched.queue.where(pod.uid) == "in-flight"
    clock.now += 3
    client.error = None
    assert await sched.retry_unconfirmed_bindings() == 1
    assert client.bound == [("default/web", "big")] * 3
    assert events.log == [("Scheduled", "default/web", "big")]
    assert pod.uid not in sched.queue
    assert cpu_on(sched, "big") == 3000
    assert await sched.retry_unconfirmed_bindings() == 0  # nothing left to resend

    stored = make_pod("db", scheduler_name="test", requests={"cpu": "1"})
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    await schedule(sched, stored)
    node = client.bound[-1][1]
    clock.now += 3
    client.error = BindingConflict(
        409, f'pod db is already assigned to node "{node}"', bound_to=node
    )
    assert await sched.retry_unconfirmed_bindings() == 1
    assert sched.cache.is_assumed(stored.uid)  # counted there until the watch confirms
    assert stored.uid not in sched.queue
    assert cpu_on(sched, node) >= 1000


async def test_a_binding_that_never_left_is_forgotten_and_retried_quietly() -> None:
    sched, client, events, _ = binder_scheduler()
    client.error = ApiUnavailable("Cannot connect to host", maybe_sent=False)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert not sched.cache.is_assumed(pod.uid)
    assert cpu_on(sched, "big") == 0
    assert sched.queue.where(pod.uid) == "backoff"
    assert events.log == []


async def test_bindings_refused_after_leadership_ends_requeue_quietly(caplog: Any) -> None:
    """A replica that stops leading (or stops) says so once; its pods waiting for a
    binding slot are refused before the wire and go back to the queue without a line or
    an event each."""
    sched, client, events, _ = binder_scheduler()
    client.error = NotLeading("not the leader any more; request not sent")
    pods = [make_pod(f"web-{i}", scheduler_name="test", requests={"cpu": "1"}) for i in range(3)]
    with caplog.at_level(logging.INFO, logger="multisched.scheduler"):
        for pod in pods:
            await schedule(sched, pod)
    assert [sched.queue.where(p.uid) for p in pods] == ["backoff"] * 3
    assert cpu_on(sched, "big") == cpu_on(sched, "small") == 0
    assert events.log == []
    assert not [r for r in caplog.records if "unschedulable" in r.getMessage()]


async def test_a_lost_binding_is_kept_while_this_replica_may_not_resend_it() -> None:
    """Its first request may be stored: a replica that stopped leading keeps counting the
    pod there (for the watch or the TTL to settle) rather than give its room away."""
    sched, client, events, clock = binder_scheduler()
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    clock.now += 3
    client.error = NotLeading("not the leader any more; request not sent")
    assert await sched.retry_unconfirmed_bindings() == 1
    assert sched.cache.is_assumed(pod.uid) and cpu_on(sched, "big") == 3000
    assert sched.queue.where(pod.uid) == "in-flight"
    assert events.log == []


async def test_a_409_already_assigned_elsewhere_moves_the_assumption_there() -> None:
    sched, client, events, _ = binder_scheduler()
    client.error = BindingConflict(
        409,
        'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned '
        'to node "small"',
        bound_to="small",
    )
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert client.bound == [("default/web", "big")]
    assert cpu_on(sched, "big") == 0
    assert cpu_on(sched, "small") == 3000
    assert sched.cache.is_assumed(pod.uid)
    assert pod.uid not in sched.queue
    assert events.log == []  # not a failure


async def test_other_binding_conflicts_forget_and_report() -> None:
    sched, client, events, _ = binder_scheduler()
    client.error = BindingConflict(404, 'pods "web" not found')
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert cpu_on(sched, "big") == 0
    assert events.log == [("FailedScheduling", "default/web", "SchedulerError")]


async def test_a_confirmed_binding_expires_only_after_the_assumed_pod_ttl() -> None:
    sched, _, events, clock = binder_scheduler(assumed_pod_ttl=900.0)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "3"})
    await schedule(sched, pod)
    assert events.log == [("Scheduled", "default/web", "big")]
    clock.now += 899
    sched.housekeep()
    assert cpu_on(sched, "big") == 3000
    clock.now += 2
    sched.housekeep()  # the watch never showed it: upstream drops the assumption
    assert cpu_on(sched, "big") == 0


class FailureCounter(NullObserver):
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.attempts: list[tuple[str, str]] = []

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        self.attempts.append((profile, result))

    def binding_failed(self, profile: str) -> None:
        self.failed.append(profile)


async def test_a_failed_binding_is_counted_and_a_step_down_is_not() -> None:
    observer = FailureCounter()
    sched, client, _, _ = binder_scheduler(observer=observer)
    client.error = RuntimeError("etcdserver: request timed out")
    await schedule(sched, make_pod("web", scheduler_name="test", requests={"cpu": "1"}))
    # One attempt, counted once, as an error: it was never counted as scheduled.
    assert (observer.failed, observer.attempts) == (["test"], [("test", "error")])
    client.error = NotLeading("not the leader any more; request not sent")
    await schedule(sched, make_pod("other", scheduler_name="test", requests={"cpu": "1"}))
    assert (observer.failed, observer.attempts) == (["test"], [("test", "error")])


class AttemptLog(NullObserver):
    """Each attempt's result, in the order their ends are counted."""

    def __init__(self) -> None:
        self.results: list[str] = []

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        self.results.append(result)

    def bound(
        self,
        profile: str,
        attempt_seconds: float,
        binding_seconds: float,
        sli_seconds: float,
        attempts: int,
        after_flush: bool,
    ) -> None:
        self.results.append("scheduled")


async def test_an_attempt_whose_binding_response_was_lost_is_counted_once_when_known() -> None:
    observer = AttemptLog()
    sched, client, _, clock = binder_scheduler(observer=observer)
    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    web = make_pod("web", scheduler_name="test", requests={"cpu": "1"})
    await schedule(sched, web)
    assert observer.results == []  # not known yet
    bound = make_pod("web", scheduler_name="test", requests={"cpu": "1"}, node_name="big")
    bound.uid = web.uid
    sched.feed.on_pod(bound)  # the watch: it landed where we sent it
    await sched.wait_for_bindings()
    assert observer.results == ["scheduled"]

    db = make_pod("db", scheduler_name="test", requests={"cpu": "1"})
    await schedule(sched, db)
    clock.now += 3
    node = client.bound[-1][1]
    client.error = BindingConflict(409, f'pod db is already assigned to node "{node}"', node)
    assert await sched.retry_unconfirmed_bindings() == 1  # ours after all
    assert observer.results == ["scheduled", "scheduled"]

    client.error = BindingConflict(409, 'pod api is already assigned to node "x"', "x")
    await schedule(sched, make_pod("api", scheduler_name="test", requests={"cpu": "1"}))
    assert observer.results == ["scheduled", "scheduled", "error"]  # someone else's

    client.error = ApiUnavailable("Server disconnected", maybe_sent=True)
    await schedule(sched, make_pod("lost", scheduler_name="test", requests={"cpu": "1"}))
    clock.now += sched.binding.unconfirmed_binding_ttl + 1
    sched.housekeep()  # never confirmed: its room is given back and it is tried again
    assert observer.results == ["scheduled", "scheduled", "error", "error"]
