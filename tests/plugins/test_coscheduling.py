"""Coscheduling (gang scheduling), with the cases of scheduler-plugins v0.34.7's
coscheduling_test.go, core/core_test.go and apis/config (named as there), then whole gangs
scheduled by the real Scheduler: two gangs that only fit one at a time, a failed gang that
no longer holds up a newer one, and a Permit timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_pod, node_dict
from multisched.cache import POD_GROUP, POD_GROUP_LABEL, Cache, PodInfo
from multisched.config import ConfigError, parse_scheduler_profile_spec, resolve
from multisched.framework import Code, CycleState, Status
from multisched.framework.events import ADD, ASSIGNED_POD_ADD, POD, UPDATE, ClusterEvent
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.plugins.coscheduling import (
    MSG_POST_FILTER_REJECTION,
    NAME,
    PERMIT_STATE_KEY,
    SWEEP_MIN,
    Coscheduling,
    CoschedulingArgs,
    PermitVerdict,
    check_cluster_resource,
)
from multisched.scheduler import Scheduler, default_registry

#: A whole second: creationTimestamps are RFC 3339 to the second.
NOW = 1_700_000_000.0
LOW, HIGH = 10, 100


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_group(
    name: str,
    namespace: str = "ns",
    *,
    min_member: int = 0,
    min_resources: dict[str, str] | None = None,
    timeout: int | None = None,
    created: float = NOW,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(created)},
        "spec": spec,
    }


def member(name: str, group: str, namespace: str = "ns", **kw: Any) -> PodInfo:
    return make_pod(name, namespace=namespace, labels={POD_GROUP_LABEL: group}, **kw)


def gated(name: str, group: str) -> PodInfo:
    return member(name, group, schedulingGates=[{"name": "example-gate"}])


class Held:
    """A pod held at Permit, as the plugin uses the framework's WaitingPod: the first
    allow or reject decides."""

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.verdict: tuple[str, str, str] | None = None

    def allow(self, plugin: str) -> None:
        self.verdict = self.verdict or ("allowed", plugin, "")

    def reject(self, plugin: str, message: str) -> None:
        self.verdict = self.verdict or ("rejected", plugin, message)


class FakeHandle:
    """What Coscheduling reads: the snapshot (nodes, PodGroups, each group's pods), the pods
    waiting at Permit, and the pods it asks to activate."""

    def __init__(
        self,
        nodes: Iterable[dict[str, Any]] = (),
        pods: Iterable[PodInfo] = (),
        pgs: Iterable[dict[str, Any]] = (),
    ) -> None:
        self.cache = Cache()
        for node in nodes:
            self.cache.add_node(node)
        for pod in pods:
            self.cache.groups.track_pod(pod)
            self.cache.add_pod(pod)  # only pods with a nodeName land on a node
        for pg in pgs:
            self.cache.groups.upsert(POD_GROUP, pg)
        self.waiting: dict[str, Held] = {}
        self.activated: list[str] = []

    @property
    def snapshot(self) -> Any:
        return self.cache.snapshot

    def iterate_over_waiting_pods(self) -> list[Held]:
        return list(self.waiting.values())

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self.activated += [p.key for p in pods]

    def hold(self, pod: PodInfo) -> Held:
        self.waiting[pod.uid] = Held(pod)
        return self.waiting[pod.uid]


def coscheduling(
    handle: FakeHandle, clock: Clock | None = None, wall: Clock | None = None, **args: Any
) -> Coscheduling:
    return Coscheduling(CoschedulingArgs(**args), handle, clock or Clock(), wall or Clock(NOW))


def nodes(*names: str, cpu: str = "4") -> list[dict[str, Any]]:
    return [node_dict(n, cpu=cpu, pods="32") for n in names]


# -- core_test.go: TestPreFilter ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pod", "pending", "pgs", "reason"),
    [
        (
            "pod does not belong to any pg",
            make_pod("p"),
            [member("p1", "pg1"), member("p2", "pg2")],
            [pod_group("pg1", min_member=1), pod_group("pg2", min_member=1)],
            None,
        ),
        (
            "pod belongs to a non-existent pg",
            member("p", "pg-non-existent"),
            [],
            [pod_group("pg1", min_member=1)],
            None,
        ),
        (
            "pod count less than minMember",
            member("p", "pg1"),
            [member("pg2-1", "pg2")],
            [pod_group("pg1", min_member=2), pod_group("pg2", min_member=2)],
            "pre-filter pod p cannot find enough sibling pods, current pods number: 1, "
            "minMember of group: 2",
        ),
        (
            "pod count equal minMember",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pod_group("pg1", min_member=2), pod_group("pg2", min_member=2)],
            None,
        ),
        (
            "pod count more than minMember",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pod_group("pg1", min_member=2), pod_group("pg2", min_member=2)],
            None,
        ),
        (
            "gated pods but still meeting quorum (minMember < replicas)",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), gated("p1c", "pg1")],
            [pod_group("pg1", min_member=2)],
            None,
        ),
        (
            "gated pods push group below quorum",
            member("p1a", "pg1"),
            [gated("p1b", "pg1"), member("p1c", "pg1")],
            [pod_group("pg1", min_member=3)],
            "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup",
        ),
        (
            "all sibling pods are gated",
            member("p1a", "pg1"),
            [gated("p1b", "pg1"), gated("p1c", "pg1")],
            [pod_group("pg1", min_member=2)],
            "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup",
        ),
        (
            # 2 nodes of 4 CPUs: 6 CPUs are there in sum (though Filter would refuse).
            "cluster's resource satisfies minResource",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pod_group("pg1", min_member=2, min_resources={"cpu": "6"})],
            None,
        ),
        (
            "cluster's resource cannot satisfy minResource",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pod_group("pg1", min_member=2, min_resources={"cpu": "10"})],
            "resource gap: map[cpu:2]",
        ),
    ],
)
def test_core_pre_filter(
    name: str,
    pod: PodInfo,
    pending: list[PodInfo],
    pgs: list[dict[str, Any]],
    reason: str | None,
) -> None:
    # The pod is listed with its siblings, as the pod lister has every pending pod.
    pl = coscheduling(FakeHandle(nodes("node-a", "node-b"), [*pending, pod], pgs))
    result, status = pl.pre_filter(CycleState(), pod, [])
    assert result is None
    if reason is None:
        assert status is None
    else:
        assert status is not None
        # Unresolvable: no preemption for a gang that cannot start.
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,)


# -- core_test.go: TestPermit ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pod", "existing", "want"),
    [
        (
            "pod does not belong to any pg",
            make_pod("p", namespace="ns"),
            [],
            PermitVerdict.POD_GROUP_NOT_SPECIFIED,
        ),
        (
            "pod specifies a non-existent pg",
            member("p", "pg-non-existent"),
            [],
            PermitVerdict.POD_GROUP_NOT_FOUND,
        ),
        (
            "pod belongs to a pg that doesn't have quorum",
            member("p", "pg1"),
            [],
            PermitVerdict.WAIT,
        ),
        (
            "pod belongs to a pg that have quorum satisfied",
            member("p1a", "pg1"),
            [member("p1b", "pg1", node_name="node")],
            PermitVerdict.SUCCESS,
        ),
    ],
)
def test_core_permit(name: str, pod: PodInfo, existing: list[PodInfo], want: PermitVerdict) -> None:
    handle = FakeHandle(nodes("node"), existing, [pod_group("pg1", min_member=2)])
    assert coscheduling(handle).manager.permit(CycleState(), pod) == want


# -- core_test.go: TestCheckClusterResource ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "existing", "gap"),
    [
        (
            "Cluster resource enough",
            [make_pod("p1", namespace="ns", node_name="node-a", requests={"cpu": "2"})],
            None,
        ),
        (
            "Cluster resource not enough",
            [
                make_pod("p1", namespace="ns", node_name="node-a", requests={"cpu": "2"}),
                make_pod("p2", namespace="ns", node_name="node-b", requests={"cpu": "1"}),
            ],
            "resource gap: map[cpu:1]",
        ),
        (
            "Cluster resource enough as p1's resource needs to be excluded from minResources",
            [
                member("p1", "pg1", node_name="node-a", requests={"cpu": "2"}),
                make_pod("p2", namespace="ns", node_name="node-b", requests={"cpu": "1"}),
            ],
            None,
        ),
    ],
)
def test_check_cluster_resource(name: str, existing: list[PodInfo], gap: str | None) -> None:
    handle = FakeHandle(nodes("node-a", "node-b", cpu="3"), existing)
    request = {"cpu": 4000}
    assert check_cluster_resource(handle.snapshot.node_info_list, request, "ns/pg1") == gap
    assert request == {"cpu": 4000}  # the group's spec is not consumed


def test_check_cluster_resource_counts_pods_and_scalars_node_by_node() -> None:
    gpu = node_dict("gpu", cpu="4", pods="2", extra={"nvidia.com/gpu": "2"})
    handle = FakeHandle([gpu, *nodes("plain")], [make_pod("x", node_name="gpu")])
    snapshot = handle.snapshot.node_info_list
    # One pod slot left on "gpu", 32 on "plain"; the GPUs are only on "gpu".
    assert check_cluster_resource(snapshot, {"pods": 5, "nvidia.com/gpu": 2}, "ns/g") is None
    assert (
        check_cluster_resource(snapshot, {"nvidia.com/gpu": 3, "cpu": 8500}, "ns/g")
        == "resource gap: map[cpu:500m nvidia.com/gpu:1]"
    )


# -- coscheduling_test.go: TestPodGroupBackoffTime ---------------------------------------


async def test_prevent_pod_falling_into_infinite_scheduling_loop() -> None:
    pods = [member(f"pod{i}", "pg1") for i in (1, 2, 3)]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg1", min_member=3)])
    clock = Clock()
    pl = coscheduling(handle, clock, permit_waiting_time_seconds=10, pod_group_backoff_seconds=1)
    status, _ = pl.permit(CycleState(), pods[0], "test")
    assert status is not None and status.code == Code.WAIT
    assert sorted(handle.activated) == ["ns/pod2", "ns/pod3"]
    await pl.post_filter(CycleState(), pods[1], {})
    _, status = pl.pre_filter(CycleState(), pods[2], [])
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("podGroup ns/pg1 failed recently",)
    # The backoff lasts podGroupBackoffSeconds (go-cache: expired once now > expiry).
    clock.now = 1.0
    assert pl.pre_filter(CycleState(), pods[2], [])[1] is not None
    clock.now = 1.001
    assert pl.pre_filter(CycleState(), pods[2], [])[1] is None


async def test_no_backoff_when_the_group_lacks_members_or_backoff_is_off() -> None:
    pods = [member(f"pod{i}", "pg1") for i in (1, 2)]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg1", min_member=3)])
    pl = coscheduling(handle, pod_group_backoff_seconds=5)
    await pl.post_filter(CycleState(), pods[0], {})
    handle.cache.groups.track_pod(member("pod3", "pg1"))
    # Two members of three when it failed: not backed off, PreFilter lets it through.
    assert pl.pre_filter(CycleState(), pods[1], [])[1] is None
    off = coscheduling(handle)  # podGroupBackoffSeconds defaults to 0
    await off.post_filter(CycleState(), pods[0], {})
    assert off.pre_filter(CycleState(), pods[1], [])[1] is None


# -- coscheduling_test.go: TestLess ------------------------------------------------------


def queued(
    name: str,
    namespace: str,
    priority: int,
    group: str = "",
    first_attempt: float | None = None,
) -> QueuedPodInfo:
    labels = {POD_GROUP_LABEL: group} if group else {}
    qpi = QueuedPodInfo(make_pod(name, namespace=namespace, priority=priority, labels=labels), 0)
    # The time the pod entered the queue, on the wall clock like creationTimestamps.
    qpi.first_seen = first_attempt if first_attempt is not None else NOW
    return qpi


@pytest.mark.parametrize(
    ("name", "p1", "p2", "pgs", "want"),
    [
        (
            "p1.priority less than p2.priority",
            queued("p1", "ns1", LOW),
            queued("p2", "ns2", HIGH),
            [],
            False,
        ),
        (
            "p1.priority greater than p2.priority",
            queued("p1", "ns1", HIGH),
            queued("p2", "ns2", LOW),
            [],
            True,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2",
            queued("p1", "ns1", HIGH, first_attempt=NOW + 1),
            queued("p2", "ns2", HIGH, first_attempt=NOW + 2),
            [],
            True,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1",
            queued("p1", "ns1", HIGH, first_attempt=NOW + 2),
            queued("p2", "ns2", HIGH, first_attempt=NOW + 1),
            [],
            False,
        ),
        (
            "p1.priority less than p2.priority, p1 belongs to pg1",
            queued("p1", "ns1", LOW, "pg1"),
            queued("p2", "ns2", HIGH),
            [pod_group("pg1", "ns1")],
            False,
        ),
        (
            "p1.priority greater than p2.priority, p1 belongs to pg1",
            queued("p1", "ns1", HIGH, "pg1"),
            queued("p2", "ns2", LOW),
            [pod_group("pg1", "ns1")],
            True,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
            queued("p1", "ns1", HIGH, "pg1", NOW + 1),
            queued("p2", "ns2", HIGH, first_attempt=NOW + 2),
            [pod_group("pg1", "ns1", created=NOW + 1)],
            True,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
            queued("p1", "ns1", HIGH, "pg1", NOW + 2),
            queued("p2", "ns2", HIGH, first_attempt=NOW + 1),
            [pod_group("pg1", "ns1", created=NOW + 2)],
            False,
        ),
        (
            "p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
            queued("p1", "ns1", LOW, "pg1"),
            queued("p2", "ns2", HIGH, "pg2"),
            [pod_group("pg1", "ns1", created=NOW + 1), pod_group("pg2", "ns2", created=NOW + 2)],
            False,
        ),
        (
            "p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
            queued("p1", "ns1", HIGH, "pg1"),
            queued("p2", "ns2", LOW, "pg1"),
            [pod_group("pg1", "ns1", created=NOW + 1), pod_group("pg2", "ns2", created=NOW + 2)],
            True,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1 "
            "and p2 belongs to pg2",
            queued("p1", "ns1", HIGH, "pg1", NOW + 1),
            queued("p2", "ns2", HIGH, "pg2", NOW + 2),
            [pod_group("pg1", "ns1", created=NOW + 1), pod_group("pg2", "ns2", created=NOW + 2)],
            True,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg2 "
            "and p2 belongs to pg1",
            queued("p1", "ns", LOW, "pg2", NOW + 1),
            queued("p2", "ns", HIGH, "pg1", NOW + 2),
            [pod_group("pg1", "ns", created=NOW + 1), pod_group("pg2", "ns", created=NOW + 2)],
            False,
        ),
        (
            "equal priority and creation time, p1 belongs pg1 and p2 belong to pg2",
            queued("p1", "ns1", HIGH, "pg2", NOW + 1),
            queued("p2", "ns2", HIGH, "pg2", NOW + 1),
            [pod_group("pg1", "ns1", created=NOW + 1), pod_group("pg2", "ns2", created=NOW + 2)],
            True,
        ),
        (
            "equal priority and creation time, and p2 belong to pg2",
            queued("p1", "ns1", HIGH, first_attempt=NOW + 1),
            queued("p2", "ns2", HIGH, "pg2", NOW + 1),
            [pod_group("pg2", "ns2", created=NOW + 2)],
            True,
        ),
    ],
)
def test_less(
    name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, pgs: list[dict[str, Any]], want: bool
) -> None:
    pl = coscheduling(FakeHandle(pgs=pgs))
    assert pl.less(p1, p2) is want


def test_less_breaks_ties_on_the_pods_namespace_and_name() -> None:
    pl = coscheduling(FakeHandle(pgs=[pod_group("pg")]))
    a, b = queued("a", "ns", HIGH, "pg"), queued("b", "ns", HIGH, "pg")
    assert pl.less(a, b) and not pl.less(b, a)
    assert not pl.less(a, a)


def test_less_after_schedule_failure() -> None:
    """TestLessAfterScheduleFailure: a gang that failed sorts by the time it failed, behind
    a newer gang of the same priority, until it reaches its quorum again."""
    pgs = [pod_group("pg1", created=NOW - 10), pod_group("pg2", created=NOW - 5)]
    pl = coscheduling(FakeHandle(pgs=pgs), wall=Clock(NOW))
    p1, p2 = queued("p1", "ns", HIGH, "pg1"), queued("p2", "ns", HIGH, "pg2")
    assert pl.less(p1, p2)
    pl.manager.mark_pod_group_schedule_failure("ns/pg1")
    assert not pl.less(p1, p2)
    assert pl.less(p2, p1)
    pl.manager.clear_pod_group_schedule_failure("ns/pg1")
    assert pl.less(p1, p2)


def test_mark_and_clear_pod_group_schedule_failure() -> None:
    """TestMarkAndClearPodGroupScheduleFailure: the group's time is its creation, then its
    failure, then its creation again."""
    wall = Clock(NOW)
    pl = coscheduling(FakeHandle(pgs=[pod_group("pg1", created=NOW - 10)]), wall=wall)
    pod = member("p1", "pg1")
    assert pl.manager.creation_time(pod, NOW) == NOW - 10
    pl.manager.mark_pod_group_schedule_failure("ns/pg1")
    assert pl.manager.creation_time(pod, NOW) == NOW > NOW - 10
    pl.manager.clear_pod_group_schedule_failure("ns/pg1")
    assert pl.manager.creation_time(pod, NOW) == NOW - 10


def test_a_failure_counts_even_for_a_group_not_found_and_later_failures_sort_later() -> None:
    wall = Clock(NOW)
    pl = coscheduling(FakeHandle(), wall=wall)
    # Upstream reads the failure before it looks the group up.
    assert pl.manager.creation_time(member("p", "gone"), 1.0) == 1.0
    pl.manager.mark_pod_group_schedule_failure("ns/gone")
    assert pl.manager.creation_time(member("p", "gone"), 1.0) == NOW
    # Two failures within one tick of the clock keep the order they happened in.
    pl.manager.mark_pod_group_schedule_failure("ns/later")
    assert pl.manager.creation_time(member("p", "later"), 1.0) > NOW
    # A pod of no group is never penalised.
    assert pl.manager.creation_time(make_pod("lone", namespace="ns"), 7.0) == 7.0


# -- coscheduling_test.go: TestPermit ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pod", "want"),
    [
        ("pods do not belong to any podGroup", make_pod("p", namespace="ns"), None),
        ("pods belong to a pg1, but quorum not satisfied", member("p", "pg2"), Code.WAIT),
        ("pods belong to a podGroup, and quorum satisfied", member("p", "pg1"), None),
    ],
)
def test_permit(name: str, pod: PodInfo, want: Code | None) -> None:
    pgs = [pod_group("pg1", min_member=1), pod_group("pg2", min_member=2)]
    pl = coscheduling(FakeHandle(nodes("node"), [], pgs), permit_waiting_time_seconds=10)
    status, timeout = pl.permit(CycleState(), pod, "node")
    assert (status.code if status is not None else None) == want
    assert timeout == (10 if want == Code.WAIT else 0)


def test_permit_denies_a_pod_whose_pod_group_is_not_found() -> None:
    pl = coscheduling(FakeHandle(nodes("node")))
    status, _ = pl.permit(CycleState(), member("p", "missing"), "node")
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ("PodGroup not found",))


def test_a_pod_group_that_does_not_decode_is_not_found() -> None:
    bad = pod_group("pg1", min_member=2, min_resources={"cpu": "lots"})
    pl = coscheduling(FakeHandle(nodes("node"), pgs=[bad]))
    assert pl.manager.permit(CycleState(), member("p", "pg1")) == PermitVerdict.POD_GROUP_NOT_FOUND


def test_a_null_min_member_reads_as_zero() -> None:
    pg = pod_group("pg1")
    pg["spec"]["minMember"] = None
    pl = coscheduling(FakeHandle(nodes("node"), pgs=[pg]))
    assert pl.manager.permit(CycleState(), member("p", "pg1")) == PermitVerdict.SUCCESS


@pytest.mark.parametrize(
    ("group_timeout", "args_timeout", "want"),
    [(5, 10, 5), (None, 10, 10), (0, 10, 10), (None, 0, 60)],
)
def test_permit_waits_for_the_groups_timeout_else_the_args_else_60s(
    group_timeout: int | None, args_timeout: int, want: int
) -> None:
    handle = FakeHandle(nodes("node"), pgs=[pod_group("pg", min_member=2, timeout=group_timeout)])
    pl = coscheduling(handle, permit_waiting_time_seconds=args_timeout)
    status, timeout = pl.permit(CycleState(), member("p", "pg"), "node")
    assert status is not None and status.code == Code.WAIT
    assert timeout == want


def test_permit_allows_the_waiting_members_once_the_quorum_is_reached() -> None:
    first = member("p1", "pg", node_name="node")  # assumed: in the snapshot
    other_ns = member("q", "pg", namespace="other")
    handle = FakeHandle(nodes("node"), [first], [pod_group("pg", min_member=2)])
    waiting, bystander = handle.hold(first), handle.hold(other_ns)
    status, _ = coscheduling(handle).permit(CycleState(), member("p2", "pg"), "node")
    assert status is None
    assert waiting.verdict == ("allowed", NAME, "")
    assert bystander.verdict is None  # same group name, another namespace


def test_permit_counts_the_pod_itself_once() -> None:
    pod = member("p1", "pg", node_name="node")  # listed bound, and now at Permit
    handle = FakeHandle(nodes("node"), [pod], [pod_group("pg", min_member=2)])
    pl = coscheduling(handle)
    assert pl.manager.permit(CycleState(), pod) == PermitVerdict.WAIT
    assert pl.manager.permit(CycleState(), pod) == PermitVerdict.WAIT  # a retry: still one


def test_permit_counts_the_members_past_permit_until_unreserved() -> None:
    """Upstream's assignedPodsByPG: Permit adds the pod, Unreserve takes it out."""
    pods = [member("p1", "pg"), member("p2", "pg")]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg", min_member=2)])
    pl = coscheduling(handle)
    assert pl.manager.permit(CycleState(), pods[0]) == PermitVerdict.WAIT
    assert pl.manager.get_assigned_pod_count("ns", "pg") == 1
    pl.unreserve(CycleState(), pods[0], "node")
    assert pl.manager.get_assigned_pod_count("ns", "pg") == 0
    state = CycleState()
    assert pl.manager.permit(state, pods[1]) == PermitVerdict.WAIT
    assert state.get(PERMIT_STATE_KEY) is not None  # the first again: it wakes its siblings
    assert pl.manager.permit(CycleState(), pods[0]) == PermitVerdict.SUCCESS


def test_groups_whose_pods_are_gone_are_swept() -> None:
    """Upstream forgets a pod when the informer deletes it; here the state of groups whose
    pods are all gone is swept once the entries double, so a long run does not grow."""
    n = SWEEP_MIN
    gone = [member(f"g{i}", f"gone-{i}") for i in range(n)]
    pgs = [pod_group(f"gone-{i}", min_member=2, created=NOW - 60) for i in range(n)]
    handle = FakeHandle(nodes("node"), gone, [*pgs, pod_group("live", min_member=2)])
    pl = coscheduling(handle, wall=Clock(NOW))
    for pod in gone:
        assert pl.manager.permit(CycleState(), pod) == PermitVerdict.WAIT
    for pod in gone:
        handle.cache.groups.untrack_pod(pod.uid)  # the jobs finished
    pl.manager.mark_pod_group_schedule_failure("ns/gone-0")  # the 65th entry: a sweep
    live = member("l0", "live")
    handle.cache.groups.track_pod(live)
    assert pl.manager.permit(CycleState(), live) == PermitVerdict.WAIT
    assert list(pl.manager._past_permit) == ["ns/live"]
    # A later pod of a swept group sorts by the group's creation, not a stale failure.
    back = member("g0-again", "gone-0")
    handle.cache.groups.track_pod(back)
    assert pl.manager.creation_time(back, 0.0) == NOW - 60


def test_a_member_deleted_after_permit_no_longer_counts() -> None:
    pods = [member("p1", "pg"), member("p2", "pg")]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg", min_member=2)])
    pl = coscheduling(handle)
    assert pl.manager.permit(CycleState(), pods[0]) == PermitVerdict.WAIT
    handle.cache.groups.untrack_pod(pods[0].uid)  # deleted, or finished
    assert pl.manager.permit(CycleState(), pods[1]) == PermitVerdict.WAIT
    assert pl.manager.get_assigned_pod_count("ns", "pg") == 1


async def test_only_the_first_member_at_permit_activates_its_siblings() -> None:
    pods = [member("p1", "pg", node_name="node"), member("p2", "pg"), member("p3", "pg")]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg", min_member=3)])
    pl = coscheduling(handle)
    pl.permit(CycleState(), pods[1], "node")  # p1 is already assumed
    assert handle.activated == []


# -- coscheduling_test.go: TestPostFilter ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pod", "existing", "min_member", "want"),
    [
        (
            "pod does not belong to any pod group",
            make_pod("p", namespace="ns"),
            [],
            2,
            (Code.UNSCHEDULABLE, ("can not find pod group",)),
        ),
        (
            "enough pods assigned, do not reject all",
            member("p", "pg1"),
            [member("p1", "pg1", node_name="node")],
            1,
            (Code.UNSCHEDULABLE, ()),
        ),
        (
            "pod failed at filter phase, reject all pods",
            member("p", "pg1"),
            [member("p1", "pg1", node_name="node")],
            2,
            (
                Code.UNSCHEDULABLE,
                (
                    "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after "
                    "PostFilter",
                ),
            ),
        ),
    ],
)
async def test_post_filter(
    name: str,
    pod: PodInfo,
    existing: list[PodInfo],
    min_member: int,
    want: tuple[Code, tuple[str, ...]],
) -> None:
    handle = FakeHandle(nodes("node"), existing, [pod_group("pg1", min_member=min_member)])
    result, status = await coscheduling(handle).post_filter(
        CycleState(), pod, {"node": Status(Code.UNSCHEDULABLE, "x")}
    )
    assert result is None  # no nomination either way
    assert status is not None
    assert (status.code, status.reasons) == want


