"""Cases from upstream framework/preemption/executor_test.go (TestIsPodRunningPreemption,
TestPrepareCandidate, TestPrepareCandidateAsyncSetsPreemptingSets, TestAsyncPreemptionFailure,
TestPrepareCandidateAsyncActivatesPreemptorAfterLastVictimInMemoryPreemption) and
defaultpreemption's TestPreEnqueue, for pod preemptors (multisched has no PodGroup API)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import make_pod, node_dict
from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    Code,
    CycleState,
    Framework,
    QueueingHint,
    Registry,
    Status,
    WaitingPod,
)
from multisched.framework.events import ASSIGNED_POD_DELETE
from multisched.plugins._preemption_victims import Candidate
from multisched.plugins.default_preemption import MSG_WAITING, DefaultPreemption
from multisched.queue import PodNominator

MID, HIGH = 100, 1000
TERMINATING = {"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}


class Client:
    """Deletes of pods named ``fail-victim...`` fail; a pod named in ``holds`` is deleted
    once its event is set."""

    def __init__(self) -> None:
        self.attempted: list[str] = []
        self.deleted: list[str] = []
        self.nominated: dict[str, str] = {}
        self.holds: dict[str, asyncio.Event] = {}
        #: (victim, message) of the Preempted events recorded for in-memory preemptions.
        self.preempted_in_memory: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        pass

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        self.preempted_in_memory.append((pod.name, message))

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.attempted.append(pod.name)
        if (hold := self.holds.get(pod.name)) is not None:
            await hold.wait()
        if pod.name.startswith("fail-victim"):
            raise RuntimeError("delete pod failed")
        self.deleted.append(pod.name)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated[pod.name] = node_name

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


class Recorder:
    def __init__(self) -> None:
        self.victims: list[int] = []
        self.goroutines: list[str] = []

    def extension_point(self, point: str, status: str, seconds: float) -> None:
        pass

    def permit_wait(self, status: str, seconds: float) -> None:
        pass

    def preemption_attempt(self) -> None:
        pass

    def preemption_victims(self, victims: int) -> None:
        self.victims.append(victims)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        assert seconds >= 0
        self.goroutines.append(result)


class SlowPreBind:
    """A PreBind that waits for ``done`` (VolumeBinding waiting for the PV controller)."""

    name = "SlowPreBind"

    def __init__(self, args: Any, handle: Any) -> None:
        self.done = asyncio.Event()

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        await self.done.wait()
        return None


class Env:
    def __init__(self, victims: list[PodInfo]) -> None:
        self.cache = Cache()
        self.cache.add_node(node_dict("node1"))
        for v in victims:
            self.cache.add_pod(v)
        profile = ResolvedProfile(
            scheduler_name="default-scheduler",
            percentage_of_nodes_to_score=None,
            plugins={
                "postFilter": ("DefaultPreemption",),
                "preEnqueue": ("DefaultPreemption",),
                "preBind": ("SlowPreBind",),
            },
            score_weights={},
            plugin_args={},
        )
        self.client = Client()
        self.activated: list[str] = []
        self.fwk = Framework(
            profile,
            Registry([DefaultPreemption, SlowPreBind]),
            self.cache.snapshot,
            client=self.client,
            nominator=PodNominator(),
            activator=lambda pods: self.activated.extend(p.name for p in pods),
        )
        self.recorder = Recorder()
        self.fwk.recorder = self.recorder
        self.plugin: DefaultPreemption = self.fwk.plugins["DefaultPreemption"]
        self.executor = self.plugin.executor

    async def settle(self) -> None:
        while self.fwk.background:
            await asyncio.wait(list(self.fwk.background))

    def delete_from_cluster(self, pod: PodInfo) -> None:
        """What the watch does once a delete lands."""
        self.cache.remove_pod(pod.uid)


def victim(name: str, **kw: Any) -> PodInfo:
    return make_pod(name, node_name="node1", priority=MID, **kw)


PREEMPTOR = make_pod("preemptor", priority=HIGH)


# -- IsPodRunningPreemption --------------------------------------------------------------


@pytest.mark.parametrize(
    ("preempting", "last_victim", "in_cluster", "running"),
    [
        pytest.param(False, None, (), False, id="preemptor not in preemptingSet"),
        pytest.param(False, "victim1", ("victim1",), False, id="not preempting, last victim"),
        pytest.param(True, None, ("victim1",), True, id="preempting, no last victim yet"),
        pytest.param(True, "victim1", (), False, id="last victim not in the cluster"),
        pytest.param(True, "victim1", ("victim1", "victim2"), True, id="last victim still there"),
        pytest.param(
            True, "victim-deleted", ("victim1", "victim-deleted"), False, id="last victim deleting"
        ),
    ],
)
def test_is_pod_running_preemption(
    preempting: bool, last_victim: str | None, in_cluster: tuple[str, ...], running: bool
) -> None:
    pods = {
        name: victim(name, **(TERMINATING if name == "victim-deleted" else {}))
        for name in ("victim1", "victim2", "victim-deleted")
    }
    env = Env([pods[n] for n in in_cluster])
    uid = PREEMPTOR.uid
    executor: Any = env.executor
    if preempting:
        executor._preempting.add(uid)
    if last_victim is not None:
        executor._last_victims[uid] = pods[last_victim]
    assert env.executor.is_pod_running_preemption(uid) is running
    # PreEnqueue says the same (upstream TestPreEnqueue: same pod gated, another not).
    status = env.plugin.pre_enqueue(PREEMPTOR)
    if running:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == MSG_WAITING
    else:
        assert status is None
    assert env.plugin.pre_enqueue(make_pod("p_other", priority=HIGH)) is None


def test_a_victims_deletion_event_is_registered_and_left_to_the_other_plugins() -> None:
    env = Env([])
    ((registration,),) = [env.fwk.plugin_hints["DefaultPreemption"]]
    assert registration.event == ASSIGNED_POD_DELETE
    assert registration.hint is not None
    assert registration.hint(PREEMPTOR, victim("v"), None) == QueueingHint.QUEUE_SKIP


# -- prepareCandidate, both ways ---------------------------------------------------------


CASES = [
    # (id, victims, deleted, failed)
    ("no victims", [], [], False),
    ("one victim", ["victim1"], ["victim1"], False),
    ("one victim already being deleted", ["terminating"], [], False),
    ("one victim, deletion failed", ["fail-victim"], [], True),
    # Upstream allows victim2 deleted or not (its deletes race); here the first failure
    # stops the synchronous loop, and the asynchronous one skips the last victim.
    ("two victims, the first fails", ["fail-victim", "victim2"], [], True),
]


def _victims(names: list[str]) -> list[PodInfo]:
    return [victim(n, **(TERMINATING if n == "terminating" else {})) for n in names]


@pytest.mark.parametrize(
    ("victims", "deleted", "failed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_prepare_candidate_sync(victims: list[str], deleted: list[str], failed: bool) -> None:
    pods = _victims(victims)
    env = Env(pods)
    status = await env.executor.prepare_candidate(Candidate("node1", pods, 0), PREEMPTOR)
    assert env.client.deleted == deleted
    assert (status is not None) is failed
    if status is not None:
        assert status.code == Code.ERROR
        assert status.message() == "delete pod failed"
    assert env.recorder.victims == [len(pods)]
    assert env.fwk.background == set()


@pytest.mark.parametrize(
    ("victims", "deleted", "failed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_prepare_candidate_async(
    victims: list[str], deleted: list[str], failed: bool
) -> None:
    pods = _victims(victims)
    env = Env(pods)
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    to_delete = [p for p in pods if not p.terminating]
    # Nothing is sent in the cycle; the preemptor is held back until the deletes are done.
    assert env.client.attempted == []
    assert env.executor.is_pod_running_preemption(PREEMPTOR.uid) is bool(to_delete)
    await env.settle()
    assert sorted(env.client.deleted) == sorted(deleted)
    assert not env.executor.is_pod_running_preemption(PREEMPTOR.uid)
    # Activated only when no deletion event will come for it (upstream).
    assert env.activated == (["preemptor"] if failed else [])
    assert env.recorder.victims == [len(pods)]
    expected = [] if not to_delete else ["error" if failed else "success"]
    assert env.recorder.goroutines == expected


# -- TestAsyncPreemptionFailure ----------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "success", "last_attempted"),
    [
        (["fail-victim"], False, True),
        (["victim1"], True, True),
        (["fail-victim", "victim2", "victim3"], False, False),
        (["victim1", "fail-victim", "victim3"], False, False),
        (["fail-victim1", "fail-victim2", "victim3"], False, False),
        (["victim1", "victim2", "fail-victim"], False, True),
        (["victim1", "victim2", "victim3"], True, True),
    ],
)
async def test_async_preemption_failure(
    names: list[str], success: bool, last_attempted: bool
) -> None:
    pods = _victims(names)
    env = Env(pods)
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    await env.settle()
    last = names[-1]
    assert (last in env.client.attempted) is last_attempted
    # The last victim is tried if and only if every one before it was deleted.
    assert all(n in env.client.deleted for n in names[:-1]) is last_attempted
    assert ("preemptor" in env.activated) is not success
    assert (last in env.client.deleted) is success


# -- the preempting set while the deletes go on ------------------------------------------


async def test_the_preemptor_is_held_until_its_last_victim_is_gone() -> None:
    """TestPrepareCandidateAsyncSetsPreemptingSets, and the race upstream guards against: the
    last victim's deletion may be seen (the watch) before its delete call returns."""
    pods = _victims(["victim1", "victim2"])
    env = Env(pods)
    first, last = env.client.holds["victim1"], env.client.holds["victim2"] = (
        asyncio.Event(),
        asyncio.Event(),
    )
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    for _ in range(5):
        await asyncio.sleep(0)
    assert env.client.attempted == ["victim1"]  # all but the last first
    assert env.executor.is_pod_running_preemption(PREEMPTOR.uid)
    first.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert env.client.attempted == ["victim1", "victim2"]
    # The last delete is in flight: still running until the cluster shows the victim gone.
    assert env.executor.is_pod_running_preemption(PREEMPTOR.uid)
    assert env.plugin.pre_enqueue(PREEMPTOR) is not None
    env.delete_from_cluster(pods[1])
    assert not env.executor.is_pod_running_preemption(PREEMPTOR.uid)
    assert env.plugin.pre_enqueue(PREEMPTOR) is None
    last.set()
    await env.settle()
    assert env.client.deleted == ["victim1", "victim2"]
    assert env.activated == []


