"""Cases from scheduler-plugins v0.34.7 ``pkg/capacityscheduling`` (capacity_scheduling_test.go,
elasticquota_test.go; unchanged since v0.28 but for the API) and
``test/integration/capacity_scheduling_test.go``.

Upstream's unit tests hand the plugin ElasticQuotaInfos with ``used`` filled in; here
``used`` is what the namespace's pods on nodes request, so each case puts pods on nodes
that add up to upstream's ``used`` (the informer cases become cache cases). The integration
cases run the real scheduler with NodeResourcesFit, preemption deleting victims through an
in-memory API.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from builders import PreemptingClient, make_pod, node_dict
from multisched.cache import ELASTIC_QUOTA, Cache, NodeInfo, PodInfo, Resource
from multisched.config.resolved import ResolvedConfig, ResolvedProfile
from multisched.framework import Code, CycleState, Framework, Registry, Status
from multisched.framework.events import ALL, ASSIGNED_POD_DELETE, DELETE, POD, ClusterEvent
from multisched.plugins import builtin_plugins
from multisched.plugins._preemption_victims import Pdb
from multisched.plugins.capacityscheduling import (
    ELASTIC_QUOTA_SNAPSHOT_KEY,
    LOWER_BOUND_OF_MIN,
    MSG_QUOTA_EXCEEDED,
    NAME,
    PRE_FILTER_STATE_KEY,
    UPPER_BOUND_OF_MAX,
    CapacityScheduling,
    ElasticQuotaInfo,
    ElasticQuotaInfos,
    ElasticQuotaSnapshotState,
    PreFilterState,
    QuotaPreemption,
    msg_no_victims,
    msg_over_max,
    msg_over_min,
)
from multisched.plugins.capacityscheduling.elastic_quota import parse_bounds
from multisched.plugins.node_resources_fit import NodeResourcesFit
from multisched.queue import PodNominator
from multisched.scheduler import Scheduler

GPU = "nvidia.com/gpu"
LOW, MID, HIGH = 0, 100, 1000


# -- builders -------------------------------------------------------------------------------


def quota(
    namespace: str,
    min_list: dict[str, str] | None = None,
    max_list: dict[str, str] | None = None,
    name: str = "eq",
) -> dict[str, Any]:
    """An ElasticQuota; a bound left as None is left out of the spec."""
    spec: dict[str, Any] = {}
    if min_list is not None:
        spec["min"] = min_list
    if max_list is not None:
        spec["max"] = max_list
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def mem_quota(namespace: str, min_mem: int, max_mem: int) -> dict[str, Any]:
    return quota(namespace, {"memory": str(min_mem)}, {"memory": str(max_mem)})


def pod(
    name: str,
    namespace: str,
    mem: int = 0,
    cpu_milli: int = 0,
    priority: int = MID,
    on: str = "",
    gpu: int | None = None,
    **kw: Any,
) -> PodInfo:
    """Upstream's ``makePod(name, namespace, memReq, cpuReq, gpuReq, priority, uid, node)``."""
    requests = {"memory": str(mem), "cpu": f"{cpu_milli}m"}
    if gpu is not None:
        requests[GPU] = str(gpu)
    return make_pod(
        name, namespace=namespace, requests=requests, priority=priority, node_name=on, **kw
    )


def node(name: str, mem: int = 150, cpu: str = "4", pods: str = "32") -> dict[str, Any]:
    """Upstream's ``st.MakeNode().Capacity({memory: ...})`` (32 pods)."""
    return node_dict(name, cpu=cpu, memory=str(mem), pods=pods)


def res(milli_cpu: int = 0, memory: int = 0, eph: int = 0, gpu: int | None = None) -> Resource:
    return Resource(milli_cpu, memory, eph, scalar={GPU: gpu} if gpu is not None else None)


def eq_info(
    namespace: str,
    used: Resource,
    min_res: Resource | None = None,
    max_res: Resource | None = None,
) -> ElasticQuotaInfo:
    return ElasticQuotaInfo(namespace, min_res, max_res, used)


def mem_infos(**quotas: tuple[int, int, int]) -> ElasticQuotaInfos:
    """Namespace -> (min, max, used) memory, as upstream's table cases spell them."""
    return ElasticQuotaInfos(
        {
            ns: eq_info(ns, res(memory=used), res(memory=lo), res(memory=hi))
            for ns, (lo, hi, used) in quotas.items()
        }
    )