async def test_post_filter_rejects_the_gangs_waiting_members_and_drops_its_permit() -> None:
    assumed = member("p1", "pg", node_name="node")
    other_group, other_ns = member("o", "other"), member("q", "pg", namespace="elsewhere")
    handle = FakeHandle(
        nodes("node"),
        [assumed, member("p2", "pg"), member("p3", "pg")],
        [pod_group("pg", min_member=3, min_resources={"cpu": "1"}), pod_group("other")],
    )
    clock = Clock()
    pl = coscheduling(handle, clock)
    assert pl.pre_filter(CycleState(), member("p2", "pg"), [])[1] is None
    assert "ns/pg" in pl.manager.permitted
    gang, spared, spared_ns = handle.hold(assumed), handle.hold(other_group), handle.hold(other_ns)
    await pl.post_filter(CycleState(), member("p3", "pg"), {})
    assert gang.verdict == ("rejected", NAME, "optimistic rejection in PostFilter")
    assert spared.verdict is None and spared_ns.verdict is None
    assert "ns/pg" not in pl.manager.permitted


@pytest.mark.parametrize(
    ("name", "percentage", "assigned", "rejects"),
    [
        ("default 10%: 9/10 assigned (10% gap) -> no rejection", 10, 9, False),
        ("default 10%: 8/10 assigned (20% gap) -> rejection", 10, 8, True),
        ("0%: 9/10 assigned (10% gap) -> rejection (always reject)", 0, 9, True),
        ("100%: 0/10 assigned (100% gap) -> no rejection (never reject)", 100, 0, False),
        ("50%: 6/10 assigned (40% gap) -> no rejection", 50, 6, False),
        ("50%: 4/10 assigned (60% gap) -> rejection", 50, 4, True),
    ],
)
async def test_post_filter_reject_threshold(
    name: str, percentage: int, assigned: int, rejects: bool
) -> None:
    """TestPostFilterRejectThreshold: a gang of minMember 10 missing at most
    podGroupRejectPercentage of it is not rejected; its waiting members stay."""
    on_node = [member(f"assigned-{i}", "pg1", node_name="node") for i in range(assigned)]
    pod = member("p", "pg1")
    handle = FakeHandle(nodes("node"), [*on_node, pod], [pod_group("pg1", min_member=10)])
    waiting = handle.hold(member("w", "pg1"))
    pl = coscheduling(handle, pod_group_reject_percentage=percentage)
    _, status = await pl.post_filter(CycleState(), pod, {})
    reject = "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ((reject,) if rejects else ())
    assert waiting.verdict == (("rejected", NAME, MSG_POST_FILTER_REJECTION) if rejects else None)


