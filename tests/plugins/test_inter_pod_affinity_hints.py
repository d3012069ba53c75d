"""InterPodAffinity's queueing hints: upstream ``interpodaffinity/plugin_test.go``
(Test_isSchedulableAfterAssignedPodChange, ..TargetPodUpdateLabel, ..NodeChange)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod
from multisched.cache import PodInfo
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE_NODE_LABEL,
    UPDATE_POD_LABEL,
    QueueingHint,
)
from multisched.plugins.interpodaffinity import InterPodAffinity
from multisched.plugins.interpodaffinity.queueing_hints import (
    is_schedulable_after_assigned_pod_change,
    is_schedulable_after_node_change,
    is_schedulable_after_target_pod_update_label,
)

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
SCAN = ("service", "In", ["securityscan", "value2"])


def _term(key: str, op: str, values: list[str], topology: str) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op}
    if values:
        expr["values"] = values
    return {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology}


def pod(
    name: str = "other",
    *,
    node: str = "",
    nominated: str = "",
    labels: dict[str, str] | None = None,
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
) -> PodInfo:
    """``st.MakePod()`` with required (anti-)affinity terms."""
    aff: dict[str, Any] = {}
    if affinity:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    status = {"nominatedNodeName": nominated} if nominated else None
    return make_pod(name, node_name=node, labels=labels, affinity=aff or None, status=status)


AFF = [_term(*SCAN, "region")]
ANTI = [_term(*SCAN, "region")]
TWO_ANTI = [
    _term("service", "In", ["securityscan"], "region"),
    _term("app", "In", ["web"], "region"),
]
TWO_EXISTS = [_term("aaa", "Exists", [], "hostname"), _term("bbb", "Exists", [], "hostname")]
SCAN_LABEL = {"service": "securityscan"}

ASSIGNED_CASES = [
    ("add a pod which matches the pod affinity", pod("p", affinity=AFF), None,
     pod(node="fake-node", labels=SCAN_LABEL), Q),
    ("add an un-scheduled pod", pod("p", affinity=AFF), None, pod(labels=SCAN_LABEL), SKIP),
    ("add a pod which doesn't match the pod affinity", pod("p", affinity=AFF), None,
     pod(node="fake-node", labels={"aaa": "a"}), SKIP),
    ("update a pod from non-match to match pod affinity", pod("p", affinity=AFF),
     pod(node="fake-node", labels={"aaa": "a"}), pod(node="fake-node", labels=SCAN_LABEL), Q),
    ("the updating pod matches target pod's affinity both before and after label changes",
     pod("p", affinity=AFF), pod(node="fake-node", labels={"service": "value2"}),
     pod(node="fake-node", labels=SCAN_LABEL), SKIP),
    ("update an un-scheduled pod", pod("p", affinity=AFF), pod(labels={"aaa": "a"}),
     pod(labels=SCAN_LABEL), SKIP),
    ("update a pod from match to non-match the pod affinity", pod("p", affinity=AFF),
     pod(node="fake-node", labels=SCAN_LABEL), pod(node="fake-node", labels={"aaa": "a"}), SKIP),
    ("update a pod from match to non-match pod's affinity - multiple terms case",
     pod("p", affinity=TWO_EXISTS), pod(node="fake-node", labels={"aaa": "a"}),
     pod(node="fake-node", labels=SCAN_LABEL), SKIP),
    ("update a pod from non-match to match pod's affinity - multiple terms case",
     pod("p", affinity=TWO_EXISTS), pod(node="fake-node", labels={"aaa": "a"}),
     pod(node="fake-node", labels={"aaa": "", "bbb": ""}), Q),
    ("modify pod label to change it from satisfying pod anti-affinity to not satisfying "
     "anti-affinity", pod("p", anti=ANTI), pod(node="fake-node", labels=SCAN_LABEL),
     pod(node="fake-node", labels={"service": "aaaa"}), Q),
    ("modify pod label to change it from not satisfying pod anti-affinity to satisfying "
     "anti-affinity", pod("p", anti=ANTI), pod(node="fake-node", labels={"service": "bbb"}),
     pod(node="fake-node", labels=SCAN_LABEL), SKIP),
    ("delete a pod which doesn't match pod's anti-affinity", pod("p", anti=ANTI),
     pod(node="fake-node", labels={"aaa": "a"}), None, SKIP),
    ("delete a pod which matches pod's anti-affinity", pod("p", anti=ANTI),
     pod(node="fake-node", labels=SCAN_LABEL), None, Q),
    ("delete a pod with anti-affinity that matches pending pod", pod("p", labels=SCAN_LABEL),
     pod(node="fake-node", anti=ANTI), None, Q),
    ("delete a pod with anti-affinity that doesn't match pending pod",
     pod("p", labels={"service": "foo"}), pod(node="fake-node", anti=ANTI), None, SKIP),
    ("delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that "
     "doesn't match pending pod", pod("p", anti=ANTI, labels={"service": "foo"}),
     pod(node="fake-node", anti=ANTI, labels={"service": "foo"}), None, SKIP),
    ("delete a nominated pod which doesn't match pod's anti-affinity", pod("p", anti=ANTI),
     pod(nominated="fake-node", labels={"aaa": "a"}), None, SKIP),
    ("delete a nominated pod which matches pod's anti-affinity", pod("p", anti=ANTI),
     pod(nominated="fake-node", labels=SCAN_LABEL), None, Q),
    ("modify pod label to change it from matching only one of target pod's anti-affinity "
     "terms to matching none", pod("p", anti=TWO_ANTI),
     pod(node="fake-node", labels={"service": "securityscan", "app": "bar"}),
     pod(node="fake-node", labels={"service": "foo", "app": "bar"}), Q),
    ("modify pod label but it still matches one of target pod's anti-affinity terms",
     pod("p", anti=TWO_ANTI),
     pod(node="fake-node", labels={"service": "securityscan", "app": "bar"}),
     pod(node="fake-node", labels={"service": "foo", "app": "web"}), SKIP),
    ("delete a pod which matches only one of target pod's anti-affinity terms",
     pod("p", anti=TWO_ANTI), pod(node="fake-node", labels=SCAN_LABEL), None, Q),
    ("delete a pod with anti-affinity that matches pending pod on only one term",
     pod("p", labels=SCAN_LABEL), pod(node="fake-node", anti=TWO_ANTI), None, Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [c[1:] for c in ASSIGNED_CASES],
    ids=[c[0] for c in ASSIGNED_CASES],
)
def test_is_schedulable_after_assigned_pod_change(
    pending: PodInfo, old: PodInfo | None, new: PodInfo | None, want: QueueingHint
) -> None:
    assert is_schedulable_after_assigned_pod_change(pending, old, new) is want


def test_is_schedulable_after_target_pod_update_label() -> None:
    target = pod("p", labels={"foo": "baz"})
    assert is_schedulable_after_target_pod_update_label(target, target, target) is Q
    # Pod updates are not yet told apart by the framework: another pod's is not the target's.
    assert is_schedulable_after_target_pod_update_label(target, pod(), pod()) is SKIP


def _zone_aff(topology: str) -> list[dict[str, Any]]:
    return [_term(*SCAN, topology)]


ZONE_ANTI = [{"labelSelector": {"matchLabels": {"another": "label"}}, "topologyKey": "zone"}]


def node(**labels: str) -> Any:
    return make_node("node-a", labels=labels, hostname_label=False)


NODE_CASES = [
    ("add a new node with matched pod affinity topologyKey", pod("p", affinity=_zone_aff("zone")),
     None, node(zone="zone1"), Q),
    ("add a new node without matched topologyKey", pod("p", affinity=_zone_aff("region")), None,
     node(zone="zone1"), SKIP),
    ("update node label but not topologyKey", pod("p", affinity=_zone_aff("zone")), node(aaa="a"),
     node(aaa="b"), SKIP),
    ("update node label that isn't related to the pod affinity",
     pod("p", affinity=_zone_aff("zone")), node(zone="zone1"),
     node(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP),
    ("update node with different affinity topologyKey value", pod("p", affinity=_zone_aff("zone")),
     node(zone="zone1"), node(zone="zone2"), Q),
    ("update node to have the affinity topology label", pod("p", affinity=_zone_aff("zone")),
     node(aaa="a"), node(zone="zone1"), Q),
    ("add a new node with matched pod anti-affinity topologyKey", pod("p", anti=ZONE_ANTI), None,
     node(zone="zone1"), Q),
    ("add a new node without matched pod anti-affinity topologyKey", pod("p", anti=ZONE_ANTI),
     None, node(), Q),
    ("update node label that isn't related to the pod anti-affinity", pod("p", anti=ZONE_ANTI),
     node(zone="zone1"), node(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP),
    ("update node with different anti-affinity topologyKey value", pod("p", anti=ZONE_ANTI),
     node(zone="zone1"), node(zone="zone2"), Q),
    ("update node to have the anti-affinity topology label", pod("p", anti=ZONE_ANTI),
     node(aaa="a"), node(zone="zone1"), SKIP),
    ("update node label not to have anti-affinity topology label", pod("p", anti=ZONE_ANTI),
     node(zone="zone1"), node(aaa="a"), Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(
    pending: PodInfo, old: Any, new: Any, want: QueueingHint
) -> None:
    assert is_schedulable_after_node_change(pending, old, new) is want


def test_events_to_register_are_v1_37s_with_their_hints() -> None:
    got = [(r.event.resource, r.event.action, r.hint) for r in InterPodAffinity.events_to_register(
        None  # type: ignore[arg-type]
    )]  # fmt: skip
    assert got == [
        (POD, ADD | UPDATE_POD_LABEL | DELETE, is_schedulable_after_assigned_pod_change),
        (POD, UPDATE_POD_LABEL, is_schedulable_after_target_pod_update_label),
        (NODE, ADD | UPDATE_NODE_LABEL, is_schedulable_after_node_change),
    ]