class Env:
    """A framework with NodeResourcesFit and CapacityScheduling, as upstream's
    ``makeRegisteredPlugin`` (Fit as PreFilter and Filter)."""

    def __init__(
        self,
        nodes: Sequence[dict[str, Any]] = (),
        pods: Sequence[PodInfo] = (),
        quotas: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.cache = Cache()
        for n in nodes:
            self.cache.add_node(n)
        for p in pods:
            self.cache.add_pod(p)
        for q in quotas:
            self.cache.groups.upsert(ELASTIC_QUOTA, q)
        profile = ResolvedProfile(
            scheduler_name="default-scheduler",
            percentage_of_nodes_to_score=None,
            plugins={
                "preFilter": ("NodeResourcesFit", NAME),
                "filter": ("NodeResourcesFit",),
                "postFilter": (NAME,),
                "reserve": (NAME,),
            },
            score_weights={},
        )
        self.client = PreemptingClient()
        self.nominator = PodNominator()
        self.fwk = Framework(
            profile,
            Registry([NodeResourcesFit, CapacityScheduling]),
            self.cache.snapshot,
            client=self.client,
            nominator=self.nominator,
        )
        self.plugin: CapacityScheduling = self.fwk.plugins[NAME]

    @property
    def nodes(self) -> list[NodeInfo]:
        return self.cache.snapshot.node_info_list

    def pre_filter(self, p: PodInfo, state: CycleState | None = None) -> Status | None:
        _, status = self.fwk.run_pre_filter(state or CycleState(), p, self.nodes)
        return status

    def state_for(self, p: PodInfo) -> CycleState:
        state = CycleState()
        assert self.pre_filter(p, state) is None
        return state

    def infos(self) -> ElasticQuotaInfos:
        return self.plugin.snapshot_elastic_quota().elastic_quota_infos

    def used(self, namespace: str) -> Resource:
        return self.infos()[namespace].used


def unschedulable(*names: str) -> dict[str, Status]:
    return {n: Status.unschedulable() for n in names}


# -- elasticquota_test.go -------------------------------------------------------------------


def test_reserve_resource() -> None:
    """TestReserveResource: "ElasticQuotaInfo ReserveResource"."""
    info = eq_info("ns1", res(1000, 200, gpu=2))
    for p in (
        pod("t1-p1", "ns1", 50, 1000, gpu=1),
        pod("t1-p2", "ns2", 100, 2000),
        pod("t1-p3", "ns2", 0, 0, gpu=2),
    ):
        info.reserve_resource(p.requests)
    assert info.used == res(4000, 350, gpu=5)


def test_unreserve_resource() -> None:
    """TestUnReserveResource: "ElasticQuotaInfo UnReserveResource"."""
    info = eq_info("ns1", res(4000, 200, gpu=5))
    for p in (
        pod("t1-p1", "ns1", 50, 1000, gpu=1),
        pod("t1-p2", "ns2", 100, 2000),
        pod("t1-p3", "ns2", 0, 0, gpu=2),
    ):
        info.unreserve_resource(p.requests)
    assert info.used == res(1000, 50, gpu=2)


@pytest.mark.parametrize(
    ("used", "min_res", "pod_request", "expected"),
    [
        pytest.param(
            res(4000, 200, gpu=5), res(3000, 100, gpu=5), res(1500, 100), True,
            id="ElasticQuotaInfo OverMinWith Sum Of PodRequest And Used Is Bigger Than Min",
        ),
        pytest.param(
            res(300, 100, gpu=5), res(4000, 200, gpu=5), res(100, 50), False,
            id="ElasticQuotaInfo OverMinWith Sum Of PodRequest And Used Is Not Bigger Than Min",
        ),
        pytest.param(
            res(3900, 100, gpu=5), None, res(100, 100), True,
            id="ElasticQuotaInfo OverMinWith ElasticQuotaInfo Doesn't Have Max",
        ),
        pytest.param(
            res(10, 10), res(3000, 100), res(10, 10, gpu=5), True,
            id="ElasticQuotaInfo OverMinWith Used And Min Don't Have GPU Value",
        ),
        pytest.param(
            res(10, 10, 10), res(3000, 100, 100), res(10, 10, 10), False,
            id="ElasticQuotaInfo OverMinWith EphemeralStorage",
        ),
    ],
)  # fmt: skip
def test_used_over_min_with(
    used: Resource, min_res: Resource | None, pod_request: Resource, expected: bool
) -> None:
    """TestUsedOverMinWith."""
    assert eq_info("ns1", used, min_res=min_res).used_over_min_with(pod_request) is expected


@pytest.mark.parametrize(
    ("used", "max_res", "pod_request", "expected"),
    [
        pytest.param(
            res(4000, 200, gpu=5), res(4000, 200, gpu=5), res(100, 100), True,
            id="ElasticQuotaInfo OverMaxWith Sum Of PodRequest And Used Is Bigger Than Max",
        ),
        pytest.param(
            res(3900, 100, gpu=5), res(4000, 200, gpu=5), res(100, 100), False,
            id="ElasticQuotaInfo OverMaxWith Sum Of PodRequest And Used Is Not Bigger Than Max",
        ),
        pytest.param(
            res(3900, 100, gpu=5), None, res(100, 100), False,
            id="ElasticQuotaInfo OverMaxWith ElasticQuotaInfo Doesn't Have Max",
        ),
        pytest.param(
            res(10, 10), res(3000, 100), res(10, 10, gpu=5), False,
            id="ElasticQuotaInfo OverMaxWith Used And Max Don't Have GPU Value",
        ),
        pytest.param(
            res(10, 10, 10), res(3000, 100, 100), res(10, 10, 100), True,
            id="ElasticQuotaInfo OverMaxWith EphemeralStorage",
        ),
    ],
)  # fmt: skip
def test_used_over_max_with(
    used: Resource, max_res: Resource | None, pod_request: Resource, expected: bool
) -> None:
    """TestUsedOverMaxWith."""
    assert eq_info("ns1", used, max_res=max_res).used_over_max_with(pod_request) is expected


@pytest.mark.parametrize(
    ("used", "min_res", "expected"),
    [
        pytest.param(
            res(4000, 200, gpu=5), res(3000, 300, gpu=5), True,
            id="ElasticQuotaInfo OverMin Used Is Bigger Than Min",
        ),
        pytest.param(
            res(300, 100, gpu=5), res(4000, 200, gpu=5), False,
            id="ElasticQuotaInfo OverMin Used Is Not Bigger Than Min",
        ),
        pytest.param(
            res(3900, 100, gpu=5), None, True,
            id="ElasticQuotaInfo OverMin ElasticQuotaInfo Doesn't Have Min",
        ),
        pytest.param(
            res(300, 100, gpu=5), res(4000, 200), True,
            id="ElasticQuotaInfo OverMin Used Has GPU But Min Doesn't Have GPU",
        ),
        pytest.param(
            res(300, 100, 100), res(4000, 200, 10), True,
            id="ElasticQuotaInfo OverMin EphemeralStorage",
        ),
    ],
)  # fmt: skip
def test_used_over_min(used: Resource, min_res: Resource | None, expected: bool) -> None:
    """TestUsedOverMin."""
    assert eq_info("ns1", used, min_res=min_res).used_over_min() is expected


UNBOUNDED = Resource(UPPER_BOUND_OF_MAX, UPPER_BOUND_OF_MAX, UPPER_BOUND_OF_MAX)
ZERO_MIN = Resource(LOWER_BOUND_OF_MIN, LOWER_BOUND_OF_MIN, LOWER_BOUND_OF_MIN)
CPU_MEM_100_1000 = {"cpu": "100m", "memory": "1000"}
CPU_MEM_10_100 = {"cpu": "10m", "memory": "100"}


@pytest.mark.parametrize(
    ("min_list", "max_list", "want_min", "want_max"),
    [
        pytest.param(CPU_MEM_10_100, CPU_MEM_100_1000, res(10, 100), res(100, 1000),
                     id="ElasticQuota"),
        pytest.param(CPU_MEM_10_100, None, res(10, 100), UNBOUNDED,
                     id="ElasticQuota Without Max"),
        pytest.param(None, CPU_MEM_100_1000, ZERO_MIN, res(100, 1000),
                     id="ElasticQuota Without Min"),
        pytest.param(None, None, ZERO_MIN, UNBOUNDED, id="ElasticQuota Without Max and Min"),
    ],
)  # fmt: skip
def test_new_elastic_quota_info(
    min_list: dict[str, str] | None,
    max_list: dict[str, str] | None,
    want_min: Resource,
    want_max: Resource,
) -> None:
    """TestNewElasticQuotaInfo (and TestAddElasticQuota: the plugin reads the same)."""
    raw = quota("ns1", min_list, max_list, name="t1-eq1")
    assert parse_bounds(raw) == (want_min, want_max)
    info = Env(quotas=[raw]).infos()["ns1"]
    assert (info.min, info.max, info.used) == (want_min, want_max, Resource())


def test_an_empty_max_allows_nothing_but_an_absent_one_everything() -> None:
    """Upstream only bounds by UpperBoundOfMax when max is nil; ``max: {}`` is all zeros,
    and cpu or memory left out of a max is a max of 0 for it."""
    env = Env(
        nodes=[node("n")],
        quotas=[
            quota("empty", max_list={}),
            quota("cpu-only", min_list={"cpu": "1"}, max_list={"cpu": "1"}),
            quota("absent", min_list={"memory": "1000"}),
        ],
    )
    assert env.pre_filter(pod("p", "empty", mem=1)) is not None
    assert env.pre_filter(pod("p", "cpu-only", mem=1)) is not None
    assert env.pre_filter(pod("p", "cpu-only", cpu_milli=500)) is None
    assert env.pre_filter(pod("p", "absent", mem=1000)) is None


# -- TestPreFilter --------------------------------------------------------------------------


def test_pre_filter_pod_subjects_to_elastic_quota() -> None:
    """ "pod subjects to ElasticQuota": used 300 of max 2000; 500 fits, then 1800 does not."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        pods=[pod("used", "ns1", 300, on="node-a")],
        quotas=[mem_quota("ns1", 1000, 2000)],
    )
    state = CycleState()
    assert env.pre_filter(pod("ns1-p1", "ns1", 500), state) is None
    p2 = pod("ns1-p2", "ns1", 1800)
    status = env.pre_filter(p2, state)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == NAME
    assert status.message() == (
        "Pod ns1/ns1-p2 is rejected in PreFilter because ElasticQuota ns1 is more than Max"
    )
    assert status.message() == msg_over_max(p2, "ns1")


def test_pre_filter_the_sum_of_used_is_bigger_than_the_sum_of_min() -> None:
    """ "the sum of used is bigger than the sum of min": ns1 borrows 800 of ns2's min, so
    ns2 cannot get 500 more although it is well within its own min and max."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        pods=[pod("a", "ns1", 1800, on="node-a"), pod("b", "ns2", 200, on="node-a")],
        quotas=[mem_quota("ns1", 1000, 2000), mem_quota("ns2", 1000, 2000)],
    )
    p = pod("ns2-p1", "ns2", 500)
    status = env.pre_filter(p)
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "Pod ns2/ns2-p1 is rejected in PreFilter because total ElasticQuota used is more than min"
    )
    assert status.message() == msg_over_min(p)