@pytest.mark.parametrize(("min_member", "assigned", "rejects"), [(3, 2, True), (20, 18, False)])
async def test_post_filter_compares_the_missing_share_with_the_percentage(
    min_member: int, assigned: int, rejects: bool
) -> None:
    """1 missing of 3 is over 33 %: rejected; 2 of 20 is 10 % exactly: spared."""
    on_node = [member(f"a{i}", "pg", node_name="node") for i in range(assigned)]
    handle = FakeHandle(nodes("node"), on_node, [pod_group("pg", min_member=min_member)])
    pl = coscheduling(handle, pod_group_reject_percentage=33 if min_member == 3 else 10)
    _, status = await pl.post_filter(CycleState(), member("x", "pg"), {})
    assert status is not None and bool(status.reasons) is rejects


# -- Unreserve, minResources, args, events -----------------------------------------------


def test_unreserve_rejects_the_gangs_waiting_members() -> None:
    handle = FakeHandle(nodes("node"), pgs=[pod_group("pg", min_member=3)])
    gang = [handle.hold(member(f"p{i}", "pg")) for i in range(2)]
    bystander = handle.hold(member("q", "pg", namespace="elsewhere"))
    coscheduling(handle).unreserve(CycleState(), member("p2", "pg"), "node")
    assert [w.verdict for w in gang] == [("rejected", NAME, "rejection in Unreserve")] * 2
    assert bystander.verdict is None


