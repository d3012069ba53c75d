"""Cases from upstream interpodaffinity/filtering_test.go and scoring_test.go."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_pod, node_dict
from multisched.cache import Cache, PodInfo, Snapshot
from multisched.framework import Code, CycleState, Status
from multisched.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
    InterPodAffinityArgs,
)

Json = dict[str, Any]

NOT_WRONGKEY = {"key": "wrongkey", "operator": "DoesNotExist"}
NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}


class _Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def term(
    key: str,
    op: str,
    values: list[str] | None = None,
    topology: str = "region",
    *,
    namespaces: list[str] | None = None,
    ns_selector: Json | None = None,
    extra: list[Json] | None = None,
) -> Json:
    expr: Json = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    out: Json = {
        "labelSelector": {"matchExpressions": [expr, *(extra or [])]},
        "topologyKey": topology,
    }
    if namespaces is not None:
        out["namespaces"] = namespaces
    if ns_selector is not None:
        out["namespaceSelector"] = ns_selector
    return out


def weighted(weight: int, t: Json) -> Json:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    required: list[Json] | None = None,
    anti: list[Json] | None = None,
    preferred: list[Json] | None = None,
    preferred_anti: list[Json] | None = None,
) -> Json:
    req, pref = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    out: Json = {}
    if required or preferred:
        out["podAffinity"] = {req: required or [], pref: preferred or []}
    if anti or preferred_anti:
        out["podAntiAffinity"] = {req: anti or [], pref: preferred_anti or []}
    return out


def cluster(pods: list[PodInfo], nodes: list[Json]) -> Cache:
    cache = Cache()
    for ns, labels in NAMESPACES.items():
        cache.set_namespace(ns, labels)
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        cache.add_pod(pod)
    return cache


def node(name: str, **labels: str) -> Json:
    return node_dict(name, labels=labels)


def run_filter(
    pod: PodInfo, pods: list[PodInfo], nodes: list[Json]
) -> tuple[Status | None, list[Status | None]]:
    cache = cluster(pods, nodes)
    plugin = InterPodAffinity(None, _Handle(cache.snapshot))
    state = CycleState()
    snapshot = cache.snapshot
    _, status = plugin.pre_filter(state, pod, snapshot.node_info_list)
    if status is not None:
        return status, []
    return None, [plugin.filter(state, pod, n) for n in snapshot.node_info_list]


def assert_status(got: Status | None, code: Code | None, reason: str = "") -> None:
    if code is None:
        assert got is None
        return
    assert got is not None
    assert got.code == code
    assert got.reasons == ((reason,) if reason else ())


SERVICE = {"service": "securityscan"}
SECURITY = {"security": "S1"}
NODE1 = node("node1", region="r1", zone="z11")
IN_SERVICE = term("service", "In", ["securityscan", "value2"])
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHEDULABLE = Code.UNSCHEDULABLE


def existing(name: str = "e", node_name: str = "node1", **kw: Any) -> PodInfo:
    return make_pod(name, node_name=node_name, **kw)


SINGLE_NODE_CASES: list[tuple[str, PodInfo, list[PodInfo], Code | None, str]] = [
    (
        "satisfies affinity In operator with the existing pod",
        make_pod(labels=SECURITY, affinity=affinity([IN_SERVICE])),
        [existing(labels=SERVICE)],
        None,
        "",
    ),
    (
        "does not satisfy affinity because of a different namespace",
        make_pod(labels=SECURITY, affinity=affinity([{**IN_SERVICE, "namespaces": ["DiffNS"]}])),
        [existing(namespace="ns", labels=SERVICE)],
        UNRESOLVABLE,
        ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "matchExpressions are ANDed",
        make_pod(
            labels=SECURITY,
            affinity=affinity(
                [
                    term("service", "Exists", extra=[NOT_WRONGKEY]),
                    term(
                        "service",
                        "In",
                        ["securityscan2"],
                        extra=[{"key": "service", "operator": "NotIn", "values": ["WrongValue"]}],
                    ),
                ]
            ),
        ),
        [existing(labels=SERVICE)],
        UNRESOLVABLE,
        ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "satisfies affinity but not the pod's anti-affinity",
        make_pod(
            labels=SECURITY,
            affinity=affinity(
                [IN_SERVICE], anti=[term("service", "In", ["securityscan", "value2"], "zone")]
            ),
        ),
        [existing(labels=SERVICE)],
        UNSCHEDULABLE,
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "does not satisfy the existing pod's anti-affinity (symmetry)",
        make_pod(
            labels=SERVICE,
            affinity=affinity(
                [IN_SERVICE], anti=[term("service", "In", ["antivirusscan", "value2"], "node")]
            ),
        ),
        [
            existing(
                labels=SERVICE,
                affinity=affinity(anti=[term("service", "In", ["securityscan", "value2"], "zone")]),
            )
        ],
        UNSCHEDULABLE,
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "pod does not match its own affinity and no pod matches it",
        make_pod(
            labels=SERVICE,
            affinity=affinity([term("service", "NotIn", ["securityscan", "value2"])]),
        ),
        [existing(node_name="node2", labels=SERVICE)],
        UNRESOLVABLE,
        ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "existing pod anti-affinity respected when the pod has no terms",
        make_pod(labels=SERVICE),
        [
            existing(
                labels=SERVICE,
                affinity=affinity(anti=[term("service", "In", ["securityscan", "value2"], "zone")]),
            )
        ],
        UNSCHEDULABLE,
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "symmetry b1: partial matches on both sides",
        make_pod(
            labels={"abc": "", "xyz": ""},
            affinity=affinity(
                anti=[
                    term("abc", "Exists", topology="zone"),
                    term("def", "Exists", topology="zone"),
                ]
            ),
        ),
        [
            existing(
                labels={"def": "", "xyz": ""},
                affinity=affinity(
                    anti=[
                        term("abc", "Exists", topology="zone"),
                        term("def", "Exists", topology="zone"),
                    ]
                ),
            )
        ],
        UNSCHEDULABLE,
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "affinity with namespaceSelector",
        make_pod(
            labels=SECURITY,
            affinity=affinity(
                [{**IN_SERVICE, "namespaceSelector": {"matchLabels": {"team": "team1"}}}]
            ),
        ),
        [existing(namespace="subteam1.team1", labels=SERVICE)],
        None,
        "",
    ),
    (
        "affinity with non-matching namespaceSelector",
        make_pod(
            labels=SECURITY,
            affinity=affinity(
                [{**IN_SERVICE, "namespaceSelector": {"matchLabels": {"team": "team1"}}}]
            ),
        ),
        [existing(namespace="subteam1.team2", labels=SERVICE)],
        UNRESOLVABLE,
        ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "anti-affinity with matching namespaceSelector",
        make_pod(
            namespace="subteam1.team1",
            labels=SECURITY,
            affinity=affinity(
                anti=[
                    term(
                        "service",
                        "In",
                        ["securityscan", "value2"],
                        "zone",
                        ns_selector={"matchLabels": {"team": "team1"}},
                    )
                ]
            ),
        ),
        [existing(namespace="subteam2.team1", labels=SERVICE)],
        UNSCHEDULABLE,
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "anti-affinity with an empty (match all) namespaceSelector",
        make_pod(
            namespace="subteam1.team1",
            labels=SECURITY,
            affinity=affinity(
                anti=[term("service", "In", ["securityscan", "value2"], "zone", ns_selector={})]
            ),
        ),
        [existing(namespace="subteam2.team1", labels=SERVICE)],
        UNSCHEDULABLE,
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ),
    (
        "anti-affinity with non-matching namespaceSelector",
        make_pod(
            namespace="subteam1.team1",
            labels=SECURITY,
            affinity=affinity(
                anti=[
                    term(
                        "service",
                        "In",
                        ["securityscan", "value2"],
                        "zone",
                        ns_selector={"matchLabels": {"team": "team1"}},
                    )
                ]
            ),
        ),
        [existing(namespace="subteam1.team2", labels=SERVICE)],
        None,
        "",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "code", "reason"),
    [c[1:] for c in SINGLE_NODE_CASES],
    ids=[c[0] for c in SINGLE_NODE_CASES],
)
def test_filter_single_node(
    pod: PodInfo, pods: list[PodInfo], code: Code | None, reason: str
) -> None:
    pre, statuses = run_filter(pod, pods, [NODE1])
    assert pre is None
    assert_status(statuses[0], code, reason)


@pytest.mark.parametrize(
    ("pod", "pods"),
    [
        pytest.param(make_pod(), [], id="no affinity and no pods"),
        pytest.param(
            make_pod(labels=SERVICE),
            [
                existing(
                    labels=SERVICE,
                    affinity=affinity(
                        anti=[term("service", "NotIn", ["securityscan", "value2"], "zone")]
                    ),
                )
            ],
            id="existing anti-affinity does not select the pod",
        ),
        pytest.param(
            make_pod(labels={"foo": ""}),
            [existing(affinity=affinity(anti=[term("foo", "Exists", topology="invalid-label")]))],
            id="existing anti-affinity topology key on no node",
        ),
    ],
)
def test_pre_filter_skips(pod: PodInfo, pods: list[PodInfo]) -> None:
    pre, _ = run_filter(pod, pods, [NODE1])
    assert pre is not None
    assert pre.is_skip()


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def test_affinity_topology_shared_by_nodes() -> None:
    pod = make_pod(affinity=affinity([term("foo", "In", ["bar"])]))
    pods = [existing("p1", labels={"foo": "bar"})]
    nodes = [node("node1", **CHINA), node("node2", **CHINA_AZ1), node("node3", **INDIA)]
    _, statuses = run_filter(pod, pods, nodes)
    assert_status(statuses[0], None)
    assert_status(statuses[1], None)
    assert_status(statuses[2], UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)


SELF_AFFINE = make_pod(
    labels={"foo": "bar", "service": "securityscan"},
    affinity=affinity(
        [term("foo", "In", ["bar"], "zone"), term("service", "In", ["securityscan"], "zone")]
    ),
)


def test_first_pod_of_self_affine_group_goes_anywhere() -> None:
    pods = [existing("p1", node_name="nodeA", labels={"foo": "bar"})]
    nodes = [node("nodeA", zone="az1", hostname="h1"), node("nodeB", zone="az2", hostname="h2")]
    _, statuses = run_filter(SELF_AFFINE, pods, nodes)
    assert statuses == [None, None]


def test_first_pod_of_self_affine_group_needs_the_topology_label() -> None:
    pods = [existing("p1", node_name="nodeA", labels={"foo": "bar"})]
    nodes = [
        node("nodeA", zoneLabel="az1", hostname="h1"),
        node("nodeB", zoneLabel="az2", hostname="h2"),
    ]
    _, statuses = run_filter(SELF_AFFINE, pods, nodes)
    for status in statuses:
        assert_status(status, UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)


def test_anti_affinity_respects_namespaces() -> None:
    pod = make_pod(
        namespace="NS1",
        labels={"foo": "123"},
        affinity=affinity(anti=[term("foo", "In", ["bar"])]),
    )
    pods = [
        existing("a", node_name="nodeA", namespace="NS1", labels={"foo": "bar"}),
        existing(
            "c",
            node_name="nodeC",
            namespace="NS2",
            affinity=affinity(anti=[term("foo", "In", ["123"])]),
        ),
    ]
    nodes = [node("nodeA", **CHINA), node("nodeB", **CHINA_AZ1), node("nodeC", **INDIA)]
    _, statuses = run_filter(pod, pods, nodes)
    assert_status(statuses[0], UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    assert_status(statuses[1], UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    assert_status(statuses[2], None)


def test_pre_filter_extensions_update_a_cloned_state() -> None:
    pod = make_pod(labels=SERVICE, affinity=affinity(anti=[term("service", "Exists")]))
    victim = existing("victim", labels=SERVICE)
    cache = cluster([victim], [NODE1])
    plugin = InterPodAffinity(None, _Handle(cache.snapshot))
    state = CycleState()
    assert plugin.pre_filter(state, pod, cache.snapshot.node_info_list) == (None, None)
    node1 = cache.snapshot.node_info_list[0]
    assert_status(
        plugin.filter(state, pod, node1), UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
    )

    dry_run = state.clone()
    twin = node1.clone()
    twin.remove_pod(victim)
    assert plugin.remove_pod(dry_run, pod, victim, twin) is None
    assert plugin.filter(dry_run, pod, twin) is None
    # The real cycle state is untouched.
    assert plugin.filter(state, pod, node1) is not None
    twin.add_pod(victim)
    assert plugin.add_pod(dry_run, pod, victim, twin) is None
    assert plugin.filter(dry_run, pod, twin) is not None


# -- scoring -------------------------------------------------------------------------------

S1 = {"security": "S1"}
S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
STAY_WITH_S1 = affinity(preferred=[weighted(5, term("security", "In", ["S1"]))])
STAY_WITH_S2 = affinity(preferred=[weighted(6, term("security", "In", ["S2"]))])
AFFINITY3 = affinity(
    preferred=[
        weighted(
            8,
            term(
                "security",
                "NotIn",
                ["S1"],
                extra=[{"key": "security", "operator": "In", "values": ["S2"]}],
            ),
        ),
        weighted(2, term("security", "Exists", extra=[NOT_WRONGKEY])),
    ]
)
HARD_AFFINITY = affinity(
    [
        term("security", "In", ["S1", "value2"]),
        term("security", "Exists", extra=[NOT_WRONGKEY]),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(preferred_anti=[weighted(5, term("security", "In", ["S1"], "az"))])
AWAY_FROM_S2_IN_AZ = affinity(preferred_anti=[weighted(5, term("security", "In", ["S2"], "az"))])
STAY_S1_AWAY_S2 = affinity(
    preferred=[weighted(8, term("security", "In", ["S1"]))],
    preferred_anti=[weighted(5, term("security", "In", ["S2"], "az"))],
)
NS_SELECTOR = {"matchLabels": {"team": "team1"}}
AFFINITY_NS_SELECTOR = affinity(
    preferred=[
        weighted(
            5,
            term("security", "In", ["S1"], namespaces=["subteam2.team2"], ns_selector=NS_SELECTOR),
        )
    ]
)


def run_score(
    pod: PodInfo,
    pods: list[PodInfo],
    nodes: list[Json],
    args: InterPodAffinityArgs | None = None,
) -> Status | list[int]:
    cache = cluster(pods, nodes)
    plugin = InterPodAffinity(args, _Handle(cache.snapshot))
    state = CycleState()
    infos = cache.snapshot.node_info_list
    status = plugin.pre_score(state, pod, infos)
    if status is not None:
        return status
    scores = [plugin.score(state, pod, n) for n in infos]
    assert plugin.normalize_score(state, pod, infos, scores) is None
    return scores


def p(node_name: str, labels: dict[str, str] | None = None, **kw: Any) -> PodInfo:
    return existing(f"on-{node_name}", node_name=node_name, labels=labels, **kw)


SCORE_CASES: list[tuple[str, PodInfo, list[PodInfo], list[Json], list[int]]] = [
    (
        "affinity: matching topology and pods scores high",
        make_pod(labels=S1, affinity=STAY_WITH_S1),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)],
        [100, 0, 0],
    ),
    (
        "nodes sharing the topology value of a matching pod score the same",
        make_pod(affinity=STAY_WITH_S1),
        [p("node1", S1)],
        [node("node1", **CHINA), node("node2", **CHINA_AZ1), node("node3", **INDIA)],
        [100, 100, 0],
    ),
    (
        "different label operators, some match failures",
        make_pod(labels=S1, affinity=AFFINITY3),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)],
        [20, 100, 0],
    ),
    (
        "affinity symmetry: existing pods' preferred terms",
        make_pod(labels=S2),
        [p("node1", S1, affinity=STAY_WITH_S1), p("node2", S2, affinity=STAY_WITH_S2)],
        [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)],
        [0, 100, 0],
    ),
    (
        "affinity symmetry with namespace selector",
        make_pod(namespace="subteam1.team1", labels=S1),
        [p("node1", S1, affinity=AFFINITY_NS_SELECTOR), p("node2", S2, affinity=STAY_WITH_S2)],
        [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)],
        [100, 0, 0],
    ),
    (
        "affinity symmetry: existing pods' required terms with hardPodAffinityWeight",
        make_pod(labels=S1),
        [p("node1", S1, affinity=HARD_AFFINITY), p("node2", S2, affinity=HARD_AFFINITY)],
        [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)],
        [100, 100, 0],
    ),
    (
        "anti-affinity: more matching pods scores lower",
        make_pod(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node1", S1), p("node2", S2)],
        [node("node1", **AZ1), node("node2", **INDIA)],
        [0, 100],
    ),
    (
        "anti-affinity symmetry",
        make_pod(labels=S2),
        [p("node1", S1, affinity=AWAY_FROM_S2_IN_AZ), p("node2", S2, affinity=AWAY_FROM_S1_IN_AZ)],
        [node("node1", **AZ1), node("node2", **AZ2)],
        [0, 100],
    ),
    (
        "affinity, anti-affinity and symmetry together",
        make_pod(labels=S1, affinity=STAY_S1_AWAY_S2),
        [
            p("node1", S1),
            p("node2", S2),
            p("node3", affinity=STAY_S1_AWAY_S2),
            p("node4", affinity=AWAY_FROM_S1_IN_AZ),
        ],
        [
            node("node1", **CHINA),
            node("node2", **AZ1),
            node("node3", **INDIA),
            node("node4", **AZ2),
        ],
        [100, 0, 100, 0],
    ),
    (
        "partial nodes in a topology have pods with affinity",
        make_pod(labels=S1),
        [p("node1", S1), p("node2", affinity=STAY_S1_AWAY_S2)],
        [node("node1", **CHINA), node("node2", **CHINA)],
        [0, 0],
    ),
    (
        "affinity with pods matching both namespaceSelector and namespaces",
        make_pod(namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NS_SELECTOR),
        [
            p("node1", S1, namespace="subteam1.team1"),
            p("node1", S1, namespace="subteam1.team1"),
            p("node1", S1, namespace="subteam2.team2"),
            p("node2", S1, namespace="subteam2.team1"),
        ],
        [node("node1", **CHINA), node("node2", **INDIA)],
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "expected"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(pod: PodInfo, pods: list[PodInfo], nodes: list[Json], expected: list[int]) -> None:
    assert run_score(pod, pods, nodes) == expected


def test_pre_score_skips_without_any_affinity() -> None:
    status = run_score(make_pod(labels=S1), [], [node("node1", **CHINA)])
    assert isinstance(status, Status)
    assert status.is_skip()


@pytest.mark.parametrize(("ignore", "expected"), [(True, None), (False, [0, 100])])
def test_ignore_preferred_terms_of_existing_pods(ignore: bool, expected: list[int] | None) -> None:
    pods = [p("node1", S1, affinity=STAY_S1_AWAY_S2), p("node2", S2, affinity=STAY_WITH_S2)]
    nodes = [node("node1", **CHINA), node("node2", **INDIA)]
    got = run_score(
        make_pod(labels=S2),
        pods,
        nodes,
        InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=ignore),
    )
    if expected is None:
        assert isinstance(got, Status)
        assert got.is_skip()
    else:
        assert got == expected


HARD_NS_AFFINITY = affinity(
    [
        term(
            "service",
            "In",
            ["S1"],
            namespaces=["default", "subteam2.team2"],
            ns_selector=NS_SELECTOR,
        )
    ]
)


@pytest.mark.parametrize(
    ("namespace", "weight", "expected"),
    [
        pytest.param("default", 1, [100, 100, 0], id="default weight"),
        pytest.param("default", 0, None, id="zero weight"),
        pytest.param("subteam1.team2", 1, None, id="no matching namespace"),
        pytest.param("subteam1.team1", 1, [100, 100, 0], id="matching namespaceSelector"),
        pytest.param("subteam2.team2", 1, [100, 100, 0], id="matching namespaces"),
    ],
)
def test_hard_pod_affinity_weight(namespace: str, weight: int, expected: list[int] | None) -> None:
    pods = [p("node1", affinity=HARD_NS_AFFINITY), p("node2", affinity=HARD_NS_AFFINITY)]
    nodes = [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)]
    got = run_score(
        make_pod(namespace=namespace, labels={"service": "S1"}),
        pods,
        nodes,
        InterPodAffinityArgs(hard_pod_affinity_weight=weight),
    )
    if expected is None:
        assert isinstance(got, Status)
        assert got.is_skip()
    else:
        assert got == expected


def test_args_defaults_and_validation() -> None:
    args = InterPodAffinityArgs.model_validate({})
    assert args.hard_pod_affinity_weight == 1
    assert args.ignore_preferred_terms_of_existing_pods is False
    parsed = InterPodAffinityArgs.model_validate(
        {"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}
    )
    assert parsed.hard_pod_affinity_weight == 100
    with pytest.raises(ValidationError, match=r"not in valid range \[0, 100\]"):
        InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 101})
    with pytest.raises(ValidationError):
        InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 1, "unknown": 1})