def test_pre_filter_without_elastic_quota_info() -> None:
    """ "without elasticQuotaInfo": a namespace without a quota is not limited."""
    env = Env(nodes=[node("node-a")], quotas=[mem_quota("ns1", 0, 0)])
    assert env.pre_filter(pod("ns2-p1", "ns2", 500)) is None


def test_borrowing_of_others_unused_min() -> None:
    """A quota goes past its min up to its max while the others leave their min unused,
    and no further than the sum of the mins."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        pods=[pod("a", "ns1", 900, on="node-a")],
        quotas=[mem_quota("ns1", 1000, 3000), mem_quota("ns2", 1000, 2000)],
    )
    assert env.pre_filter(pod("borrow", "ns1", 1100)) is None  # 2000 of 2000 mins
    status = env.pre_filter(pod("too-much", "ns1", 1101))
    assert status is not None and status.message() == msg_over_min(pod("too-much", "ns1"))


def test_pre_filter_counts_pods_nominated_before_it() -> None:
    """Nominated pods of the namespace at least as important count against its max; those
    of quotas within their min count against the sum of mins; the rest do not count."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        quotas=[mem_quota("ns1", 100, 200), mem_quota("ns2", 100, 200)],
    )
    env.nominator.add_nominated_pod(pod("same-high", "ns1", 150, priority=HIGH), "node-a")
    status = env.pre_filter(pod("p", "ns1", 100, priority=MID))
    assert status is not None and "more than Max" in status.message()
    # Less important nominated pods of its own namespace do not come first.
    assert env.pre_filter(pod("p", "ns1", 50, priority=HIGH + 1)) is None
    # Another quota's nominated pod, within its min, is owed its min.
    env.nominator.add_nominated_pod(pod("other", "ns2", 100), "node-a")
    state = CycleState()
    status = env.pre_filter(pod("p", "ns1", 1, priority=HIGH + 1), state)
    assert status is None
    pre = state.read(PRE_FILTER_STATE_KEY)
    assert pre.nominated_pods_req_in_eq_with_pod_req.memory == 1
    assert pre.nominated_pods_req_with_pod_req.memory == 101
    status = env.pre_filter(pod("p", "ns1", 150, priority=MID))
    assert status is not None and "more than Max" in status.message()


# -- PreFilter extensions --------------------------------------------------------------------


def test_add_pod_and_remove_pod_charge_each_pod_once() -> None:
    """AddPod/RemovePod follow addPodIfNotPresent/deletePodIfPresent on the cycle's copy."""
    bound = pod("bound", "ns1", 50, on="node-a")
    env = Env(nodes=[node("node-a")], pods=[bound], quotas=[mem_quota("ns1", 100, 200)])
    preemptor = pod("p", "ns1", 10)
    state = env.state_for(preemptor)
    snapshot: ElasticQuotaSnapshotState = state.read(ELASTIC_QUOTA_SNAPSHOT_KEY)
    info = snapshot.elastic_quota_infos["ns1"]
    node_a = env.nodes[0]
    assert info.used.memory == 50
    assert env.plugin.add_pod(state, preemptor, bound, node_a) is None
    assert info.used.memory == 50  # already counted
    for _ in range(2):
        env.plugin.remove_pod(state, preemptor, bound, node_a)
    assert info.used.memory == 0
    nominated = pod("nominated", "ns1", 30)
    for _ in range(2):
        env.plugin.add_pod(state, preemptor, nominated, node_a)
    assert info.used.memory == 30
    # A clone is a copy: the dry run on it leaves this cycle's state alone.
    twin = state.clone()
    env.plugin.add_pod(twin, preemptor, bound, node_a)
    assert info.used.memory == 30
    assert twin.read(ELASTIC_QUOTA_SNAPSHOT_KEY).elastic_quota_infos["ns1"].used.memory == 80
    # The cache's charge is not touched by either.
    assert env.cache.snapshot.namespace_requests("ns1").memory == 50