async def test_a_gang_rejected_or_unreserved_is_marked_failed_until_its_quorum() -> None:
    """PostFilter's rejection and Unreserve mark the group failed (now, on the wall
    clock); a PostFilter that spares the gang does not; Permit's success clears it."""
    pods = [member(f"p{i}", "pg") for i in range(3)]
    handle = FakeHandle(nodes("node"), pods, [pod_group("pg", min_member=2, created=NOW - 60)])
    wall = Clock(NOW)
    pl = coscheduling(handle, wall=wall, pod_group_reject_percentage=50)
    assert pl.permit(CycleState(), pods[0], "node")[0] is not None  # waits: 1 of 2
    await pl.post_filter(CycleState(), pods[1], {})  # 50 % missing: spared
    assert pl.manager.creation_time(pods[1], 0.0) == NOW - 60
    pl.unreserve(CycleState(), pods[0], "node")
    assert pl.manager.creation_time(pods[1], 0.0) == NOW
    wall.now = NOW + 1
    await pl.post_filter(CycleState(), pods[1], {})  # 100 % missing: rejected
    assert pl.manager.creation_time(pods[1], 0.0) == NOW + 1
    assert pl.permit(CycleState(), pods[1], "node")[0] is not None
    assert pl.permit(CycleState(), pods[2], "node") == (None, 0)
    assert pl.manager.creation_time(pods[1], 0.0) == NOW - 60


