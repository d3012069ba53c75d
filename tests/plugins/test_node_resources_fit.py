"""Cases from upstream noderesources fit_test.go, least_allocated_test.go, most_allocated_test.go
and requested_to_capacity_ratio_test.go (DRA and pod-level-resources cases left out). Filter answers
as v1.28 does: Unschedulable, also for a request beyond the node's allocatable (later releases'
cases expect UnschedulableAndUnresolvable there)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_node, make_pod
from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Registry, Status
from multisched.plugins import builtin_plugins
from multisched.plugins._resource_allocation import broken_linear
from multisched.plugins.node_resources_fit import (
    PRE_FILTER_STATE_KEY,
    NodeResourcesFit,
    NodeResourcesFitArgs,
)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_PAGE_A = "hugepages-2Mi"
DRA_LIKE = "extended.resource.dra.io/something"
EXTENDED_RES = "abc.com/xyz"

UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


# -- builders in the shape of upstream's newResourcePod / newResourceInitPod -----------------


def res(cpu: int = 0, mem: int = 0, storage: int = 0, **scalar: int) -> dict[str, str]:
    """``framework.Resource`` as a container's requests: milli-cpu, bytes, and scalars."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(storage)}
    out.update({_scalar_name(k): str(v) for k, v in scalar.items()})
    return out


_SCALAR_NAMES = {
    "ext_a": EXT_A,
    "ext_b": EXT_B,
    "k8s_io_a": K8S_IO_A,
    "k8s_io_b": K8S_IO_B,
    "huge_page_a": HUGE_PAGE_A,
    "dra_like": DRA_LIKE,
}


def _scalar_name(key: str) -> str:
    return _SCALAR_NAMES.get(key, key)


def containers(*requests: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"name": f"c{i}", "image": "pause", "resources": {"requests": dict(r)}}
        for i, r in enumerate(requests)
    ]


def resource_pod(
    *usage: dict[str, str],
    init: tuple[dict[str, str], ...] = (),
    overhead: dict[str, str] | None = None,
    name: str = "p",
) -> PodInfo:
    spec: dict[str, Any] = {"containers": containers(*usage)}
    if init:
        spec["initContainers"] = containers(*init)
    if overhead:
        spec["overhead"] = overhead
    return make_pod(name, **spec)


def fit_node(existing: PodInfo, pods: str = "32", **alloc: str) -> NodeInfo:
    """``makeAllocatableResources(10, 20, 32, 5, 20, 5)`` holding one existing pod."""
    values = {
        "cpu": "10m",
        "memory": "20",
        EXT_A: "5",
        "ephemeral-storage": "20",
        HUGE_PAGE_A: "5",
        **alloc,
    }
    cpu, memory = values.pop("cpu"), values.pop("memory")
    return make_node("machine", cpu=cpu, memory=memory, pods=pods, extra=values, pods_on=[existing])


def run_filter(
    pod: PodInfo, node: NodeInfo, args: NodeResourcesFitArgs | None = None
) -> Status | None:
    plugin = NodeResourcesFit(args, None)  # type: ignore[arg-type]
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, [node])
    assert result is None
    assert status is None
    return plugin.filter(state, pod, node)


# -- Filter -----------------------------------------------------------------------------------


def pod_level(usage: dict[str, str], requests: dict[str, str]) -> PodInfo:
    """upstream's ``newPodLevelResourcesPod``: one container and pod-level requests."""
    return make_pod("p", containers=containers(usage), resources={"requests": requests})


