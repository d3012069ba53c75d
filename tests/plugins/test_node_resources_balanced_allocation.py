"""Cases from upstream noderesources/balanced_allocation_test.go (DRA cases left out)."""

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


CASES = [
    (
        # node1: cpu 3000/4000 = .75, memory 5000/10000 = .5, std .125 -> 87
        # node2: cpu 3000/6000 = .5, memory .5, std 0 -> 100
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory,
        lambda: [node("node1", 4000, 10000), node("node2", 6000, 10000)],
        DEFAULT_RESOURCES,
        [87, 100],
    ),
    (
        # node1: cpu 6000/10000 = .6, memory 5000/20000 = .25, std .175 -> 82
        # node2: cpu .6, memory 10000/20000 = .5, std .05 -> 95
        "resources requested, pods scheduled with resources",
        cpu_and_memory,
        lambda: [
            node("node1", 10000, 20000, [cpu_only("e1")]),
            node("node2", 10000, 20000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [82, 95],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory,
        lambda: [
            node("node1", 10000, 20000, [cpu_only("e1")]),
            node("node2", 10000, 50000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [82, 80],
    ),
    (
        # node1: cpu 6000/6000 = 1, memory 0, std .5 -> 50
        # node2: cpu 1, memory 5000/10000 = .5, std .25 -> 75
        "requested resources at node capacity",
        cpu_only,
        lambda: [
            node("node1", 6000, 10000, [cpu_only("e1")]),
            node("node2", 6000, 10000, [cpu_and_memory("e2")]),
        ],
        DEFAULT_RESOURCES,
        [50, 75],
    ),
    (
        # Three fractions use the general standard deviation:
        # node1: cpu 3000/3500, memory 5000/40000, gpu 4/8 -> 70
        # node2: cpu 3000/3500, memory 5000/40000, gpu 1/8 -> 65
        "include scalar resource on a node for balanced resource allocation",
        lambda: make_pod("p", containers=_containers({"memory": "0", GPU: "1"})),
        lambda: [
            node("node1", 3500, 40000, [cpu_memory_and_gpu("e1")], gpu=8),
            node("node2", 3500, 40000, [cpu_and_memory("e2")], gpu=8),
        ],
        WITH_GPU,
        [70, 65],
    ),
    (
        # The pod does not request the gpu, so it is left out on both nodes: (.857 - .125) / 2.
        "node without the scalar resource should skip the scalar resource",
        cpu_and_memory,
        lambda: [node("node1", 3500, 40000, gpu=8), node("node2", 3500, 40000)],
        WITH_GPU,
        [63, 63],
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
    # cpu 8000/4000 counts as 1 (not 2): std (1 - .5) / 2 = .25 -> 75.
    pod = make_pod("p", containers=_containers({"cpu": "8", "memory": "5000"}))
    assert run(DEFAULT_RESOURCES, pod, [node("n", 4000, 10000)]) == [75]


def test_single_resource_has_no_deviation() -> None:
    pod = make_pod("p", containers=_containers({"cpu": "1", "memory": "5000"}))
    assert run([{"name": "cpu"}], pod, [node("n", 4000, 10000)]) == [100]


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