def test_unreserve_of_a_pod_without_a_known_group_rejects_nothing() -> None:
    handle = FakeHandle(nodes("node"))
    waiting = handle.hold(member("p1", "pg"))
    coscheduling(handle).unreserve(CycleState(), member("p2", "pg"), "node")
    assert waiting.verdict is None


def test_a_passed_min_resources_check_holds_for_permit_waiting_time() -> None:
    pods = [member("p1", "pg"), member("p2", "pg")]
    handle = FakeHandle(
        nodes("node"), pods, [pod_group("pg", min_member=2, min_resources={"cpu": "3"})]
    )
    clock = Clock()
    pl = coscheduling(handle, clock, permit_waiting_time_seconds=10)
    assert pl.pre_filter(CycleState(), pods[0], [])[1] is None
    handle.cache.add_pod(make_pod("hog", namespace="ns", node_name="node", requests={"cpu": "2"}))
    clock.now = 10.0
    assert pl.pre_filter(CycleState(), pods[1], [])[1] is None  # not checked again yet
    clock.now = 10.5
    _, status = pl.pre_filter(CycleState(), pods[1], [])
    assert status is not None and status.reasons == ("resource gap: map[cpu:1]",)


def test_args_defaults_names_and_validation() -> None:
    """apis/config/v1 TestSchedulingDefaults: unset (or null) args take v1's defaults."""
    assert CoschedulingArgs() == CoschedulingArgs(
        permit_waiting_time_seconds=60, pod_group_backoff_seconds=0, pod_group_reject_percentage=10
    )
    set_args = {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 20,
        "podGroupRejectPercentage": 50,
    }
    assert CoschedulingArgs.model_validate(set_args).model_dump(by_alias=True) == set_args
    nulls = dict.fromkeys(set_args)
    assert CoschedulingArgs.model_validate(nulls) == CoschedulingArgs()
    spec = {
        "profiles": [
            {
                "schedulerName": "gang",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": NAME}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
                "pluginConfig": [
                    {
                        "name": NAME,
                        "args": {"permitWaitingTimeSeconds": 10, "podGroupBackoffSeconds": None},
                    }
                ],
            }
        ]
    }
    prof = resolve(parse_scheduler_profile_spec(spec), default_registry(False)).profiles[0]
    assert prof.plugin_args[NAME] == CoschedulingArgs(permit_waiting_time_seconds=10)
    assert prof.plugins["queueSort"] == (NAME,)
    assert prof.plugins["postFilter"] == ("DynamicResources", "DefaultPreemption", NAME)
    for point in ("preFilter", "reserve", "permit"):
        assert NAME in prof.plugins[point]
    spec["profiles"][0]["pluginConfig"][0]["args"] = {"podGroupBackoffSeconds": -1}
    with pytest.raises(ConfigError) as info:
        resolve(parse_scheduler_profile_spec(spec), default_registry(False))
    assert [str(p) for p in info.value.problems] == [
        "profiles[0](gang).pluginConfig[0](Coscheduling).args: podGroupBackoffSeconds: "
        "Invalid value: -1: must be greater than 0"
    ]