def test_extensions_without_pre_filter_state_are_errors() -> None:
    env = Env(nodes=[node("node-a")])
    p = pod("p", "ns1")
    status = env.plugin.add_pod(CycleState(), p, p, env.nodes[0])
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'error reading "ElasticQuotaSnapshot" from cycleState: not found'
    status = env.plugin.remove_pod(CycleState(), p, p, env.nodes[0])
    assert status is not None and status.code == Code.ERROR


# -- TestReserve / TestUnreserve -----------------------------------------------------------


def test_reserve_pods() -> None:
    """ "Reserve pods": ns1 used 300 becomes 350 with t1-p1, and stays 350 when t1-p2 of a
    namespace without a quota is reserved. The cache charged the pod when it was assumed;
    Reserve must not charge it again."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        pods=[pod("used", "ns1", 300, on="node-a")],
        quotas=[mem_quota("ns1", 1000, 2000)],
    )
    for p in (pod("t1-p1", "ns1", 50), pod("t1-p2", "ns2", 50)):
        assumed = env.cache.assume_pod(p, "node-a")
        assert env.fwk.run_reserve(CycleState(), assumed, "node-a") is None
        assert env.used("ns1").memory == 350


def test_unreserve_pods() -> None:
    """ "Unreserve pods": t1-p3 and t1-p4 are counted (300); unreserving t1-p1 (never
    reserved) and t1-p2 (no quota) changes nothing, t1-p3 leaves 250."""
    env = Env(nodes=[node("node-a", mem=10_000)], quotas=[mem_quota("ns1", 1000, 2000)])
    assumed = {
        p.name: env.cache.assume_pod(p, "node-a")
        for p in (pod("t1-p3", "ns1", 50), pod("t1-p4", "ns1", 250))
    }
    t1_p1 = pod("t1-p1", "ns1", 50, on="node-a")
    t1_p2 = pod("t1-p2", "ns2", 50, on="node-a")
    for p, want in ((t1_p1, 300), (t1_p2, 300), (assumed["t1-p3"], 250)):
        env.fwk.run_unreserve(CycleState(), p, "node-a")
        env.cache.forget_pod(p)  # what the scheduler does right after Unreserve
        assert env.used("ns1").memory == want


# -- informer cases (TestAddPod, TestUpdatePod, TestDeletePod, EQ add/update/delete) -------


def test_add_pod() -> None:
    """ "AddPod": three bound pods of 50 memory and 10m cpu are used 150 / 30m."""
    env = Env(
        nodes=[node("node-a", mem=10_000)],
        quotas=[quota("ns1", CPU_MEM_10_100, CPU_MEM_100_1000, name="t1-eq1")],
    )
    for i in (1, 2, 3):
        env.cache.add_pod(pod(f"t1-p{i}", "ns1", 50, 10, on="node-a"))
    assert env.used("ns1") == res(30, 150)


def test_update_pod_with_pod_status_pod_pending_and_pod_failed() -> None:
    """ "Update Pod With Pod Status PodPending and PodFailed": a pod that finishes leaves
    the scheduler's view (its informer drops finished pods, as kube-scheduler's does), and
    with it the quota's use. (Upstream's other case, a pod first seen Succeeded, never
    reaches the scheduler here.)"""
    env = Env(nodes=[node("node-a", mem=10_000)], quotas=[quota("ns1", CPU_MEM_10_100)])
    p = pod("t1-p2", "ns1", 100, 30, on="node-a", status={"phase": "Pending"})
    env.cache.add_pod(p)
    assert env.used("ns1") == res(30, 100)
    env.cache.remove_pod(p.uid)
    assert env.used("ns1") == res(0, 0)


@pytest.mark.parametrize(
    ("delete", "want"),
    [
        pytest.param(("t1-p1", "t1-p2"), res(0, 0), id="Delete All Pods"),
        pytest.param(("t1-p1",), res(30, 100), id="Delete one Pod"),
    ],
)
def test_delete_pod(delete: tuple[str, ...], want: Resource) -> None:
    """TestDeletePod."""
    env = Env(nodes=[node("node-a", mem=10_000)], quotas=[quota("ns1", CPU_MEM_10_100)])
    pods = {
        p.name: p
        for p in (
            pod("t1-p1", "ns1", 100, 30, priority=MID, on="node-a"),
            pod("t1-p2", "ns1", 100, 30, priority=HIGH, on="node-a"),
        )
    }
    for p in pods.values():
        env.cache.add_pod(p)
    for name in delete:
        env.cache.remove_pod(pods[name].uid)
    assert env.used("ns1") == want


def test_update_elastic_quota_without_used() -> None:
    """ "Update ElasticQuota without Used": the new max applies, used is kept."""
    env = Env(nodes=[node("node-a", mem=10_000)], pods=[pod("p", "ns1", 40, 5, on="node-a")])
    env.cache.groups.upsert(ELASTIC_QUOTA, quota("ns1", CPU_MEM_10_100, CPU_MEM_100_1000))
    assert env.infos()["ns1"].max == res(100, 1000)
    env.cache.groups.upsert(
        ELASTIC_QUOTA, quota("ns1", CPU_MEM_10_100, {"cpu": "300m", "memory": "1000"})
    )
    info = env.infos()["ns1"]
    assert (info.min, info.max, info.used) == (res(10, 100), res(300, 1000), res(5, 40))


def test_delete_elastic_quota() -> None:
    """ "Delete ElasticQuota": the namespace is no longer limited."""
    raw = quota("ns1", CPU_MEM_10_100, {"cpu": "300m", "memory": "1000"}, name="t1-eq1")
    env = Env(nodes=[node("node-a", mem=10_000)], quotas=[raw])
    assert env.pre_filter(pod("p", "ns1", 2000)) is not None
    env.cache.groups.delete(ELASTIC_QUOTA, raw)
    assert env.infos() == {}
    assert env.pre_filter(pod("p", "ns1", 2000)) is None


def test_one_quota_per_namespace_the_first_by_name() -> None:
    env = Env(
        nodes=[node("node-a")],
        quotas=[mem_quota("ns1", 0, 10) | {"metadata": {"name": "b", "namespace": "ns1"}},
                mem_quota("ns1", 0, 20) | {"metadata": {"name": "a", "namespace": "ns1"}}],
    )  # fmt: skip
    assert env.infos()["ns1"].max == res(memory=20)


# -- TestPostFilter / TestDryRunPreemption --------------------------------------------------

# Three pods of 50 on a node of 150: t1-p2 in ns1, t1-p3 and t1-p4 in ns2.
IN_NAMESPACE = [mem_quota("ns1", 50, 200), mem_quota("ns2", 200, 200)]
CROSS_NAMESPACE = [mem_quota("ns1", 150, 200), mem_quota("ns2", 50, 200)]


def post_filter_env(quotas: list[dict[str, Any]]) -> Env:
    return Env(
        nodes=[node("node-a", mem=150)],
        pods=[
            pod("t1-p2", "ns1", 50, priority=MID, on="node-a"),
            pod("t1-p3", "ns2", 50, priority=MID, on="node-a"),
            pod("t1-p4", "ns2", 50, priority=MID, on="node-a"),
        ],
        quotas=quotas,
    )


@pytest.mark.parametrize(
    ("quotas", "victims"),
    [
        pytest.param(IN_NAMESPACE, ["t1-p2"], id="in-namespace preemption"),
        pytest.param(CROSS_NAMESPACE, ["t1-p3|t1-p4"], id="cross-namespace preemption"),
        pytest.param([], ["t1-p2|t1-p3|t1-p4"], id="without elasticQuotas"),
    ],
)
async def test_post_filter(quotas: list[dict[str, Any]], victims: list[str]) -> None:
    """TestPostFilter: the pod is nominated to node-a and the victims are deleted.

    In-namespace: ns1 is at its min, so the pod competes with ns1's own lower-priority pod
    (ns2 is under its min: never touched). Cross-namespace: ns1 is under its min and ns2
    borrows 50, so one ns2 pod goes. Without quotas: plain priority preemption."""
    env = post_filter_env(quotas)
    preemptor = pod("t1-p1", "ns1", 50, priority=HIGH)
    state = env.state_for(preemptor)
    result, status = await env.plugin.post_filter(state, preemptor, unschedulable("node-a"))
    assert status is None
    assert result is not None and result.nominated_node_name == "node-a"
    assert len(env.client.deleted) == len(victims)
    for got, allowed in zip(env.client.deleted, victims, strict=True):
        assert got in allowed.split("|")


def dry_run(env: Env, preemptor: PodInfo) -> dict[str, list[str]]:
    """Candidates by node; PreFilter may have refused the pod (it writes its state first)."""
    state = CycleState()
    env.pre_filter(preemptor, state)
    evaluator = QuotaPreemption(env.fwk, state)
    offset, num = evaluator.get_offset_and_num_candidates(len(env.nodes))
    candidates, _, _ = evaluator.dry_run_preemption(
        state, preemptor, env.nodes, [], offset=offset, num_candidates=num, now=0.0
    )
    return {c.name: sorted(v.name for v in c.victims) for c in candidates}


def test_dry_run_preemption_in_namespace_preemption() -> None:
    """TestDryRunPreemption "in-namespace preemption"."""
    env = Env(
        nodes=[node("node-a", mem=150)],
        pods=[
            pod("t1-p1", "ns1", 50, priority=MID, on="node-a"),
            pod("t1-p2", "ns2", 50, priority=MID, on="node-a"),
            pod("t1-p3", "ns2", 50, priority=MID, on="node-a"),
        ],
        quotas=IN_NAMESPACE,
    )
    assert dry_run(env, pod("t1-p", "ns1", 50, priority=HIGH)) == {"node-a": ["t1-p1"]}


def test_dry_run_preemption_cross_namespace_preemption() -> None:
    """TestDryRunPreemption "cross-namespace preemption": ns2 borrows 50; once t1-p3 is
    gone it is back at its min, so its high-priority t1-p2 is not a victim, and ns1's own
    t1-p1 is never one (ns1 is under its min: it reclaims, it does not compete)."""
    env = Env(
        nodes=[node("node-a", mem=150)],
        pods=[
            pod("t1-p1", "ns1", 50, priority=MID, on="node-a"),
            pod("t1-p2", "ns2", 50, priority=HIGH, on="node-a"),
            pod("t1-p3", "ns2", 50, priority=MID, on="node-a"),
        ],
        quotas=CROSS_NAMESPACE,
    )
    assert dry_run(env, pod("t1-p", "ns1", 50, priority=HIGH)) == {"node-a": ["t1-p3"]}


def test_reclaiming_never_takes_what_is_guaranteed() -> None:
    """Only a quota over its min gives up pods, and only down to its min, whatever their
    priority; a quota within its min keeps even its lowest-priority pods."""
    env = Env(
        nodes=[node("node-a", mem=300)],
        pods=[
            pod("g1", "guaranteed", 50, priority=LOW, on="node-a"),
            pod("g2", "guaranteed", 50, priority=LOW, on="node-a"),
            pod("b1", "borrower", 50, priority=HIGH, on="node-a"),
            pod("b2", "borrower", 50, priority=HIGH, on="node-a"),
            pod("b3", "borrower", 50, priority=HIGH, on="node-a"),
            pod("b4", "borrower", 50, priority=HIGH, on="node-a"),
        ],
        quotas=[
            mem_quota("guaranteed", 100, 300),
            mem_quota("borrower", 50, 300),
            mem_quota("owner", 250, 300),
        ],
    )
    # owner uses 0 of its 250; the borrower uses 200 of its 50: it gives up 150 at most,
    # of which the 100 asked for are taken.
    victims = dry_run(env, pod("p", "owner", 100, priority=LOW))["node-a"]
    assert len(victims) == 2
    assert all(v.startswith("b") for v in victims)
    # Wanting more than the borrowed room would take what is guaranteed: no node then.
    env2 = Env(
        nodes=[node("node-a", mem=300)],
        pods=[p for p in env.cache.pods() if p.name != "b4"],
        quotas=[
            mem_quota("guaranteed", 100, 300),
            mem_quota("borrower", 50, 300),
            mem_quota("owner", 250, 300),
        ],
    )
    assert dry_run(env2, pod("p", "owner", 250, priority=HIGH)) == {}


def test_same_quota_preemption_by_priority() -> None:
    """Over its min a pod competes in its own namespace only, by priority: never with the
    other quota's pods, nor its own as important as itself."""
    env = Env(
        nodes=[node("node-a", mem=200)],
        pods=[
            pod("low", "ns1", 50, priority=LOW, on="node-a"),
            pod("mid", "ns1", 50, priority=MID, on="node-a"),
            pod("high", "ns1", 50, priority=HIGH, on="node-a"),
            pod("other-low", "ns2", 50, priority=LOW, on="node-a"),
        ],
        quotas=[mem_quota("ns1", 100, 300), mem_quota("ns2", 100, 300)],
    )
    assert dry_run(env, pod("p", "ns1", 50, priority=HIGH)) == {"node-a": ["low"]}
    assert dry_run(env, pod("p", "ns1", 100, priority=HIGH)) == {"node-a": ["low", "mid"]}
    assert dry_run(env, pod("p", "ns1", 50, priority=LOW)) == {}


