"""The engine's driver API: how simulate and explain take pods through the queue one at a
time on a clock that stands still, and hear how each attempt ended."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import make_pod, node_dict
from fakes import ALL, RecordingBinder, config, profile
from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import Code, CycleState, Registry, Status
from multisched.framework.events import ASSIGNED_POD_DELETE
from multisched.scheduler import Outcome, Scheduler
from multisched.scheduler.outcome import CycleResult
from multisched.scheduler.simulate import SimClock


class Hold:
    """Permit: pods labelled ``hold`` wait (a gang member waiting for the rest)."""

    name = "Hold"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("hold"):
            return Status(Code.WAIT), 600.0
        return None, 0.0


def _holding_profile() -> ResolvedProfile:
    prof = profile()
    plugins = {**prof.plugins, "permit": ("Hold",)}
    return ResolvedProfile(prof.scheduler_name, None, plugins, prof.score_weights)


def _engine(
    *profiles: ResolvedProfile,
) -> tuple[Scheduler, SimClock, list[Outcome]]:
    RecordingBinder.bound = []
    RecordingBinder.fail_with = None
    cache = Cache()
    cache.add_node(node_dict("small", cpu="1", labels={"score": "10"}))
    cache.add_node(node_dict("big", cpu="4", labels={"score": "90"}))
    clock = SimClock()
    sched = Scheduler(config(*profiles), Registry([*ALL, Hold]), cache=cache, clock=clock)
    outcomes: list[Outcome] = []
    sched.register_outcome_callback(outcomes.append)
    return sched, clock, outcomes


def _pod(name: str, cpu: str = "1", **labels: str) -> PodInfo:
    return make_pod(name, scheduler_name="test", requests={"cpu": cpu}, labels=labels)


async def test_schedule_next_says_when_there_is_nothing_to_do() -> None:
    sched, _, outcomes = _engine()
    assert await sched.schedule_next() is None
    assert outcomes == []


async def test_schedule_next_runs_one_cycle_and_settles_its_binding() -> None:
    sched, _, outcomes = _engine()
    sched.feed.on_pod(_pod("web", cpu="2"))
    sched.feed.on_pod(_pod("api", cpu="2"))

    first = await sched.schedule_next()

    assert first is not None and first.pod.name == "web"
    assert (first.result, first.node) == (CycleResult.BINDING, "big")
    # Settled: the binding cycle has ended and told the callback, the second pod waits.
    assert RecordingBinder.bound == [("default/web", "big")]
    assert [(o.pod.name, o.result, o.node) for o in outcomes] == [
        ("web", CycleResult.SCHEDULED, "big")
    ]
    second = await sched.schedule_next()
    assert second is not None and second.pod.name == "api"
    assert await sched.schedule_next() is None


async def test_drain_schedules_every_active_pod_in_queue_order() -> None:
    sched, _, outcomes = _engine()
    for name in ("a", "b", "c", "d"):
        sched.feed.on_pod(_pod(name))

    assert await sched.drain() == []

    assert [key for key, _ in RecordingBinder.bound] == [
        "default/a",
        "default/b",
        "default/c",
        "default/d",
    ]
    # Each pod's placement counted for the next: big (score 90) holds four 1-cpu pods.
    assert {node for _, node in RecordingBinder.bound} == {"big"}
    assert [o.result for o in outcomes] == [CycleResult.SCHEDULED] * 4


async def test_drain_leaves_a_failed_pod_in_the_pool_while_the_clock_stands_still() -> None:
    sched, _, outcomes = _engine()
    sched.feed.on_pod(_pod("huge", cpu="8"))

    assert await sched.drain() == []

    assert [(o.pod.name, o.result) for o in outcomes] == [("huge", CycleResult.UNSCHEDULABLE)]
    assert await sched.schedule_next() is None
    assert sched.pods_backing_off() == 0


async def test_a_pod_past_max_attempts_is_parked_and_its_last_outcome_stands() -> None:
    sched, clock, outcomes = _engine()
    sched.feed.on_pod(_pod("huge", cpu="8"))
    assert await sched.drain(max_attempts=1) == []  # attempt 1
    sched.skip_backoff(clock.advance, ASSIGNED_POD_DELETE)  # out of the pool again

    parked = await sched.drain(max_attempts=1)  # attempt 2 is one too many

    assert [p.name for p in parked] == ["huge"]
    assert len(outcomes) == 1  # not tried again: no second outcome
    assert await sched.schedule_next() is None


async def test_a_backing_off_pod_is_popped_when_active_q_is_empty() -> None:
    sched, _clock, _outcomes = _engine()
    sched.feed.on_pod(_pod("huge", cpu="8"))
    await sched.drain()
    sched.feed.on_node(node_dict("huge-node", cpu="16"))
    assert sched.pods_backing_off() == 1
    assert await sched.schedule_next() is None  # the driver leaves it backing off
    # The running loop's pop (upstream's SchedulerPopFromBackoffQ): nothing else to do, so
    # it goes before its backoff is over.
    qpi = await asyncio.wait_for(sched.queue.pop(), 1)
    assert qpi.pod.name == "huge"
    assert sched.queue.incoming[("active", "PopFromBackoffQ")] == 1
    outcome = await sched.schedule_one(qpi)
    assert outcome.node == "huge-node"


async def test_skip_backoff_lets_the_longest_backoff_pass_on_the_callers_clock() -> None:
    sched, clock, outcomes = _engine()
    sched.feed.on_pod(_pod("huge", cpu="8"))
    await sched.drain()
    # A node that fits arrives: the pod leaves the pool, but its backoff has not passed.
    sched.feed.on_node(node_dict("huge-node", cpu="16"))
    assert sched.pods_backing_off() == 1
    assert await sched.schedule_next() is None
    start = clock.now

    sched.skip_backoff(clock.advance)

    assert clock.now - start > sched.config.pod_max_backoff_seconds + 1
    assert sched.pods_backing_off() == 0
    outcome = await sched.schedule_next()
    assert outcome is not None and outcome.node == "huge-node"
    assert [o.result for o in outcomes] == [CycleResult.UNSCHEDULABLE, CycleResult.SCHEDULED]


@pytest.mark.parametrize(
    ("rejection", "message"),
    [
        ("explained", "explained"),
        (None, "rejected due to timeout after waiting 10m0s at plugin Hold"),
    ],
)
async def test_end_permit_waits_lets_held_pods_go(rejection: str | None, message: str) -> None:
    sched, _, outcomes = _engine(_holding_profile())
    assert await sched.end_permit_waits(rejection) == 0  # nothing held: nothing to wait for
    sched.feed.on_pod(_pod("member", hold="yes"))
    held = await sched.schedule_next()
    assert held is not None and held.result == CycleResult.BINDING
    assert len(sched.held_at_permit()) == 1 and outcomes == []

    assert await sched.end_permit_waits(rejection) == 1

    assert sched.held_at_permit() == []
    assert [(o.result, o.message) for o in outcomes] == [(CycleResult.UNSCHEDULABLE, message)]
    assert RecordingBinder.bound == []


def test_a_second_outcome_callback_is_refused() -> None:
    sched, _, _ = _engine()
    with pytest.raises(RuntimeError, match="registered already"):
        sched.register_outcome_callback(lambda outcome: None)