@pytest.mark.parametrize(
    ("description", "args", "error"),
    [
        ("correct config with valid values", (30, 60, 10), None),
        ("valid PodGroupRejectPercentage at boundaries", (30, 0, 0), None),
        ("valid PodGroupRejectPercentage at upper boundary", (30, 0, 100), None),
        (
            "invalid PermitWaitingTimeSeconds (negative value)",
            (-10, 60, 10),
            "permitWaitingTimeSeconds: Invalid value: -10: must be greater than 0",
        ),
        (
            "invalid PodGroupBackoffSeconds (negative value)",
            (30, -20, 10),
            "podGroupBackoffSeconds: Invalid value: -20: must be greater than 0",
        ),
        (
            "invalid PodGroupRejectPercentage (negative value)",
            (30, 0, -1),
            "podGroupRejectPercentage: Invalid value: -1: must be between 0 and 100",
        ),
        (
            "invalid PodGroupRejectPercentage (greater than 100)",
            (30, 0, 150),
            "podGroupRejectPercentage: Invalid value: 150: must be between 0 and 100",
        ),
        (
            "both PermitWaitingTimeSeconds and PodGroupBackoffSeconds are negative",
            (-30, -20, 10),
            "[permitWaitingTimeSeconds: Invalid value: -30: must be greater than 0, "
            "podGroupBackoffSeconds: Invalid value: -20: must be greater than 0]",
        ),
    ],
)
def test_validate_coscheduling_args(
    description: str, args: tuple[int, int, int], error: str | None
) -> None:
    """apis/config/validation TestValidateCoschedulingArgs, which New runs."""
    raw = dict(
        zip(
            ("permitWaitingTimeSeconds", "podGroupBackoffSeconds", "podGroupRejectPercentage"),
            args,
            strict=True,
        )
    )
    if error is None:
        CoschedulingArgs.model_validate(raw)
        return
    with pytest.raises(ValidationError) as exc:
        CoschedulingArgs.model_validate(raw)
    assert [e["msg"].removeprefix("Value error, ") for e in exc.value.errors()] == [error]


