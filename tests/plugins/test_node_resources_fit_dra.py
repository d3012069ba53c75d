"""NodeResourcesFit with extended resources backed by devices (DRAExtendedResource, GA and
locked on in v1.37): upstream noderesources/fit_test.go's DRA cases (TestEnoughRequests,
TestFitScore, Test_isSchedulableAfterDeviceClassChange, TestHaveAnyRequestedResources
Increased) against a real DraStore, and a few of ours."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from builders import make_node, make_pod
from multisched.cache import Cache, NodeInfo, PodInfo, Snapshot
from multisched.framework import Code, CycleState, Status
from multisched.framework.events import QueueingHint
from multisched.plugins._fit_hints import any_requested_resource_increased
from multisched.plugins.node_resources_fit import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    is_schedulable_after_device_class_event,
)
from multisched.scheduler.batching import SIGNERS

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
DRA = "extended.resource.dra.io/something"
CLASS = "device-class-name"
IMPLICIT = "deviceclass.resource.kubernetes.io/" + CLASS
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def device_class(name: str = CLASS, extended: str | None = DRA, **spec: Any) -> dict[str, Any]:
    if extended is not None:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def resource_slice(node: str, *devices: str, driver: str = "test-driver") -> dict[str, Any]:
    """``st.MakeResourceSlice(node, driver).Device(...)``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "nodeName": node,
            "driver": driver,
            "pool": {"name": node, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices],
        },
    }


def handle_with(*objects: dict[str, Any]) -> Any:
    """A handle whose snapshot's DRA store holds ``objects``."""
    cache = Cache()
    for obj in objects:
        cache.dra.upsert(obj["kind"], obj)
    return SimpleNamespace(snapshot=Snapshot(cache))


def pod_requesting(name: str = "p", **requests: str) -> PodInfo:
    return make_pod(name, requests=dict(requests))


def req(**named: str) -> dict[str, str]:
    names = {"ext_a": EXT_A, "ext_b": EXT_B, "dra": DRA, "implicit": IMPLICIT}
    return {names.get(k, k): v for k, v in named.items()}


def node(existing: PodInfo | None = None, **extra: str) -> NodeInfo:
    """``makeAllocatableResources(10, 20, 32, 5, 20, 5)`` (extendedResourceA: 5)."""
    return make_node(
        "machine",
        cpu="10m",
        memory="20",
        pods="32",
        extra={EXT_A: "5", "ephemeral-storage": "20", "hugepages-2Mi": "5", **extra},
        pods_on=[existing] if existing is not None else [],
    )


def run_filter(plugin: NodeResourcesFit, pod: PodInfo, info: NodeInfo) -> Status | None:
    state = CycleState()
    assert plugin.pre_filter(state, pod, [info]) == (None, None)
    status = plugin.filter(state, pod, info)
    # The batch path gives the same answer.
    batch = plugin.filter_nodes(state, pod, [info])
    assert (batch.get(0) is None) == (status is None)
    return status