def test_select_victims_no_victims_message() -> None:
    env = post_filter_env(IN_NAMESPACE)
    preemptor = pod("t1-p1", "ns2", 50, priority=HIGH)  # ns2 within its min, ns1 at min
    state = env.state_for(preemptor)
    evaluator = QuotaPreemption(env.fwk, state)
    victims, _, status = evaluator.select_victims_on_node(
        state.clone(), preemptor, env.nodes[0].clone(), [], 0.0
    )
    assert victims == []
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "No victims found on node node-a for preemptor pod t1-p1"
    assert status.message() == msg_no_victims("node-a", "t1-p1")


def test_select_victims_quota_still_exceeded_without_all_victims() -> None:
    """Removing every potential victim must bring the quota back under max; else the node
    is "global quota max exceeded"."""
    env = Env(
        nodes=[node("node-a", mem=1000)],
        pods=[pod("low", "ns1", 50, priority=LOW, on="node-a"),
              pod("high", "ns1", 100, priority=HIGH, on="node-a")],
        quotas=[mem_quota("ns1", 0, 150)],
    )  # fmt: skip
    preemptor = pod("p", "ns1", 120, priority=MID)
    state = CycleState()
    assert env.pre_filter(preemptor, state) is not None  # over max
    evaluator = QuotaPreemption(env.fwk, state)
    _, _, status = evaluator.select_victims_on_node(
        state.clone(), preemptor, env.nodes[0].clone(), [], 0.0
    )
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == MSG_QUOTA_EXCEEDED