def test_reject_percentage_must_be_an_integer() -> None:
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate({"podGroupRejectPercentage": 12.5})


def test_events_to_register() -> None:
    events = coscheduling(FakeHandle()).events_to_register()
    assert set(events) == {ClusterEvent(POD, ADD), ClusterEvent(POD_GROUP, ADD | UPDATE)}
    assert any(e.matches(ASSIGNED_POD_ADD) for e in events)
    assert any(e.matches(ClusterEvent(POD_GROUP, UPDATE)) for e in events)


# -- whole gangs through the real Scheduler ----------------------------------------------


class Client:
    """The API writes of the default profile: bindings are recorded."""

    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.bound.append((pod.key, node_name))

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        raise AssertionError(f"nothing should be preempted, not {pod.key}")

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


class Events:
    def __init__(self) -> None:
        self.failed_with: dict[str, list[str]] = {}

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        pass

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        self.failed_with.setdefault(pod.key, []).append(message)


class Cluster:
    """An in-memory Scheduler whose profile is the default one plus Coscheduling, enabled
    with multiPoint as scheduler-plugins' sample configuration does, on one 4-CPU node."""

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        spec = {
            "profiles": [
                {
                    "schedulerName": "gang",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": NAME}],
                            "disabled": [{"name": "PrioritySort"}],
                        }
                    },
                    "pluginConfig": [{"name": NAME, "args": args or {}}],
                }
            ]
        }
        registry = default_registry(False)
        cache = Cache()
        cache.add_node(node_dict("n1", cpu="4"))
        self.clock = Clock(1000.0)
        self.client = Client()
        self.events = Events()
        self.sched = Scheduler(
            resolve(parse_scheduler_profile_spec(spec), registry),
            registry,
            cache=cache,
            client=self.client,
            events=self.events,
            clock=self.clock,
        )
        self.pods: dict[str, PodInfo] = {}

    def group(self, name: str, **kw: Any) -> None:
        self.sched.feed.on_group_object(POD_GROUP, pod_group(name, **kw))

    def add(self, name: str, group: str, **kw: Any) -> None:
        kw.setdefault("scheduler_name", "gang")
        self.pods[name] = member(name, group, requests={"cpu": "2"}, **kw)
        self.sched.feed.on_pod(self.pods[name])

    def delete(self, name: str) -> None:
        self.sched.feed.on_pod_deleted(self.pods[name].uid)

    async def cycle(self) -> str | None:
        """One scheduling cycle, then let the binding cycles it woke run; the pod's name."""
        qpi = self.sched.queue.pop_nowait()
        if qpi is None:
            return None
        await self.sched.schedule_one(qpi)
        for _ in range(10):
            await asyncio.sleep(0)
        return qpi.pod.name

    async def drain(self) -> list[str]:
        tried = []
        while (name := await self.cycle()) is not None:
            tried.append(name)
        return tried

    def later(self, seconds: float) -> None:
        """Let the queue's backoff pass, and the pool's 5 minutes if ``seconds`` says so."""
        self.clock.now += seconds
        self.sched.queue.flush_backoff_completed()
        self.sched.queue.flush_unschedulable_left_over()

    @property
    def waiting(self) -> list[str]:
        return sorted(w.pod.name for w in self.sched.profiles["gang"].iterate_over_waiting_pods())

    @property
    def cpu_in_use(self) -> int:
        return self.sched.cache.snapshot.node_info_map["n1"].requested.milli_cpu

    @property
    def bound(self) -> list[str]:
        return sorted(key.split("/")[1] for key, _ in self.client.bound)