# -- TestEnoughRequests, the DRA cases -----------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "existing", "with_class", "code", "reason"),
    [
        pytest.param(
            make_pod("p", requests=req(ext_a="1")),
            None,
            True,
            None,
            "",
            id="extended resource backed by device plugin",
        ),
        pytest.param(
            make_pod("p", requests=req(cpu="1m", memory="1", dra="1")),
            make_pod("e", requests=req(cpu="0", memory="0")),
            True,
            None,
            "",
            id="extended resource backed by DRA",
        ),
        pytest.param(
            make_pod("p", requests=req(cpu="1m", memory="1", dra="1")),
            make_pod("e", requests=req(cpu="0", memory="0")),
            False,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"Insufficient {DRA}",
            id="extended resource backed by DRA not enabled (no DeviceClass)",
        ),
        pytest.param(
            make_pod("p", requests=req(cpu="1m", memory="1", ext_b="1")),
            make_pod("e", requests=req(cpu="0", memory="0")),
            True,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"Insufficient {EXT_B}",
            id="extended resource NOT backed by DRA",
        ),
        pytest.param(
            make_pod("p", requests=req(dra="1")),
            make_pod("e", requests=req(dra="0")),
            True,
            None,
            "",
            id="extended resource was backed by Device Plugin (Allocatable: 0)",
        ),
        pytest.param(
            make_pod("p", requests=req(ext_a="1")),
            make_pod("e", requests=req(ext_a="0")),
            True,
            None,
            "",
            id="extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        ),
        # Ours: the class's implicit name is backed as well.
        pytest.param(
            make_pod("p", requests=req(implicit="2")),
            None,
            True,
            None,
            "",
            id="implicit extended resource name backed by DRA",
        ),
    ],
)
def test_enough_requests_with_dra(
    pod: PodInfo, existing: PodInfo | None, with_class: bool, code: Code | None, reason: str
) -> None:
    objects = [device_class()] if with_class else [resource_slice("machine", "d")]
    plugin = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(*objects))
    status = run_filter(plugin, pod, node(existing))
    if code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, (reason,))


def test_extended_resource_backed_by_dra_with_nil_dra_manager() -> None:
    """ "extended resource backed by DRA, nil draManager": a plugin without a DRA store
    judges every extended resource itself (extendedResourceA: 5 fits)."""
    plugin = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    assert run_filter(plugin, make_pod("p", requests=req(cpu="1m", ext_a="1")), node()) is None
    status = run_filter(plugin, make_pod("p", requests=req(dra="1")), node())
    assert status is not None and status.reasons == (f"Insufficient {DRA}",)


def test_a_node_advertising_the_resource_is_judged_by_its_allocatable() -> None:
    """Ours: a node whose device plugin advertises the resource is not left to DRA, even
    when a DeviceClass backs the name (upstream shouldDelegateResourceToDRA)."""
    plugin = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(device_class()))
    pod = make_pod("p", requests=req(dra="2"))
    status = run_filter(plugin, pod, node(**{DRA: "1"}))
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"Insufficient {DRA}",)
    assert run_filter(plugin, pod, node(**{DRA: "2"})) is None


def test_ignored_resources_are_ignored_before_dra_is_asked() -> None:
    args = NodeResourcesFitArgs.model_validate({"ignoredResources": [EXT_B]})
    plugin = NodeResourcesFit(args, handle_with(device_class(extended=EXT_B)))
    assert run_filter(plugin, make_pod("p", requests=req(ext_b="3")), node()) is None


# -- TestFitScore, the DRA cases -------------------------------------------------------------


def _score_plugin(*extra: dict[str, Any], strategy: str = "LeastAllocated") -> NodeResourcesFit:
    args = NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": {"type": strategy, "resources": [{"name": DRA, "weight": 1}]}}
    )
    return NodeResourcesFit(
        args,
        handle_with(
            device_class(),
            resource_slice("node1", "device-1", "device-2", "device-3"),
            resource_slice("node2", "device-1", "device-2"),
            *extra,
        ),
    )


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["PreScore", "no PreScore"])
def test_least_allocated_with_extended_resources(run_pre_score: bool) -> None:
    """ "test case for ScoringStrategy LeastAllocated with Extended resources" (and "... if
    PreScore is not called"): node1 has 3 devices, node2 2; the pod asks for one."""
    plugin = _score_plugin()
    pod = make_pod("p", requests=req(dra="1"))
    nodes = [make_node("node1"), make_node("node2")]
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, nodes) is None
    assert [plugin.score(state, pod, n) for n in nodes] == [66, 50]
    assert plugin.score_nodes(state, pod, nodes) == [66, 50]