def test_select_victims_sorted_most_important_first_after_reprieving() -> None:
    """v0.34 (fefba224): reprieving goes PDB-violating pods first, so the victims come out
    by group; they are sorted back by importance, as SelectVictimsOnNode of kube-scheduler."""
    env = Env(
        nodes=[node("node-a", mem=150)],
        pods=[
            pod("protected-low", "ns1", 50, priority=LOW, on="node-a",
                labels={"app": "protected"}),
            pod("mid", "ns1", 50, priority=MID, on="node-a"),
            pod("high", "ns1", 50, priority=HIGH, on="node-a"),
        ],
        quotas=[mem_quota("ns1", 200, 300), mem_quota("ns2", 100, 300)],
    )  # fmt: skip
    pdb = {
        "metadata": {"name": "pdb", "namespace": "ns1"},
        "spec": {"selector": {"matchLabels": {"app": "protected"}}},
        "status": {"disruptionsAllowed": 0},
    }
    preemptor = pod("p", "ns1", 100, priority=HIGH)  # ns1 goes over its min: in-namespace
    state = env.state_for(preemptor)
    evaluator = QuotaPreemption(env.fwk, state)
    victims, num_violating, status = evaluator.select_victims_on_node(
        state.clone(), preemptor, env.nodes[0].clone(), Pdb.parse_all([pdb]), 0.0
    )
    assert status is None
    assert [v.name for v in victims] == ["mid", "protected-low"]
    assert num_violating == 1


async def test_post_filter_without_pre_filter_state() -> None:
    env = post_filter_env(IN_NAMESPACE)
    preemptor = pod("t1-p1", "ns1", 50, priority=HIGH)
    result, status = await env.plugin.post_filter(CycleState(), preemptor, unschedulable("node-a"))
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == "not eligible due to failed to read from cycleState"


# -- TestPodEligibleToPreemptOthers ---------------------------------------------------------

TERMINATING = {"deletionTimestamp": "2024-01-01T00:00:00Z"}
NOMINATED = {"nominatedNodeName": "node-a"}


def terminating(name: str, namespace: str) -> PodInfo:
    return make_pod(
        name, namespace=namespace, priority=MID, node_name="node-a", metadata=TERMINATING
    )


@pytest.mark.parametrize(
    ("preemptor", "existing", "statuses", "infos", "expected"),
    [
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, preemptionPolicy="Never"),
            [pod("t1-p0", "ns1", 50, 10, on="node-a")],
            {"node-a": Status.unresolvable("node(s) had untolerated taint")},
            mem_infos(ns1=(50, 150, 0)),
            False,
            id="Pod with PreemptNever preemption policy",
        ),
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, status=NOMINATED),
            [pod("t1-p0", "ns1", 50, 10, on="node-a")],
            {"node-a": Status.unresolvable("node(s) had untolerated taint")},
            mem_infos(ns1=(50, 150, 0)),
            True,
            id="Pod with unschedulableAndUnresolvable nominated node",
        ),
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, status=NOMINATED),
            [terminating("t1-p0", "ns1")],
            {},
            mem_infos(ns1=(50, 150, 0)),
            False,
            id="Pod with terminating pod in the same namespace",
        ),
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, status=NOMINATED),
            [terminating("t1-p0", "ns2")],
            {},
            mem_infos(ns1=(50, 150, 0), ns2=(50, 150, 100)),
            False,
            id="Pod with terminating pod in another namespace",
        ),
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, status=NOMINATED),
            [terminating("t1-p0", "ns2")],
            {},
            mem_infos(),
            False,
            id="Pod without elasticQuotas and terminating pod exists in the same namespace",
        ),
        pytest.param(
            make_pod("t1-p1", namespace="ns1", priority=HIGH, status=NOMINATED),
            [terminating("t1-p0", "ns2")],
            {},
            mem_infos(ns2=(50, 150, 100)),
            True,
            id="Pod without ElasticQuotas and terminating pod exists in another namespace",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    preemptor: PodInfo,
    existing: list[PodInfo],
    statuses: dict[str, Status],
    infos: ElasticQuotaInfos,
    expected: bool,
) -> None:
    """TestPodEligibleToPreemptOthers (cycle state written by hand, as upstream does)."""
    env = Env(nodes=[node("node-a")], pods=existing)
    state = CycleState()
    req = preemptor.requests
    state.write(PRE_FILTER_STATE_KEY, PreFilterState(req, req, req))
    state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, ElasticQuotaSnapshotState(infos))
    eligible, _ = QuotaPreemption(env.fwk, state).pod_eligible_to_preempt_others(
        preemptor, statuses
    )
    assert eligible is expected


