"""Cases from upstream defaultpreemption/default_preemption_test.go.

Preemption runs against a real ``Framework``; a small resource-fit filter stands in for
NodeResourcesFit so these tests depend only on the framework and InterPodAffinity.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from builders import PreemptingClient, make_pod, node_dict
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    Code,
    CycleState,
    Framework,
    NotLeading,
    PostFilterResult,
    PreFilterResult,
    Registry,
    Status,
)
from multisched.plugins._preemption_victims import Pdb, split_by_pdb_violation
from multisched.plugins.default_preemption import (
    MSG_NO_VICTIMS,
    DefaultPreemption,
    DefaultPreemptionArgs,
)
from multisched.plugins.interpodaffinity import InterPodAffinity
from multisched.queue import PodNominator

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}


class TestFit:
    """Filter on CPU, memory and pod count with NodeResourcesFit's reasons."""

    __test__ = False
    name = "TestFit"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        reasons = []
        alloc, used = node.allocatable, node.requested
        if len(node.pods) + 1 > alloc.allowed_pod_number:
            reasons.append("Too many pods")
        if pod.requests.milli_cpu > alloc.milli_cpu - used.milli_cpu:
            reasons.append("Insufficient cpu")
        if pod.requests.memory > alloc.memory - used.memory:
            reasons.append("Insufficient memory")
        return Status.unschedulable(*reasons) if reasons else None


class FailingExtensions:
    """Upstream's TestPlugin: AddPod/RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> FailingExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        return self._fail(node, f"failed to add pod: {pod.name}")

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        return self._fail(node, f"failed to remove pod: {pod.name}")

    @staticmethod
    def _fail(node: NodeInfo, message: str) -> Status:
        return Status.error(message) if node.labels.get("error") == "true" else Status(Code.SUCCESS)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class FixedOffset(random.Random):
    """Upstream seeds math/rand so the dry run starts at node index 4; so do we."""

    def __init__(self, offset: int) -> None:
        super().__init__(0)
        self.offset = offset

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self.offset


class Env:
    def __init__(
        self,
        nodes: list[dict[str, Any]],
        pods: list[PodInfo],
        *,
        plugins: Sequence[str] = ("TestFit",),
        pre_filter: Sequence[str] = (),
        args: DefaultPreemptionArgs | None = None,
        pdbs: Sequence[dict[str, Any]] = (),
        rng: random.Random | None = None,
    ) -> None:
        self.cache = Cache()
        for n in nodes:
            self.cache.add_node(n)
        for p in pods:
            self.cache.add_pod(p)
        for i, pdb in enumerate(pdbs):
            self.cache.set_pdb(f"default/pdb{i}", pdb)
        profile = ResolvedProfile(
            scheduler_name="default-scheduler",
            percentage_of_nodes_to_score=None,
            plugins={
                "preFilter": tuple(pre_filter),
                "filter": tuple(plugins),
                "postFilter": ("DefaultPreemption",),
            },
            score_weights={},
            plugin_args={"DefaultPreemption": args} if args else {},
        )
        registry = Registry([TestFit, FailingExtensions, InterPodAffinity, DefaultPreemption])
        self.client = PreemptingClient()
        self.nominator = PodNominator()
        #: Pods the plugin moved to activeQ (names).
        self.activated: list[str] = []
        self.fwk = Framework(
            profile,
            registry,
            self.cache.snapshot,
            client=self.client,
            nominator=self.nominator,
            rng=rng or random.Random(4),
            activator=lambda pods: self.activated.extend(p.name for p in pods),
        )
        self.plugin: DefaultPreemption = self.fwk.plugins["DefaultPreemption"]

    @property
    def nodes(self) -> list[NodeInfo]:
        return self.cache.snapshot.node_info_list

    def state_for(self, pod: PodInfo) -> CycleState:
        state = CycleState()
        _, status = self.fwk.run_pre_filter(state, pod, self.nodes)
        assert status is None
        return state

    def filter_statuses(self, state: CycleState, pod: PodInfo) -> dict[str, Status]:
        out = {}
        for n in self.nodes:
            status = self.fwk.run_filter_plugins_with_nominated_pods(state, pod, n)
            if status is not None:
                out[n.name] = status
        return out

    async def post_filter(
        self, pod: PodInfo, statuses: dict[str, Status] | None = None, settle: bool = True
    ) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter, then (``settle``) the victims' deletes it started off the cycle."""
        state = self.state_for(pod)
        if statuses is None:
            statuses = self.filter_statuses(state, pod)
        out = await self.plugin.post_filter(state, pod, statuses)
        if settle:
            await self.settle()
        return out

    async def settle(self) -> None:
        while self.fwk.background:
            await asyncio.wait(list(self.fwk.background))


