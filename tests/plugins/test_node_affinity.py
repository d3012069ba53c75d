"""Cases from upstream nodeaffinity/node_affinity_test.go and validation_pluginargs_test.go."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_node, make_pod
from multisched.framework import Code, CycleState, Status
from multisched.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    QueueingHint,
)
from multisched.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)

Json = dict[str, Any]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def expr(key: str, op: str, *values: str) -> Json:
    out: Json = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def name_in(name: str) -> Json:
    return expr("metadata.name", "In", name)


def required(*terms: Json) -> Json:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, Json]) -> Json:
    return {"nodeAffinity": {PREF: [{"weight": w, "preference": t} for w, t in weighted]}}


def plugin(added: Json | None = None) -> NodeAffinity:
    args = NodeAffinityArgs.model_validate({"addedAffinity": added} if added else {})
    return NodeAffinity(args, None)


def assert_status(status: Status | None, code: Code | None, reason: str = "") -> None:
    if code is None:
        assert status is None
        return
    assert status is not None
    assert status.code == code
    assert status.reasons == (reason,)


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

FILTER_CASES: list[tuple[str, Json, Json, str, Json | None, Code | None, str]] = [
    # name, pod spec kwargs, node labels, node name, added affinity, want code, want reason
    (
        "missing labels",
        {"node_selector": {"foo": "bar"}},
        {},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    ("same labels", {"node_selector": {"foo": "bar"}}, {"foo": "bar"}, "n", None, None, ""),
    (
        "node labels are superset",
        {"node_selector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "n",
        None,
        None,
        "",
    ),
    (
        "node labels are subset",
        {"node_selector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "matchExpressions In matches",
        {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})},
        {"foo": "bar"},
        "n",
        None,
        None,
        "",
    ),
    (
        "matchExpressions Exists matches",
        {"affinity": required({"matchExpressions": [expr("GPU", "Exists")]})},
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        None,
        None,
        "",
    ),
    (
        "affinity doesn't match node labels",
        {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})},
        {"foo": "bar"},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "matchExpressions Gt matches",
        {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})},
        {"kernel-version": "0206"},
        "n",
        None,
        None,
        "",
    ),
    (
        "matchExpressions NotIn matches",
        {"affinity": required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})},
        {"mem-type": "DDR3"},
        "n",
        None,
        None,
        "",
    ),
    (
        "empty matchExpressions match nothing",
        {"affinity": required({"matchExpressions": []})},
        {"foo": "bar"},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "multiple matchExpressions ANDed, one fails",
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "multiple terms ORed, one matches",
        {
            "affinity": required(
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            )
        },
        {"foo": "bar"},
        "n",
        None,
        None,
        "",
    ),
    (
        "affinity matches but nodeSelector does not",
        {
            "affinity": required({"matchExpressions": [expr("foo", "Exists")]}),
            "node_selector": {"foo": "bar"},
        },
        {"foo": "barrrrrr"},
        "n",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "two terms: matchFields does not match, matchExpressions does",
        {
            "affinity": required(
                {"matchFields": [name_in("node1"), name_in("node2")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        "",
    ),
    (
        "one term: matchFields does not match, matchExpressions does",
        {
            "affinity": required(
                {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "matches added affinity and the pod's",
        {"affinity": required({"matchExpressions": [expr("zone", "In", "foo")]})},
        {"zone": "foo"},
        "node2",
        {REQ: {"nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]}},
        None,
        "",
    ),
    (
        "matches added affinity but not the pod's",
        {"affinity": required({"matchExpressions": [expr("zone", "In", "bar")]})},
        {"zone": "foo"},
        "node2",
        {REQ: {"nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]}},
        UNRESOLVABLE,
        ERR_REASON_POD,
    ),
    (
        "does not match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "bar")]}]}},
        UNRESOLVABLE,
        ERR_REASON_ENFORCED,
    ),
]


@pytest.mark.parametrize(
    ("pod_kw", "labels", "node_name", "added", "code", "reason"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
@pytest.mark.parametrize("run_pre_filter", [True, False], ids=["prefilter", "no-prefilter"])
def test_filter(
    pod_kw: Json,
    labels: dict[str, str],
    node_name: str,
    added: Json | None,
    code: Code | None,
    reason: str,
    run_pre_filter: bool,
) -> None:
    pl = plugin(added)
    pod = make_pod(**pod_kw)
    node = make_node(node_name, labels=labels, hostname_label=False)
    state = CycleState()
    if run_pre_filter:
        pl.pre_filter(state, pod, [node])
    assert_status(pl.filter(state, pod, node), code, reason)


@pytest.mark.parametrize(
    ("pod_kw", "added", "want_names", "want_status"),
    [
        pytest.param({}, None, None, Status.skip(), id="no affinity: skip"),
        pytest.param(
            {"affinity": {"nodeAffinity": {PREF: []}}}, None, None, Status.skip(), id="nil required"
        ),
        pytest.param(
            {},
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "bar")]}]}},
            None,
            None,
            id="added affinity only: no skip",
        ),
        pytest.param(
            {"node_selector": {"foo": "bar"}}, None, None, None, id="node selector: all nodes"
        ),
        pytest.param(
            {"affinity": required({"matchFields": [name_in("node1")]})},
            None,
            {"node1"},
            None,
            id="matchFields In pins a node",
        ),
        pytest.param(
            {
                "affinity": required(
                    {
                        "matchFields": [name_in("node1")],
                        "matchExpressions": [expr("foo", "In", "bar")],
                    }
                )
            },
            None,
            {"node1"},
            None,
            id="matchFields and matchExpressions in one term",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchFields": [name_in("node1")]},
                    {"matchExpressions": [expr("foo", "In", "bar")]},
                )
            },
            None,
            None,
            None,
            id="a term without matchFields allows all nodes",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]}
                )
            },
            None,
            {"node1", "node2"},
            None,
            id="two terms of node name affinity",
        ),
        pytest.param(
            {"affinity": required({"matchFields": [name_in("node1"), name_in("node2")]})},
            None,
            None,
            Status.unresolvable(ERR_REASON_CONFLICT),
            id="conflicting matchFields",
        ),
    ],
)
def test_pre_filter(
    pod_kw: Json, added: Json | None, want_names: set[str] | None, want_status: Status | None
) -> None:
    result, status = plugin(added).pre_filter(CycleState(), make_pod(**pod_kw), [])
    if want_status is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (want_status.code, want_status.reasons)
    if want_names is None:
        assert result is None
    else:
        assert result is not None
        assert result.node_names == frozenset(want_names)


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, {"matchExpressions": [expr("foo", "In", "bar")]}))
AFFINITY2 = preferred(
    (2, {"matchExpressions": [expr("foo", "In", "bar")]}),
    (4, {"matchExpressions": [expr("key", "In", "value")]}),
    (
        5,
        {
            "matchExpressions": [
                expr("foo", "In", "bar"),
                expr("key", "In", "value"),
                expr("az", "In", "az1"),
            ]
        },
    ),
)


@pytest.mark.parametrize(
    ("affinity", "nodes", "added", "want"),
    [
        pytest.param(
            AFFINITY1,
            [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
            None,
            [0, 0, 0],
            id="no node matches",
        ),
        pytest.param(
            AFFINITY1,
            [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
            None,
            [100, 0, 0],
            id="only node1 matches",
        ),
        pytest.param(
            AFFINITY2,
            [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
            None,
            [18, 100, 36],
            id="all match with different priorities",
        ),
        pytest.param(
            None,
            [("node1", LABEL1), ("node2", LABEL2)],
            AFFINITY1["nodeAffinity"],
            [100, 0],
            id="added affinity",
        ),
        pytest.param(
            AFFINITY1,
            [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
            {
                PREF: [
                    {"weight": 3, "preference": {"matchExpressions": [expr("key", "In", "value")]}}
                ]
            },
            [40, 60, 100],
            id="added affinity and pod affinity",
        ),
    ],
)
def test_score(
    affinity: Json | None,
    nodes: list[tuple[str, dict[str, str]]],
    added: Json | None,
    want: list[int],
) -> None:
    pl = plugin(added)
    pod = make_pod(affinity=affinity)
    infos = [make_node(n, labels=labels, hostname_label=False) for n, labels in nodes]
    state = CycleState()
    assert pl.pre_score(state, pod, infos) is None
    scores = [pl.score(state, pod, n) for n in infos]
    assert pl.normalize_score(state, pod, infos, scores) is None
    assert scores == want


def test_pre_score_skips_without_preferred_terms() -> None:
    status = plugin().pre_score(CycleState(), make_pod(), [make_node("n")])
    assert status is not None
    assert status.code == Code.SKIP


def test_args_defaults_and_valid() -> None:
    assert NodeAffinityArgs().added_affinity is None
    NodeAffinityArgs.model_validate(
        {
            "addedAffinity": {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [expr("label-1", "In", "label-1-val")]}
                    ]
                },
                PREF: [{"weight": 1, "preference": {"matchFields": [name_in("node-1")]}}],
            }
        }
    )


def test_args_invalid() -> None:
    with pytest.raises(ValidationError) as exc:
        NodeAffinityArgs.model_validate(
            {
                "addedAffinity": {
                    REQ: {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [expr("invalid/label/key", "In", "label-1-val")]}
                        ]
                    },
                    PREF: [
                        {
                            "weight": 1,
                            "preference": {
                                "matchFields": [expr("metadata.name", "In", "node-1", "node-2")]
                            },
                        }
                    ],
                }
            }
        )
    message = str(exc.value)
    assert (
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        '.matchExpressions[0].key: Invalid value: "invalid/label/key"' in message
    )
    assert (
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: "
        'Invalid value: ["node-1","node-2"]: must have one element' in message
    )


def test_args_unknown_field() -> None:
    with pytest.raises(ValidationError):
        NodeAffinityArgs.model_validate({"addedAffinity": {"requiredDuringScheduling": {}}})


# -- Queueing hint (Test_isSchedulableAfterNodeChange) -------------------------------------

FOO_IN_BAR = required({"matchExpressions": [expr("foo", "In", "bar")]})
ADDED_FOO_IN_BAR: Json = {
    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("foo", "In", "bar")]}]}
}


def hint_node(labels: dict[str, str] | None = None, cpu: str = "4") -> Any:
    return make_node("node", labels=labels, cpu=cpu)


@pytest.mark.parametrize(
    ("added", "old", "new", "hint"),
    [
        pytest.param(None, None, hint_node(), QueueingHint.QUEUE_SKIP, id="skip-queue-on-add"),
        pytest.param(None, None, hint_node({"foo": "bar"}), QueueingHint.QUEUE, id="queue-on-add"),
        pytest.param(
            None,
            hint_node(),
            hint_node(cpu="8"),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-changes",
        ),
        pytest.param(
            None,
            hint_node(),
            hint_node({"k": "v"}),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-changes-on-labels",
        ),
        pytest.param(
            None,
            hint_node({"foo": "bar"}),
            hint_node({"k": "v"}),
            QueueingHint.QUEUE_SKIP,
            id="skip-labels-changes-on-node-from-suitable-to-unsuitable",
        ),
        pytest.param(
            None,
            hint_node(),
            hint_node({"foo": "bar"}),
            QueueingHint.QUEUE,
            id="queue-on-labels-change-makes-pod-schedulable",
        ),
        pytest.param(
            None,
            hint_node({"foo": "bar"}),
            hint_node({"foo": "bar"}, cpu="8"),
            QueueingHint.QUEUE_SKIP,
            id="skip-unrelated-change-that-keeps-pod-schedulable",
        ),
        pytest.param(
            ADDED_FOO_IN_BAR,
            None,
            hint_node(),
            QueueingHint.QUEUE_SKIP,
            id="skip-queue-on-add-scheduler-enforced-node-affinity",
        ),
        pytest.param(
            ADDED_FOO_IN_BAR,
            None,
            hint_node({"foo": "bar"}),
            QueueingHint.QUEUE,
            id="queue-on-add-scheduler-enforced-node-affinity",
        ),
    ],
)
def test_is_schedulable_after_node_change(
    added: Json | None, old: Any, new: Any, hint: QueueingHint
) -> None:
    pod = make_pod(affinity=FOO_IN_BAR)
    assert plugin(added).is_schedulable_after_node_change(pod, old, new) is hint


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, {"disk": "ssd"}, QueueingHint.QUEUE),
        ({"disk": "hdd"}, {"disk": "ssd"}, QueueingHint.QUEUE),
        ({"disk": "ssd"}, {"disk": "ssd", "k": "v"}, QueueingHint.QUEUE_SKIP),
        (None, {"disk": "hdd"}, QueueingHint.QUEUE_SKIP),
    ],
)
def test_the_hint_reads_the_pods_node_selector_too(
    old: dict[str, str] | None, new: dict[str, str], hint: QueueingHint
) -> None:
    """Upstream's RequiredNodeAffinity is nodeSelector AND required affinity."""
    pod = make_pod(node_selector={"disk": "ssd"})
    before = None if old is None else hint_node(old)
    assert plugin().is_schedulable_after_node_change(pod, before, hint_node(new)) is hint


def test_events_to_register_node_add_and_label_updates_with_the_hint() -> None:
    pl = plugin()
    (registration,) = pl.events_to_register()
    assert registration.event == ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL)
    assert registration.hint == pl.is_schedulable_after_node_change
