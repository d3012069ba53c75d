"""NodeResourcesFit's queueing hints: cases from upstream noderesources/fit_test.go
(TestEventsToRegister, Test_isSchedulableAfter*, TestHaveAnyRequestedResourcesIncreased) with
v1.37.2's default gates: InPlacePodVerticalScaling on, InPlacePodVerticalScalingScheduler
Preemption off (so no deferred-resize cases); the DRA extended-resource cases are in
test_node_resources_fit_dra.py."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod, node_dict
from multisched.cache import NodeInfo, PodInfo
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_POD_SCALE_DOWN,
    ClusterEvent,
    QueueingHint,
)
from multisched.plugins._fit_hints import any_requested_resource_increased
from multisched.plugins.node_resources_fit import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    is_schedulable_after_assigned_pod_delete,
    is_schedulable_after_assigned_pod_scale_down,
    is_schedulable_after_device_class_event,
    is_schedulable_after_target_pod_scale_down,
)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def resource_pod(
    cpu: int = 0, mem: int = 0, storage: int = 0, scalar: dict[str, int] | None = None
) -> PodInfo:
    """``newResourcePod(framework.Resource{...})``: milli-cpu, bytes, scalars."""
    requests = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(storage)}
    requests.update({k: str(v) for k, v in (scalar or {}).items()})
    return make_pod("p", requests=requests)


def req_pod(name: str, requests: dict[str, str], node: str = "", **kw: Any) -> PodInfo:
    """``st.MakePod().Req(...)``."""
    return make_pod(name, requests=requests, node_name=node, **kw)


def pod_level_pod(name: str, requests: dict[str, str], node: str = "") -> PodInfo:
    """``st.MakePod().PodLevelResourceRequests(...)``."""
    return make_pod(name, node_name=node, resources={"requests": requests})


def capacity(**values: str) -> NodeInfo:
    """``st.MakeNode().Capacity(...)``: exactly these, and 32 pods unless given."""
    raw = node_dict("node")
    listed = {"pods": "32", **{_name(k): v for k, v in values.items()}}
    raw["status"]["allocatable"] = raw["status"]["capacity"] = listed
    return NodeInfo.from_node(raw)


def _name(key: str) -> str:
    return {"ext_a": EXT_A, "ext_b": EXT_B, "storage": "ephemeral-storage"}.get(key, key)


# -- TestEventsToRegister -------------------------------------------------------------------


def test_events_to_register_with_in_place_pod_vertical_scaling() -> None:
    """ "Register events with InPlacePodVerticalScaling feature enabled" (GA in v1.37) and
    "... with DRAExtendedResource feature enabled" (GA, locked on in v1.37): both sets at
    once. Pod stands in for both AssignedPod and TargetPod, the hints tell them apart."""
    plugin = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    registered = plugin.events_to_register()
    assert [r.event for r in registered] == [
        ClusterEvent(POD, DELETE),
        ClusterEvent(NODE, ADD | UPDATE_NODE_ALLOCATABLE),
        ClusterEvent("DeviceClass", ADD | UPDATE),
        ClusterEvent(POD, UPDATE_POD_SCALE_DOWN),
        ClusterEvent(POD, UPDATE_POD_SCALE_DOWN),
    ]
    assert [r.hint for r in registered] == [
        is_schedulable_after_assigned_pod_delete,
        plugin.is_schedulable_after_node_change,
        is_schedulable_after_device_class_event,
        is_schedulable_after_assigned_pod_scale_down,
        is_schedulable_after_target_pod_scale_down,
    ]


# -- Test_isSchedulableAfterAssignedPodDelete --------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "deleted", "hint"),
    [
        pytest.param(
            req_pod("pod1", {"cpu": "1"}),
            req_pod("pod2", {"cpu": "1"}, node="fake"),
            QUEUE,
            id="queue-on-other-pod-deleted",
        ),
        pytest.param(
            make_pod("pod1"), make_pod("pod2"), SKIP, id="skip-queue-on-unscheduled-pod-deleted"
        ),
        pytest.param(
            req_pod("pod1", {"cpu": "1"}),
            req_pod("pod2", {"cpu": "2"}, status={"nominatedNodeName": "fake"}),
            QUEUE,
            id="queue-on-nominated-pod-deleted",
        ),
    ],
)
def test_is_schedulable_after_assigned_pod_delete(
    pod: PodInfo, deleted: PodInfo, hint: QueueingHint
) -> None:
    assert is_schedulable_after_assigned_pod_delete(pod, deleted, None) is hint


# -- Test_isSchedulableAfterTargetPodScaleDown ------------------------------------------------


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(
            req_pod("pod1", {"cpu": "1"}), id="queue-on-target-pod-some-resource-scale-down"
        ),
        pytest.param(
            pod_level_pod("pod1", {"cpu": "1"}),
            id="queue-on-target-pod-some-pod-level-resource-scale-down",
        ),
    ],
)
def test_is_schedulable_after_target_pod_scale_down(pod: PodInfo) -> None:
    assert is_schedulable_after_target_pod_scale_down(pod, pod, pod) is QUEUE


def test_another_pods_scale_down_is_not_the_targets() -> None:
    """Ours: Pod stands in for TargetPod, so another pending pod's resize is skipped."""
    other = req_pod("pod2", {"cpu": "1"})
    pod = req_pod("pod1", {"cpu": "1"})
    assert is_schedulable_after_target_pod_scale_down(pod, other, other) is SKIP


