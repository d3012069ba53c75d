"""Cases from upstream tainttoleration/taint_toleration_test.go, with the Filter reason
v1.28 gives."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod, pod_dict
from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState, PluginError
from multisched.framework.events import (
    ADD,
    NODE,
    POD,
    UPDATE_NODE_TAINT,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
    QueueingHint,
)
from multisched.plugins.taint_toleration import (
    TaintToleration,
    is_schedulable_after_node_change,
    is_schedulable_after_target_pod_toleration_change,
)

Json = dict[str, Any]
PREFER = "PreferNoSchedule"
MAX = 100


def taint(key: str, value: str, effect: str) -> Json:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, value: str = "", effect: str = "", operator: str = "") -> Json:
    out: Json = {"key": key, "value": value, "effect": effect}
    if operator:
        out["operator"] = operator
    return out


FILTER_CASES: list[tuple[str, list[Json], list[Json], str | None]] = [
    (
        "no tolerations, nonempty taints",
        [],
        [taint("dedicated", "user1", "NoSchedule")],
        "dedicated: user1",
    ),
    (
        "tolerates dedicated node of user1 with effect NoSchedule",
        [tol("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        None,
    ),
    (
        "toleration for user2 on a node dedicated to user1",
        [tol("dedicated", "user2", "NoSchedule", "Equal")],
        [taint("dedicated", "user1", "NoSchedule")],
        "dedicated: user1",
    ),
    (
        "operator Exists tolerates the taint",
        [tol("foo", effect="NoSchedule", operator="Exists")],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "multiple tolerations cover multiple taints",
        [
            tol("dedicated", "user2", "NoSchedule", "Equal"),
            tol("foo", effect="NoSchedule", operator="Exists"),
        ],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "key and value match but (non-empty) effect doesn't",
        [tol("foo", "bar", PREFER, "Equal")],
        [taint("foo", "bar", "NoSchedule")],
        "foo: bar",
    ),
    (
        "empty toleration effect matches NoSchedule",
        [tol("foo", "bar", operator="Equal")],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "untolerated PreferNoSchedule taint does not filter",
        [tol("dedicated", "user2", "NoSchedule", "Equal")],
        [taint("dedicated", "user1", PREFER)],
        None,
    ),
    ("no toleration, PreferNoSchedule taint", [], [taint("dedicated", "user1", PREFER)], None),
    # TestTaintTolerationFilterWithFeatureGate with the gate disabled (upstream's default).
    (
        "Gt toleration without the comparison-operators gate",
        [tol("node.kubernetes.io/sla", "750", "NoSchedule", "Gt")],
        [taint("node.kubernetes.io/sla", "950", "NoSchedule")],
        "node.kubernetes.io/sla: 950",
    ),
    (
        "Lt toleration without the comparison-operators gate",
        [tol("node.kubernetes.io/sla", "950", "NoSchedule", "Lt")],
        [taint("node.kubernetes.io/sla", "800", "NoSchedule")],
        "node.kubernetes.io/sla: 800",
    ),
    (
        "mixed Equal and Gt without the gate: only Equal is honored",
        [
            tol("dedicated", "user1", "NoSchedule", "Equal"),
            tol("node.kubernetes.io/sla", "750", "NoSchedule", "Gt"),
        ],
        [taint("dedicated", "user1", "NoSchedule")],
        None,
    ),
    (
        "mixed tolerations, the Gt one needed but ignored without the gate",
        [
            tol("dedicated", "user1", "NoSchedule", "Equal"),
            tol("node.kubernetes.io/sla", "750", "NoSchedule", "Gt"),
        ],
        [
            taint("dedicated", "user1", "NoSchedule"),
            taint("node.kubernetes.io/sla", "950", "NoSchedule"),
        ],
        "node.kubernetes.io/sla: 950",
    ),
    (
        "the first untolerated NoSchedule/NoExecute taint is named, value or not",
        [],
        [
            taint("dedicated", "user1", PREFER),
            taint("node-role.kubernetes.io/control-plane", "", "NoSchedule"),
            taint("foo", "bar", "NoExecute"),
        ],
        "node-role.kubernetes.io/control-plane: ",
    ),
    (
        "untolerated NoExecute taint filters",
        [tol("foo", "bar", "NoSchedule")],
        [taint("foo", "bar", "NoExecute")],
        "foo: bar",
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "untolerated"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(tolerations: list[Json], taints: list[Json], untolerated: str | None) -> None:
    """``untolerated``: the taint that fails the pod (v1.37's reason names none); None: the
    pod fits."""
    plugin = TaintToleration(None, None)
    status = plugin.filter(
        CycleState(), make_pod(tolerations=tolerations), make_node("nodeA", taints=taints)
    )
    if untolerated is None:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) had untolerated taint(s)",)


SCORE_CASES: list[tuple[str, list[Json], list[list[Json]], list[int]]] = [
    (
        "tolerated taints score higher than intolerable ones",
        [tol("foo", "bar", PREFER, "Equal")],
        [[taint("foo", "bar", PREFER)], [taint("foo", "blah", PREFER)]],
        [MAX, 0],
    ),
    (
        "all taints tolerated: same score whatever their count",
        [tol("cpu-type", "arm64", PREFER, "Equal"), tol("disk-type", "ssd", PREFER, "Equal")],
        [
            [],
            [taint("cpu-type", "arm64", PREFER)],
            [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)],
        ],
        [MAX, MAX, MAX],
    ),
    (
        "the more intolerable taints, the lower the score",
        [tol("foo", "bar", PREFER, "Equal")],
        [
            [],
            [taint("cpu-type", "arm64", PREFER)],
            [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)],
        ],
        [MAX, 50, 0],
    ),
    (
        "only PreferNoSchedule taints and tolerations count",
        [
            tol("cpu-type", "arm64", "NoSchedule", "Equal"),
            tol("disk-type", "ssd", "NoSchedule", "Equal"),
        ],
        [
            [],
            [taint("cpu-type", "arm64", "NoSchedule")],
            [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)],
        ],
        [MAX, MAX, 0],
    ),
    (
        "no tolerations: lands on the node without taints",
        [],
        [[], [taint("cpu-type", "arm64", PREFER)]],
        [MAX, 0],
    ),
    (
        "empty-effect toleration tolerates PreferNoSchedule",
        [tol("foo", operator="Exists")],
        [[taint("foo", "x", PREFER)], [taint("bar", "x", PREFER)]],
        [MAX, 0],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "expected"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(tolerations: list[Json], node_taints: list[list[Json]], expected: list[int]) -> None:
    plugin = TaintToleration(None, None)
    pod = make_pod(tolerations=tolerations)
    nodes = [make_node(f"node{i}", taints=t) for i, t in enumerate(node_taints)]
    state = CycleState()
    assert plugin.pre_score(state, pod, nodes) is None
    scores = [plugin.score(state, pod, n) for n in nodes]
    assert plugin.normalize_score(state, pod, nodes, scores) is None
    assert scores == expected


def test_score_without_pre_score_is_an_error() -> None:
    plugin = TaintToleration(None, None)
    node = make_node("n", taints=[taint("a", "b", PREFER)])
    with pytest.raises(PluginError, match='failed to read "PreScoreTaintToleration"'):
        plugin.score(CycleState(), make_pod(), node)


# -- Queueing hints (TestIsSchedulableAfterNodeChange, ...TargetPodTolerationChange) -------


def _tainted(*values: str) -> NodeInfo:
    return make_node("nodeA", taints=[taint("dedicated", v, "NoSchedule") for v in values])


_USER2 = [tol("dedicated", "user2", "NoSchedule", "Equal")]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            None,
            _tainted("user1"),
            QueueingHint.QUEUE_SKIP,
            id="skip-queue-on-untoleratedtaint-node-added",
        ),
        pytest.param(
            None, _tainted("user2"), QueueingHint.QUEUE, id="queue-on-toleratedtaint-node-added"
        ),
        pytest.param(
            _tainted("user1"),
            _tainted("user1", "user3"),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-change",
        ),
        pytest.param(
            _tainted("user1"), _tainted("user2"), QueueingHint.QUEUE, id="queue-on-taint-change"
        ),
        # Ours: a node that was already tolerated changes nothing for the pod.
        pytest.param(
            _tainted("user2"), _tainted(), QueueingHint.QUEUE_SKIP, id="skip-already-tolerated"
        ),
        pytest.param(None, _tainted(), QueueingHint.QUEUE, id="queue-on-untainted-node-added"),
    ],
)
def test_is_schedulable_after_node_change(
    old: NodeInfo | None, new: NodeInfo, hint: QueueingHint
) -> None:
    pod = make_pod("pod1", tolerations=_USER2)
    assert is_schedulable_after_node_change(pod, old, new) is hint


def test_is_schedulable_after_target_pod_toleration_change() -> None:
    """queue-on-toleration-added; and (ours) another pod's new toleration is skipped."""
    raw = pod_dict("pod-1", "ns-1")
    pod, old = PodInfo.parse(raw), PodInfo.parse(raw)
    new = PodInfo.parse(
        {**raw, "spec": {**raw["spec"], "tolerations": [tol("foo", effect="NoSchedule")]}}
    )
    assert is_schedulable_after_target_pod_toleration_change(pod, old, new) is QueueingHint.QUEUE
    other = make_pod("pod-2", tolerations=[tol("foo", effect="NoSchedule")])
    assert (
        is_schedulable_after_target_pod_toleration_change(pod, make_pod("pod-2"), other)
        is QueueingHint.QUEUE_SKIP
    )


def test_events_to_register() -> None:
    node_event, pod_event = TaintToleration(None, None).events_to_register()
    assert node_event.event == ClusterEvent(NODE, ADD | UPDATE_NODE_TAINT)
    assert node_event.hint is is_schedulable_after_node_change
    assert pod_event.event == ClusterEvent(POD, UPDATE_POD_TOLERATION)
    assert pod_event.hint is is_schedulable_after_target_pod_toleration_change
