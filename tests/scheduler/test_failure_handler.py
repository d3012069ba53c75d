"""Every failed attempt ends in the one failure handler (upstream ``handleSchedulingFailure``),
from the scheduling cycle and the binding cycle alike: counted, requeued and reported there,
each kind as it always was."""

from __future__ import annotations

from typing import Any

import pytest

from builders import RecordingClient, RecordingEvents, make_pod, node_dict
from fakes import ALL, config, profile
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    BindingConflict,
    Code,
    CycleState,
    Framework,
    NotLeading,
    Registry,
    Status,
)
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.plugins.default_binder import DefaultBinder
from multisched.scheduler import REASON_SCHEDULER_ERROR as ERROR
from multisched.scheduler import REASON_UNSCHEDULABLE as UNSCHEDULABLE
from multisched.scheduler import Scheduler
from multisched.scheduler.events import NullObserver
from multisched.scheduler.failure import Failure, FailureHandler
from multisched.scheduler.outcome import Outcome


class Refuse:
    """Fails the pod at the step its ``fail`` label names."""

    name = "Refuse"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        step = pod.labels.get("fail")
        if step == "filter-error":
            return Status.error("filter broke")
        if step == "filter-raises":
            raise ValueError("unexpected input")
        return None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get("fail") == "reserve":
            return Status.error("no claim to reserve")
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("fail") == "permit":
            return Status(Code.UNSCHEDULABLE, "gang let go"), 0.0
        return None, 0.0

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get("fail") == "prebind":
            return Status.error("volume not ready")
        if pod.labels.get("fail") == "prebind-rejects":
            return Status(Code.UNSCHEDULABLE, "claim taken meanwhile")
        return None


class Attempts(NullObserver):
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        self.log.append(("attempt", result))

    def binding_failed(self, profile: str) -> None:
        self.log.append(("binding_failed",))


def refusing_scheduler() -> tuple[Scheduler, RecordingClient, RecordingEvents, Attempts]:
    prof = profile()
    plugins = dict(prof.plugins)
    plugins.update(
        filter=("CpuFit", "Refuse"),
        reserve=("Refuse",),
        permit=("Refuse",),
        preBind=("Refuse",),
        bind=("DefaultBinder",),
    )
    cache = Cache()
    cache.add_node(node_dict("n1", cpu="4"))
    client, events, observer = RecordingClient(), RecordingEvents(), Attempts()
    sched = Scheduler(
        config(ResolvedProfile("test", None, plugins, prof.score_weights)),
        Registry([*ALL, Refuse, DefaultBinder]),
        cache=cache,
        client=client,
        events=events,
        observer=observer,
    )
    return sched, client, events, observer


#: Each failure kind: the pod's ``fail`` label, its CPU request and the client's Bind error;
#: then what the attempt ends as: its outcome, the event's reason, the attempt as counted,
#: and where the pod waits.
KINDS: dict[str, tuple[str, str, Exception | None, str, str, str, str]] = {
    "fit error": ("", "8", None, "unschedulable", UNSCHEDULABLE, "unschedulable", "unschedulable"),
    "plugin error status": ("filter-error", "1", None, "error", ERROR, "error", "backoff"),
    "plugin raised": ("filter-raises", "1", None, "error", ERROR, "error", "backoff"),
    # Reported unschedulable, counted an error: as before the handler was one.
    "Reserve error": ("reserve", "1", None, "unschedulable", ERROR, "error", "backoff"),
    "Permit rejection": (
        "permit",
        "1",
        None,
        "unschedulable",
        UNSCHEDULABLE,
        "unschedulable",
        "unschedulable",
    ),
    "PreBind error": ("prebind", "1", None, "error", ERROR, "error", "backoff"),
    # Past Permit no plugin's verdict parks the pod: retried after its backoff (upstream).
    "PreBind rejection": (
        "prebind-rejects",
        "1",
        None,
        "unschedulable",
        UNSCHEDULABLE,
        "unschedulable",
        "backoff",
    ),
    "Bind error": ("", "1", RuntimeError("etcd timeout"), "error", ERROR, "error", "backoff"),
}
BINDING_CYCLE = {"PreBind error", "PreBind rejection", "Bind error"}