ENOUGH_REQUESTS = [
    (
        "pod-level cpu resource not fit",
        pod_level(res(1, 1), {"cpu": "7m", "memory": "2"}),
        res(5, 5),
        {},
        UNSCHED,
        (insufficient("cpu"),),
    ),
    (
        "pod-level memory resource not fit",
        pod_level(res(1, 1), {"cpu": "3m", "memory": "2"}),
        res(5, 19),
        {},
        UNSCHED,
        (insufficient("memory"),),
    ),
    (
        "pod-level hugepages resource fit",
        pod_level({}, {"cpu": "3m", "memory": "2", HUGE_PAGE_A: "5"}),
        {},
        {},
        None,
        (),
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        pod_level(res(1, 1, huge_page_a=3), {"cpu": "3m", "memory": "2", HUGE_PAGE_A: "5"}),
        {},
        {},
        None,
        (),
    ),
    (
        "pod-level hugepages resource not fit",
        pod_level({}, {"cpu": "3m", "memory": "2", HUGE_PAGE_A: "10"}),
        {},
        {},
        UNRESOLVABLE,
        (insufficient(HUGE_PAGE_A),),
    ),
    ("no resources requested always fits", make_pod("p", containers=[]), res(10, 20), {}, None, ()),
    (
        "too many resources fails",
        resource_pod(res(1, 1)),
        res(10, 20),
        {},
        UNSCHED,
        (insufficient("cpu"), insufficient("memory")),
    ),
    (
        "too many resources fails due to init container cpu",
        resource_pod(res(1, 1), init=(res(3, 1),)),
        res(8, 19),
        {},
        UNSCHED,
        (insufficient("cpu"),),
    ),
    (
        "too many resources fails due to highest init container cpu",
        resource_pod(res(1, 1), init=(res(3, 1), res(2, 1))),
        res(8, 19),
        {},
        UNSCHED,
        (insufficient("cpu"),),
    ),
    (
        "too many resources fails due to init container memory",
        resource_pod(res(1, 1), init=(res(1, 3),)),
        res(9, 19),
        {},
        UNSCHED,
        (insufficient("memory"),),
    ),
    (
        "too many resources fails due to highest init container memory",
        resource_pod(res(1, 1), init=(res(1, 3), res(1, 2))),
        res(9, 19),
        {},
        UNSCHED,
        (insufficient("memory"),),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        resource_pod(res(1, 1), init=(res(1, 1),)),
        res(9, 19),
        {},
        None,
        (),
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        resource_pod(res(1, 1), init=(res(1, 1), res(1, 1))),
        res(9, 19),
        {},
        None,
        (),
    ),
    ("both resources fit", resource_pod(res(1, 1)), res(5, 5), {}, None, ()),
    (
        "one resource memory fits",
        resource_pod(res(2, 1)),
        res(9, 5),
        {},
        UNSCHED,
        (insufficient("cpu"),),
    ),
    (
        "one resource cpu fits",
        resource_pod(res(1, 2)),
        res(5, 19),
        {},
        UNSCHED,
        (insufficient("memory"),),
    ),
    ("equal edge case", resource_pod(res(5, 1)), res(5, 19), {}, None, ()),
    (
        "equal edge case for init container",
        resource_pod(res(4, 1), init=(res(5, 1),)),
        res(5, 19),
        {},
        None,
        (),
    ),
    ("extended resource fits", resource_pod(res(ext_a=1)), res(), {}, None, ()),
    (
        "extended resource fits for init container",
        resource_pod(res(), init=(res(ext_a=1),)),
        res(),
        {},
        None,
        (),
    ),
    (
        "extended resource capacity enforced",
        resource_pod(res(1, 1, ext_a=10)),
        res(0, 0, ext_a=0),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource capacity enforced for init container",
        resource_pod(res(), init=(res(1, 1, ext_a=10),)),
        res(0, 0, ext_a=0),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource allocatable enforced",
        resource_pod(res(1, 1, ext_a=1)),
        res(0, 0, ext_a=5),
        {},
        UNSCHED,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource allocatable enforced for init container",
        resource_pod(res(), init=(res(1, 1, ext_a=1),)),
        res(0, 0, ext_a=5),
        {},
        UNSCHED,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        resource_pod(res(1, 1, ext_a=3), res(1, 1, ext_a=3)),
        res(0, 0, ext_a=2),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        resource_pod(res(), init=(res(1, 1, ext_a=3), res(1, 1, ext_a=3))),
        res(0, 0, ext_a=2),
        {},
        None,
        (),
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        resource_pod(res(), init=(res(1, 1, ext_a=6), res(1, 1, ext_a=3))),
        res(0, 0, ext_a=2),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_A),),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        resource_pod(res(1, 1, ext_b=1)),
        res(),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_B),),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        resource_pod(res(), init=(res(1, 1, ext_b=1),)),
        res(),
        {},
        UNRESOLVABLE,
        (insufficient(EXT_B),),
    ),
    (
        "kubernetes.io resource capacity enforced",
        resource_pod(res(1, 1, k8s_io_a=10)),
        res(),
        {},
        UNRESOLVABLE,
        (insufficient(K8S_IO_A),),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        resource_pod(res(), init=(res(1, 1, k8s_io_b=10),)),
        res(),
        {},
        UNRESOLVABLE,
        (insufficient(K8S_IO_B),),
    ),
    (
        "hugepages resource capacity enforced",
        resource_pod(res(1, 1, huge_page_a=10)),
        res(0, 0, huge_page_a=0),
        {},
        UNRESOLVABLE,
        (insufficient(HUGE_PAGE_A),),
    ),
    (
        "hugepages resource capacity enforced for init container",
        resource_pod(res(), init=(res(1, 1, huge_page_a=10),)),
        res(0, 0, huge_page_a=0),
        {},
        UNRESOLVABLE,
        (insufficient(HUGE_PAGE_A),),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        resource_pod(res(1, 1, huge_page_a=3), res(1, 1, huge_page_a=3)),
        res(0, 0, huge_page_a=2),
        {},
        UNRESOLVABLE,
        (insufficient(HUGE_PAGE_A),),
    ),
    (
        "skip checking ignored extended resource",
        resource_pod(res(1, 1, ext_b=1)),
        res(),
        {"ignoredResources": [EXT_B]},
        None,
        (),
    ),
    (
        "resources + pod overhead fits",
        resource_pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        res(5, 5),
        {},
        None,
        (),
    ),
    (
        "requests + overhead does not fit for memory",
        resource_pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        res(5, 5),
        {},
        UNSCHED,
        (insufficient("memory"),),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        resource_pod(res(1, 1, ext_b=1, k8s_io_a=1)),
        res(),
        {"ignoredResourceGroups": ["example.com"]},
        UNRESOLVABLE,
        (insufficient(K8S_IO_A),),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        resource_pod(res(1, 1, ext_a=0)),
        res(0, 0, ext_a=6),
        {},
        None,
        (),
    ),
    (
        "skip checking resource request with quantity zero",
        resource_pod(res(ext_a=1)),
        res(20, 30, ext_a=1),
        {},
        None,
        (),
    ),
    (
        "extended resource backed by DRA not enabled",
        resource_pod(res(1, 1, dra_like=1)),
        res(),
        {},
        UNRESOLVABLE,
        (insufficient(DRA_LIKE),),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "args", "code", "reasons"),
    [case[1:] for case in ENOUGH_REQUESTS],
    ids=[case[0] for case in ENOUGH_REQUESTS],
)
def test_enough_requests(
    pod: PodInfo,
    existing: dict[str, str],
    args: dict[str, Any],
    code: Code | None,
    reasons: tuple[str, ...],
) -> None:
    node = fit_node(resource_pod(existing, name="existing"))
    status = run_filter(pod, node, NodeResourcesFitArgs.model_validate(args))
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, reasons)


