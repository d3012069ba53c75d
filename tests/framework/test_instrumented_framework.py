"""``InstrumentedFramework``: every extension point it runs is one observation, with the
status upstream's runtime labels it with, in every cycle; Permit waits are timed apart."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from test_framework_runtime import NODES, fake, ok, pod

from multisched.cache import Cache
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    Code,
    CycleState,
    Framework,
    InstrumentedFramework,
    PluginError,
    Registry,
    Status,
)


class Recorder:
    def __init__(self) -> None:
        self.points: list[tuple[str, str]] = []
        self.waits: list[str] = []
        self.preemptions: list[int | None] = []

    def extension_point(self, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.points.append((point, status))

    def permit_wait(self, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.waits.append(status)

    def preemption_attempt(self) -> None:
        self.preemptions.append(None)

    def preemption_victims(self, victims: int) -> None:
        self.preemptions.append(victims)


def instrumented(
    plugins: Sequence[type], recorder: Recorder, **points: Sequence[str]
) -> InstrumentedFramework:
    profile = ResolvedProfile(
        scheduler_name="test",
        percentage_of_nodes_to_score=None,
        plugins={point: tuple(names) for point, names in points.items()},
        score_weights={},
    )
    return InstrumentedFramework(profile, Registry(plugins), Cache().snapshot, recorder)


def _status(code: Code) -> Any:
    return lambda *_: Status(code, "no")


async def test_each_extension_point_is_one_observation_with_its_status() -> None:
    recorder = Recorder()
    a = fake(
        "A",
        pre_enqueue=ok,
        pre_filter=lambda *_: (None, None),
        filter=ok,
        pre_score=ok,
        score=lambda *_: 1,
        reserve=ok,
        permit=lambda *_: (None, 0.0),
        pre_bind=ok,
        bind=ok,
        post_bind=ok,
    )
    fw = instrumented(
        [a],
        recorder,
        preEnqueue=["A"],
        preFilter=["A"],
        filter=["A"],
        preScore=["A"],
        score=["A"],
        reserve=["A"],
        permit=["A"],
        preBind=["A"],
        bind=["A"],
        postBind=["A"],
    )
    state, p = CycleState(), pod()
    fw.run_pre_enqueue(p)
    fw.run_pre_filter(state, p, NODES)
    for node in NODES:  # Filter is the algorithm's to time: once for the whole search
        fw.run_filter_plugins(state, p, node)
    fw.run_pre_score(state, p, NODES)
    fw.run_score(state, p, NODES)
    fw.run_reserve(state, p, "n1")
    fw.run_permit(state, p, "n1")
    assert await fw.wait_on_permit(p) is None
    await fw.run_pre_bind(state, p, "n1")
    await fw.run_bind(state, p, "n1")
    fw.run_post_bind(state, p, "n1")
    fw.run_unreserve(state, p, "n1")
    assert recorder.points == [
        (point, "Success")
        for point in (
            "PreEnqueue",
            "PreFilter",
            "PreScore",
            "Score",
            "Reserve",
            "Permit",
            "PreBind",
            "Bind",
            "PostBind",
            "Unreserve",
        )
    ]
    assert recorder.waits == []  # a pod that never waited is not timed at Permit


async def test_failures_are_labelled_with_upstreams_status_codes() -> None:
    recorder = Recorder()
    a = fake(
        "A",
        pre_enqueue=_status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        pre_filter=lambda *_: (None, Status(Code.UNSCHEDULABLE, "no")),
        post_filter=lambda *_: (None, Status(Code.UNSCHEDULABLE, "no")),
        reserve=_status(Code.ERROR),
        permit=lambda *_: (Status(Code.WAIT), 10.0),
        bind=_status(Code.SKIP),
    )
    fw = instrumented(
        [a],
        recorder,
        preEnqueue=["A"],
        preFilter=["A"],
        postFilter=["A"],
        reserve=["A"],
        permit=["A"],
        bind=["A"],
    )
    state, p = CycleState(), pod()
    fw.run_pre_enqueue(p)
    fw.run_pre_filter(state, p, NODES)
    await fw.run_post_filter(state, p, {})
    fw.run_reserve(state, p, "n1")
    fw.run_permit(state, p, "n1")
    await fw.run_bind(state, p, "n1")
    assert recorder.points == [
        ("PreEnqueue", "UnschedulableAndUnresolvable"),
        ("PreFilter", "Unschedulable"),
        ("PostFilter", "Unschedulable"),
        ("Reserve", "Error"),
        ("Permit", "Wait"),
        ("Bind", "Skip"),
    ]


async def test_a_failing_score_is_an_error_observation_and_still_raises() -> None:
    recorder = Recorder()
    fw = instrumented([fake("A", score=lambda *_: 1000)], recorder, score=["A"])
    with pytest.raises(PluginError):
        fw.run_score(CycleState(), pod(), NODES)
    assert recorder.points == [("Score", "Error")]


async def test_a_permit_wait_is_timed_with_how_it_ended() -> None:
    recorder = Recorder()
    fw = instrumented(
        [fake("A", permit=lambda *_: (Status(Code.WAIT), 10.0))], recorder, permit=["A"]
    )
    state = CycleState()
    allowed, rejected = pod("allowed"), pod("rejected")
    for p in (allowed, rejected):
        fw.run_permit(state, p, "n1")
    waits = [asyncio.create_task(fw.wait_on_permit(p)) for p in (allowed, rejected)]
    await asyncio.sleep(0)
    fw.waiting_pods[allowed.uid].allow("A")
    fw.waiting_pods[rejected.uid].reject("A", "no room")
    await asyncio.gather(*waits)
    assert recorder.waits == ["Success", "Unschedulable"]


def test_plugins_see_the_recorder_from_their_constructor_on() -> None:
    recorder = Recorder()
    seen: list[Any] = []

    class Preempting:
        name = "Preempting"

        def __init__(self, args: Any, handle: Any) -> None:
            seen.append(handle.recorder)

        def post_filter(self, *_: Any) -> Any:
            raise AssertionError("not called")

    instrumented([Preempting], recorder, postFilter=["Preempting"])
    assert seen == [recorder]


def test_the_plain_framework_records_nothing() -> None:
    profile = ResolvedProfile("test", None, {"reserve": ("A",)}, {})
    fw = Framework(profile, Registry([fake("A", reserve=ok)]), Cache().snapshot)
    fw.recorder.extension_point("Reserve", "Success", 0.1)  # a no-op, for plugins to call
    assert not isinstance(fw, InstrumentedFramework)
    assert fw.run_reserve(CycleState(), pod(), "n1") is None