def assert_placed(
    result: PostFilterResult | None, status: Status | None, victims: int | None = None
) -> None:
    """PostFilter found a placement and says so, as v1.29+ does (upstream's wantStatus)."""
    assert result is not None and status is not None and status.is_success(), status
    message = status.message()
    node = result.nominated_node_name
    found = rf"found a potential placement for pod on node {node}, preempting (\d+) victims"
    assert re.fullmatch("preemption: " + found, message), message
    if victims is not None:
        assert message.endswith(f"preempting {victims} victims")


def node(name: str, res: dict[str, str] | None = None, pods: str = "110", **labels: str) -> Any:
    res = res or VERY_LARGE
    return node_dict(name, cpu=res["cpu"], memory=res["memory"], pods=pods, labels=labels)


def pod(
    name: str,
    priority: int = 0,
    req: dict[str, str] | None = None,
    node_name: str = "",
    start: int | None = None,
    **kw: Any,
) -> PodInfo:
    status = dict(kw.pop("status", None) or {})
    if start is not None:
        status["startTime"] = f"1970-01-01T00:00:{start:02d}Z"
    return make_pod(
        name, priority=priority, requests=req, node_name=node_name, status=status or None, **kw
    )


def unschedulable(*names: str) -> dict[str, Status]:
    return {n: Status.unschedulable() for n in names}


def victims_of(env: Env, preemptor: PodInfo, offset: int = 0) -> dict[str, list[str]]:
    state = env.state_for(preemptor)
    num = env.plugin.calculate_num_candidates(len(env.nodes))
    candidates, _, _ = env.plugin.dry_run_preemption(
        state, preemptor, env.nodes, Pdb.parse_all(env.cache.snapshot.pdbs),
        offset=offset, num_candidates=num, now=0.0,
    )  # fmt: skip
    return {c.name: sorted(v.name for v in c.victims) for c in candidates}


# -- PostFilter ----------------------------------------------------------------------------

ONE_POD = {"cpu": "4", "memory": "8Gi"}
NODE_RES = {"cpu": "200m", "memory": "400"}


async def test_pod_with_higher_priority_can_be_made_schedulable() -> None:
    env = Env([node("node1", ONE_POD, pods="1")], [pod("p1", node_name="node1")])
    result, status = await env.post_filter(pod("p", HIGH), unschedulable("node1"))
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == "node1"
    assert env.client.deleted == ["p1"]
    assert env.client.reasons[0].startswith("Preempted by pod uid-p-")
    assert env.client.reasons[0].endswith(" on node node1")


class NotLeadingClient(PreemptingClient):
    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        raise NotLeading("not the leader any more; preemption skipped")


