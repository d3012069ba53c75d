"""Cases from upstream podtopologyspread/{filtering,scoring}_test.go and the args validation."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_pod, node_dict
from multisched.cache import Cache, PodInfo, Snapshot
from multisched.cache.workloads import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
)
from multisched.framework import Code, CycleState
from multisched.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
    PodTopologySpreadArgs,
)
from multisched.plugins.podtopologyspread.common import SpreadSelector, default_selector
from multisched.plugins.podtopologyspread.filtering import PreFilterState
from multisched.plugins.podtopologyspread.scoring import PreScoreState, _round_half_away

Json = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
FOO: Json = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: Json = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
OK, U, X = None, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
_UNSET: Any = object()


class _Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def spread(
    max_skew: int,
    key: str,
    action: str = DNS,
    selector: Json | None = _UNSET,
    *,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> Json:
    """Upstream ``st.MakePod().SpreadConstraint(...)``; the selector defaults to foo Exists."""
    out: Json = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    selector = FOO if selector is _UNSET else selector
    if selector is not None:
        out["labelSelector"] = selector
    for field, value in (
        ("minDomains", min_domains),
        ("nodeAffinityPolicy", affinity_policy),
        ("nodeTaintsPolicy", taints_policy),
        ("matchLabelKeys", match_label_keys),
    ):
        if value is not None:
            out[field] = value
    return out


def node(name: str, taints: list[Json] | None = None, **labels: str) -> Json:
    """A node with exactly ``labels`` (``hostname`` stands for kubernetes.io/hostname)."""
    if "hostname" in labels:
        labels[HOST] = labels.pop("hostname")
    return node_dict(name, labels=labels, taints=taints, hostname_label=False)


def zn(name: str, zone: str) -> Json:
    """Upstream's usual node: zone=<zone>, node=<name>."""
    return node(name, zone=zone, node=name)


def existing(
    name: str, on: str, *label_keys: str, ns: str = "default", terminating: bool = False
) -> PodInfo:
    meta = {"deletionTimestamp": "2024-01-01T00:00:00Z"} if terminating else None
    labels = dict.fromkeys(label_keys or ("foo",), "")
    return make_pod(name, namespace=ns, node_name=on, labels=labels, metadata=meta)


def incoming(*constraints: Json, labels: tuple[str, ...] = ("foo",), **kw: Any) -> PodInfo:
    return make_pod("p", labels=dict.fromkeys(labels, ""), spread=list(constraints), **kw)


def node_affinity_in(key: str, *values: str) -> Json:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    return {"nodeAffinity": {req: {"nodeSelectorTerms": [term]}}}


def snapshot(nodes: list[Json], pods: list[PodInfo]) -> Snapshot:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    return cache.snapshot


def plugin(snap: Snapshot, args: Json | None = None) -> PodTopologySpread:
    return PodTopologySpread(PodTopologySpreadArgs.model_validate(args or {}), _Handle(snap))  # type: ignore[arg-type]


LIST = {"defaultingType": "List"}

ABXY = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
SPREAD_2103 = [
    existing("p-a1", "node-a"),
    existing("p-a2", "node-a"),
    existing("p-b1", "node-b"),
    existing("p-y1", "node-y"),
    existing("p-y2", "node-y"),
    existing("p-y3", "node-y"),
]
FOO_NODES = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-x", node="node-x", foo=""),
    node("node-y", node="node-y"),
]
TAINTED_NODES = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-x", node="node-x", foo=""),
    node("node-y", TAINTS, node="node-y"),
]
ONE_ONE_ZERO_ONE = [
    existing("p-b1", "node-a"),
    existing("p-b2", "node-b"),
    existing("p-y1", "node-y"),
]

