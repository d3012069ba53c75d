"""The batch Filter path (``filter_nodes``) decides exactly what per-node ``filter`` does,
and a cycle that uses it picks the same nodes, records the same statuses and moves the
rotating start index by the same count as the node-by-node loop.

Randomised clusters: cordoned, tainted, full (pods, cpu, memory, storage, extended
resources) and roomy nodes, some declaring features; pods with and without tolerations,
requests, spec.nodeName and needs of declared features.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from builders import node_dict, pod_dict
from churn import NAMESPACES, default_framework, populated, random_incoming, random_labels
from multisched.cache import Cache, PodInfo
from multisched.framework import CycleState, Diagnosis, FitError, Status
from multisched.framework.runtime import _batch_judge
from multisched.scheduler import Algorithm
from multisched.scheduler.algorithm import (
    FILTER_TIMING_STRIDE,
    num_feasible_nodes_to_find,
)

TAINTS = [
    {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
    {"key": "gpu", "effect": "NoExecute"},
    {"key": "soft", "effect": "PreferNoSchedule"},
]
#: Declared features (NodeDeclaredFeatures): the first two are inferred from ``_pod``'s specs.
FEATURES = [
    "RestartAllContainersOnContainerExits",
    "UserNamespacesHostNetworkSupport",
    "VolumeBindMountOptions",
]


def _cluster(rng: random.Random, nodes: int, harsh: float = 1.0) -> Cache:
    """``harsh`` scales how many nodes are cordoned, tainted or small."""
    cache = Cache()
    for i in range(nodes):
        small = rng.random() < 0.5 * harsh
        tainted = rng.random() < 0.3 * harsh
        raw = node_dict(
            f"n{i:03d}",
            cpu=rng.choice(["0", "500m", "2", "8"]) if small else "16",
            memory=rng.choice(["0", "256Mi", "4Gi"]) if small else "64Gi",
            pods=rng.choice(["1", "3", "110"]) if small else "110",
            taints=rng.sample(TAINTS, rng.randint(0, 2)) if tainted else None,
            unschedulable=rng.random() < 0.1 * harsh,
            extra={"example.com/gpu": "1"} if rng.random() < 0.2 else None,
        )
        if rng.random() > 0.3 * harsh:
            raw["status"]["declaredFeatures"] = sorted(rng.sample(FEATURES, rng.randint(1, 3)))
        cache.add_node(raw)
    for j in range(nodes * 2):
        bound = pod_dict(f"bound-{j}", node_name=f"n{rng.randrange(nodes):03d}")
        bound["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "200m"}}
        cache.add_pod(PodInfo.parse(bound))
    return cache


def _pod(rng: random.Random, name: str, nodes: int) -> PodInfo:
    requests: dict[str, str] = {}
    if rng.random() < 0.7:
        requests["cpu"] = rng.choice(["100m", "1", "4"])
    if rng.random() < 0.5:
        requests["memory"] = rng.choice(["64Mi", "1Gi"])
    if rng.random() < 0.1:
        requests["ephemeral-storage"] = "1Gi"
    if rng.random() < 0.1:
        requests["example.com/gpu"] = "1"
    tolerations: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        tolerations = [{"key": "dedicated", "operator": "Equal", "value": "db"}]
    if rng.random() < 0.1:
        tolerations.append({"operator": "Exists"})
    node_name = f"n{rng.randrange(nodes):03d}" if rng.random() < 0.1 else ""
    body = pod_dict(name, requests=requests or None, tolerations=tolerations or None)
    if node_name:
        body["spec"]["nodeName"] = node_name  # a pod naming its node (NodeName's case)
    if rng.random() < 0.1:  # needs RestartAllContainersOnContainerExits
        body["spec"]["containers"][0].update(
            restartPolicy="Never",
            restartPolicyRules=[
                {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
            ],
        )
    if rng.random() < 0.1:  # needs UserNamespacesHostNetworkSupport
        body["spec"].update(hostNetwork=True, hostUsers=False)
    return PodInfo.parse(body)


@pytest.mark.parametrize("seed", range(8))
def test_filter_nodes_matches_filter_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    cache = _cluster(rng, 60)
    fwk = default_framework(cache)
    nodes = cache.snapshot.node_info_list
    batched = {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeDeclaredFeatures",
    }
    seen = set()
    for k in range(30):
        pod = _pod(rng, f"p{k}", 60)
        state = CycleState()
        fwk.run_pre_filter(state, pod, nodes)
        for pl in fwk.filter_plugins:
            judge = getattr(pl, "filter_nodes", None)
            if judge is None:
                continue
            seen.add(pl.name)
            expected = {}
            for i, node in enumerate(nodes):
                status = pl.filter(state, pod, node)
                if status is not None:
                    expected[i] = status
            got = judge(state, pod, nodes)
            assert {i: (s.code, s.reasons) for i, s in got.items()} == {
                i: (s.code, s.reasons) for i, s in expected.items()
            }, pl.name
    assert seen == batched


def test_a_node_tainted_or_cordoned_later_is_seen_by_the_batches() -> None:
    """The batches skip the nodes' taints and cordons while no node has one (the snapshot
    keeps that answer): a Node update that adds one, a new tainted Node, and the update that
    takes it away again must each be seen at the next call."""
    cache = Cache()
    for i in range(20):
        cache.add_node(node_dict(f"n{i:02d}"))
    fwk = default_framework(cache)
    plugins = {pl.name: pl for pl in fwk.filter_plugins}
    taints, cordon = plugins["TaintToleration"], plugins["NodeUnschedulable"]
    pod = PodInfo.parse(pod_dict("p"))
    state = CycleState()
    fwk.run_pre_filter(state, pod, cache.snapshot.node_info_list)

    def rejected(plugin: Any) -> list[str]:
        nodes = cache.snapshot.node_info_list
        return sorted(nodes[i].name for i in plugin.filter_nodes(state, pod, nodes))

    assert rejected(taints) == rejected(cordon) == []
    cache.update_node(node_dict("n07", taints=[TAINTS[0]]))
    cache.update_node(node_dict("n03", unschedulable=True))
    assert rejected(taints) == ["n07"]
    assert rejected(cordon) == ["n03"]
    cache.add_node(node_dict("n20", taints=[TAINTS[1]]))
    assert rejected(taints) == ["n07", "n20"]
    soft = node_dict("n11", taints=[TAINTS[2]])
    cache.update_node(soft)
    nodes = cache.snapshot.node_info_list
    taints.pre_score(state, pod, nodes)
    scores = taints.score_nodes(state, pod, nodes)
    assert [nodes[i].name for i, s in enumerate(scores) if s] == ["n11"]
    for name in ("n07", "n20", "n11", "n03"):
        cache.update_node(node_dict(name))
    assert rejected(taints) == rejected(cordon) == []
    assert not any(taints.score_nodes(state, pod, cache.snapshot.node_info_list))


@pytest.mark.parametrize("harsh", [0.1, 1.0])
@pytest.mark.parametrize("seed", range(6))
def test_a_cycle_in_batches_equals_the_node_by_node_loop(seed: int, harsh: float) -> None:
    rng = random.Random(seed)
    # 300 nodes: a mild cluster has more feasible nodes than the search wants (it stops
    # before the last node), a harsh one fewer.
    cache = _cluster(rng, 300, harsh)
    _compare_searches(cache, [_pod(rng, f"p{k}", 300) for k in range(40)], seed)


@pytest.mark.parametrize("seed", range(6))
def test_batches_equal_the_loop_for_spread_and_affinity_pods(seed: int) -> None:
    """PodTopologySpread and InterPodAffinity reject whole topology domains: the batches
    grow with the pass rate seen, and must still stop where the loop stops."""
    rng = random.Random(seed)
    cache, pods = _churned_backlog(rng)
    _compare_searches(cache, pods, seed)


@pytest.mark.parametrize("seed", range(6))
def test_batches_around_nominated_pods_equal_the_loop(seed: int) -> None:
    """With pods nominated by preemption, the nodes holding those at least as important as
    the pod get both Filter passes in their place in the search, and the rest are judged in
    batches: the outcome of the node-by-node loop's two passes at every node."""
    rng = random.Random(seed)
    cache, pods = _churned_backlog(rng)
    _compare_searches(cache, pods, seed, nominate=rng)
    rng = random.Random(seed)
    harsh = _cluster(rng, 300, 1.0)
    _compare_searches(harsh, [_pod(rng, f"p{k}", 300) for k in range(40)], seed, nominate=rng)