async def test_a_replica_that_stopped_leading_preempts_nothing_and_says_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The placement is reported before the deletes are tried (async preemption); the delete
    that failed lets the preemptor go at once, and nothing more is said about it."""
    env = Env([node("node1", ONE_POD, pods="1")], [pod("p1", node_name="node1")])
    env.client.__class__ = NotLeadingClient
    with caplog.at_level("WARNING"):
        result, status = await env.post_filter(pod("p", HIGH), unschedulable("node1"))
    assert_placed(result, status)
    assert env.client.deleted == []
    assert env.activated == ["p"]
    assert not env.plugin.executor.is_pod_running_preemption(pod("p").uid)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


@pytest.mark.parametrize(
    ("preemptor", "nodes", "pods", "statuses", "message"),
    [
        pytest.param(
            pod("p"),
            [node("node1", ONE_POD, pods="1")],
            [pod("p1", node_name="node1")],
            unschedulable("node1"),
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            id="tied priority is still unschedulable",
        ),
        pytest.param(
            pod("p", HIGH),
            [node("node1", ONE_POD, pods="1")],
            [pod("p1", node_name="node1")],
            {"node1": Status.unresolvable()},
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            id="respects UnschedulableAndUnresolvable statuses",
        ),
        pytest.param(
            pod("p", HIGH, LARGE),
            [node("node1", NODE_RES), node("node2", NODE_RES)],
            [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
            unschedulable("node1", "node2"),
            "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
            id="not enough resource after removing low priority pods",
        ),
        pytest.param(
            pod("p", HIGH, LARGE),
            [node("node1", ONE_POD, pods="1"), node("node2", NODE_RES), node("node3", ONE_POD)],
            [
                pod("p1", HIGH, node_name="node1"),
                pod("p2", node_name="node2"),
                pod("p3", HIGH, node_name="node3"),
            ],
            unschedulable("node1", "node2", "node3"),
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
            "2 No preemption victims found for incoming pod.",
            id="mixed reasons",
        ),
        pytest.param(
            pod("p", HIGH, LARGE),
            [node(f"node{i}", NODE_RES) for i in range(1, 5)],
            [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
            {**unschedulable("node1", "node2"), "node4": Status.unresolvable()},
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
            "2 Preemption is not helpful for scheduling.",
            # node3 has no status: v1.37 counts it as UnschedulableAndUnresolvable and does
            # not try it (v1.28 did).
            id="mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 without enough CPU",
        ),
        pytest.param(
            pod("p", HIGH),
            [node("node1", ONE_POD, pods="1")],
            [pod("p1", node_name="node1")],
            {},
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            id="preemption should respect absent NodeToStatusReader entry meaning "
            "UnschedulableAndUnresolvable",
        ),
    ],
)
async def test_no_candidates(
    preemptor: PodInfo,
    nodes: list[Any],
    pods: list[PodInfo],
    statuses: dict[str, Status],
    message: str,
) -> None:
    env = Env(nodes, pods)
    result, status = await env.post_filter(preemptor, statuses)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == message
    assert result is not None
    assert result.nominated_node_name == ""
    assert env.client.deleted == []


async def test_pod_can_be_made_schedulable_on_one_node() -> None:
    env = Env(
        [node("node1", ONE_POD, pods="1"), node("node2", ONE_POD, pods="1")],
        [pod("p1", HIGH, node_name="node1"), pod("p2", LOW, node_name="node2")],
    )
    result, status = await env.post_filter(pod("p", MID), unschedulable("node1", "node2"))
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == "node2"
    assert env.client.deleted == ["p2"]


async def test_prefilter_extension_error_on_the_only_node() -> None:
    env = Env(
        [node("node1", LARGE, error="true")],
        [pod("p1", node_name="node1")],
        pre_filter=("test-plugin",),
    )
    result, status = await env.post_filter(pod("p", HIGH, LARGE), unschedulable("node1"))
    assert result is None
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message().startswith("preemption: running RemovePod on PreFilter plugin ")
    assert "test-plugin" in status.message()
    assert status.message().endswith(": failed to remove pod: p")


async def test_the_same_error_on_two_nodes_is_reported_once() -> None:
    """``utilerrors.NewAggregate`` drops repeated messages, and one left has no brackets."""
    env = Env(
        [node("node1", LARGE, error="true"), node("node2", LARGE, error="true")],
        [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
        pre_filter=("test-plugin",),
    )
    result, status = await env.post_filter(pod("p", HIGH, LARGE), unschedulable("node1", "node2"))
    assert result is None
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == (
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'
    )


async def test_prefilter_extension_error_on_one_node_only() -> None:
    env = Env(
        [node("node1", LARGE, error="true"), node("node2", LARGE)],
        [pod("p1", node_name="node1"), pod("p2", node_name="node2", req=MEDIUM)],
        pre_filter=("test-plugin",),
    )
    result, status = await env.post_filter(pod("p", HIGH, LARGE), unschedulable("node1", "node2"))
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == "node2"


async def test_preemption_policy_never() -> None:
    env = Env([node("node1", SMALL)], [pod("p1", LOW, SMALL, node_name="node1")])
    preemptor = pod("p", HIGH, VERY_LARGE, preemptionPolicy="Never")
    result, status = await env.post_filter(preemptor)
    assert result is None
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert env.client.deleted == []


async def test_basic_preemption_deletes_victims() -> None:
    env = Env(
        [node("node1"), node("node2"), node("node3")],
        [
            pod("p1.1", LOW, SMALL, "node1"),
            pod("p1.2", LOW, SMALL, "node1"),
            pod("p2.1", HIGH, LARGE, "node2"),
            pod("p3.1", MID, MEDIUM, "node3"),
        ],
    )
    preemptor = pod("p", HIGH, VERY_LARGE)
    result, status = await env.post_filter(preemptor)
    assert_placed(result, status, victims=2)
    assert result is not None
    assert result.nominated_node_name == "node1"
    assert sorted(env.client.deleted) == ["p1.1", "p1.2"]


async def test_pdb_respecting_node_is_preferred() -> None:
    pdb = {
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "foo"}}},
        "status": {"disruptionsAllowed": 0},
    }
    env = Env(
        [node("node1"), node("node2")],
        [
            pod("p1", MID, LARGE, "node1", labels={"app": "foo"}),
            pod("p2", MID, LARGE, "node2"),
        ],
        pdbs=[pdb],
    )
    result, status = await env.post_filter(pod("p", HIGH, LARGE))
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == "node2"
    assert env.client.deleted == ["p2"]


# -- nominated pods and eligibility ----------------------------------------------------------

TERMINATING_VICTIM = {
    "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
    "status": {
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    },
}


@pytest.mark.parametrize(
    ("victim_kw", "nominated_status", "eligible"),
    [
        pytest.param(TERMINATING_VICTIM, Status.unschedulable(), False, id="victim terminating"),
        pytest.param(
            TERMINATING_VICTIM,
            Status.unresolvable("node(s) had untolerated taint(s)"),
            True,
            id="nominated node now unresolvable",
        ),
        pytest.param(
            {"metadata": TERMINATING_VICTIM["metadata"]},
            Status.unschedulable(),
            True,
            id="non-victim pod terminating",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    victim_kw: dict[str, Any], nominated_status: Status, eligible: bool
) -> None:
    env = Env([node("node1")], [pod("p1", LOW, node_name="node1", **victim_kw)])
    preemptor = pod("p", HIGH, status={"nominatedNodeName": "node1"})
    ok, msg = env.plugin.pod_eligible_to_preempt_others(preemptor, {"node1": nominated_status})
    assert ok is eligible
    expected = "" if eligible else "not eligible due to a terminating pod on the nominated node."
    assert msg == expected


async def test_terminating_victim_blocks_second_preemption() -> None:
    env = Env([node("node1", SMALL)], [pod("p1", LOW, SMALL, "node1", **TERMINATING_VICTIM)])
    preemptor = pod("p", HIGH, SMALL, status={"nominatedNodeName": "node1"})
    result, status = await env.post_filter(preemptor)
    assert result is None
    assert status is not None
    assert status.message() == (
        "preemption: not eligible due to a terminating pod on the nominated node."
    )


async def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    """Upstream's clearNominatedNodeName: a patch for each lower-priority pod whose status
    names the node (none for one whose status is already clear: "Should not make patch
    request if nominated node is already cleared"); the nominator is left to the API's
    echo, as upstream's is."""
    env = Env([node("node1", SMALL)], [pod("p1", LOW, SMALL, "node1")])
    on_node1 = {"status": {"nominatedNodeName": "node1"}}
    low = pod("low-nominated", LOW, SMALL, **on_node1)
    cleared = pod("low-cleared", LOW, SMALL)  # nominated in memory, the API shows none
    high = pod("high-nominated", VERY_HIGH, **on_node1)
    for p in (low, cleared, high):
        env.nominator.add_nominated_pod(p, "node1")
    result, status = await env.post_filter(pod("p", HIGH, SMALL))
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == "node1"
    assert env.client.deleted == ["p1"]
    assert env.client.nominated == {"low-nominated": ""}
    assert len(env.nominator.nominated_pods_for_node("node1")) == 3


async def test_no_potential_nodes_clears_the_pods_nomination() -> None:
    env = Env([node("node1")], [])
    preemptor = pod("p", HIGH, status={"nominatedNodeName": "node1"})
    result, status = await env.post_filter(preemptor, {"node1": Status.unresolvable("x")})
    assert result is not None
    assert result.nominated_node_name == ""
    assert status is not None
    assert status.message() == (
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert env.client.nominated == {"p": ""}


async def test_waiting_pod_victim_is_preempted_in_memory_not_deleted() -> None:
    """v1.36: a victim held at Permit is preempted (an error: it backs off and is retried,
    not parked as unschedulable) and no delete is sent; no deletion event will come, so the
    preemptor is activated (upstream's last victim preempted in memory)."""
    from multisched.framework import WaitingPod

    victim = pod("p1", LOW, SMALL, "node1")
    env = Env([node("node1", SMALL)], [victim])
    waiting = WaitingPod(victim, {"SomePermit": 60.0})
    env.fwk.waiting_pods[victim.uid] = waiting
    result, status = await env.post_filter(pod("p", HIGH, SMALL))
    assert_placed(result, status)
    assert result is not None
    assert env.client.deleted == []
    preempted = await waiting.wait()
    assert preempted is not None
    assert preempted.code == Code.ERROR
    assert preempted.reasons == ("preempted",)
    assert preempted.plugin == "DefaultPreemption"
    assert env.activated == ["p"]


async def test_a_victim_whose_permit_wait_ended_is_deleted() -> None:
    """Upstream falls back to the delete when ``Preempt`` finds the wait over."""
    from multisched.framework import WaitingPod

    victim = pod("p1", LOW, SMALL, "node1")
    env = Env([node("node1", SMALL)], [victim])
    waiting = WaitingPod(victim, {"SomePermit": 60.0})
    waiting.allow("SomePermit")
    env.fwk.waiting_pods[victim.uid] = waiting
    result, status = await env.post_filter(pod("p", HIGH, SMALL))
    assert_placed(result, status)
    assert env.client.deleted == ["p1"]
    assert env.activated == []


# -- dry run ---------------------------------------------------------------------------------


def test_medium_priority_pod_is_preempted_but_the_small_low_one_stays() -> None:
    env = Env(
        [node("node1"), node("node2")],
        [
            pod("p1.1", LOW, SMALL, "node1"),
            pod("p1.2", MID, LARGE, "node1"),
            pod("p2", MID, LARGE, "node2"),
        ],
    )
    assert victims_of(env, pod("p", HIGH, LARGE)) == {"node1": ["p1.2"], "node2": ["p2"]}


def test_mixed_priorities_pick_later_start_time_when_equal() -> None:
    env = Env(
        [node("node1"), node("node2")],
        [
            pod("p1.1", LOW, SMALL, "node1", start=5),
            pod("p1.2", LOW, SMALL, "node1", start=4),
            pod("p1.3", MID, MEDIUM, "node1", start=3),
            pod("p1.4", HIGH, SMALL, "node1", start=2),
            pod("p2", HIGH, LARGE, "node2", start=1),
        ],
    )
    assert victims_of(env, pod("p", HIGH, LARGE)) == {"node1": ["p1.1", "p1.3"]}


def test_pod_with_anti_affinity_is_preempted() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                    "topologyKey": "hostname",
                }
            ]
        }
    }
    env = Env(
        [node("node1", hostname="node1"), node("node2", hostname="node2")],
        [
            pod("p1.1", LOW, SMALL, "node1", labels={"foo": ""}, affinity=anti),
            pod("p1.2", MID, SMALL, "node1"),
            pod("p1.3", HIGH, SMALL, "node1"),
            pod("p2", HIGH, SMALL, "node2"),
        ],
        plugins=("TestFit", "InterPodAffinity"),
        pre_filter=("InterPodAffinity",),
    )
    assert victims_of(env, pod("p", HIGH, SMALL, labels={"foo": ""})) == {"node1": ["p1.1"]}