def spy_on_the_handler(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pods ``FailureHandler.handle`` is called for, in order."""
    handled: list[str] = []
    handle = FailureHandler.handle

    async def spy(
        self: FailureHandler, fwk: Framework, qpi: QueuedPodInfo, f: Failure, s: float | None
    ) -> Outcome:
        handled.append(qpi.pod.name)
        return await handle(self, fwk, qpi, f, s)

    monkeypatch.setattr(FailureHandler, "handle", spy)
    return handled


async def attempt(sched: Scheduler, pod: PodInfo) -> list[Outcome]:
    outcomes: list[Outcome] = []
    sched.on_outcome = outcomes.append
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    await sched.wait_for_bindings()
    return outcomes


@pytest.mark.parametrize("kind", KINDS)
async def test_every_failure_kind_ends_in_the_one_handler(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail, cpu, error, result, reason, counted, waits = KINDS[kind]
    handled = spy_on_the_handler(monkeypatch)
    sched, client, events, observer = refusing_scheduler()
    client.error = error
    pod = make_pod("web", scheduler_name="test", requests={"cpu": cpu}, labels={"fail": fail})
    outcomes = await attempt(sched, pod)
    assert handled == ["web"]
    assert [o.result for o in outcomes if o.result != "binding"] == [result]
    assert [e[:3] for e in events.log] == [("FailedScheduling", "default/web", reason)]
    failed_binding = [("binding_failed",)] if kind in BINDING_CYCLE else []
    assert observer.log == [*failed_binding, ("attempt", counted)]
    assert not sched.cache.is_assumed(pod.uid)
    assert sched.queue.where(pod.uid) == waits


async def test_a_pod_bound_elsewhere_ends_in_the_handler_as_scheduled_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 409 naming the pod's node: not requeued nor reported (upstream: "Pod has been
    assigned to node. Abort adding it back to queue.")."""
    handled = spy_on_the_handler(monkeypatch)
    sched, client, events, observer = refusing_scheduler()
    sched.cache.add_node(node_dict("n2", cpu="4"))
    client.error = BindingConflict(409, 'pod web is already assigned to node "x"', "x")
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "1"})
    outcomes = await attempt(sched, pod)
    assert handled == ["web"]
    assert [(o.result, o.node) for o in outcomes][-1] == ("scheduled", "x")
    assert events.log == []
    assert observer.log == [("binding_failed",), ("attempt", "error")]
    assert pod.uid not in sched.queue


async def test_a_step_down_requeues_without_counting_or_reporting() -> None:
    sched, client, events, observer = refusing_scheduler()
    client.error = NotLeading("not the leader any more; request not sent")
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "1"})
    await attempt(sched, pod)
    assert observer.log == []
    assert events.log == []
    assert sched.queue.where(pod.uid) == "backoff"


async def test_a_pod_deleted_during_its_cycle_leaves_no_nomination() -> None:
    """Upstream's nominator adds a pod only while its informer has it, unassigned: a pod
    deleted during the cycle's awaits (PostFilter's) would otherwise hold room on the node
    for the pods of lower priority, for good."""
    sched, _, _, _ = refusing_scheduler()
    pod = make_pod("web", scheduler_name="test", requests={"cpu": "8"})
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    sched.feed.on_pod_deleted(pod.uid)
    fwk = sched.profiles["test"]
    failure = Failure(Status(Code.UNSCHEDULABLE, "preempting"), "n1")
    await sched.failure_handler.handle(fwk, qpi, failure, None)
    assert sched.queue.nominator.nominated_node(pod.uid) is None


async def test_a_rejection_past_permit_is_retried_as_an_error_is() -> None:
    """Upstream clears the rejecting plugins of a failure that is no FitError (PreBind is
    past Permit, the last step that may find a pod unschedulable): the pod waits out its
    backoff in the error backoffQ, which a pop never takes early from."""
    sched, _, _, _ = refusing_scheduler()
    pod = make_pod(
        "web", scheduler_name="test", requests={"cpu": "1"}, labels={"fail": "prebind-rejects"}
    )
    await attempt(sched, pod)
    assert sched.queue.where(pod.uid) == "backoff"
    assert sched.queue.pop_nowait(from_backoff=True) is None  # not taken early


async def test_a_failure_resets_the_nomination_to_what_the_api_last_showed() -> None:
    """handleSchedulingFailure's AddNominatedPod(pod, nil): a nomination cleared through
    the API while the pod was in its attempt (another pod's preemption clearing it, say)
    leaves the nominator when the attempt fails, though the failure nominates nothing."""
    sched, _, _, _ = refusing_scheduler()
    pod = make_pod(
        "web", scheduler_name="test", requests={"cpu": "8"}, status={"nominatedNodeName": "n1"}
    )
    sched.feed.on_pod(pod)
    assert sched.queue.nominator.nominated_node(pod.uid) == "n1"
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    cleared = PodInfo.parse({**pod.raw, "status": {"nominatedNodeName": ""}})
    sched.feed.on_pod_status(cleared)  # in flight: the nominator waits for the attempt
    assert sched.queue.nominator.nominated_node(pod.uid) == "n1"
    fwk = sched.profiles["test"]
    await sched.failure_handler.handle(fwk, qpi, Failure(Status(Code.UNSCHEDULABLE, "no")), None)
    assert sched.queue.nominator.nominated_node(pod.uid) is None