async def test_a_last_victim_gone_before_its_turn_activates_the_preemptor() -> None:
    """The last victim was another preemptor's too and left the cluster while this one was
    gated: its deletion event, and the others', came while PreEnqueue held the preemptor, and
    no later event will wake it (issue 43's backlog parity e2e stranded it so)."""
    pods = _victims(["victim1", "victim2"])
    env = Env(pods)
    hold = env.client.holds["victim1"] = asyncio.Event()
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    for _ in range(3):
        await asyncio.sleep(0)
    env.delete_from_cluster(pods[1])  # by the other preemptor, seen while this one is held
    env.delete_from_cluster(pods[0])  # its own first delete's event, before the response
    assert env.plugin.pre_enqueue(PREEMPTOR) is not None  # gated: both events are spent
    hold.set()
    await env.settle()
    assert env.activated == ["preemptor"]
    assert env.recorder.goroutines == ["success"]


async def test_lower_priority_nominations_are_cleared_before_the_deletes() -> None:
    pods = _victims(["victim1"])
    env = Env(pods)
    low = make_pod("low-nominated", priority=MID, status={"nominatedNodeName": "node1"})
    env.fwk.nominator.add_nominated_pod(low, "node1")
    hold = env.client.holds["victim1"] = asyncio.Event()
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    for _ in range(3):
        await asyncio.sleep(0)
    assert env.client.nominated == {"low-nominated": ""}
    assert env.client.attempted == ["victim1"]
    assert env.client.deleted == []
    hold.set()
    await env.settle()
    assert env.client.deleted == ["victim1"]