def pdb_foo(allowed: int, disrupted: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "foo"}}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {name: "2024-01-01T00:00:00Z" for name in disrupted},
        },
    }


@pytest.mark.parametrize(
    ("n_pods", "disrupted", "violations"),
    [
        pytest.param(2, (), 1, id="violation of same pdb"),
        pytest.param(2, ("p2",), 1, id="victim not in disruptedPods"),
        pytest.param(2, ("p1.2",), 0, id="victim in disruptedPods"),
        pytest.param(3, ("p1.3",), 1, id="disrupted victim treated as non-violating"),
    ],
)
def test_pdb_violations(n_pods: int, disrupted: tuple[str, ...], violations: int) -> None:
    pods = [
        pod(f"p1.{i}", MID, MEDIUM, "node1", labels={"app": "foo"}) for i in range(1, n_pods + 1)
    ]
    env = Env([node("node1")], pods, pdbs=[pdb_foo(1, disrupted)])
    preemptor = pod("p", HIGH, VERY_LARGE)
    state = env.state_for(preemptor)
    pdbs = Pdb.parse_all(env.cache.snapshot.pdbs)
    candidates, _, _ = env.plugin.dry_run_preemption(
        state, preemptor, env.nodes, pdbs, offset=0, num_candidates=1, now=0.0
    )
    assert len(candidates) == 1
    assert sorted(v.name for v in candidates[0].victims) == [p.name for p in pods]
    assert candidates[0].num_pdb_violations == violations