@pytest.mark.parametrize(
    ("pod", "existing"),
    [
        (make_pod("p", containers=[]), res(10, 20)),
        (resource_pod(res(1, 1)), res(5, 5)),
        (resource_pod(res(5, 1)), res(5, 19)),
        (resource_pod(res(5, 1), init=(res(5, 1),)), res(5, 19)),
    ],
    ids=[
        "even without specified resources, predicate fails when there's no space for "
        "additional pod",
        "even if both resources fit, predicate fails when there's no space for additional pod",
        "even for equal edge case, predicate fails when there's no space for additional pod",
        "even for equal edge case, predicate fails when there's no space for additional pod "
        "due to init container",
    ],
)
def test_not_enough_requests(pod: PodInfo, existing: dict[str, str]) -> None:
    node = make_node(
        "machine", cpu="10m", memory="20", pods="1", pods_on=[resource_pod(existing, name="e")]
    )
    status = run_filter(pod, node)
    assert status is not None
    assert (status.code, status.reasons) == (UNSCHED, ("Too many pods",))


def test_too_many_pods_is_listed_with_insufficient_resources() -> None:
    node = make_node("machine", cpu="10m", memory="20", pods="1", pods_on=[resource_pod(res(9))])
    status = run_filter(resource_pod(res(2, 1)), node)
    assert status is not None
    assert (status.code, status.reasons) == (UNSCHED, ("Too many pods", "Insufficient cpu"))