async def test_two_gangs_that_fit_one_at_a_time_are_both_placed_in_turn() -> None:
    cluster = Cluster()
    # Gang b is older, but a's first member gets in before b's pods exist.
    cluster.group("b", min_member=2, created=NOW)
    cluster.group("a", min_member=2, created=NOW + 10)
    cluster.add("a-0", "a")
    cluster.add("a-1", "a")
    assert await cluster.cycle() == "a-0"
    cluster.add("b-0", "b")
    cluster.add("b-1", "b")
    # QueueSort puts the older gang ahead of a-1: both gangs get half the node.
    assert await cluster.cycle() == "b-0"
    assert cluster.waiting == ["a-0", "b-0"]
    assert cluster.cpu_in_use == 4000
    # b-1 fits nowhere: PostFilter rejects b-0, whose room is freed.
    assert await cluster.cycle() == "b-1"
    assert cluster.waiting == ["a-0"]
    assert cluster.cpu_in_use == 2000
    assert cluster.events.failed_with["ns/b-0"] == ["optimistic rejection in PostFilter"]
    assert cluster.events.failed_with["ns/b-1"][0].endswith(
        "PodGroup ns/b gets rejected due to Pod b-1 is unschedulable even after PostFilter"
    )
    # a-1 takes that room, reaches the quorum and lets a-0 through.
    assert await cluster.drain() == ["a-1"]
    assert cluster.bound == ["a-0", "a-1"]
    assert cluster.waiting == []
    # Gang b retries while a runs: it fits nowhere and holds nothing. (b-0, turned away at
    # Permit, waits in the pool for an event Coscheduling registered - a pod or PodGroup
    # added - or the pool's 5 minutes: its own unreserve is no such event.)
    cluster.later(301)
    assert sorted(await cluster.drain()) == ["b-0", "b-1"]
    assert cluster.waiting == []
    assert cluster.cpu_in_use == 4000
    # Gang a finishes: its pods' deletion wakes b, which now gets the whole node.
    cluster.delete("a-0")
    cluster.delete("a-1")
    cluster.later(60)
    assert await cluster.drain() == ["b-0", "b-1"]
    assert cluster.bound == ["a-0", "a-1", "b-0", "b-1"]
    assert cluster.cpu_in_use == 4000


async def test_the_first_member_at_permit_wakes_a_sibling_turned_away_before() -> None:
    cluster = Cluster()
    cluster.group("g", min_member=2)
    cluster.add("g-0", "g")
    assert await cluster.cycle() == "g-0"  # alone: PreFilter turns it away
    assert cluster.events.failed_with["ns/g-0"][0].startswith(
        "0/1 nodes are available: pre-filter pod g-0 cannot find enough sibling pods, "
        "current pods number: 1, minMember of group: 2."
    )
    # A pending pod's arrival is no cluster event: g-0 stays in the pool until g-1,
    # first of the gang at Permit, moves it to activeQ.
    cluster.add("g-1", "g")
    assert await cluster.drain() == ["g-1", "g-0"]
    assert cluster.bound == ["g-0", "g-1"]


async def test_a_gang_that_failed_no_longer_holds_up_a_newer_one() -> None:
    """The head-of-line fix: an old gang too big for the node fails; when its pods come
    back from backoff, a newer gang's pods go first, and are placed."""
    cluster = Cluster()
    cluster.group("big", min_member=3, created=NOW)
    cluster.group("small", min_member=2, created=NOW + 5)
    for name in ("big-0", "big-1", "big-2"):
        cluster.add(name, "big")
    assert await cluster.drain() == ["big-0", "big-1", "big-2"]
    assert cluster.events.failed_with["ns/big-0"] == ["optimistic rejection in PostFilter"]
    # big's pods are back in activeQ: big-2 after backoff; big-0 and big-1, turned away at
    # Permit, after the pool's 5 minutes (no event Coscheduling registered came).
    cluster.later(301)
    cluster.add("small-0", "small")
    cluster.add("small-1", "small")
    # By creation time big (older) would come first again; by its failure, it is last.
    assert await cluster.drain() == ["small-0", "small-1", "big-0", "big-1", "big-2"]
    assert cluster.bound == ["small-0", "small-1"]
    assert cluster.waiting == []


async def test_queue_sort_keeps_gangs_together_older_group_first() -> None:
    cluster = Cluster()
    cluster.group("young", min_member=2, created=NOW + 5)
    cluster.group("old", min_member=2, created=NOW)
    for name, group in [("y-0", "young"), ("o-0", "old"), ("y-1", "young"), ("o-1", "old")]:
        cluster.add(name, group)
    cluster.sched.feed.on_pod(make_pod("lone", namespace="ns", scheduler_name="gang"))
    # The groups were created before the lone pod entered the queue (now, on the wall clock).
    assert await cluster.drain() == ["o-0", "o-1", "y-0", "y-1", "lone"]
    # The old gang never shared the node: it is placed, the young one fits nowhere.
    assert cluster.bound == ["lone", "o-0", "o-1"]
    assert cluster.waiting == []


async def test_permit_timeout_rejects_every_waiting_member_and_frees_their_room() -> None:
    cluster = Cluster()
    cluster.group("g", min_member=3, timeout=1)
    cluster.add("g-0", "g")
    cluster.add("g-1", "g")
    # A third member another scheduler owns: the gang is complete for PreFilter, but it is
    # never placed here, so the two others wait at Permit until the group's timeout.
    cluster.add("g-2", "g", scheduler_name="other")
    assert await cluster.cycle() == "g-0"
    await asyncio.sleep(0.3)
    assert await cluster.cycle() == "g-1"
    assert cluster.waiting == ["g-0", "g-1"]
    assert cluster.cpu_in_use == 4000
    for _ in range(100):
        if not cluster.waiting:
            break
        await asyncio.sleep(0.05)
    await cluster.sched.wait_for_bindings()
    assert cluster.waiting == []
    assert cluster.cpu_in_use == 0
    assert cluster.bound == []
    # g-0 timed out; its Unreserve rejected g-1 before g-1's own timer ran out.
    assert cluster.events.failed_with == {
        "ns/g-0": ["rejected due to timeout after waiting 1s at plugin Coscheduling"],
        "ns/g-1": ["rejection in Unreserve"],
    }
    assert cluster.pods["g-0"].uid in cluster.sched.queue
    assert cluster.pods["g-1"].uid in cluster.sched.queue