def test_a_violating_pod_charges_no_later_pdb() -> None:
    """Upstream's ``podIsViolating`` returns at the first PDB a pod overdraws: p1.1 breaks
    the ``app`` PDB (none allowed) and leaves the ``team`` PDB's one disruption to p1.2."""

    def budget(name: str, labels: dict[str, str], allowed: int) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}},
            "status": {"disruptionsAllowed": allowed},
        }

    pdbs = Pdb.parse_all([budget("app", {"app": "x"}, 0), budget("team", {"team": "t"}, 1)])
    both = pod("p1.1", MID, MEDIUM, "node1", labels={"app": "x", "team": "t"})
    team = pod("p1.2", MID, MEDIUM, "node1", labels={"team": "t"})
    violating, non_violating = split_by_pdb_violation([both, team], pdbs)
    assert [p.name for p in violating] == ["p1.1"]
    assert [p.name for p in non_violating] == ["p1.2"]
    # The same through a dry run: the node's victims count one violation.
    env = Env([node("node1")], [both, team])
    preemptor = pod("p", HIGH, VERY_LARGE)
    candidates, _, _ = env.plugin.dry_run_preemption(
        env.state_for(preemptor), preemptor, env.nodes, pdbs, offset=0, num_candidates=1, now=0.0
    )
    assert [c.num_pdb_violations for c in candidates] == [1]


