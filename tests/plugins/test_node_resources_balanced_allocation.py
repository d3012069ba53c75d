"""Cases from upstream v1.37 noderesources/balanced_allocation_test.go (the DRA extended
resource cases and SignPod left out: multisched has neither)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_node, make_pod
from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Registry
from multisched.plugins import builtin_plugins
from multisched.plugins.node_resources_balanced_allocation import (
    PRE_SCORE_STATE_KEY,
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)

GPU = "nvidia.com/gpu"
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*DEFAULT_RESOURCES, {"name": GPU, "weight": 1}]


def _containers(*requests: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"name": f"c{i}", "image": "pause", "resources": {"requests": r}}
        for i, r in enumerate(requests)
    ]


def cpu_and_memory(name: str = "p") -> PodInfo:
    return make_pod(
        name,
        containers=_containers(
            {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}
        ),
    )


def cpu_only(name: str = "p") -> PodInfo:
    return make_pod(
        name,
        containers=_containers({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}),
    )


def cpu_memory_and_gpu(name: str = "p") -> PodInfo:
    return make_pod(
        name,
        containers=_containers(
            {"cpu": "1000m", "memory": "2000"},
            {"cpu": "2000m", "memory": "3000", GPU: "3"},
        ),
    )


def node(
    name: str, milli_cpu: int, memory: int, pods_on: list[PodInfo] | None = None, gpu: int = 0
) -> NodeInfo:
    """Upstream test ``makeNode(name, milliCPU, memory, extendedResource)``."""
    extra = {GPU: str(gpu)} if gpu else {}
    return make_node(name, cpu=f"{milli_cpu}m", memory=str(memory), extra=extra, pods_on=pods_on)


def run(
    resources: list[dict[str, Any]],
    pod: PodInfo,
    nodes: list[NodeInfo],
    run_pre_score: bool = True,
) -> list[int]:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources})
    plugin = NodeResourcesBalancedAllocation(args, None)  # type: ignore[arg-type]
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, nodes) is None
    return [plugin.score(state, pod, n) for n in nodes]


def test_nothing_requested_skips_in_pre_score() -> None:
    plugin = NodeResourcesBalancedAllocation(None, None)  # type: ignore[arg-type]
    state = CycleState()
    nodes = [node("node1", 4000, 10000), node("node2", 4000, 10000)]
    status = plugin.pre_score(state, make_pod("p", containers=[]), nodes)
    assert status is not None
    assert status.code == Code.SKIP
    assert state.get(PRE_SCORE_STATE_KEY) is None


def test_pod_without_requests_still_skips_despite_non_zero_defaults() -> None:
    # BalancedAllocation reads plain requests: a container without any is best-effort.
    plugin = NodeResourcesBalancedAllocation(None, None)  # type: ignore[arg-type]
    status = plugin.pre_score(CycleState(), make_pod("p"), [node("node1", 4000, 10000)])
    assert status is not None
    assert status.code == Code.SKIP


def test_best_effort_pod_scores_zero_without_pre_score() -> None:
    plugin = NodeResourcesBalancedAllocation(None, None)  # type: ignore[arg-type]
    assert plugin.score(CycleState(), make_pod("p"), node("node1", 4000, 10000)) == 0


def test_request_outside_the_configured_resources_is_best_effort() -> None:
    plugin = NodeResourcesBalancedAllocation(None, None)  # type: ignore[arg-type]
    pod = make_pod("p", containers=_containers({GPU: "1"}))
    status = plugin.pre_score(CycleState(), pod, [node("node1", 4000, 10000, gpu=8)])
    assert status is not None
    assert status.is_skip()


def memory_only() -> PodInfo:
    return make_pod("p", containers=_containers({"memory": "2000"}, {"memory": "3000"}))


# Each node's balance before -> after the pod in the comments; the score is
# 50 + (50 + after - before) // 2.
CASES = [
    (
        # node1: cpu 0 -> .75, memory 0 -> .5: 100 -> 87
        # node2: cpu 0 -> .5, memory 0 -> .5: 100 -> 100
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory,
        lambda: [node("node1", 4000, 10000), node("node2", 6000, 10000)],
        DEFAULT_RESOURCES,
        [68, 75],
    ),
    (
        # node1: cpu .3 -> .6, memory 0 -> .25: 85 -> 82
        # node2: cpu .3 -> .6, memory .25 -> .5: 97 -> 95
        "resources requested, pods scheduled with resources",
        cpu_and_memory,
        lambda: [
            node("node1", 10000, 20000, [cpu_only("e1")]),
            node("node2", 10000, 20000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [73, 74],
    ),
    (
        # node2: cpu .3 -> .6, memory .1 -> .2: 90 -> 80
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory,
        lambda: [
            node("node1", 10000, 20000, [cpu_only("e1")]),
            node("node2", 10000, 50000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [73, 70],
    ),
    (
        # node1: cpu 1 -> 1, memory 0 -> 1: 50 -> 100
        # node2: cpu 0 -> 0, memory 0 -> 1: 100 -> 50
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        memory_only,
        lambda: [node("node1", 3000, 5000, [cpu_only("e1")]), node("node2", 3000, 5000)],
        DEFAULT_RESOURCES,
        [100, 50],
    ),
    (
        # node1: cpu .5 -> 1, memory 0 -> 0: 75 -> 50
        # node2: cpu .5 -> 1, memory .5 -> .5: 100 -> 75
        "requested resources at node capacity",
        cpu_only,
        lambda: [
            node("node1", 6000, 10000, [cpu_only("e1")]),
            node("node2", 6000, 10000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [62, 62],
    ),
    (
        # Three fractions use the general standard deviation:
        # node1: cpu .857, memory .125, gpu .375 -> .5: 69 -> 70
        # node2: cpu .857, memory .125, gpu 0 -> .125: 62 -> 65
        "scalar resource is included in the score computation if pod requests the scalar resource",
        lambda: make_pod("p", containers=_containers({"cpu": "0", "memory": "0", GPU: "1"})),
        lambda: [
            node("node1", 3500, 40000, [cpu_memory_and_gpu("e1")], gpu=8),
            node("node2", 3500, 40000, [cpu_and_memory("e2")], gpu=8),
        ],
        WITH_GPU,
        [75, 76],
    ),
    (
        # The pod does not request the gpu, so it is left out on both nodes:
        # cpu 0 -> .857, memory 0 -> .125: 100 -> 63.
        "scalar resource is not included in the score computation if pod doesn't request "
        "the scalar resource",
        cpu_and_memory,
        lambda: [node("node1", 3500, 40000, gpu=8), node("node2", 3500, 40000)],
        WITH_GPU,
        [56, 56],
    ),
]


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["PreScore", "no PreScore"])
@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_node_resources_balanced_allocation(
    pod: Any, nodes: Any, resources: list[dict[str, Any]], expected: list[int], run_pre_score: bool
) -> None:
    assert run(resources, pod(), nodes(), run_pre_score) == expected


def test_fractions_are_capped_at_one() -> None:
    # cpu 8000/4000 counts as 1 (not 2): balance 100 -> 75 (std (1 - .5) / 2), so 62.
    pod = make_pod("p", containers=_containers({"cpu": "8", "memory": "5000"}))
    assert run(DEFAULT_RESOURCES, pod, [node("n", 4000, 10000)]) == [62]


def test_single_resource_has_no_deviation() -> None:
    # One fraction has no spread before or after: the neutral 75.
    pod = make_pod("p", containers=_containers({"cpu": "1", "memory": "5000"}))
    assert run([{"name": "cpu"}], pod, [node("n", 4000, 10000)]) == [75]


def test_a_pod_that_evens_the_node_out_scores_above_one_that_skews_it() -> None:
    # Both nodes end at cpu .5; node1 had memory at .5 already (balance 75 -> 100), node2
    # had nothing (100 -> 75). Upstream v1.28 scored node1 100 and node2 75; v1.37 says how
    # much the pod improves the balance.
    pod = make_pod("p", containers=_containers({"cpu": "2", "memory": "0"}))
    on_node1 = make_pod("e1", containers=_containers({"memory": "5000"}))
    nodes = [node("node1", 4000, 10000, [on_node1]), node("node2", 4000, 10000)]
    assert run(DEFAULT_RESOURCES, pod, nodes) == [87, 62]


@pytest.mark.parametrize(
    "resources", [DEFAULT_RESOURCES, WITH_GPU, [{"name": "memory"}, {"name": "cpu"}]]
)
def test_the_batch_path_scores_as_score_does(resources: list[dict[str, Any]]) -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources})
    plugin = NodeResourcesBalancedAllocation(args, None)  # type: ignore[arg-type]
    pod = make_pod("p", containers=_containers({"cpu": "700m", "memory": "3000", GPU: "1"}))
    nodes = [
        node("a", 4000, 10000, [cpu_only("e1")], gpu=4),
        node("b", 4000, 10000, [cpu_and_memory("e2")]),
        node("c", 3500, 40000, [cpu_memory_and_gpu("e3")], gpu=8),
        node("d", 0, 10000),  # no cpu: one fraction
        node("e", 1000, 1000, [cpu_and_memory("e4")]),  # over capacity: capped
    ]
    state = CycleState()
    assert plugin.pre_score(state, pod, nodes) is None
    assert plugin.score_nodes(state, pod, nodes) == [plugin.score(state, pod, n) for n in nodes]


# -- args -------------------------------------------------------------------------------------


def test_default_args() -> None:
    for raw in ({}, {"resources": None}, {"resources": []}):
        args = NodeResourcesBalancedAllocationArgs.model_validate(raw)
        assert args.model_dump(by_alias=True) == {"resources": DEFAULT_RESOURCES}


def test_unset_or_zero_weight_defaults_to_one() -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate(
        {"resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}]}
    )
    assert args.model_dump(by_alias=True) == {"resources": DEFAULT_RESOURCES}


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            "resources[0].weight: Invalid value: 2: must be 1",
        ),
        (
            [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}],
            'resources[1].name: Duplicate value: "cpu"',
        ),
        (
            [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": -1}],
            '[resources[1].name: Duplicate value: "cpu", '
            "resources[1].weight: Invalid value: -1: must be 1]",
        ),
    ],
    ids=["weight not 1", "duplicated resource", "both"],
)
def test_args_validation(resources: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources})
    assert [e["msg"].removeprefix("Value error, ") for e in exc.value.errors()] == [message]


def test_registered_extension_points() -> None:
    registry = Registry(builtin_plugins())
    assert registry["NodeResourcesBalancedAllocation"].extension_points == {"preScore", "score"}