def _nominate(rng: random.Random, fwk: Any, nodes: list[Any], pods: list[PodInfo]) -> None:
    """Pods of lower, equal and higher priority nominated to a tenth of the nodes (some of
    the incoming pods among them: a pod never counts beside itself)."""
    for k in range(len(nodes) // 10):
        body = pod_dict(
            f"nominated-{k}",
            rng.choice(NAMESPACES),
            labels=random_labels(rng),
            requests={"cpu": rng.choice(["100m", "2", "8"]), "memory": "1Gi"},
            priority=rng.choice([-10, 0, 10]),
        )
        fwk.nominator.add_nominated_pod(PodInfo.parse(body), rng.choice(nodes).name)
    for pod in rng.sample(pods, len(pods) // 5):
        fwk.nominator.add_nominated_pod(pod, rng.choice(nodes).name)


def _churned_backlog(rng: random.Random) -> tuple[Cache, list[PodInfo]]:
    """150 nodes and 400 bound pods, and 40 incoming pods, the cluster changing between."""
    cache, churn = populated(rng, 150, 400)
    pods = []
    for k in range(40):
        pods.append(random_incoming(rng, f"p{k}"))
        churn.step()
    return cache, pods


def _compare_searches(
    cache: Cache, pods: list[PodInfo], seed: int, nominate: random.Random | None = None
) -> None:
    fwk = default_framework(cache)
    nodes = cache.snapshot.node_info_list
    if nominate is not None:
        _nominate(nominate, fwk, nodes, pods)
        assert any(fwk.nodes_with_nominated_pods(pod) for pod in pods)
    batch = Algorithm(rng=random.Random(seed))
    sequential = Algorithm(rng=random.Random(seed))
    node_by_node = fwk.batch_filters
    batched_cycles = 0
    for pod in pods:
        outcomes = []
        for algo, batches in ((batch, True), (sequential, False)):
            state = CycleState()
            _, status = fwk.run_pre_filter(state, pod, nodes)
            if status is not None:
                continue
            diagnosis = Diagnosis()
            if batches:
                batched_cycles += node_by_node(state) is not None
            fwk.batch_filters = node_by_node if batches else (lambda _state: None)  # type: ignore[method-assign]
            try:
                if batches or nominate is None:
                    feasible = algo._find_nodes_that_pass_filters(
                        fwk, state, pod, diagnosis, nodes, None
                    )
                else:
                    feasible = _upstream_search(fwk, algo, state, pod, diagnosis, nodes)
            finally:
                del fwk.batch_filters
            outcomes.append(
                (
                    [n.name for n in feasible],
                    # Counted before the map by name is read (the batches build it lazily).
                    diagnosis.rejected_count(),
                    {
                        name: (s.code, s.reasons, s.plugin)
                        for name, s in diagnosis.node_to_status.items()
                    },
                    sorted(diagnosis.unschedulable_plugins),
                    algo.next_start_node_index,
                )
            )
        if outcomes:
            assert outcomes[0] == outcomes[1]
    assert batched_cycles


def _upstream_search(
    fwk: Any, algo: Algorithm, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: Any
) -> list[Any]:
    """upstream's findNodesThatPassFilters, written out: from the rotating start, each node
    through RunFilterPluginsWithNominatedPods until enough are feasible."""
    percentage = fwk.profile.percentage_of_nodes_to_score
    if percentage is None:
        percentage = algo.percentage_of_nodes_to_score
    to_find = num_feasible_nodes_to_find(percentage, len(nodes))
    start = algo.next_start_node_index % len(nodes)
    feasible, processed = [], 0
    for node in [*nodes[start:], *nodes[:start]]:
        processed += 1
        status = _upstream_filters(fwk, state, pod, node)
        if status is None:
            feasible.append(node)
            if len(feasible) >= to_find:
                break
        else:
            diagnosis.node_to_status[node.name] = status
            diagnosis.unschedulable_plugins.add(status.plugin)
    algo.next_start_node_index = (start + processed) % len(nodes)
    return feasible


def _upstream_filters(fwk: Any, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
    """RunFilterPluginsWithNominatedPods, written out: with the node's nominated pods of at
    least the pod's priority (itself excepted) added to copies of the node and the state,
    then as the node is."""
    nominated = [
        p
        for p in fwk.nominator.nominated_pods_for_node(node.name)
        if p.priority >= pod.priority and p.uid != pod.uid
    ]
    if nominated:
        node_with, state_with = node.clone(), state.clone()
        for p in nominated:
            node_with.add_pod(p)
            status = fwk.run_pre_filter_extension_add_pod(state_with, pod, p, node_with)
            if status is not None and not status.is_success():
                return status  # type: ignore[no-any-return]
        status = fwk.run_filter_plugins(state_with, pod, node_with)
        if status is not None:
            return status  # type: ignore[no-any-return]
    return fwk.run_filter_plugins(state, pod, node)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("priority", "fits"), [(-1, True), (0, False), (1, False)])
def test_a_nominated_pod_of_at_least_the_pods_priority_holds_its_room(
    priority: int, fits: bool
) -> None:
    cache = Cache()
    for name in ("n0", "n1"):
        cache.add_node(node_dict(name, cpu="2", memory="4Gi"))
    fwk = default_framework(cache)
    nominated = pod_dict("nominated", requests={"cpu": "2"}, priority=priority)
    fwk.nominator.add_nominated_pod(PodInfo.parse(nominated), "n1")
    pod = PodInfo.parse(pod_dict("p", requests={"cpu": "1"}, priority=0))
    nodes = cache.snapshot.node_info_list
    state = CycleState()
    assert fwk.run_pre_filter(state, pod, nodes)[1] is None
    diagnosis = Diagnosis()
    feasible = Algorithm()._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes, None)
    assert sorted(n.name for n in feasible) == (["n0", "n1"] if fits else ["n0"])
    if not fits:
        assert list(diagnosis.node_to_status["n1"].reasons) == ["Insufficient cpu"]


def test_a_pod_no_node_fits_shares_one_status_per_verdict_across_nodes_and_cycles() -> None:
    """A full cluster fails every node for each pod of a backlog: NodeResourcesFit gives
    one status object per distinct verdict, kept while the nodes are unchanged, and the
    FailedScheduling message counts every node that holds it (upstream FitError.Error)."""
    cache = Cache()
    for i in range(4):
        cache.add_node(node_dict(f"small-{i}", cpu="2", memory="8Gi"))
    cache.add_node(node_dict("busy", cpu="8", memory="1Gi"))
    cache.add_node(node_dict("roomy", cpu="8", memory="8Gi"))
    hog = pod_dict("hog", node_name="roomy", requests={"cpu": "6", "memory": "7Gi"})
    cache.add_pod(PodInfo.parse(hog))
    fwk = default_framework(cache)
    fit = fwk.plugins["NodeResourcesFit"]
    nodes = cache.snapshot.node_info_list
    messages, kept = [], []
    for k in range(2):
        pod = PodInfo.parse(pod_dict(f"p{k}", requests={"cpu": "3", "memory": "2Gi"}))
        state = CycleState()
        fwk.run_pre_filter(state, pod, nodes)
        got = fit.filter_nodes(state, pod, nodes)  # type: ignore[attr-defined]
        one_by_one = {i: fit.filter(state, pod, node) for i, node in enumerate(nodes)}
        assert {i: (s.code, s.reasons) for i, s in got.items()} == {
            i: (s.code, s.reasons) for i, s in one_by_one.items() if s is not None
        }
        by_name = {nodes[i].name: status for i, status in got.items()}
        assert len(by_name) == 6
        # cpu short (the small nodes), memory short (busy), both short (roomy)
        assert len({id(s) for s in by_name.values()}) == 3
        kept.append(by_name["small-0"])
        with pytest.raises(FitError) as caught:
            Algorithm(rng=random.Random(k)).schedule_pod(fwk, CycleState(), pod, cache.snapshot)
        messages.append(str(caught.value))
    assert kept[0] is kept[1]
    assert messages == ["0/6 nodes are available: 2 Insufficient memory, 5 Insufficient cpu."] * 2


class _Screened:
    name = "Screened"

    def filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> dict[int, Status]:
        return {}


class _StricterFilter(_Screened):
    """Overrides ``filter`` alone: the parent's screen would clear what this refuses."""

    def filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        return Status.unschedulable("no")


class _BothOverridden(_StricterFilter):
    def filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        return Status.unschedulable("no")

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> dict[int, Status]:
        return {i: Status.unschedulable("no") for i in range(len(nodes))}


def test_a_subclass_overriding_filter_alone_is_judged_node_by_node() -> None:
    assert _batch_judge(_Screened()) is not None
    assert _batch_judge(_StricterFilter()) is None
    assert _batch_judge(_BothOverridden()) is not None
    assert _batch_judge(object()) is None


@pytest.mark.parametrize("seed", range(4))
def test_a_sampled_cycle_decides_in_batches_and_times_the_loops_nodes(seed: int) -> None:
    """A cycle that records plugin metrics keeps the batch path's outcome, and times the
    filters at the nodes the node-by-node loop would time: one evaluated node in
    FILTER_TIMING_STRIDE, each chain up to its first failure."""
    rng = random.Random(seed)
    cache = _cluster(rng, 300, 1.0)
    fwk = default_framework(cache)
    seen: list[tuple[str, str, str]] = []
    fwk.plugin_observer = lambda plugin, point, status, _s: seen.append((plugin, point, status))
    nodes = cache.snapshot.node_info_list
    for k in range(10):
        pod = _pod(rng, f"p{k}", 300)
        outcomes = []
        for sampled in (True, False):
            state = CycleState(record_plugin_metrics=sampled)
            if fwk.run_pre_filter(state, pod, nodes)[1] is not None:
                break
            seen.clear()
            algo = Algorithm(rng=random.Random(seed))
            diagnosis = Diagnosis()
            feasible = algo._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes, None)
            statuses = {n: (s.code, s.reasons) for n, s in diagnosis.node_to_status.items()}
            outcomes.append(([n.name for n in feasible], statuses, algo.next_start_node_index))
            if sampled:
                timed = [entry for entry in seen if entry[1] == "Filter"]
                first = fwk.active_filters(state)[0][0]
                evaluated = algo.next_start_node_index or len(nodes)
                assert sum(1 for e in timed if e[0] == first) == len(
                    range(0, evaluated, FILTER_TIMING_STRIDE)
                )
        if len(outcomes) == 2:
            assert outcomes[0] == outcomes[1]