FIVE_NODES = [node(f"node{i}") for i in range(1, 6)]
ARGS_40_1 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)


def test_a_node_without_a_lower_priority_pod_is_not_copied(monkeypatch: Any) -> None:
    """Upstream copies every potential node and its cycle state, and finds no victim on a
    node without a pod of lower priority. The verdict is the same without the copies: only
    the node that holds a possible victim is copied and dry-run."""
    env = Env(
        [node(f"node{i}", ONE_POD, pods="1") for i in (1, 2, 3)],
        [
            pod("p1", HIGH, node_name="node1"),
            pod("p2", LOW, node_name="node2"),
            pod("p3", VERY_HIGH, node_name="node3"),
        ],
    )
    copied: list[str] = []
    clone = NodeInfo.clone

    def counted(self: NodeInfo) -> NodeInfo:
        copied.append(self.name)
        return clone(self)

    monkeypatch.setattr(NodeInfo, "clone", counted)
    preemptor = pod("p", HIGH)
    candidates, statuses, errors = env.plugin.dry_run_preemption(
        env.state_for(preemptor), preemptor, env.nodes, [], offset=0, num_candidates=3, now=0.0
    )
    assert [(c.name, [v.name for v in c.victims]) for c in candidates] == [("node2", ["p2"])]
    assert {name: (s.code, s.reasons) for name, s in statuses.items()} == {
        "node1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MSG_NO_VICTIMS,)),
        "node3": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MSG_NO_VICTIMS,)),
    }
    assert errors == []
    assert copied == ["node2"]


def test_the_kept_lowest_priorities_follow_the_nodes() -> None:
    """A full cluster of equal priority has no victim on any node; once a node holds a pod
    of lower priority (and once it no longer does), the dry run says so."""
    env = Env(
        [node(f"node{i}", ONE_POD, pods="2") for i in (1, 2, 3)],
        [pod(f"p{i}", HIGH, node_name=f"node{i}") for i in (1, 2, 3)],
    )
    preemptor = pod("p", HIGH)

    def dry_run() -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]]]:
        candidates, statuses, _ = env.plugin.dry_run_preemption(
            env.state_for(preemptor), preemptor, env.nodes, [], offset=1, num_candidates=3,
            now=0.0,
        )  # fmt: skip
        victims = {c.name: [v.name for v in c.victims] for c in candidates}
        return victims, {name: s.reasons for name, s in statuses.items()}

    none_found = {f"node{i}": (MSG_NO_VICTIMS,) for i in (1, 2, 3)}
    assert dry_run() == ({}, none_found)
    low = pod("low", LOW, node_name="node2")
    env.cache.add_pod(low)
    assert dry_run() == (
        {"node2": ["low"]},
        {"node1": (MSG_NO_VICTIMS,), "node3": (MSG_NO_VICTIMS,)},
    )
    env.cache.remove_pod(low.uid)
    assert dry_run() == ({}, none_found)