FILTER_CASES: list[tuple[str, PodInfo, list[Json], list[PodInfo], list[Code | None]]] = [
    ("no existing pods", incoming(spread(1, "zone")), ABXY, [], [OK, OK, OK, OK]),
    (
        "existing pods in a different namespace do not count",
        incoming(spread(1, "zone")),
        ABXY,
        [
            existing("p-a1", "node-a", ns="ns1"),
            existing("p-b1", "node-a", ns="ns2"),
            existing("p-x1", "node-x"),
            existing("p-y1", "node-y"),
        ],
        [OK, OK, U, U],
    ),
    (
        "existing pods do not match null selector",
        incoming(spread(1, "zone", selector=None)),
        ABXY,
        [existing("p-x1", "node-x"), existing("p-y1", "node-y")],
        [OK, OK, OK, OK],
    ),
    (
        # Upstream countPodsMatchSelector counts nothing for an empty selector, while the
        # incoming pod still matches it.
        "empty selector counts no existing pods",
        incoming(spread(1, "node", selector={})),
        ABXY,
        SPREAD_2103,
        [OK, OK, OK, OK],
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        incoming(spread(1, "zone")),
        [zn("node-a", "zone1"), node("node-b", zon="zone1", node="node-b"), *ABXY[2:]],
        [
            existing("p-a1", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-x1", "node-x"),
            existing("p-y1", "node-y"),
        ],
        [OK, X, U, U],
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        incoming(spread(1, "rack")),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        [X, X],
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        incoming(spread(1, "node")),
        ABXY,
        SPREAD_2103,
        [U, U, OK, U],
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        incoming(spread(2, "node")),
        ABXY,
        SPREAD_2103,
        [U, OK, OK, U],
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        incoming(spread(1, "node"), labels=("bar",)),
        ABXY,
        SPREAD_2103,
        [U, OK, OK, U],
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        incoming(spread(1, "node"), affinity=node_affinity_in("node", "node-a", "node-y")),
        ABXY,
        SPREAD_2103,
        [OK, OK, OK, U],
    ),
    (
        "terminating Pods should be excluded",
        incoming(spread(1, "node")),
        [node("node-a", node="node-a"), node("node-b", node="node-b")],
        [existing("p-a", "node-a", terminating=True), existing("p-b", "node-b")],
        [OK, U],
    ),
    (
        "2/2/1, maxSkew 2, domains < minDomains: only the third node fits",
        incoming(spread(2, "node", min_domains=4)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", node="node-c"),
        ],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [U, U, OK],
    ),
    (
        "2/2/1, maxSkew 2, domains > minDomains: all nodes fit",
        incoming(spread(2, "node", min_domains=2)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", node="node-c"),
        ],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [OK, OK, OK],
    ),
    (
        "zones 2/1, maxSkew 2, domains < minDomains: the zone2 nodes fit",
        incoming(spread(2, "zone", min_domains=3)),
        ABXY,
        [existing("p-b1", "node-a"), existing("p-b2", "node-b"), existing("p-y1", "node-y")],
        [U, U, OK, OK],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(spread(1, "node"), node_selector={"foo": ""}),
        FOO_NODES,
        ONE_ONE_ZERO_ONE,
        [U, U, OK, OK],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(spread(1, "node", affinity_policy="Ignore"), node_selector={"foo": ""}),
        FOO_NODES,
        ONE_ONE_ZERO_ONE,
        [U, U, OK, U],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        incoming(spread(1, "node"), affinity=node_affinity_in("foo", "")),
        FOO_NODES,
        ONE_ONE_ZERO_ONE,
        [U, U, OK, OK],
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(spread(1, "node", taints_policy="Honor")),
        TAINTED_NODES,
        ONE_ONE_ZERO_ONE,
        [U, U, OK, OK],
    ),
    (
        "NodeTaintsPolicy ignored",
        incoming(spread(1, "node")),
        TAINTED_NODES,
        ONE_ONE_ZERO_ONE,
        [U, U, OK, U],
    ),
    (
        "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        incoming(spread(1, "zone"), spread(1, "node")),
        ABXY,
        SPREAD_2103,
        [U, U, OK, U],
    ),
    (
        "two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        incoming(spread(1, "zone"), spread(1, "node")),
        ABXY,
        [*SPREAD_2103, existing("p-y4", "node-y")],
        [U, U, U, U],
    ),
    (
        "constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        incoming(spread(1, "zone"), spread(1, "node", selector=BAR), labels=("foo", "bar")),
        ABXY,
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a", "foo", "bar"),
            existing("p-y1", "node-y"),
            existing("p-y2", "node-y", "foo", "bar"),
            existing("p-y3", "node-y"),
        ],
        [U, OK, U, U],
    ),
    (
        "two constraints, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        incoming(spread(1, "zone"), spread(1, "node")),
        [*ABXY[:2], node("node-x", zone="zone2"), ABXY[3]],
        [existing("p-a1", "node-a"), existing("p-y3", "node-y")],
        [U, OK, X, U],
    ),
    (
        "two node inclusion constraints, zone: honor/honor, node: ignore/ignore",
        incoming(
            spread(1, "zone", taints_policy="Honor"),
            spread(1, "node", affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        [
            node("node-a", zone="zone1", node="node-a", foo=""),
            node("node-b", zone="zone1", node="node-b"),
            node("node-x", zone="zone2", node="node-x", foo=""),
            node("node-y", TAINTS, zone="zone2", node="node-y", foo=""),
        ],
        [existing("p-a1", "node-a"), existing("p-b1", "node-b"), existing("p-y1", "node-y")],
        [U, U, OK, U],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    pod: PodInfo, nodes: list[Json], pods: list[PodInfo], want: list[Code | None]
) -> None:
    snap = snapshot(nodes, pods)
    pl = plugin(snap, LIST)
    state = CycleState()
    assert pl.pre_filter(state, pod, snap.node_info_list) == (None, None)
    got = []
    for info in snap.node_info_list:
        status = pl.filter(state, pod, info)
        got.append(None if status is None else status.code)
        if status is not None:
            reason = (
                ERR_REASON_NODE_LABEL_NOT_MATCH
                if status.code == X
                else ERR_REASON_CONSTRAINTS_NOT_MATCH
            )
            assert status.reasons == (reason,)
    assert got == want


def test_pre_filter_skips_without_hard_constraints() -> None:
    snap = snapshot(ABXY, [])
    pl = plugin(snap, LIST)
    for pod in (incoming(), incoming(spread(1, "zone", SA))):
        _, status = pl.pre_filter(CycleState(), pod, snap.node_info_list)
        assert status is not None
        assert status.code == Code.SKIP


def test_malformed_constraint_is_an_error() -> None:
    snap = snapshot(ABXY, [])
    bad = spread(1, "zone", selector={"matchExpressions": [{"key": "foo", "operator": "Bogus"}]})
    _, status = plugin(snap, LIST).pre_filter(CycleState(), incoming(bad), snap.node_info_list)
    assert status is not None
    assert status.code == Code.ERROR


def _paths(state: PreFilterState, i: int = 0) -> tuple[int, dict[str, int]]:
    return state.critical_paths[i].num0, state.tp_value_to_match_num[i]


@pytest.mark.parametrize(
    ("constraint", "pods", "added", "want_min", "want_counts"),
    [
        pytest.param(
            spread(1, "node"),
            [],
            existing("p-a1", "node-a"),
            0,
            {"node-a": 1, "node-b": 0},
            id="node a and b both impact current min match",
        ),
        pytest.param(
            spread(1, "node"),
            [existing("p-b1", "node-b")],
            existing("p-a1", "node-a"),
            1,
            {"node-a": 1, "node-b": 1},
            id="only node a impacts current min match",
        ),
        pytest.param(
            spread(1, "node"),
            [existing("p-b1", "node-b")],
            existing("p-a1", "node-a", ns="ns1"),
            0,
            {"node-a": 0, "node-b": 1},
            id="a pod in a different namespace changes nothing",
        ),
    ],
)
def test_add_pod(
    constraint: Json, pods: list[PodInfo], added: PodInfo, want_min: int, want_counts: Json
) -> None:
    snap = snapshot([zn("node-a", "zone1"), zn("node-b", "zone1")], pods)
    pl = plugin(snap, LIST)
    state = CycleState()
    pod = incoming(constraint)
    pl.pre_filter(state, pod, snap.node_info_list)
    original = _paths(state.read(PRE_FILTER_STATE_KEY))
    original = (original[0], dict(original[1]))
    copy = state.clone()
    ext = pl.pre_filter_extensions()
    assert ext.add_pod(copy, pod, added, snap.node_info_map["node-a"]) is None
    assert _paths(copy.read(PRE_FILTER_STATE_KEY)) == (want_min, want_counts)
    # Preemption works on clones; the cycle's own state must not move.
    assert _paths(state.read(PRE_FILTER_STATE_KEY)) == original


@pytest.mark.parametrize(
    ("nodes", "victim", "want_min", "want_counts"),
    [
        pytest.param(
            [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
            0,
            1,
            {"zone1": 1, "zone2": 1},
            id="min unchanged",
        ),
        pytest.param(
            [
                zn("node-a", "zone1"),
                zn("node-b", "zone1"),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            0,
            1,
            {"zone1": 1, "zone2": 2},
            id="min changed",
        ),
    ],
)
def test_remove_pod(nodes: list[Json], victim: int, want_min: int, want_counts: Json) -> None:
    names = [n["metadata"]["name"] for n in nodes]
    pods = [existing(f"p-{n[-1]}1", n) for n in names]
    snap = snapshot(nodes, pods)
    pl = plugin(snap, LIST)
    state = CycleState()
    pod = incoming(spread(1, "zone"))
    pl.pre_filter(state, pod, snap.node_info_list)
    ext = pl.pre_filter_extensions()
    assert ext.remove_pod(state, pod, pods[victim], snap.node_info_map[names[victim]]) is None
    assert _paths(state.read(PRE_FILTER_STATE_KEY)) == (want_min, want_counts)


def test_preemption_dry_run_makes_node_fit() -> None:
    """Removing a victim through the extension turns a skew failure into a fit."""
    snap = snapshot(ABXY, SPREAD_2103)
    pl = plugin(snap, LIST)
    state = CycleState()
    pod = incoming(spread(1, "node"))
    pl.pre_filter(state, pod, snap.node_info_list)
    node_b = snap.node_info_map["node-b"]
    assert pl.filter(state, pod, node_b) is not None
    trial = state.clone()
    victim = next(p for p in node_b.pods if p.name == "p-b1")
    pl.remove_pod(trial, pod, victim, node_b)
    assert pl.filter(trial, pod, node_b) is None
    assert pl.filter(state, pod, node_b) is not None


def test_counts_follow_cluster_changes() -> None:
    """Per-node counts are reused across cycles only while the node's pods are unchanged."""
    cache = Cache()
    for n in ABXY:
        cache.add_node(n)
    snap = cache.snapshot
    pl = plugin(snap, LIST)
    pod = incoming(spread(1, "node"))

    def verdicts() -> list[Code | None]:
        state = CycleState()
        pl.pre_filter(state, pod, snap.node_info_list)
        out = []
        for info in snap.node_info_list:
            status = pl.filter(state, pod, info)
            out.append(None if status is None else status.code)
        return out

    assert verdicts() == [OK, OK, OK, OK]
    for name in ("node-a", "node-b", "node-x"):
        cache.add_pod(existing(f"p-{name}", name))
    assert verdicts() == [U, U, U, OK]
    victim = cache.remove_pod(snap.node_info_map["node-b"].pods[0].uid)
    assert victim is not None
    assert verdicts() == [U, OK, U, OK]


# -- scoring ------------------------------------------------------------------------------


def hosts(*names: str) -> list[Json]:
    return [node(n, hostname=n) for n in names]


def spread_4321(prefix_nodes: str = "abcd") -> list[PodInfo]:
    counts = dict(zip(prefix_nodes, (4, 3, 2, 1), strict=True))
    return [existing(f"p-{n}{i}", f"node-{n}") for n, c in counts.items() for i in range(1, c + 1)]


SCORE_CASES: list[tuple[str, PodInfo, list[Json], list[Json], list[PodInfo], list[int]]] = [
    # name, pod, candidate nodes, failed nodes, existing pods, want scores
    (
        "one constraint on node, no existing pods",
        incoming(spread(1, HOST, SA)),
        hosts("node-a", "node-b"),
        [],
        [],
        [100, 100],
    ),
    (
        "one constraint on node, only one node is candidate",
        incoming(spread(1, HOST, SA)),
        hosts("node-a"),
        hosts("node-b"),
        [existing("p-a1", "node-a"), existing("p-a2", "node-a"), existing("p-b1", "node-b")],
        [100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        incoming(spread(1, HOST, SA)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-d1", "node-d"),
            existing("p-d2", "node-d"),
            existing("p-d3", "node-d"),
        ],
        [20, 60, 100, 0],
    ),
    (
        "one constraint on node, null selector",
        incoming(spread(1, HOST, SA, selector=None)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        [existing("p-a1", "node-a"), existing("p-b1", "node-b"), existing("p-d1", "node-d")],
        [100, 100, 100, 100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        incoming(spread(2, HOST, SA)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-d1", "node-d"),
            existing("p-d2", "node-d"),
            existing("p-d3", "node-d"),
        ],
        [33, 66, 100, 16],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        incoming(spread(3, HOST, SA)),
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        spread_4321(),
        [44, 66, 77, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one lacks the topology key",
        incoming(spread(1, HOST, SA)),
        [
            node("node-a", hostname="node-a"),
            node("node-b", n="node-b"),
            node("node-x", hostname="node-x"),
        ],
        hosts("node-y"),
        [
            *(existing(f"p-a{i}", "node-a") for i in range(1, 5)),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
            existing("p-x1", "node-x"),
            *(existing(f"p-y{i}", "node-y") for i in range(1, 4)),
        ],
        [16, 0, 100],
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        incoming(spread(1, "zone", SA)),
        [
            node("node-a", zone="zone1", hostname="node-a"),
            node("node-b", zone="zone1", hostname="node-b"),
            node("node-x", zone="zone2", hostname="node-x"),
        ],
        [node("node-y", zone="zone2", hostname="node-y")],
        [
            *(existing(f"p-a{i}", "node-a") for i in range(1, 5)),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
            existing("p-x1", "node-x"),
            *(existing(f"p-y{i}", "node-y") for i in range(1, 4)),
        ],
        [75, 75, 100],
    ),
    (
        "two constraints on zone and node, 2 out of 4 nodes are candidates",
        incoming(spread(1, "zone", SA), spread(1, HOST, SA)),
        [
            node("node-a", zone="zone1", hostname="node-a"),
            node("node-x", zone="zone2", hostname="node-x"),
        ],
        [
            node("node-b", zone="zone1", hostname="node-b"),
            node("node-y", zone="zone2", hostname="node-y"),
        ],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-x1", "node-x"),
            existing("p-x2", "node-x"),
            *(existing(f"p-y{i}", "node-y") for i in range(1, 5)),
        ],
        [100, 63],
    ),
    (
        "two constraints on zone and node, with different labelSelectors",
        incoming(spread(1, "zone", SA), spread(1, HOST, SA, selector=BAR), labels=("foo", "bar")),
        [
            node("node-a", zone="zone1", hostname="node-a"),
            node("node-b", zone="zone1", hostname="node-b"),
            node("node-x", zone="zone2", hostname="node-x"),
            node("node-y", zone="zone2", hostname="node-y"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-b1", "node-b", "foo", "bar"),
            existing("p-y1", "node-y"),
            existing("p-y2", "node-y", "bar"),
        ],
        [60, 20, 100, 60],
    ),
    (
        "existing pods in a different namespace do not count",
        incoming(spread(1, HOST, SA)),
        hosts("node-a", "node-b"),
        [],
        [
            existing("p-a1", "node-a", ns="ns1"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
        ],
        [100, 33],
    ),
    (
        "terminating Pods should be excluded",
        incoming(spread(1, HOST, SA)),
        hosts("node-a", "node-b"),
        [],
        [existing("p-a", "node-a", terminating=True), existing("p-b", "node-b")],
        [100, 0],
    ),
    (
        "minDomains has no effect when ScheduleAnyway",
        incoming(spread(2, "node", SA, min_domains=10)),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", node="node-c"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-b2", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [75, 75, 100],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(spread(1, "node", SA), node_selector={"foo": ""}),
        [
            node("node-a", node="node-a", foo=""),
            node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [0, 33, 100],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(spread(1, "node", SA, affinity_policy="Ignore"), node_selector={"foo": ""}),
        [
            node("node-a", node="node-a", foo=""),
            node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [66, 100, 100],
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(spread(1, "node", SA, taints_policy="Honor")),
        [
            node("node-a", node="node-a"),
            node("node-b", node="node-b"),
            node("node-c", TAINTS, node="node-c"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-a2", "node-a"),
            existing("p-b1", "node-b"),
            existing("p-c1", "node-c"),
        ],
        [0, 33, 100],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        incoming(
            spread(1, "zone", SA, selector={}, match_label_keys=["foo"]),
            spread(1, HOST, SA, selector={}, match_label_keys=["bar"]),
            labels=("foo", "bar"),
        ),
        [
            node("node-a", zone="zone1", hostname="node-a"),
            node("node-b", zone="zone1", hostname="node-b"),
            node("node-c", zone="zone2", hostname="node-c"),
            node("node-d", zone="zone2", hostname="node-d"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-b1", "node-b", "foo", "bar"),
            existing("p-y1", "node-c"),
            existing("p-y2", "node-c", "bar"),
        ],
        [60, 20, 60, 100],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        incoming(
            spread(1, "zone", SA),
            spread(1, HOST, SA, selector=BAR, match_label_keys=["baz"]),
            labels=("foo", "bar", "baz"),
        ),
        [
            node("node-a", zone="zone1", hostname="node-a"),
            node("node-b", zone="zone1", hostname="node-b"),
            node("node-c", zone="zone2", hostname="node-c"),
            node("node-d", zone="zone2", hostname="node-d"),
        ],
        [],
        [
            existing("p-a1", "node-a"),
            existing("p-b1", "node-b", "foo", "bar", "baz"),
            existing("p-c1", "node-c"),
            existing("p-c2", "node-c", "bar"),
            existing("p-d3", "node-c", "bar", "baz"),
        ],
        [60, 20, 60, 100],
    ),
]


def test_scores_round_half_away_from_zero() -> None:
    """Go's math.Round, not Python's round-half-to-even."""
    assert [_round_half_away(x) for x in (0.5, 1.5, 2.5, 2.49)] == [1, 2, 3, 2]


def run_score(
    pl: PodTopologySpread, pod: PodInfo, candidates: list[Any], state: CycleState | None = None
) -> list[int]:
    state = state or CycleState()
    assert pl.pre_score(state, pod, candidates) is None
    scores = [pl.score(state, pod, n) for n in candidates]
    assert pl.normalize_score(state, pod, candidates, scores) is None
    return scores


@pytest.mark.parametrize(
    ("pod", "nodes", "failed", "pods", "want"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    pod: PodInfo, nodes: list[Json], failed: list[Json], pods: list[PodInfo], want: list[int]
) -> None:
    snap = snapshot(nodes + failed, pods)
    candidates = snap.node_info_list[: len(nodes)]
    assert run_score(plugin(snap), pod, candidates) == want


# -- default constraints: the default selector (upstream helper.DefaultSelector) ----------


def owned(
    kind: str = REPLICA_SET, api_version: str = "apps/v1", name: str = "rs1", **labels: str
) -> PodInfo:
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u1", "controller": True}
    return make_pod("p", labels=labels, metadata={"ownerReferences": [ref]})


def workload(selector: Any, name: str = "rs1", namespace: str = "default") -> Json:
    """A Service or controller as the store reads it: identity and ``spec.selector``."""
    spec = {} if selector is None else {"selector": selector}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def with_workloads(snap: Snapshot, *objects: tuple[str, Json]) -> Snapshot:
    for kind, raw in objects:
        snap.workloads.upsert(kind, raw)
    return snap


def selected(pod: PodInfo, *objects: tuple[str, Json]) -> SpreadSelector:
    return default_selector(pod, with_workloads(snapshot([], []), *objects).workloads)


def test_system_defaulting_spreads_pods_a_service_selects() -> None:
    """Upstream "system defaulting, nodes don't have zone, pods match service"."""
    nodes = hosts("node-a", "node-b", "node-c", "node-d")
    snap = snapshot(nodes, spread_4321())
    pod = make_pod("p", labels={"foo": ""})
    status = plugin(snap).pre_score(CycleState(), pod, snap.node_info_list)
    assert status is not None and status.code == Code.SKIP  # no Service yet: no selector
    with_workloads(snap, (SERVICE, workload({"foo": ""}, "s1")))
    assert run_score(plugin(snap), pod, snap.node_info_list) == [44, 66, 77, 100]


def test_system_default_pre_score_state() -> None:
    """Upstream TestPreScoreStateEmptyNodes "system default constraints and a replicaset":
    the ReplicaSet's selector, and nodes without a zone forming their own "" zone."""
    nodes = [
        node("node-a", hostname="node-a", **{ZONE: "mars"}),
        node("node-b", hostname="node-b", **{ZONE: "mars"}),
        node("node-c", hostname="node-c"),
        node("node-d", hostname="node-d"),
    ]
    snap = with_workloads(snapshot(nodes, []), (REPLICA_SET, workload(FOO)))
    state = CycleState()
    pod = owned(foo="tar", baz="sup")
    assert plugin(snap).pre_score(state, pod, snap.node_info_list) is None
    s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
    assert [(c.max_skew, c.topology_key) for c in s.constraints] == [(3, HOST), (5, ZONE)]
    assert {c.selector.key for c in s.constraints} == {SpreadSelector.parse(FOO).key}
    assert s.ignored_nodes == set()
    assert s.pod_counts == [{}, {"mars": 0, "": 0}]
    assert s.weights == [math.log(4 + 2), math.log(2 + 2)]


def test_list_default_constraints_split_by_action() -> None:
    """Upstream "default constraints and a replicaset": soft ones score, hard ones filter."""
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": SA},
            {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
            {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},
        ],
    }
    nodes = [node("node-a", rack="rack1", hostname="node-a", planet="mars")]
    snap = with_workloads(snapshot(nodes, []), (REPLICA_SET, workload(FOO)))
    pl = plugin(snap, args)
    pod = owned(foo="tar", baz="sup")
    state = CycleState()
    assert pl.pre_score(state, pod, snap.node_info_list) is None
    s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
    assert [(c.max_skew, c.topology_key) for c in s.constraints] == [(1, HOST), (2, "planet")]
    assert s.pod_counts == [{}, {"mars": 0}]
    assert s.weights == [math.log(3), math.log(3)]
    assert pl.pre_filter(state, pod, snap.node_info_list) == (None, None)
    hard: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
    assert [(c.max_skew, c.topology_key) for c in hard.constraints] == [(2, "rack")]


HARD_DEFAULTS = {
    "defaultingType": "List",
    "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS},
    ],
}


def test_pre_filter_default_constraints_and_a_service() -> None:
    """Upstream TestPreFilterState "default constraints and a service": the hard defaults,
    over the Service's selector."""
    snap = with_workloads(
        snapshot([zn("node-a", "zone1")], []), (SERVICE, workload({"foo": "bar"}, "s1"))
    )
    state = CycleState()
    pod = make_pod("p", labels={"foo": "bar", "baz": "kar"})
    assert plugin(snap, HARD_DEFAULTS).pre_filter(state, pod, snap.node_info_list) == (None, None)
    s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
    assert [(c.max_skew, c.topology_key) for c in s.constraints] == [(3, "node"), (5, "rack")]
    assert {c.selector.key for c in s.constraints} == {
        SpreadSelector.parse({"matchLabels": {"foo": "bar"}}).key
    }


@pytest.mark.parametrize(
    ("service", "args"),
    [
        pytest.param({"baz": "kep"}, HARD_DEFAULTS, id="a service that doesn't match"),
        pytest.param(
            {"foo": "bar"},
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}
                ],
            },
            id="default soft constraints and a service",
        ),
    ],
)
def test_pre_filter_skips_default_constraints(service: Json, args: Json) -> None:
    """Upstream TestPreFilterState: no hard constraint to check means Skip."""
    snap = with_workloads(snapshot([zn("node-a", "zone1")], []), (SERVICE, workload(service)))
    pod = make_pod("p", labels={"foo": "bar"})
    result, status = plugin(snap, args).pre_filter(CycleState(), pod, snap.node_info_list)
    assert result is None and status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(
    ("pod", "args", "objects"),
    [
        pytest.param(make_pod("p", labels={"foo": ""}), None, [], id="no service, no controller"),
        pytest.param(
            owned("Job", "batch/v1", foo=""),
            None,
            [(REPLICA_SET, workload(FOO))],
            id="unsupported controller",
        ),
        pytest.param(
            owned(name="rs2", foo="bar", baz="sup"),
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}
                ],
            },
            [(REPLICA_SET, workload({"matchExpressions": [{"key": "tar", "operator": "Exists"}]}))],
            id="default constraints and a replicaset that doesn't match",
        ),
        pytest.param(
            owned(foo=""), LIST, [(REPLICA_SET, workload(FOO))], id="list without defaults"
        ),
        pytest.param(
            incoming(spread(1, "zone")),
            None,
            [(SERVICE, workload({"foo": ""}, "s1"))],
            id="only hard constraints of its own",
        ),
    ],
)
def test_pre_score_skip(pod: PodInfo, args: Json | None, objects: list[tuple[str, Json]]) -> None:
    snap = with_workloads(snapshot(hosts("node-a", "node-b"), []), *objects)
    status = plugin(snap, args).pre_score(CycleState(), pod, snap.node_info_list)
    assert status is not None
    assert status.code == Code.SKIP


SERVICES = [(SERVICE, workload({"app": f"test-{i}"}, f"service-{i}", "test")) for i in range(3)]


@pytest.mark.parametrize("i", range(5))
def test_a_pods_services(i: int) -> None:
    """Upstream TestGetPodServices: pod i is selected by service i, if there is one."""
    pod = make_pod(f"test-pod-{i}", namespace="test", labels={"app": f"test-{i}", "label": "x"})
    want = {"matchLabels": {"app": f"test-{i}"}} if i < 3 else {}
    assert selected(pod, *SERVICES).key == SpreadSelector.parse(want).key


def test_services_of_other_namespaces_and_without_selectors_select_nothing() -> None:
    pod = make_pod("p", labels={"app": "a"})
    assert selected(pod, (SERVICE, workload({"app": "a"}, "s", "other"))).empty
    assert selected(pod, (SERVICE, workload(None, "headless"))).empty


def test_services_and_a_replica_set_are_anded() -> None:
    """Upstream ``DefaultSelector``: the Services' labels merged, then the ReplicaSet's
    requirements added (selectorspread's "service and replica set" case)."""
    pod = owned(foo="bar", baz="blah", version="v2")
    sel = selected(
        pod,
        (SERVICE, workload({"baz": "blah"}, "s1")),
        (SERVICE, workload({"foo": "bar"}, "s2")),
        (SERVICE, workload({"baz": "other"}, "s3")),
        (REPLICA_SET, workload({"matchLabels": {"foo": "bar"}})),
    )
    assert sel.matches({"foo": "bar", "baz": "blah", "version": "v1"})
    assert not sel.matches({"foo": "bar"})
    assert not sel.matches({"baz": "blah"})


def test_a_replication_controller_selector_is_merged() -> None:
    pod = owned(REPLICATION_CONTROLLER, "v1", name="rc1", foo="bar", baz="blah")
    sel = selected(
        pod,
        (SERVICE, workload({"baz": "blah"}, "s1")),
        (REPLICATION_CONTROLLER, workload({"foo": "bar"}, "rc1")),
    )
    assert sel.key == SpreadSelector.parse({"matchLabels": {"baz": "blah", "foo": "bar"}}).key


@pytest.mark.parametrize(
    ("ref", "objects"),
    [
        pytest.param(("extensions/v1beta1", REPLICA_SET, "rs1"), [], id="another apiVersion"),
        pytest.param(("apps/v1", REPLICA_SET, "rs2"), [], id="not in the store"),
        pytest.param(
            ("apps/v1", REPLICA_SET, "rs1"),
            [(REPLICA_SET, workload({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}))],
            id="a selector upstream cannot convert",
        ),
    ],
)
def test_a_controller_upstream_cannot_read_adds_nothing(
    ref: tuple[str, str, str], objects: list[tuple[str, Json]]
) -> None:
    api_version, kind, name = ref
    pod = owned(kind, api_version, name, app="a", foo="bar")
    sel = selected(
        pod, (SERVICE, workload({"app": "a"}, "s1")), (REPLICA_SET, workload(FOO)), *objects
    )
    assert sel.key == SpreadSelector.parse({"matchLabels": {"app": "a"}}).key


def test_a_service_selector_value_needs_the_key() -> None:
    """``labels.Set{"foo": ""}`` requires foo, even empty: a pod without it is not selected."""
    objects = [(SERVICE, workload({"foo": ""}, "s1"))]
    assert selected(make_pod("p", labels={"app": "a"}), *objects).empty
    assert not selected(make_pod("p", labels={"foo": ""}), *objects).empty


@pytest.mark.parametrize(
    ("refs", "want"),
    [
        pytest.param(
            [("apps/v1", REPLICA_SET, "other", False), ("apps/v1", REPLICA_SET, "rs1", True)],
            {"app": "a"},
            id="the reference marked controller, not the first",
        ),
        pytest.param([("/v1", REPLICATION_CONTROLLER, "rc1", True)], {"rc": "x"}, id="/v1 is v1"),
        pytest.param([("apps/v1/x", REPLICA_SET, "rs1", True)], {}, id="unparsable apiVersion"),
    ],
)
def test_the_controller_reference_read_as_upstream(
    refs: list[tuple[str, str, str, bool]], want: Json
) -> None:
    owners = [
        {"apiVersion": v, "kind": k, "name": n, "uid": n, "controller": c} for v, k, n, c in refs
    ]
    pod = make_pod("p", labels={"app": "a", "rc": "x"}, metadata={"ownerReferences": owners})
    sel = selected(
        pod,
        (REPLICA_SET, workload({"matchLabels": {"app": "a"}}, "rs1")),
        (REPLICA_SET, workload({"matchLabels": {"other": "o"}}, "other")),
        (REPLICATION_CONTROLLER, workload({"rc": "x"}, "rc1")),
    )
    assert sel.key == SpreadSelector.parse({"matchLabels": want}).key


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param([(REPLICA_SET, workload(None))], id="a ReplicaSet without a selector"),
        pytest.param([(REPLICA_SET, workload(FOO, namespace="other"))], id="another namespace"),
    ],
)
def test_a_controller_that_adds_nothing(objects: list[tuple[str, Json]]) -> None:
    assert selected(owned(foo="x"), *objects).empty


def test_a_service_that_loses_its_selector_no_longer_selects() -> None:
    snap = with_workloads(snapshot([], []), (SERVICE, workload({"app": "a"}, "s1")))
    pod = make_pod("p", labels={"app": "a"})
    assert not default_selector(pod, snap.workloads).empty
    snap.workloads.upsert(SERVICE, workload(None, "s1"))
    assert default_selector(pod, snap.workloads).empty


def test_a_deleted_workload_no_longer_selects() -> None:
    snap = with_workloads(snapshot([], []), (SERVICE, workload({"app": "a"}, "s1")))
    snap.workloads.delete(SERVICE, workload(None, "s1"))
    assert default_selector(make_pod("p", labels={"app": "a"}), snap.workloads).empty


def test_a_stateful_set_counts_its_pods_of_every_revision() -> None:
    """The StatefulSet's selector, not the pod's labels: siblings of an older template
    (another version label, another revision hash) count too."""
    siblings = [
        make_pod(
            f"web-{i}",
            node_name="node-a",
            labels={"app": "web", "version": "v1", "controller-revision-hash": "web-1"},
        )
        for i in range(2)
    ]
    snap = snapshot(hosts("node-a", "node-b"), siblings)
    with_workloads(snap, (STATEFUL_SET, workload({"matchLabels": {"app": "web"}}, "web")))
    pod = owned(STATEFUL_SET, name="web", app="web", version="v2")
    assert run_score(plugin(snap), pod, snap.node_info_list) == [40, 100]


# -- args -----------------------------------------------------------------------------------


def test_args_defaults() -> None:
    args = PodTopologySpreadArgs()
    assert args.defaulting_type == "System"
    assert args.default_constraints == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": -1, "topologyKey": "k", "whenUnsatisfiable": DNS}
                ],
            },
            "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": DNS}],
            },
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "k"}]},
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "Foo"}
                ],
            },
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Foo": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": DNS},
                    {"maxSkew": 2, "topologyKey": "k", "whenUnsatisfiable": DNS},
                ],
            },
            'defaultConstraints[1]: Duplicate value: "{k, DoNotSchedule}"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "k",
                        "whenUnsatisfiable": DNS,
                        "labelSelector": {},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a "
            "selector, as they deduced for each pod",
        ),
        (
            {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": DNS}]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {"defaultingType": "Other"},
            'defaultingType: Unsupported value: "Other": supported values: "System", "List"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "a/b/c", "whenUnsatisfiable": DNS}
                ],
            },
            'defaultConstraints[0].topologyKey: Invalid value: "a/b/c": a valid label key must '
            "consist of",
        ),
    ],
)
def test_args_invalid(raw: Json, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        PodTopologySpreadArgs.model_validate(raw)
    assert message in str(exc.value)


def test_args_valid_list() -> None:
    args = PodTopologySpreadArgs.model_validate(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": DNS},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": SA},
            ],
        }
    )
    assert [c.max_skew for c in args.default_constraints] == [1, 2]