# -- EnqueueExtensions ----------------------------------------------------------------------


def test_events_to_register() -> None:
    """Upstream: Pod/Delete and ElasticQuota (elasticquotas.v1alpha1.scheduling.x-k8s.io)
    All."""
    env = Env()
    assert env.plugin.events_to_register() == (
        ClusterEvent(POD, DELETE),
        ClusterEvent(ELASTIC_QUOTA, ALL),
    )
    assert ClusterEvent(POD, DELETE).matches(ASSIGNED_POD_DELETE)


# -- integration: the scheduler with NodeResourcesFit and preemption ------------------------


class Api:
    """An in-memory API server: a binding comes back as the bound pod, preemption deletes."""

    def __init__(self) -> None:
        self.sched: Scheduler | None = None
        self.deleted: list[str] = []

    @property
    def scheduler(self) -> Scheduler:
        assert self.sched is not None
        return self.sched

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        raw = copy.deepcopy(pod.raw)
        raw["spec"]["nodeName"] = node_name
        self.scheduler.feed.on_pod(PodInfo.parse(raw))

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.deleted.append(pod.name)
        self.scheduler.feed.on_pod_deleted(pod.uid)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


SCHEDULER = "capacity-scheduler"


class Cluster:
    """Upstream's integration setup: two nodes of 100 memory and 100 cpu, the default
    plugins' NodeResourcesFit plus CapacityScheduling at PreFilter, PostFilter (alone) and
    Reserve."""

    def __init__(self, quotas: Iterable[dict[str, Any]] = ()) -> None:
        profile = ResolvedProfile(
            scheduler_name=SCHEDULER,
            percentage_of_nodes_to_score=None,
            plugins={
                "queueSort": ("PrioritySort",),
                "preFilter": ("NodeResourcesFit", NAME),
                "filter": ("NodeResourcesFit",),
                "postFilter": (NAME,),
                "reserve": (NAME,),
                "bind": ("DefaultBinder",),
            },
            score_weights={},
        )
        self.api = Api()
        self.clock = Clock()
        cache = Cache()
        for name in ("fake-node-1", "fake-node-2"):
            cache.add_node(node_dict(name, cpu="100", memory="100", pods="32"))
        self.sched = Scheduler(
            ResolvedConfig(profiles=(profile,)),
            Registry(builtin_plugins()),
            cache=cache,
            client=self.api,
            clock=self.clock,
        )
        self.api.sched = self.sched
        for q in quotas:
            self.sched.feed.on_group_object(ELASTIC_QUOTA, q)

    def add(self, *pods: PodInfo) -> None:
        for p in pods:
            self.sched.feed.on_pod(p)

    async def run(self) -> None:
        """Schedule until no pod is left to try: victims' deletions requeue the pods
        CapacityScheduling rejected; backoffs are waited out."""
        for _ in range(20):
            self.clock.now += 11
            tried = False
            while (qpi := self.sched.queue.pop_nowait()) is not None:
                tried = True
                await self.sched.schedule_one(qpi)
                await self.sched.wait_for_bindings()
            if not tried:
                return
        raise AssertionError("pods kept being retried")

    def running(self) -> list[str]:
        return sorted(p.name for p in self.sched.cache.pods())


def ipod(
    name: str, namespace: str, mem: int, cpu_milli: int, priority: int, node: str = ""
) -> PodInfo:
    """Upstream's ``util.MakePod(name, namespace, memReq, cpuReq, priority, uid, node)``."""
    return pod(name, namespace, mem, cpu_milli, priority, node, scheduler_name=SCHEDULER)


def eq(namespace: str, min_mem: int, min_cpu: int, max_mem: int, max_cpu: int) -> dict[str, Any]:
    return quota(
        namespace,
        {"memory": str(min_mem), "cpu": f"{min_cpu}m"},
        {"memory": str(max_mem), "cpu": f"{max_cpu}m"},
    )


TWO_QUOTAS = [eq("ns1", 100, 100, 200, 200), eq("ns2", 100, 100, 200, 200)]