# -- Test_isSchedulableAfterAssignedPodScaleDown ----------------------------------------------


@pytest.mark.parametrize(
    ("pod", "old", "new", "hint"),
    [
        pytest.param(
            req_pod("pod1", {"cpu": "1"}),
            req_pod("pod2", {"cpu": "2"}),
            req_pod("pod2", {"cpu": "1"}),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            req_pod("pod1", {"cpu": "1"}),
            req_pod("pod2", {"memory": "2"}, node="fake"),
            req_pod("pod2", {"memory": "1"}, node="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            pod_level_pod("pod1", {"cpu": "1"}),
            pod_level_pod("pod2", {"memory": "2"}, node="fake"),
            pod_level_pod("pod2", {"memory": "1"}, node="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        ),
        pytest.param(
            req_pod("pod1", {"cpu": "1"}),
            req_pod("pod2", {"cpu": "2"}, node="fake"),
            req_pod("pod2", {"cpu": "1"}, node="fake"),
            QUEUE,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            pod_level_pod("pod1", {"cpu": "1"}),
            pod_level_pod("pod2", {"cpu": "2"}, node="fake"),
            pod_level_pod("pod2", {"cpu": "1"}, node="fake"),
            QUEUE,
            id="queue-on-other-pod-some-pod-level-resource-scale-down",
        ),
        # Ours: an extended resource the pod asks for counts as cpu does.
        pytest.param(
            req_pod("pod1", {EXT_A: "1"}),
            req_pod("pod2", {EXT_A: "2"}, node="fake"),
            req_pod("pod2", {EXT_A: "1"}, node="fake"),
            QUEUE,
            id="queue-on-other-pod-scalar-resource-scale-down",
        ),
    ],
)
def test_is_schedulable_after_assigned_pod_scale_down(
    pod: PodInfo, old: PodInfo, new: PodInfo, hint: QueueingHint
) -> None:
    assert is_schedulable_after_assigned_pod_scale_down(pod, old, new) is hint


# -- Test_isSchedulableAfterNodeChange --------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "old", "new", "hint"),
    [
        pytest.param(
            resource_pod(mem=2),
            None,
            capacity(memory="1"),
            SKIP,
            id="skip-queue-on-node-add-without-sufficient-resources",
        ),
        pytest.param(
            resource_pod(scalar={EXT_A: 1}),
            None,
            capacity(ext_b="1"),
            SKIP,
            id="skip-queue-on-node-add-without-required-resource-type",
        ),
        pytest.param(
            resource_pod(mem=2, scalar={EXT_A: 1}),
            None,
            capacity(memory="4", ext_a="2"),
            QUEUE,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            resource_pod(mem=2, scalar={EXT_A: 1}),
            capacity(memory="2", ext_a="2"),
            capacity(memory="2", ext_a="1", ext_b="2"),
            SKIP,
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            resource_pod(mem=2, scalar={EXT_A: 1}),
            capacity(memory="2", ext_a="1"),
            capacity(memory="2", ext_a="2"),
            QUEUE,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            resource_pod(mem=2, scalar={EXT_A: 1}),
            capacity(memory="4", ext_a="2"),
            capacity(memory="1", ext_a="2"),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            resource_pod(mem=2, scalar={EXT_A: 1}),
            capacity(memory="1", ext_a="2"),
            capacity(memory="4", ext_a="2"),
            QUEUE,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
        # Ours: the node's own pods do not count (upstream judges the node alone).
        pytest.param(
            resource_pod(mem=2),
            None,
            capacity(memory="2", pods="0"),
            SKIP,
            id="skip-queue-on-node-add-taking-no-pods",
        ),
    ],
)
def test_is_schedulable_after_node_change(
    pod: PodInfo, old: NodeInfo | None, new: NodeInfo, hint: QueueingHint
) -> None:
    plugin = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    assert plugin.is_schedulable_after_node_change(pod, old, new) is hint


def test_an_ignored_resource_no_node_has_does_not_keep_the_pod_waiting() -> None:
    """Ours: the hint leaves out ignoredResources as Filter does (upstream's isFit passes no
    ignored set, so such a pod would wait for the pool's flush)."""
    pod = resource_pod(mem=2, scalar={EXT_A: 1})
    args = NodeResourcesFitArgs.model_validate({"ignoredResources": [EXT_A]})
    plugin = NodeResourcesFit(args, None)  # type: ignore[arg-type]
    assert plugin.is_schedulable_after_node_change(pod, None, capacity(memory="4")) is QUEUE
    plain = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    assert plain.is_schedulable_after_node_change(pod, None, capacity(memory="4")) is SKIP


# -- TestHaveAnyRequestedResourcesIncreased (the cases without DRA extended resources) --------

ALL_1 = {"cpu": "1", "memory": "1", "storage": "1", "ext_a": "1"}


@pytest.mark.parametrize(
    ("pod", "old", "new", "expected"),
    [
        pytest.param(
            resource_pod(),
            capacity(pods="1", **ALL_1),
            capacity(pods="1", cpu="2", memory="2", storage="2", ext_a="2"),
            False,
            id="no-requested-resources",
        ),
        pytest.param(
            resource_pod(),
            capacity(pods="1", **ALL_1),
            capacity(pods="2", **ALL_1),
            True,
            id="no-requested-resources-pods-increased",
        ),
        pytest.param(
            resource_pod(2, 2, 2, {EXT_A: 2}),
            capacity(cpu="1", memory="2", storage="3"),
            capacity(cpu="1", memory="2", storage="1"),
            False,
            id="scalar-resources-not-in-node",
        ),
        pytest.param(
            resource_pod(2, 2, 2, {EXT_A: 2}),
            capacity(cpu="1", memory="2", storage="3", ext_a="4"),
            capacity(cpu="1", memory="2", storage="1", ext_a="1"),
            False,
            id="requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(2, 2, 2, {EXT_A: 2}),
            capacity(cpu="1", memory="2", storage="3", ext_a="4"),
            capacity(cpu="3", memory="4", storage="3", ext_a="4"),
            True,
            id="requested-resources-increased",
        ),
        pytest.param(
            resource_pod(2, 2),
            capacity(cpu="1", memory="2", storage="3", ext_a="4"),
            capacity(cpu="1", memory="2", storage="1", ext_a="1"),
            False,
            id="non-requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(2, 2),
            capacity(cpu="1", memory="2", storage="3", ext_a="4"),
            capacity(cpu="1", memory="2", storage="5", ext_a="6"),
            False,
            id="non-requested-resources-increased",
        ),
    ],
)
def test_have_any_requested_resources_increased(
    pod: PodInfo, old: NodeInfo, new: NodeInfo, expected: bool
) -> None:
    assert any_requested_resource_increased(pod, old, new) is expected


def test_a_deletion_sent_without_the_pod_may_have_freed_room() -> None:
    """Ours: a delete event whose pod the queue did not pass could have held anything."""
    assert is_schedulable_after_assigned_pod_delete(resource_pod(cpu=1), None, None) is QUEUE