def test_candidates_limited_by_args_from_a_rotating_offset() -> None:
    pods = [pod(f"p{i}", MID, LARGE, f"node{i}") for i in range(1, 6)]
    env = Env(FIVE_NODES, pods, args=ARGS_40_1)
    # offset 4: node5 (yes), node1 (yes) -> enough.
    assert victims_of(env, pod("p", HIGH, LARGE), offset=4) == {"node5": ["p5"], "node1": ["p1"]}
    # offset 1: node2, node3.
    assert victims_of(env, pod("p", HIGH, LARGE), offset=1) == {"node2": ["p2"], "node3": ["p3"]}


def test_some_nodes_are_not_candidates() -> None:
    priorities = [MID, VERY_HIGH, MID, MID, VERY_HIGH]
    pods = [pod(f"p{i}", pr, LARGE, f"node{i}") for i, pr in enumerate(priorities, 1)]
    env = Env(FIVE_NODES, pods, args=ARGS_40_1)
    # offset 4: node5 (no), node1 (yes), node2 (no), node3 (yes).
    assert victims_of(env, pod("p", HIGH, LARGE), offset=4) == {"node1": ["p1"], "node3": ["p3"]}


def test_dry_run_looks_past_num_candidates_for_a_pdb_respecting_node() -> None:
    labelled = {1, 2, 5}
    pods = [
        pod(f"p{i}", MID, LARGE, f"node{i}", labels={"app": "foo"} if i in labelled else None)
        for i in range(1, 6)
    ]
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=2)
    env = Env(FIVE_NODES, pods, args=args, pdbs=[pdb_foo(0)])
    preemptor = pod("p", HIGH, LARGE)
    state = env.state_for(preemptor)
    candidates, _, _ = env.plugin.dry_run_preemption(
        state,
        preemptor,
        env.nodes,
        Pdb.parse_all(env.cache.snapshot.pdbs),
        offset=4,
        num_candidates=env.plugin.calculate_num_candidates(5),
        now=0.0,
    )
    # node5 (pdb), node1 (pdb), node2 (pdb, over the limit), node3 (no pdb) -> stop.
    got = sorted((c.name, c.num_pdb_violations) for c in candidates)
    assert got == [("node1", 1), ("node3", 0), ("node5", 1)]


async def test_post_filter_uses_the_framework_rng_for_the_offset() -> None:
    pods = [pod(f"p{i}", MID, LARGE, f"node{i}") for i in range(1, 6)]
    env = Env(FIVE_NODES, pods, args=ARGS_40_1, rng=FixedOffset(1))
    result, status = await env.post_filter(pod("p", HIGH, LARGE))
    assert_placed(result, status)
    assert result is not None
    # Candidates node2 and node3 tie on every criterion: the first one wins.
    assert result.nominated_node_name == "node2"


# -- picking the node ----------------------------------------------------------------------