@pytest.mark.parametrize(
    ("pod", "existing", "code"),
    [
        (resource_pod(res(1, 1)), res(2, 10), None),
        (resource_pod(res(storage=25)), res(2, 2), UNRESOLVABLE),
        (resource_pod(res(storage=5)), res(2, 2, storage=10), None),
        (resource_pod(res(storage=10)), res(2, 2), None),
    ],
    ids=[
        "empty storage requested, and pod fits",
        "storage ephemeral local storage request exceeds allocatable",
        "ephemeral local storage is sufficient",
        "pod fits",
    ],
)
def test_storage_requests(pod: PodInfo, existing: dict[str, str], code: Code | None) -> None:
    status = run_filter(pod, fit_node(resource_pod(existing)))
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, (insufficient("ephemeral-storage"),))


def _sidecar_pod(request: dict[str, str] | None, sidecar: dict[str, str] | None) -> PodInfo:
    regular: dict[str, Any] = {"name": "regular", "image": "pause"}
    if request:
        regular["resources"] = {"requests": request}
    restartable: dict[str, Any] = {
        "name": "restartable-init",
        "image": "pause",
        "restartPolicy": "Always",
    }
    if sidecar:
        restartable["resources"] = {"requests": sidecar}
    return make_pod("p", containers=[regular], initContainers=[restartable])


@pytest.mark.parametrize(
    ("pod", "code"),
    [
        (make_pod("p"), None),
        (_sidecar_pod(None, None), None),
        (_sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), None),
        (_sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}), UNRESOLVABLE),
    ],
    ids=[
        "allow pod without restartable init containers",
        "allow pod with restartable init containers",
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
    ],
)
def test_restartable_init_containers(pod: PodInfo, code: Code | None) -> None:
    node = make_node("machine", cpu="2m", memory="0", pods="1")
    status = run_filter(pod, node)
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, (insufficient("cpu"),))


def test_filter_without_pre_filter_is_an_error() -> None:
    plugin = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    status = plugin.filter(CycleState(), make_pod(), make_node())
    assert status is not None
    assert status.code == Code.ERROR
    assert PRE_FILTER_STATE_KEY in status.message()


def test_pre_filter_never_skips_and_has_no_extensions() -> None:
    plugin = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    state = CycleState()
    assert plugin.pre_filter(state, make_pod("p", containers=[]), []) == (None, None)
    assert state.get(PRE_FILTER_STATE_KEY) is not None
    assert plugin.pre_filter_extensions() is None


# -- Score ------------------------------------------------------------------------------------


def empty_pod(name: str = "p") -> PodInfo:
    """``st.MakePod().Obj()``: no containers at all, so no non-zero defaults either."""
    return make_pod(name, containers=[])


def req_pod(*requests: dict[str, str], name: str = "p") -> PodInfo:
    """``st.MakePod().Req(...).Req(...)``: one container per request map (quantities as-is)."""
    return make_pod(name, containers=containers(*requests))


def cap_node(
    name: str, cpu: str = "0", memory: str = "0", pods_on: list[PodInfo] | None = None, **extra: str
) -> NodeInfo:
    """``st.MakeNode().Capacity(...)`` (no capacity given means zero)."""
    return make_node(name, cpu=cpu, memory=memory, extra=extra, pods_on=pods_on)


def strategy(
    kind: str, resources: list[dict[str, Any]] | None = None, **more: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, **more}
    if resources is not None:
        out["resources"] = resources
    return {"scoringStrategy": out}


DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_RESOURCE_SET = [*DEFAULT_RESOURCES, {"name": EXTENDED_RES, "weight": 1}]


def scores(
    args: dict[str, Any], pod: PodInfo, nodes: list[NodeInfo], run_pre_score: bool = True
) -> list[int]:
    plugin = NodeResourcesFit(NodeResourcesFitArgs.model_validate(args), None)  # type: ignore[arg-type]
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, nodes) is None
    return [plugin.score(state, pod, node) for node in nodes]


def _two_nodes_with_pods() -> list[NodeInfo]:
    return [
        cap_node("node1", "4000", "10000", [req_pod({"cpu": "2000", "memory": "4000"})]),
        cap_node("node2", "6000", "10000", [req_pod({"cpu": "1000", "memory": "2000"})]),
    ]


