"""Cases from upstream nodeunschedulable/node_unschedulable_test.go."""

import pytest

from builders import make_node, make_pod, pod_dict
from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState
from multisched.framework.events import (
    ADD,
    NODE,
    POD,
    UPDATE_NODE_TAINT,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
    QueueingHint,
)
from multisched.plugins.node_unschedulable import (
    NodeUnschedulable,
    is_schedulable_after_node_change,
    is_schedulable_after_target_pod_toleration_change,
)


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        (False, [], True),
        (True, [], False),
        (
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
            True,
        ),
        (
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ],
            False,
        ),
        (True, [{"operator": "Exists"}], True),
    ],
)
def test_filter(unschedulable: bool, tolerations: list[dict[str, str]], fits: bool) -> None:
    plugin = NodeUnschedulable(None, None)
    status = plugin.filter(
        CycleState(), make_pod(tolerations=tolerations), make_node(unschedulable=unschedulable)
    )
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) were unschedulable",)


# -- Queueing hints (TestIsSchedulableAfterNodeChange, ...PodTolerationChange) -------------

NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


def _node(unschedulable: bool, taints: list[dict[str, str]] | None = None) -> NodeInfo:
    return make_node(unschedulable=unschedulable, taints=taints)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            None, _node(True), QueueingHint.QUEUE_SKIP, id="skip-queue-on-unschedulable-node-added"
        ),
        pytest.param(None, _node(False), QueueingHint.QUEUE, id="queue-on-schedulable-node-added"),
        pytest.param(
            _node(True),
            _node(True, [NOT_READY]),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-change-unschedulable-true",
        ),
        pytest.param(
            _node(False),
            _node(False, [NOT_READY]),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-change-unschedulable-false",
        ),
        pytest.param(
            _node(True), _node(False), QueueingHint.QUEUE, id="queue-on-unschedulable-field-change"
        ),
        pytest.param(_node(False), _node(True), QueueingHint.QUEUE_SKIP, id="cordoned"),
    ],
)
def test_is_schedulable_after_node_change(
    old: NodeInfo | None, new: NodeInfo, hint: QueueingHint
) -> None:
    assert is_schedulable_after_node_change(make_pod(), old, new) is hint


def _with_uid(uid: str, tolerations: list[dict[str, str]] | None = None) -> PodInfo:
    return PodInfo.parse(pod_dict(tolerations=tolerations, metadata={"uid": uid}))


def _toleration(key: str) -> list[dict[str, str]]:
    """``st.MakePod().Toleration(key)``: Exists, NoSchedule."""
    return [{"key": key, "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        pytest.param(
            _with_uid("uid", _toleration("node.kubernetes.io/unschedulable")),
            QueueingHint.QUEUE,
            id="queue-when-the-unsched-pod-gets-toleration",
        ),
        pytest.param(
            _with_uid("uid", _toleration("unrelated-key")),
            QueueingHint.QUEUE_SKIP,
            id="skip-when-the-unsched-pod-gets-unrelated-toleration",
        ),
        # Ours: Pod stands in for upstream's TargetPod, so another pod's update is skipped.
        pytest.param(
            _with_uid("other", _toleration("node.kubernetes.io/unschedulable")),
            QueueingHint.QUEUE_SKIP,
            id="skip-when-another-pod-gets-toleration",
        ),
    ],
)
def test_is_schedulable_after_pod_toleration_change(new: PodInfo, hint: QueueingHint) -> None:
    pod = _with_uid("uid")
    old = _with_uid(new.uid)
    assert is_schedulable_after_target_pod_toleration_change(pod, old, new) is hint


def test_events_to_register() -> None:
    node_event, pod_event = NodeUnschedulable(None, None).events_to_register()
    assert node_event.event == ClusterEvent(NODE, ADD | UPDATE_NODE_TAINT)
    assert node_event.hint is is_schedulable_after_node_change
    assert pod_event.event == ClusterEvent(POD, UPDATE_POD_TOLERATION)
    assert pod_event.hint is is_schedulable_after_target_pod_toleration_change