@pytest.mark.parametrize(
    ("quotas", "exist", "add", "expected"),
    [
        pytest.param(
            TWO_QUOTAS,
            [("t1-p1", "ns1", 50, 10, MID, "fake-node-1"),
             ("t1-p2", "ns1", 50, 10, MID, "fake-node-1"),
             ("t1-p3", "ns1", 50, 10, LOW, "fake-node-2")],
            [("t1-p4", "ns2", 50, 10, MID), ("t1-p5", "ns2", 50, 10, MID),
             ("t1-p6", "ns2", 50, 10, LOW)],
            ["t1-p1", "t1-p2", "t1-p4", "t1-p5"],
            id="cross-namespace preemption",
        ),
        pytest.param(
            TWO_QUOTAS,
            [("t2-p1", "ns1", 50, 10, MID, "fake-node-1"),
             ("t2-p2", "ns1", 50, 10, LOW, "fake-node-1"),
             ("t2-p3", "ns2", 50, 10, MID, "fake-node-2"),
             ("t2-p4", "ns2", 50, 10, LOW, "fake-node-2")],
            [("t2-p5", "ns1", 50, 10, MID), ("t2-p6", "ns2", 50, 10, MID)],
            ["t2-p1", "t2-p3", "t2-p5", "t2-p6"],
            id="in-namespace preemption",
        ),
        pytest.param(
            [],
            [("t3-p1", "ns1", 50, 10, HIGH, "fake-node-1"),
             ("t3-p2", "ns1", 50, 10, LOW, "fake-node-1"),
             ("t3-p3", "ns2", 50, 10, HIGH, "fake-node-2"),
             ("t3-p4", "ns2", 50, 10, LOW, "fake-node-2")],
            [("t3-p5", "ns1", 50, 10, MID), ("t3-p6", "ns2", 50, 10, MID)],
            ["t3-p1", "t3-p3", "t3-p5", "t3-p6"],
            id="regular preemption without Elastic Quota",
        ),
        pytest.param(
            TWO_QUOTAS,
            [("t4-p1", "ns1", 50, 10, MID, "fake-node-1"),
             ("t4-p2", "ns1", 50, 10, MID, "fake-node-1"),
             ("t4-p3", "ns1", 50, 10, LOW, "fake-node-2"),
             ("t4-p4", "ns2", 50, 10, MID, "fake-node-2")],
            [("t4-p5", "ns1", 150, 10, HIGH), ("t4-p6", "ns2", 150, 10, HIGH)],
            ["t4-p1", "t4-p2", "t4-p3", "t4-p4"],
            id="in-namespace preemption failed because it can't find node which is suitable "
               "for preemption",
        ),
        pytest.param(
            TWO_QUOTAS,
            [("t5-p1", "ns1", 50, 10, MID, "fake-node-1"),
             ("t5-p2", "ns2", 50, 10, HIGH, "fake-node-1"),
             ("t5-p3", "ns2", 50, 10, HIGH, "fake-node-2"),
             ("t5-p4", "ns2", 50, 10, HIGH, "fake-node-2")],
            [("t5-p5", "ns2", 50, 10, HIGH)],
            ["t5-p1", "t5-p2", "t5-p3", "t5-p4"],
            id="pod subjects to overused quota can't preempt pods subjects to other quotas",
        ),
        pytest.param(
            TWO_QUOTAS,
            [("t6-p1", "ns1", 50, 10, LOW, "fake-node-1"),
             ("t6-p2", "ns1", 50, 10, LOW, "fake-node-2"),
             ("t6-p3", "ns2", 50, 10, MID, "fake-node-1"),
             ("t6-p4", "ns2", 50, 10, MID, "fake-node-2")],
            [("t6-p5", "ns1", 100, 20, HIGH), ("t6-p6", "ns2", 100, 20, HIGH)],
            ["t6-p1", "t6-p2", "t6-p3", "t6-p4"],
            id="cross-node preemption isn't supported",
        ),
        pytest.param(
            [eq("ns1", 100, 1, 200, 3), eq("ns2", 100, 3, 200, 3), eq("ns3", 100, 3, 200, 4)],
            [("t7-p1", "ns1", 0, 1, HIGH, "fake-node-1"),
             ("t7-p2", "ns1", 0, 1, MID, "fake-node-2"),
             ("t7-p3", "ns1", 0, 1, MID, "fake-node-2"),
             ("t7-p5", "ns2", 0, 1, MID, "fake-node-2"),
             ("t7-p6", "ns2", 0, 1, MID, "fake-node-1"),
             ("t7-p7", "ns2", 0, 1, MID, "fake-node-2")],
            [("t7-p9", "ns3", 0, 1, MID), ("t7-p10", "ns3", 0, 1, MID),
             ("t7-p11", "ns3", 0, 1, MID), ("t7-p12", "ns3", 0, 1, MID)],
            ["t7-p1", "t7-p10", "t7-p11", "t7-p5", "t7-p6", "t7-p7", "t7-p9"],
            id="cross-namespace preemption with three elasticquota",
        ),
    ],
)  # fmt: skip
async def test_capacity_scheduling_integration(
    quotas: list[dict[str, Any]],
    exist: list[tuple[str, str, int, int, int, str]],
    add: list[tuple[str, str, int, int, int]],
    expected: list[str],
) -> None:
    """TestCapacityScheduling (test/integration): which pods end up running."""
    cluster = Cluster(quotas)
    cluster.add(*(ipod(*args) for args in exist))
    cluster.add(*(ipod(*args) for args in add))
    await cluster.run()
    assert cluster.running() == sorted(expected)


async def test_cross_namespace_preemption_takes_only_the_borrowed_pod() -> None:
    """ "cross-namespace preemption" in detail: ns1 borrows 50 of ns2's min; ns2 reclaims it
    by evicting ns1's least important pod, leaves ns1's guaranteed pods, and its own
    low-priority third pod (over ns2's min) preempts nobody."""
    cluster = Cluster(TWO_QUOTAS)
    cluster.add(
        ipod("t1-p1", "ns1", 50, 10, MID, "fake-node-1"),
        ipod("t1-p2", "ns1", 50, 10, MID, "fake-node-1"),
        ipod("t1-p3", "ns1", 50, 10, LOW, "fake-node-2"),
        ipod("t1-p4", "ns2", 50, 10, MID),
        ipod("t1-p5", "ns2", 50, 10, MID),
        ipod("t1-p6", "ns2", 50, 10, LOW),
    )
    await cluster.run()
    assert cluster.api.deleted == ["t1-p3"]
    assert [q.pod.name for q in cluster.sched.queue.unschedulable_pods()] == ["t1-p6"]


async def test_max_holds_until_the_quota_is_raised() -> None:
    """Pods fill their quota up to max; the next is refused with upstream's message and
    retried when its ElasticQuota changes (the registered ElasticQuota event)."""
    raw = eq("ns1", 100, 1000, 100, 1000)
    cluster = Cluster([raw])
    cluster.add(*(ipod(f"p{i}", "ns1", 40, 10, MID) for i in range(3)))
    outcomes = []
    cluster.sched.on_outcome = outcomes.append
    await cluster.run()
    assert cluster.running() == ["p0", "p1"]
    refused = [o for o in outcomes if o.result == "unschedulable"]
    assert refused and refused[-1].pod.name == "p2"
    assert msg_over_max(refused[-1].pod, "ns1") in refused[-1].message
    raw = eq("ns1", 120, 1000, 120, 1000)
    cluster.sched.feed.on_group_object(ELASTIC_QUOTA, raw)
    await cluster.run()
    assert cluster.running() == ["p0", "p1", "p2"]


async def test_reserve_does_not_count_a_pod_twice() -> None:
    """A scheduled pod is charged once: the cache's assumption, then its binding; Reserve
    adds nothing."""
    cluster = Cluster([eq("ns1", 100, 1000, 100, 1000)])
    cluster.add(ipod("p", "ns1", 60, 10, MID))
    await cluster.run()
    plugin: CapacityScheduling = cluster.sched.profiles[SCHEDULER].plugins[NAME]
    assert plugin.snapshot_elastic_quota().elastic_quota_infos["ns1"].used == res(10, 60)