def _sidecar_nodes() -> list[NodeInfo]:
    with_sidecar = make_pod(
        "existing",
        containers=containers({"cpu": "1000", "memory": "2000"}),
        initContainers=[
            {
                "name": "sidecar",
                "image": "pause",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "1000", "memory": "2000"}},
            }
        ],
    )
    return [
        cap_node("node1", "4000", "10000", [with_sidecar]),
        cap_node("node2", "4000", "10000", [req_pod({"cpu": "1000", "memory": "2000"})]),
    ]


RTCR_LEAST = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}
RTCR_MOST = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["PreScore", "no PreScore"])
@pytest.mark.parametrize(
    ("args", "pod", "nodes", "expected"),
    [
        (
            strategy(
                "RequestedToCapacityRatio", DEFAULT_RESOURCES, requestedToCapacityRatio=RTCR_LEAST
            ),
            req_pod({"cpu": "3000", "memory": "5000"}),
            _two_nodes_with_pods,
            [10, 32],
        ),
        (
            strategy(
                "RequestedToCapacityRatio", DEFAULT_RESOURCES, requestedToCapacityRatio=RTCR_MOST
            ),
            req_pod({"cpu": "3000", "memory": "5000"}),
            _two_nodes_with_pods,
            [95, 68],
        ),
        (
            strategy("MostAllocated", DEFAULT_RESOURCES),
            req_pod({"cpu": "1000", "memory": "2000"}),
            _two_nodes_with_pods,
            [67, 36],
        ),
        (
            strategy("LeastAllocated", DEFAULT_RESOURCES),
            req_pod({"cpu": "1000", "memory": "2000"}),
            _two_nodes_with_pods,
            [32, 63],
        ),
        (
            strategy("MostAllocated", DEFAULT_RESOURCES),
            req_pod({"cpu": "1000", "memory": "2000"}),
            _sidecar_nodes,
            [67, 45],
        ),
        (
            strategy("LeastAllocated", DEFAULT_RESOURCES),
            req_pod({"cpu": "1000", "memory": "2000"}),
            _sidecar_nodes,
            [32, 55],
        ),
    ],
    ids=[
        "RequestedToCapacityRatio case1",
        "RequestedToCapacityRatio case2",
        "MostAllocated",
        "LeastAllocated",
        "MostAllocated with sidecar container",
        "LeastAllocated with sidecar container",
    ],
)
def test_fit_score(
    args: dict[str, Any],
    pod: PodInfo,
    nodes: Any,
    expected: list[int],
    run_pre_score: bool,
) -> None:
    assert scores(args, pod, nodes(), run_pre_score) == expected


def test_default_args_score_least_allocated_on_cpu_and_memory() -> None:
    assert scores({}, req_pod({"cpu": "1000", "memory": "2000"}), _two_nodes_with_pods()) == [
        32,
        63,
    ]


TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


def _pods_on(*requests: dict[str, str]) -> list[PodInfo]:
    return [req_pod(r, name=f"e{i}") for i, r in enumerate(requests)]