SELECT_CASES: list[tuple[str, list[tuple[str, int, dict[str, str], int, int]], str, int]] = [
    (
        "node with min highest priority pod is picked",
        [
            ("p1.1", MID, MEDIUM, 1, 0),
            ("p1.2", MID, LARGE, 1, 0),
            ("p2.1", MID, MEDIUM, 2, 0),
            ("p2.2", LOW, MEDIUM, 2, 0),
            ("p3.1", LOW, MEDIUM, 3, 0),
            ("p3.2", LOW, MEDIUM, 3, 0),
        ],
        "node3",
        HIGH,
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        [
            ("p1.1", MID, MEDIUM, 1, 0),
            ("p1.2", MID, LARGE, 1, 0),
            ("p2.1", MID, LARGE, 2, 0),
            ("p2.2", LOW, MEDIUM, 2, 0),
            ("p3.1", MID, MEDIUM, 3, 0),
            ("p3.2", MID, MEDIUM, 3, 0),
        ],
        "node2",
        HIGH,
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        [
            ("p1.1", MID, SMALL, 1, 0),
            ("p1.2", NEG, SMALL, 1, 0),
            ("p1.3", MID, SMALL, 1, 0),
            ("p1.4", NEG, SMALL, 1, 0),
            ("p2.1", MID, LARGE, 2, 0),
            ("p2.2", NEG, MEDIUM, 2, 0),
            ("p3.1", MID, MEDIUM, 3, 0),
            ("p3.2", NEG, SMALL, 3, 0),
            ("p3.3", LOW, SMALL, 3, 0),
        ],
        "node2",
        HIGH,
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        [
            ("p1.1", MID, SMALL, 1, 0),
            ("p1.2", LOW, SMALL, 1, 0),
            ("p1.3", LOW, SMALL, 1, 0),
            ("p2.1", HIGH, LARGE, 2, 0),
            ("p3.1", MID, MEDIUM, 3, 0),
            ("p3.2", LOW, SMALL, 3, 0),
            ("p3.3", LOW, SMALL, 3, 0),
            ("p3.4", LOW, MEDIUM, 3, 0),
            ("p4.1", MID, MEDIUM, 4, 0),
            ("p4.2", MID, SMALL, 4, 0),
            ("p4.3", MID, SMALL, 4, 0),
            ("p4.4", NEG, SMALL, 4, 0),
        ],
        "node1",
        VERY_HIGH,
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        [
            ("p1.1", MID, MEDIUM, 1, 2),
            ("p1.2", MID, MEDIUM, 1, 2),
            ("p2.1", MID, MEDIUM, 2, 3),
            ("p2.2", MID, MEDIUM, 2, 3),
            ("p3.1", MID, MEDIUM, 3, 1),
            ("p3.2", MID, MEDIUM, 3, 1),
        ],
        "node2",
        HIGH,
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        [
            ("p1.1", MID, MEDIUM, 1, 4),
            ("p1.2", MID, MEDIUM, 1, 2),
            ("p2.1", MID, MEDIUM, 2, 5),
            ("p2.2", MID, MEDIUM, 2, 1),
            ("p3.1", MID, MEDIUM, 3, 3),
            ("p3.2", MID, MEDIUM, 3, 6),
        ],
        "node3",
        HIGH,
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        [
            ("p1.1", LOW, MEDIUM, 1, 4),
            ("p1.2", MID, MEDIUM, 1, 2),
            ("p2.1", MID, MEDIUM, 2, 6),
            ("p2.2", LOW, MEDIUM, 2, 1),
            ("p3.1", LOW, MEDIUM, 3, 3),
            ("p3.2", MID, MEDIUM, 3, 5),
        ],
        "node2",
        HIGH,
    ),
]


@pytest.mark.parametrize(
    ("specs", "expected", "priority"),
    [c[1:] for c in SELECT_CASES],
    ids=[str(c[0]) for c in SELECT_CASES],
)
async def test_select_best_candidate(
    specs: list[tuple[str, int, dict[str, str], int, int]], expected: str, priority: int
) -> None:
    pods = [pod(name, pr, req, f"node{n}", start=start) for name, pr, req, n, start in specs]
    n_nodes = max(n for *_, n, _ in specs)
    env = Env([node(f"node{i}") for i in range(1, n_nodes + 1)], pods)
    preemptor = pod("p", priority, VERY_LARGE)
    result, status = await env.post_filter(preemptor)
    assert_placed(result, status)
    assert result is not None
    assert result.nominated_node_name == expected


def test_args_defaults_and_validation() -> None:
    args = DefaultPreemptionArgs.model_validate({})
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)
    with pytest.raises(ValidationError, match=r"not in valid range \[0, 100\]"):
        DefaultPreemptionArgs.model_validate({"minCandidateNodesPercentage": 101})
    with pytest.raises(ValidationError, match=r"not in valid range \[0, inf\)"):
        DefaultPreemptionArgs.model_validate({"minCandidateNodesAbsolute": -1})
    with pytest.raises(ValidationError, match="cannot be zero at the same time"):
        DefaultPreemptionArgs.model_validate(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        )


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "expected"),
    [(10, 100, 5, 5), (40, 1, 5, 2), (0, 3, 10, 3), (50, 1, 1000, 500), (10, 100, 10000, 1000)],
)
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, expected: int) -> None:
    args = DefaultPreemptionArgs(
        min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute
    )
    env = Env([], [], args=args)
    assert env.plugin.calculate_num_candidates(nodes) == expected