async def test_a_last_victim_preempted_in_memory_activates_the_preemptor() -> None:
    """TestPrepareCandidateAsyncActivatesPreemptorAfterLastVictimInMemoryPreemption: the
    last victim waits at Permit; it is preempted in memory, the others are deleted."""
    pods = _victims(["victim1", "waiting"])
    env = Env(pods)
    waiting = WaitingPod(pods[1], {"SomePermit": 60.0})
    env.fwk.waiting_pods[pods[1].uid] = waiting
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    await env.settle()
    assert env.client.deleted == ["victim1"]
    assert env.activated == ["preemptor"]
    status = await waiting.wait()
    assert status is not None and status.code == Code.ERROR
    assert env.recorder.goroutines == ["success"]
    # Upstream records the victim's Preempted event itself when no delete is sent.
    assert env.client.preempted_in_memory == [
        ("waiting", f"Preempted by pod {PREEMPTOR.uid} on node node1 (in kube-scheduler memory).")
    ]


async def test_a_waiting_victim_that_is_not_last_does_not_activate() -> None:
    pods = _victims(["waiting", "victim2"])
    env = Env(pods)
    env.fwk.waiting_pods[pods[0].uid] = WaitingPod(pods[0], {"SomePermit": 60.0})
    env.executor.prepare_candidate_async(Candidate("node1", pods, 0), PREEMPTOR)
    await env.settle()
    assert env.client.deleted == ["victim2"]
    assert env.activated == []