LEAST_ALLOCATED = [
    (
        "nothing scheduled, nothing requested",
        empty_pod(),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "4000", "10000")],
        DEFAULT_RESOURCES,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        req_pod(*TWO_CONTAINERS),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
        DEFAULT_RESOURCES,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        empty_pod(),
        lambda: [
            cap_node("node1", "4000", "10000", [empty_pod("a"), empty_pod("b")]),
            cap_node("node2", "4000", "10000", [empty_pod("c"), empty_pod("d")]),
        ],
        DEFAULT_RESOURCES,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        empty_pod(),
        lambda: [
            cap_node(
                "node1",
                "10000",
                "20000",
                _pods_on({"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "0"}),
            ),
            cap_node(
                "node2",
                "10000",
                "20000",
                _pods_on({"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "5000"}),
            ),
        ],
        DEFAULT_RESOURCES,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        req_pod(*TWO_CONTAINERS),
        lambda: [
            cap_node("node1", "10000", "20000", _pods_on({"cpu": "3000", "memory": "0"})),
            cap_node("node2", "10000", "20000", _pods_on({"cpu": "3000", "memory": "5000"})),
        ],
        DEFAULT_RESOURCES,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        req_pod(*TWO_CONTAINERS),
        lambda: [
            cap_node("node1", "10000", "20000", _pods_on({"cpu": "3000", "memory": "0"})),
            cap_node("node2", "10000", "50000", _pods_on({"cpu": "3000", "memory": "5000"})),
        ],
        DEFAULT_RESOURCES,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        req_pod({"cpu": "3000", "memory": "0"}),
        lambda: [
            cap_node("node1", "4000", "10000", _pods_on({"cpu": "3000", "memory": "0"})),
            cap_node("node2", "4000", "10000", _pods_on({"cpu": "3000", "memory": "5000"})),
        ],
        DEFAULT_RESOURCES,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        empty_pod(),
        lambda: [
            cap_node("node1", pods_on=_pods_on({"cpu": "3000", "memory": "0"})),
            cap_node("node2", pods_on=_pods_on({"cpu": "3000", "memory": "5000"})),
        ],
        DEFAULT_RESOURCES,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized nodes",
        req_pod(*TWO_CONTAINERS),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        req_pod(*TWO_CONTAINERS),
        lambda: [
            cap_node("node1", "6000", "10000"),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "4"}),
        ],
        EXTENDED_RESOURCE_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        req_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}),
        lambda: [
            cap_node("node1", "6000", "10000", **{EXTENDED_RES: "4"}),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "10"}),
        ],
        EXTENDED_RESOURCE_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        req_pod({"cpu": "3000", "memory": "4000"}),
        lambda: [
            cap_node("node1", "6000", "10000"),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "4"}),
        ],
        [{"name": EXTENDED_RES, "weight": 2}, *DEFAULT_RESOURCES],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "expected"),
    [case[1:] for case in LEAST_ALLOCATED],
    ids=[case[0] for case in LEAST_ALLOCATED],
)
def test_least_allocated_scoring_strategy(
    pod: PodInfo, nodes: Any, resources: list[dict[str, Any]], expected: list[int]
) -> None:
    assert scores(strategy("LeastAllocated", resources), pod, nodes()) == expected


MOST_ALLOCATED = [
    (
        "nothing scheduled, nothing requested",
        empty_pod(),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "4000", "10000")],
        DEFAULT_RESOURCES,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        req_pod(*TWO_CONTAINERS),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
        DEFAULT_RESOURCES,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        empty_pod(),
        lambda: [
            cap_node(
                "node1",
                "10000",
                "20000",
                _pods_on({"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "0"}),
            ),
            cap_node(
                "node2",
                "10000",
                "20000",
                _pods_on({"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "5000"}),
            ),
        ],
        DEFAULT_RESOURCES,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        req_pod(*TWO_CONTAINERS),
        lambda: [
            cap_node("node1", "10000", "20000", _pods_on({"cpu": "3000", "memory": "0"})),
            cap_node("node2", "10000", "20000", _pods_on({"cpu": "3000", "memory": "5000"})),
        ],
        DEFAULT_RESOURCES,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        req_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        lambda: [cap_node("node1", "5000", "10000"), cap_node("node2", "10000", "9000")],
        DEFAULT_RESOURCES,
        [95, 75],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes, weighted",
        req_pod(*TWO_CONTAINERS),
        lambda: [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        make_pod("p"),
        lambda: [
            cap_node("node1", "250m", "1000Mi", [make_pod("a"), make_pod("b")]),
            cap_node("node2", "250m", "1000Mi"),
        ],
        DEFAULT_RESOURCES,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        req_pod(*TWO_CONTAINERS),
        lambda: [
            cap_node("node1", "6000", "10000"),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "4"}),
        ],
        EXTENDED_RESOURCE_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        req_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}),
        lambda: [
            cap_node("node1", "6000", "10000", **{EXTENDED_RES: "4"}),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "10"}),
        ],
        EXTENDED_RESOURCE_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        req_pod({"cpu": "3000", "memory": "4000"}),
        lambda: [
            cap_node("node1", "6000", "10000"),
            cap_node("node2", "6000", "10000", **{EXTENDED_RES: "4"}),
        ],
        [{"name": EXTENDED_RES, "weight": 2}, *DEFAULT_RESOURCES],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "expected"),
    [case[1:] for case in MOST_ALLOCATED],
    ids=[case[0] for case in MOST_ALLOCATED],
)
def test_most_allocated_scoring_strategy(
    pod: PodInfo, nodes: Any, resources: list[dict[str, Any]], expected: list[int]
) -> None:
    assert scores(strategy("MostAllocated", resources), pod, nodes()) == expected


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"),
    [
        (
            empty_pod(),
            lambda: [
                cap_node("node1", "4000", "10000", [empty_pod("a"), empty_pod("b")]),
                cap_node("node2", "4000", "10000"),
            ],
            [100, 100],
        ),
        (
            req_pod(*TWO_CONTAINERS),
            lambda: [
                cap_node("node1", "4000", "10000", [empty_pod("a"), empty_pod("b")]),
                cap_node("node2", "6000", "10000"),
            ],
            [38, 50],
        ),
        (
            empty_pod(),
            lambda: [
                cap_node("node1", "4000", "10000", _pods_on({"cpu": "3000", "memory": "5000"})),
                cap_node("node2", "6000", "10000", _pods_on({"cpu": "3000", "memory": "5000"})),
            ],
            [38, 50],
        ),
    ],
    ids=[
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        "nothing scheduled, resources requested, differently sized nodes (default - least "
        "requested nodes have priority)",
        "no resources requested, pods scheduled with resources (default - least requested "
        "nodes have priority)",
    ],
)
def test_requested_to_capacity_ratio_scoring_strategy(
    pod: PodInfo, nodes: Any, expected: list[int]
) -> None:
    args = strategy(
        "RequestedToCapacityRatio", DEFAULT_RESOURCES, requestedToCapacityRatio=RTCR_LEAST
    )
    assert scores(args, pod, nodes(), run_pre_score=False) == expected


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                *[(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2)],
                *[(89, 8), (90, 9), (99, 9), (100, 9), (110, 9)],
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    fn = broken_linear(points)
    for p, expected in assertions:
        assert fn(p) == expected, p


