"""PodTopologySpread's queueing hints: upstream ``podtopologyspread/plugin_test.go``
(Test_isSchedulableAfterNodeChange, ..AssignedPodChange, ..TargetPodChange)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod, pod_dict
from multisched.cache import NodeInfo, PodInfo
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    UPDATE_POD_LABEL,
    UPDATE_POD_TOLERATION,
    QueueingHint,
)
from multisched.plugins.podtopologyspread import PodTopologySpread

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
PLUGIN = PodTopologySpread(None, None)


def spread(key: str, selector: str, taints_policy: str | None = None) -> dict[str, Any]:
    """``SpreadConstraint(1, key, DoNotSchedule, Exists(selector))``."""
    c: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": selector, "operator": "Exists"}]},
    }
    if taints_policy:
        c["nodeTaintsPolicy"] = taints_policy
    return c


ZONE_FOO = [spread("zone", "foo")]
ZONE_NODE_FOO = [spread("zone", "foo"), spread("node", "foo")]
FOO_BAR = [spread("zone", "foo"), spread("node", "bar")]


def pod(
    uid: str = "p2",
    *,
    node: str = "",
    nominated: str = "",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    constraints: list[dict[str, Any]] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> PodInfo:
    raw = pod_dict(
        uid,
        namespace,
        node_name=node,
        labels=labels,
        spread=constraints,
        tolerations=tolerations,
        status={"nominatedNodeName": nominated} if nominated else None,
    )
    raw["metadata"]["uid"] = uid
    return PodInfo.parse(raw)


def node(labels: dict[str, str], taint: str = "") -> NodeInfo:
    taints = [{"key": taint, "value": "bbb", "effect": "NoSchedule"}] if taint else None
    return make_node("node-a", labels=labels, taints=taints, hostname_label=False)


PENDING = pod("p", labels={"foo": ""}, constraints=ZONE_FOO)
ZN = {"zone": "zone1", "node": "node1"}

NODE_CASES = [
    ("node updates label which matches topologyKey", ZONE_FOO, node({"zone": "zone1"}),
     node({"zone": "zone2"}), Q),
    ("node that doesn't match topologySpreadConstraints updates non-related label", ZONE_FOO,
     node({"foo": "bar1"}), node({"foo": "bar2"}), SKIP),
    ("node that match topologySpreadConstraints adds non-related label", ZONE_NODE_FOO,
     node({**ZN, "foo": "bar"}), node(ZN), SKIP),
    ("create node with non-related labels", ZONE_FOO, None, node({"foo": "bar"}), SKIP),
    ("create node with related labels", ZONE_FOO, None, node({"zone": "zone1"}), Q),
    ("delete node with non-related labels", ZONE_FOO, node({"foo": "bar"}), None, SKIP),
    ("delete node with related labels", ZONE_FOO, node({"zone": "zone1"}), None, Q),
    ("add node with related labels that only match one of topologySpreadConstraints",
     ZONE_NODE_FOO, None, node({"zone": "zone1"}), SKIP),
    ("add node with related labels that match all topologySpreadConstraints", ZONE_NODE_FOO,
     None, node(ZN), Q),
    ("update node with related labels that only match one of topologySpreadConstraints",
     ZONE_NODE_FOO, node({"zone": "zone1"}), node({"zone": "zone1"}), SKIP),
    ("update node with related labels that match all topologySpreadConstraints", ZONE_NODE_FOO,
     node(ZN), node({"zone": "zone1", "node": "node2"}), Q),
    ("update node with different taints that match all topologySpreadConstraints",
     ZONE_NODE_FOO, node(ZN, "aaa"), node(ZN, "ccc"), Q),
    ("update node with different taints that only match one of topologySpreadConstraints",
     ZONE_NODE_FOO, node({"node": "node1"}, "aaa"), node({"node": "node1"}, "ccc"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [c[1:] for c in NODE_CASES],
    ids=[c[0] for c in NODE_CASES],
)
def test_is_schedulable_after_node_change(
    constraints: list[dict[str, Any]],
    old: NodeInfo | None,
    new: NodeInfo | None,
    want: QueueingHint,
) -> None:
    pending = pod("p", constraints=constraints)
    assert PLUGIN.is_schedulable_after_node_change(pending, old, new) is want


FOO = {"foo": ""}
ASSIGNED_CASES = [
    ("add pod with labels match topologySpreadConstraints selector", PENDING, None,
     pod(node="fake-node", labels=FOO), Q),
    ("add un-scheduled pod", PENDING, None, pod(labels=FOO), SKIP),
    ("update un-scheduled pod", PENDING, pod(labels={"bar": ""}), pod(labels=FOO), SKIP),
    ("delete un-scheduled pod", PENDING, pod(labels=FOO), None, SKIP),
    ("add pod with different namespace", PENDING, None,
     pod(node="fake-node", namespace="fake-namespace", labels=FOO), SKIP),
    ("add pod with labels don't match topologySpreadConstraints selector", PENDING, None,
     pod(node="fake-node", labels={"bar": ""}), SKIP),
    ("delete pod with labels that match topologySpreadConstraints selector", PENDING,
     pod(node="fake-node", labels=FOO), None, Q),
    ("delete nominated pod with labels that don't match topologySpreadConstraints selector",
     PENDING, pod(nominated="fake-node", labels={"bar": ""}), None, SKIP),
    ("delete nominated pod with labels that match topologySpreadConstraints selector", PENDING,
     pod(nominated="fake-node", labels=FOO), None, Q),
    ("delete pod with labels that don't match topologySpreadConstraints selector", PENDING,
     pod(node="fake-node", labels={"bar": ""}), None, SKIP),
    ("update pod's non-related label", PENDING,
     pod(node="fake-node", labels={**FOO, "bar": "bar1"}),
     pod(node="fake-node", labels={**FOO, "bar": "bar2"}), SKIP),
    ("add pod's label that matches topologySpreadConstraints selector", PENDING,
     pod(node="fake-node"), pod(node="fake-node", labels=FOO), Q),
    ("delete pod label that matches topologySpreadConstraints selector", PENDING,
     pod(node="fake-node", labels=FOO), pod(node="fake-node"), Q),
    ("change pod's label that matches topologySpreadConstraints selector", PENDING,
     pod(node="fake-node", labels={"foo": "foo1"}), pod(node="fake-node", labels={"foo": "foo2"}),
     SKIP),
    ("change pod's label that doesn't match topologySpreadConstraints selector", PENDING,
     pod(node="fake-node", labels={**FOO, "bar": "bar1"}),
     pod(node="fake-node", labels={**FOO, "bar": "bar2"}), SKIP),
    ("add pod's label that matches topologySpreadConstraints selector with multi "
     "topologySpreadConstraints", pod("p", labels=FOO, constraints=FOO_BAR),
     pod(node="fake-node", labels=FOO), pod(node="fake-node", labels={**FOO, "bar": "bar2"}), Q),
    ("change pod's label that doesn't match topologySpreadConstraints selector with multi "
     "topologySpreadConstraints", pod("p", labels=FOO, constraints=FOO_BAR),
     pod(node="fake-node", labels=FOO), pod(node="fake-node", labels={**FOO, "baz": ""}), SKIP),
    ("change pod's label that match topologySpreadConstraints selector with multi "
     "topologySpreadConstraints", pod("p", labels=FOO, constraints=FOO_BAR),
     pod(node="fake-node", labels={**FOO, "bar": ""}),
     pod(node="fake-node", labels={**FOO, "bar": "bar2"}), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [c[1:] for c in ASSIGNED_CASES],
    ids=[c[0] for c in ASSIGNED_CASES],
)
def test_is_schedulable_after_assigned_pod_change(
    pending: PodInfo, old: PodInfo | None, new: PodInfo | None, want: QueueingHint
) -> None:
    assert PLUGIN.is_schedulable_after_assigned_pod_change(pending, old, new) is want


HONOR = [spread("zone", "foo", "Honor"), spread("node", "bar")]
IGNORE = [spread("zone", "foo", "Ignore"), spread("node", "bar")]
UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
TARGET_CASES = [
    ("the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has "
     "got a new toleration", HONOR, pod("p", labels=FOO),
     pod("p", labels=FOO, tolerations=UNSCHEDULABLE), Q),
    ("the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and "
     "has got a new toleration", IGNORE, pod("p", labels=FOO),
     pod("p", labels=FOO, tolerations=UNSCHEDULABLE), SKIP),
    ("the unschedulable Pod has topologySpreadConstraint and has got a new label matching the "
     "selector of the constraint", IGNORE, pod("p"), pod("p", labels=FOO), Q),
    ("the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
     IGNORE, pod("p"), pod("p", labels={"unrelated": ""}), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [c[1:] for c in TARGET_CASES],
    ids=[c[0] for c in TARGET_CASES],
)
def test_is_schedulable_after_target_pod_change(
    constraints: list[dict[str, Any]], old: PodInfo, new: PodInfo, want: QueueingHint
) -> None:
    pending = pod("p", labels=FOO, constraints=constraints)
    assert PLUGIN.is_schedulable_after_target_pod_change(pending, old, new) is want


def test_another_pods_update_is_not_the_targets() -> None:
    """The framework files every pod update under Pod: the target hint skips other pods'."""
    pending = pod("p", labels=FOO, constraints=HONOR)
    other_old, other_new = pod(labels=FOO), pod(labels=FOO, tolerations=UNSCHEDULABLE)
    assert PLUGIN.is_schedulable_after_target_pod_change(pending, other_old, other_new) is SKIP


def test_a_malformed_constraint_raises_so_the_queue_requeues() -> None:
    bogus = {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}
    constraint = {**spread("zone", "foo"), "labelSelector": bogus}
    bad = make_pod("p", spread=[constraint])
    with pytest.raises(ValueError):
        PLUGIN.is_schedulable_after_node_change(bad, None, node({"zone": "z"}))


def test_events_to_register_are_v1_37s_with_their_hints() -> None:
    got = [(r.event.resource, r.event.action, r.hint) for r in PLUGIN.events_to_register()]
    assert got == [
        (POD, ADD | UPDATE_POD_LABEL | DELETE, PLUGIN.is_schedulable_after_assigned_pod_change),
        (POD, UPDATE_POD_TOLERATION | UPDATE_POD_LABEL,
         PLUGIN.is_schedulable_after_target_pod_change),
        (NODE, ADD | DELETE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT,
         PLUGIN.is_schedulable_after_node_change),
    ]  # fmt: skip
