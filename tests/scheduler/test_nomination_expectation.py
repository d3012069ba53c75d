"""nominatedNodeName as an expectation (v1.35+, NominatedNodeNameForExpectation, on by
default): the binding cycle nominates the pod to its node when PreBind has work to do or
Permit holds it, and a binding failure clears it (upstream schedule_one_test.go's
TestSchedulerScheduleOne binding-cycle cases, framework_test.go's
TestPreBindPreFlightPlugins)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import RecordingClient, RecordingEvents, make_pod, node_dict
from fakes import ALL, config, profile
from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import Code, CycleState, Registry, Status
from multisched.framework.status import SKIP
from multisched.plugins.default_binder import DefaultBinder
from multisched.scheduler import Scheduler
from multisched.scheduler.outcome import Outcome


class Flight:
    """A PreBind plugin whose PreBindPreFlight answers what the pod's ``flight`` label
    says, and whose PreBind fails when ``prebind`` is ``fail``."""

    name = "Flight"
    pre_bound: list[str] = []

    def __init__(self, args: Any, handle: Any) -> None:
        Flight.pre_bound = []

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("permit") == "wait":
            return Status(Code.WAIT, "wait"), 60.0
        return None, 0.0

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        answer = pod.labels.get("flight", "skip")
        if answer == "skip":
            return SKIP
        if answer == "error":
            return Status.error("injected")
        if answer == "unschedulable":
            return Status(Code.UNSCHEDULABLE, "rejected on prebindpreflight")
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Flight.pre_bound.append(pod.name)
        if pod.labels.get("prebind") == "fail":
            return Status.error("injected prebind")
        return None


def scheduler() -> tuple[Scheduler, RecordingClient]:
    prof = profile()
    plugins = dict(prof.plugins)
    plugins.update(permit=("Flight",), preBind=("Flight",), bind=("DefaultBinder",))
    cache = Cache()
    cache.add_node(node_dict("n1", cpu="4"))
    client = RecordingClient()
    sched = Scheduler(
        config(ResolvedProfile("test", None, plugins, prof.score_weights)),
        Registry([*ALL, Flight, DefaultBinder]),
        cache=cache,
        client=client,
        events=RecordingEvents(),
    )
    return sched, client


async def attempt(sched: Scheduler, **labels: str) -> tuple[PodInfo, list[Outcome]]:
    outcomes: list[Outcome] = []
    sched.register_outcome_callback(outcomes.append)
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "1"}, labels=labels)
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    for _ in range(20):  # a pod held at Permit is let go once the nomination is out
        waiting = sched.profiles["test"].get_waiting_pod(pod.uid)
        if waiting is not None:
            waiting.allow("Flight")
        await asyncio.sleep(0)
    await sched.wait_for_bindings()
    return pod, outcomes


async def test_prebind_isnt_called_and_nominated_node_name_isnt_set_if_preflight_returns_skip() -> (
    None
):
    sched, client = scheduler()
    await attempt(sched, flight="skip")
    assert client.bound == [("default/web", "n1")]
    assert client.nominated == [] and Flight.pre_bound == []


async def test_prebind_is_called_and_nominated_node_name_is_set_if_preflight_returns_success() -> (
    None
):
    sched, client = scheduler()
    await attempt(sched, flight="success")
    assert client.nominated == [("default/web", "n1")]
    assert Flight.pre_bound == ["web"] and client.bound == [("default/web", "n1")]


async def test_nominated_node_name_is_set_when_permit_holds_the_pod() -> None:
    sched, client = scheduler()
    await attempt(sched, flight="skip", permit="wait")
    assert client.nominated == [("default/web", "n1")]
    assert client.bound == [("default/web", "n1")]


@pytest.mark.parametrize(
    ("flight", "message"),
    [
        pytest.param("error", 'running PreBindPreFlight "Flight": injected', id="error"),
        pytest.param(
            "unschedulable",
            'PreBindPreFlight Flight returned "Unschedulable", which is unsupported. It is '
            "supposed to return Success, Skip, or Error status",
            id="unschedulable",
        ),
    ],
)
async def test_prebindpreflight_failed(flight: str, message: str) -> None:
    sched, client = scheduler()
    pod, outcomes = await attempt(sched, flight=flight)
    assert [(o.result, o.message) for o in outcomes] == [("error", message)]
    assert client.bound == [] and client.nominated == [] and Flight.pre_bound == []
    assert not sched.cache.is_assumed(pod.uid)


async def test_prebind_failed_clears_the_nomination_it_set() -> None:
    sched, client = scheduler()
    _, outcomes = await attempt(sched, flight="success", prebind="fail")
    assert client.nominated == [("default/web", "n1"), ("default/web", "")]
    assert [o.result for o in outcomes] == ["error"] and client.bound == []


def test_pre_flights_combine_as_upstreams() -> None:
    """TestPreBindPreFlightPlugins: Skip with no plugin or all Skip, success when one has
    work (the others still skipped at PreBind)."""
    sched, _ = scheduler()
    fwk = sched.profiles["test"]
    pod = make_pod("web", labels={"flight": "success"})
    assert fwk.run_pre_bind_pre_flights(CycleState(), pod, "n1") is None
    state = CycleState()
    status = fwk.run_pre_bind_pre_flights(state, make_pod("web"), "n1")
    assert status is not None and status.is_skip() and state.skip_pre_bind_plugins == {"Flight"}


def unplaceable(nominated: str = "") -> PodInfo:
    """More CPU than any node has; ``nominated``: a nomination it carries from before."""
    status = {"nominatedNodeName": nominated} if nominated else None
    return make_pod("web", scheduler_name="test", requests={"cpu": "64"}, status=status)


async def fail_once(sched: Scheduler, pod: PodInfo) -> list[Outcome]:
    outcomes: list[Outcome] = []
    sched.register_outcome_callback(outcomes.append)
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    return outcomes


@pytest.mark.parametrize(("nominated", "written"), [("n1", [("default/web", "")]), ("", [])])
async def test_without_post_filter_plugins_a_nomination_is_cleared(
    nominated: str, written: list[tuple[str, str]]
) -> None:
    """schedule_one.go: no PostFilter plugin, so no preemption will keep the node for the
    pod; ``clearNominatedNode`` (a write only when there is a nomination to clear)."""
    sched, client = scheduler()
    outcomes = await fail_once(sched, unplaceable(nominated))
    assert [o.result for o in outcomes] == ["unschedulable"]
    assert client.nominated == written


async def test_no_node_at_all_is_unschedulable_and_clears_the_nomination() -> None:
    """``ErrNoNodesAvailable``: UnschedulableAndUnresolvable (reason Unschedulable, not
    SchedulerError), the nomination cleared."""
    sched, client = scheduler()
    sched.feed.on_node_deleted("n1")
    events: Any = sched.events
    outcomes = await fail_once(sched, unplaceable("n1"))
    assert [(o.result, o.message) for o in outcomes] == [
        ("unschedulable", "no nodes available to schedule pods")
    ]
    assert client.nominated == [("default/web", "")]
    assert events.log == [
        ("FailedScheduling", "default/web", "Unschedulable", "no nodes available to schedule pods")
    ]