def test_broken_linear_function_truncates_toward_zero_on_falling_segments() -> None:
    # Go's int64 division: 10 + (-10 * 10) / 60 = 10 + (-1) = 9, not 10 + floor(-1.67) = 8.
    assert broken_linear([(0, 2), (40, 10), (100, 0)])(50) == 9


def _bin_node(name: str, extended: dict[str, str]) -> NodeInfo:
    """Upstream test_util ``makeNode(name, 4000, 10000*1024*1024, extended)``."""
    return make_node(name, cpu="4000m", memory=str(10000 * 1024 * 1024), extra=extended)


def _bin_nodes(existing: PodInfo | None = None) -> list[NodeInfo]:
    node2 = _bin_node("node2", {"intel.com/foo": "4"})
    if existing is not None:
        node2.add_pod(existing)
    return [_bin_node("node1", {"intel.com/foo": "8"}), node2]


BIN_PACKING = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}


@pytest.mark.parametrize(
    ("pod", "existing", "expected"),
    [
        (empty_pod(), None, [0, 0]),
        (req_pod({"intel.com/foo": "2"}), empty_pod("e"), [2, 5]),
        (req_pod({"intel.com/foo": "2"}), req_pod({"intel.com/foo": "2"}, name="e"), [2, 10]),
        (req_pod({"intel.com/foo": "4"}), empty_pod("e"), [5, 10]),
    ],
    ids=[
        "nothing scheduled, nothing requested",
        "resources requested, pods scheduled with less resources",
        "resources requested, pods scheduled with resources, on node with existing pod running",
        "resources requested, pods scheduled with more resources",
    ],
)
def test_resource_bin_packing_single_extended(
    pod: PodInfo, existing: PodInfo | None, expected: list[int]
) -> None:
    args = strategy(
        "RequestedToCapacityRatio",
        [{"name": "intel.com/foo", "weight": 1}],
        requestedToCapacityRatio=BIN_PACKING,
    )
    assert scores(args, pod, _bin_nodes(existing), run_pre_score=False) == expected


def _multi_nodes(existing: PodInfo | None = None) -> list[NodeInfo]:
    node2 = _bin_node("node2", {"intel.com/foo": "4", "intel.com/bar": "8"})
    if existing is not None:
        node2.add_pod(existing)
    return [_bin_node("node1", {"intel.com/foo": "8", "intel.com/bar": "4"}), node2]


POD1 = {"intel.com/foo": "2", "intel.com/bar": "2"}
POD2 = {"intel.com/foo": "4", "intel.com/bar": "2"}