async def test_a_victim_preempted_at_permit_ends_its_wait_with_an_error() -> None:
    """v1.36's ``WaitingPod.Preempt``: an error (the pod backs off, is not parked), wrapped
    as upstream's WaitOnPermit wraps it; a second call finds the wait over."""
    held = victim("held")
    env = Env([held])
    waiting = WaitingPod(held, {"SomePermit": 60.0})
    env.fwk.waiting_pods[held.uid] = waiting
    wait = asyncio.ensure_future(env.fwk.wait_on_permit(held))
    await asyncio.sleep(0)
    assert waiting.preempt("DefaultPreemption", "preempted") is True
    status = await wait
    assert status is not None
    assert (status.code, status.plugin) == (Code.ERROR, "DefaultPreemption")
    assert status.message() == "waiting on permit for pod: preempted"
    assert waiting.preempt("DefaultPreemption", "preempted") is False


async def test_a_victim_in_pre_bind_is_cancelled_not_deleted() -> None:
    """v1.36: a victim whose PreBind is running is stopped there (``CancelPod``); its
    binding cycle ends with an error and no delete is sent. The last victim so preempted
    activates the preemptor."""
    binding = victim("binding")
    env = Env([binding])
    pre_bind = asyncio.ensure_future(
        env.fwk.run_pre_bind_preemptible(CycleState(), binding, "node1")
    )
    await asyncio.sleep(0)
    assert env.fwk.get_pod_in_pre_bind(binding.uid) is not None
    env.executor.prepare_candidate_async(Candidate("node1", [binding], 0), PREEMPTOR)
    await env.settle()
    status = await pre_bind
    assert status is not None
    assert (status.code, status.message()) == (Code.ERROR, "preempted by DefaultPreemption")
    assert env.client.attempted == []
    assert env.activated == ["preemptor"]
    assert env.fwk.get_pod_in_pre_bind(binding.uid) is None
    assert [name for name, _ in env.client.preempted_in_memory] == ["binding"]


async def test_a_victim_past_pre_bind_is_deleted() -> None:
    """``MarkPrebound``: once PreBind is over the pod cannot be cancelled; it is deleted."""
    binding = victim("binding")
    env = Env([binding])
    slow: Any = env.fwk.plugins["SlowPreBind"]
    slow.done.set()
    status = await env.fwk.run_pre_bind_preemptible(CycleState(), binding, "node1")
    assert status is None
    assert env.fwk.get_pod_in_pre_bind(binding.uid) is None
    env.executor.prepare_candidate_async(Candidate("node1", [binding], 0), PREEMPTOR)
    await env.settle()
    assert env.client.deleted == ["binding"]
    assert env.client.preempted_in_memory == []  # the client records a deleted one's


def test_pod_in_pre_bind_cancel_and_prebound() -> None:
    """Upstream pods_in_prebind_map_test: cancelled first, it is never prebound; prebound
    first, it cannot be cancelled."""
    from multisched.framework.waiting import PodInPreBind

    loop = asyncio.new_event_loop()
    try:
        first = PodInPreBind(loop.create_future())
        assert first.cancel_pod("preempted by X") is True
        assert first.cancel_pod("again") is True
        assert first.message == "preempted by X"
        assert first.mark_prebound() is False
        second = PodInPreBind(loop.create_future())
        assert second.mark_prebound() is True
        assert second.cancel_pod("preempted by X") is False
    finally:
        loop.close()