def test_allocated_devices_count_as_requested() -> None:
    """Ours: a claim holding one of node1's devices leaves 1 of 3 free after the pod's:
    (3 - 2) * 100 / 3; MostAllocated scores the same usage the other way."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default", "uid": "c1"},
        "spec": {},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "test-driver",
                            "pool": "node1",
                            "device": "device-2",
                        }
                    ]
                }
            }
        },
    }
    pod = make_pod("p", requests=req(dra="1"))
    nodes = [make_node("node1"), make_node("node2")]
    least = _score_plugin(claim)
    assert least.score_nodes(CycleState(), pod, nodes) == [33, 50]
    most = _score_plugin(claim, strategy="MostAllocated")
    assert most.score_nodes(CycleState(), pod, nodes) == [66, 50]


def test_class_selectors_pick_the_devices_counted() -> None:
    """Ours: only devices the class's CEL selectors match are the resource's capacity."""
    selective = device_class(selectors=[{"cel": {"expression": 'device.driver == "other"'}}])
    plugin = NodeResourcesFit(
        NodeResourcesFitArgs.model_validate(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": DRA}]}}
        ),
        handle_with(
            selective,
            resource_slice("node1", "a", "b", "c", "d"),
            resource_slice("node1", "x", "y", driver="other"),
        ),
    )
    pod = make_pod("p", requests=req(dra="1"))
    assert plugin.score_nodes(CycleState(), pod, [make_node("node1")]) == [50]


# -- Test_isSchedulableAfterDeviceClassChange -------------------------------------------------


def _scalar_pod(**requests: str) -> PodInfo:
    return make_pod("p", requests=req(**requests))


def _class(name: str = "", extended: str | None = None) -> dict[str, Any]:
    spec = {} if extended is None else {"extendedResourceName": extended}
    return {"metadata": {"name": name}, "spec": spec}


GPU = "example.com/gpu"
GPU_CLASS_IMPLICIT = {"deviceclass.resource.kubernetes.io/gpuclass": "1"}


@pytest.mark.parametrize(
    ("pod", "old", "new", "hint"),
    [
        pytest.param(_scalar_pod(memory="2"), _class(), _class(), SKIP,
                     id="skip-queue-on-class-nil-extended-resource-name-pointer"),
        pytest.param(_scalar_pod(memory="2"), _class(extended=GPU), _class(extended=GPU), SKIP,
                     id="skip-queue-on-class-same-extended-resource-name-pointer"),
        pytest.param(_scalar_pod(memory="2"), _class(extended=GPU), _class(extended=GPU), SKIP,
                     id="skip-queue-on-class-same-extended-resource-name"),
        pytest.param(make_pod("p", requests=GPU_CLASS_IMPLICIT), None,
                     _class("gpuclass", GPU), QUEUE,
                     id="queue-on-class-add-with-implicit-extended-resource-name"),
        pytest.param(make_pod("p", requests=GPU_CLASS_IMPLICIT), None,
                     _class("myclass", GPU), SKIP,
                     id="skip-on-class-add-with-implicit-extended-resource-name-not-matching"),
        pytest.param(make_pod("p", requests={"example.com/othergpu": "1"}), None,
                     _class("myclass", GPU), SKIP,
                     id="skip-on-class-add-with-explicit-extended-resource-name-not-matching"),
        pytest.param(make_pod("p", requests=GPU_CLASS_IMPLICIT), _class("gpuclass"),
                     _class("gpuclass", GPU), SKIP,
                     id="skip-on-class-update-with-implicit-extended-resource-name"),
        pytest.param(make_pod("p", requests={GPU: "1"}), None, _class(extended=GPU), QUEUE,
                     id="queue-on-class-add-with-extended-resource-name"),
        pytest.param(make_pod("p", requests={GPU: "1"}), _class(extended=GPU + "1"),
                     _class(extended=GPU), QUEUE,
                     id="queue-on-class-update-with-extended-resource-name"),
    ],
)  # fmt: skip
def test_is_schedulable_after_device_class_change(
    pod: PodInfo, old: dict[str, Any] | None, new: dict[str, Any], hint: QueueingHint
) -> None:
    assert is_schedulable_after_device_class_event(pod, old, new) is hint


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-class", id="backoff-wrong-new-object"),
        pytest.param("not-a-class", {"spec": {}}, id="backoff-wrong-old-object"),
    ],
)
def test_a_device_class_hint_on_a_wrong_object_raises(old: Any, new: Any) -> None:
    """The framework counts a hint that raises as Queue (upstream: Queue and an error)."""
    with pytest.raises(TypeError):
        is_schedulable_after_device_class_event(make_pod("p"), old, new)


# -- TestHaveAnyRequestedResourcesIncreased, the DRA cases ------------------------------------


def capacity(**values: str) -> NodeInfo:
    cpu, memory = values.pop("cpu", "0"), values.pop("memory", "0")
    extra = {"ephemeral-storage": values.pop("storage", "0"), **req(**values)}
    return make_node("n", cpu=cpu, memory=memory, extra=extra)


DRA_POD = dict(cpu="2m", memory="2", **{"ephemeral-storage": "2"}, dra="2")


@pytest.mark.parametrize(
    ("pod", "old", "new", "expected"),
    [
        pytest.param(
            make_pod("p", requests=req(**DRA_POD)),
            capacity(cpu="1m", memory="2", storage="3", dra="4"),
            capacity(cpu="1m", memory="2", storage="1", dra="1"),
            False,
            id="requested-resources-dra-in-node",
        ),
        pytest.param(
            make_pod("p", requests=req(**DRA_POD)),
            capacity(cpu="1m", memory="2", storage="3"),
            capacity(cpu="1m", memory="2", storage="1"),
            True,
            id="requested-resources-dra-not-in-node",
        ),
        pytest.param(
            make_pod("p", requests=req(dra="1")),
            capacity(dra="0"),
            capacity(dra="0"),
            True,
            id="requested-resources-dra-zero-capacity",
        ),
    ],
)
def test_have_any_requested_resources_increased_with_dra(
    pod: PodInfo, old: NodeInfo, new: NodeInfo, expected: bool
) -> None:
    store = handle_with(device_class()).snapshot.dra
    resolve = store.device_class_for_extended_resource
    assert any_requested_resource_increased(pod, old, new, resolve) is expected
    # Without a DeviceClass, none of them grew.
    assert any_requested_resource_increased(pod, old, new, None) is False


def test_a_node_added_without_the_resource_queues_a_pod_dra_can_serve() -> None:
    """Ours, through isSchedulableAfterNodeChange: the node's allocatable cannot hold the
    extended resource, but a DeviceClass backs it, so the node may serve the pod."""
    pod = make_pod("p", requests=req(memory="1", dra="1"))
    plain = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(resource_slice("n", "d")))
    backed = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(device_class()))
    assert plain.is_schedulable_after_node_change(pod, None, capacity(memory="2")) is SKIP
    assert backed.is_schedulable_after_node_change(pod, None, capacity(memory="2")) is QUEUE
    grown = backed.is_schedulable_after_node_change(
        pod, capacity(memory="2"), capacity(memory="2", cpu="1")
    )
    assert grown is QUEUE


# -- TestFitSignPod --------------------------------------------------------------------------


def test_fit_sign_pod() -> None:
    """ "DRA extended resource enabled - returns unschedulable" (no signature) against the
    cases that sign, with the plugin's signer as batching runs it."""
    signer = SIGNERS["NodeResourcesFit"]
    backed = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(device_class()))
    plain = NodeResourcesFit(NodeResourcesFitArgs(), handle_with(resource_slice("n", "d")))
    gpu_pod = make_pod("p", requests=req(cpu="1000m", memory="2000", dra="1"))
    assert signer(backed, gpu_pod) is None
    assert signer(plain, gpu_pod) is not None  # "DRA extended resource disabled"
    assert signer(backed, make_pod("p", requests=req(cpu="1000m", memory="2000"))) is not None
    assert signer(backed, make_pod("p")) is not None  # "best-effort pod with no requests"