@pytest.mark.parametrize(
    ("pod", "existing", "expected"),
    [
        (empty_pod(), None, [0, 0]),
        (req_pod(POD1), empty_pod("e"), [4, 3]),
        (req_pod(POD1), req_pod(POD2, name="e"), [4, 7]),
        (req_pod(POD2), empty_pod("e"), [5, 5]),
    ],
    ids=[
        "nothing scheduled, nothing requested",
        "resources requested, pods scheduled with less resources",
        "resources requested, pods scheduled with resources, on node with existing pod running",
        "resources requested, pods scheduled with more resources",
    ],
)
def test_resource_bin_packing_multiple_extended(
    pod: PodInfo, existing: PodInfo | None, expected: list[int]
) -> None:
    args = strategy(
        "RequestedToCapacityRatio",
        [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
        requestedToCapacityRatio=BIN_PACKING,
    )
    assert scores(args, pod, _multi_nodes(existing), run_pre_score=False) == expected


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    # cpu 75% -> 25, memory 50% -> 50: (25 + 50) / 2 = 37.5 rounds to 38 as Go's math.Round.
    args = strategy("RequestedToCapacityRatio", requestedToCapacityRatio=RTCR_LEAST)
    nodes = [cap_node("node1", "4000", "10000")]
    assert scores(args, req_pod(*TWO_CONTAINERS), nodes) == [38]


def test_resources_outside_the_scalar_map_are_not_scored() -> None:
    # "pods" and "storage" are never in upstream's scalar map: only cpu counts here.
    args = strategy(
        "MostAllocated",
        [{"name": "pods", "weight": 1}, {"name": "storage", "weight": 1}, {"name": "cpu"}],
    )
    node = make_node("n", cpu="4", memory="8Gi", pods="10", extra={"storage": "10"})
    assert scores(args, req_pod({"cpu": "1", "storage": "5"}), [node]) == [25]


# -- args -------------------------------------------------------------------------------------


def test_default_args() -> None:
    args = NodeResourcesFitArgs.model_validate({})
    assert args.model_dump(by_alias=True, exclude_none=True) == {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": DEFAULT_RESOURCES},
    }


def test_v1_defaulting_of_resources_and_weights() -> None:
    args = NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": None}}
    )
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    args = NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    )
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1)]
    assert NodeResourcesFitArgs.model_validate({"scoringStrategy": None}).scoring_strategy.type == (
        "LeastAllocated"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
                }
            },
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory "
            "not in valid range (0, 100]",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of cpu "
            "not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Invalid"}},
            'scoringStrategy.type: Unsupported value: "Invalid": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {"ignoredResources": ["example.com/aaa", "_bad"]},
            'ignoredResources[1]: Invalid value: "_bad": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {"ignoredResourceGroups": ["example.com/aaa"]},
            'ignoredResourceGroups[0]: Invalid value: "example.com/aaa": resource group name '
            "can't contain '/'",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point "
            "must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": -1, "score": 1},
                            {"utilization": 101, "score": 11},
                        ]
                    },
                }
            },
            "[scoringStrategy.requestedToCapacityRatio.shape[0].utilization: Invalid value: -1: "
            "not in valid range [0, 100], "
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 101: "
            "not in valid range [0, 100], "
            "scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: "
            "not in valid range [0, 10]]",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: a shape is needed for "
            "type RequestedToCapacityRatio",
        ),
    ],
    ids=[
        "resource with negative weight",
        "resource weight larger than MaxNodeScore",
        "unsupported scoring strategy",
        "invalid ignored resource",
        "resource group with a slash",
        "empty shape",
        "shape not sorted",
        "shape out of range",
        "missing shape",
    ],
)
def test_args_validation(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        NodeResourcesFitArgs.model_validate(raw)
    assert [e["msg"].removeprefix("Value error, ") for e in exc.value.errors()] == [message]


def test_args_reject_unknown_fields_and_strings_for_ints() -> None:
    with pytest.raises(ValidationError):
        NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type": "LeastAllocated", "x": 1}})
    with pytest.raises(ValidationError):
        NodeResourcesFitArgs.model_validate(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": "1"}],
                }
            }
        )


def test_registered_extension_points() -> None:
    registry = Registry(builtin_plugins())
    assert registry["NodeResourcesFit"].extension_points == {
        "preFilter",
        "filter",
        "preScore",
        "score",
    }
