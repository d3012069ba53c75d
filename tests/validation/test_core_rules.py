"""The API server's rules for what scheduling reads; cases from pkg/apis/core/validation's
validation_test.go (tolerations, taints, affinity, spread, ports, resources), the scheduling
and policy validation tests, and apimachinery's label tests. Each case is one change to a
valid object and the exact line(s) kube-apiserver v1.37.2 gives (``kubectl create
--dry-run=server``): a bad value that is not a plain string or number prints as JSON."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from multisched.validation import Document, object_problems


def pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "pause"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }


def node(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": spec,
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
    }


def problems(obj: dict[str, Any]) -> list[str]:
    return object_problems(Document("c.yaml", "document 1", obj))


def test_valid_objects_have_no_problems() -> None:
    full = pod(
        tolerations=[
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
            {"operator": "Exists"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
        ],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["5"]}]},
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        },
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": {"matchExpressions": []}}
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
                ]
            },
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 2,
                "nodeAffinityPolicy": "Honor",
            }
        ],
    )
    assert problems(full) == []
    assert (
        problems(node(taints=[{"key": "dedicated", "value": "u1", "effect": "NoSchedule"}])) == []
    )
    system = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2000001000,
    }
    assert problems(system) == []


T = "spec.tolerations[0]"


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (
            {"key": "foo", "operator": "Foo"},
            f'{T}.operator: Unsupported value: "Foo": supported values: "Equal", "Exists"',
        ),
        (
            {"key": "foo", "operator": "Exists", "value": "bar"},
            f'{T}.operator: Invalid value: "bar": value must be empty when `operator` is '
            "'Exists'",
        ),
        (
            # TaintTolerationComparisonOperators is alpha (off): listed, yet refused.
            {"key": "foo", "operator": "Gt", "value": "5"},
            f'{T}.operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", '
            '"Gt"',
        ),
        (
            # An operator is a named string type: JSON, HTML-safe, not %q.
            {"key": "foo", "operator": "<x>&"},
            f'{T}.operator: Unsupported value: "\\u003cx\\u003e\\u0026": supported values: '
            '"Equal", "Exists"',
        ),
        (
            {"operator": "Equal", "value": "bar"},
            f'{T}.operator: Invalid value: "Equal": operator must be Exists when `key` is '
            'empty, which means "match all values and all keys"',
        ),
        (
            {"key": "foo", "effect": "NoSchedule", "tolerationSeconds": 20},
            f"{T}.effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
            "`tolerationSeconds` is set",
        ),
        (
            {"key": "foo", "operator": "Exists", "effect": "Bogus"},
            f'{T}.effect: Unsupported value: "Bogus": supported values: "NoSchedule", '
            '"PreferNoSchedule", "NoExecute"',
        ),
    ],
)
def test_tolerations(toleration: dict[str, Any], expected: str) -> None:
    assert problems(pod(tolerations=[toleration])) == [expected]


def test_toleration_key_must_be_a_label_name() -> None:
    [line] = problems(pod(tolerations=[{"key": "nospecialchars^=@", "operator": "Exists"}]))
    assert line.startswith(f'{T}.key: Invalid value: "nospecialchars^=@": name part must')


@pytest.mark.parametrize(
    ("taints", "expected"),
    [
        (
            [{"key": "k", "effect": "Bogus"}],
            'metadata.taints[0].effect: Unsupported value: "Bogus"',
        ),
        ([{"key": "k", "effect": ""}], "metadata.taints[0].effect: Required value"),
        (
            [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}],
            'metadata.taints[1]: Duplicate value: {"Key":"k","Value":"","Effect":"NoSchedule",'
            '"TimeAdded":null}: taints must be unique by key and effect pair',
        ),
        (
            [{"key": "k", "value": "has space", "effect": "NoSchedule"}],
            'metadata.taints[0].value: Invalid value: "has space": a valid label must be',
        ),
        (
            [{"key": "k\n", "effect": "NoSchedule"}],
            'metadata.taints[0].key: Invalid value: "k\\n": name part must consist',
        ),
    ],
)
def test_taints(taints: list[dict[str, Any]], expected: str) -> None:
    """Upstream validates a node's taints under the metadata path (``ValidateNode`` passes
    ``metadata.taints``, the path the taints annotation also uses)."""
    found = problems(node(taints=taints))
    assert len(found) == 1 and found[0].startswith(expected), found


def test_a_duplicate_taint_prints_its_time_added_in_utc_to_the_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``metav1.Time``'s JSON: RFC 3339 in UTC, whatever the zone of the input or of the
    process (kube-apiserver v1.37.2's line for this taint)."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        taints = [
            {"key": "k", "effect": "NoExecute"},
            {"key": "k", "effect": "NoExecute", "timeAdded": "2023-01-02T03:04:05.5+02:00"},
        ]
        assert problems(node(taints=taints)) == [
            'metadata.taints[1]: Duplicate value: {"Key":"k","Value":"","Effect":"NoExecute",'
            '"TimeAdded":"2023-01-02T01:04:05Z"}: taints must be unique by key and effect pair'
        ]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_taint_of_the_wrong_type_is_reported_once() -> None:
    assert problems(node(taints=[{"key": 5, "effect": "NoSchedule"}])) == [
        'spec.taints[0].key: Invalid value: "integer": spec.taints[0].key in body must be of '
        'type string: "integer"'
    ]


def test_allocatable_defaults_to_capacity() -> None:
    """SetDefaults_NodeStatus copies capacity to an absent allocatable: reported twice."""
    n = node()
    n["status"] = {"capacity": {"cpu": "-1"}}
    assert problems(n) == [
        'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0',
        'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0',
    ]


CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
ZEROS = "must not have leading 0s in IP or prefix length"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"podCIDR": "10.0.0.0/24"}, []),
        ({"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}, []),
        # StrictIPCIDRValidation (on since v1.36): what the sloppy parser took, netip refuses.
        (
            {"podCIDRs": ["010.0.0.0/24"]},
            [f'spec.podCIDRs[0]: Invalid value: "010.0.0.0/24": {ZEROS}'],
        ),
        ({"podCIDR": "10.0.0.0/08"}, [f'spec.podCIDRs[0]: Invalid value: "10.0.0.0/08": {ZEROS}']),
        ({"podCIDR": "0000a::/64"}, [f'spec.podCIDRs[0]: Invalid value: "0000a::/64": {ZEROS}']),
        (
            {"podCIDR": "10.0.0.1/24"},
            [
                'spec.podCIDRs[0]: Invalid value: "10.0.0.1/24": must not have bits set beyond '
                "the prefix length"
            ],
        ),
        ({"podCIDR": "not-a-cidr"}, [f'spec.podCIDRs[0]: Invalid value: "not-a-cidr": {CIDR}']),
        (
            # The singular field wins when the two disagree.
            {"podCIDR": "x", "podCIDRs": ["10.0.0.0/24"]},
            [f'spec.podCIDRs[0]: Invalid value: "x": {CIDR}'],
        ),
        (
            {"podCIDRs": ["10.0.0.0/24", "x"]},
            [
                f'spec.podCIDRs[1]: Invalid value: "x": {CIDR}',
                "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual "
                "stack with error:invalid CIDR[1]: <nil> (invalid CIDR address: x)",
                'spec.podCIDRs: Invalid value: ["10.0.0.0/24","x"]: may specify no more than one '
                "CIDR for each IP family",
            ],
        ),
        (
            # No duplicate check of its own (v1.28 had one).
            {"podCIDRs": ["10.0.0.0/24", "10.0.0.0/24"]},
            [
                'spec.podCIDRs: Invalid value: ["10.0.0.0/24","10.0.0.0/24"]: may specify no '
                "more than one CIDR for each IP family"
            ],
        ),
        (
            # Refused as IPv4-mapped, and counted as IPv4 (To4) for the pair.
            {"podCIDRs": ["10.0.0.0/24", "::ffff:1.2.3.4/120"]},
            [
                'spec.podCIDRs[1]: Invalid value: "::ffff:1.2.3.4/120": must not have an '
                "IPv4-mapped IPv6 address",
                'spec.podCIDRs: Invalid value: ["10.0.0.0/24","::ffff:1.2.3.4/120"]: may specify '
                "no more than one CIDR for each IP family",
            ],
        ),
    ],
)
def test_pod_cidrs(spec: dict[str, Any], expected: list[str]) -> None:
    assert problems(node(**spec)) == expected


@pytest.mark.parametrize(
    "cidr",
    ["10.0.0.0/33", "::/129", "1:2:3:4:5:6:7::8/64", "fe80::1%e/64", "1.2.3/8", "10.0.0.0/+8"],
)
def test_cidrs_go_refuses(cidr: str) -> None:
    assert problems(node(podCIDRs=[cidr])) == [f'spec.podCIDRs[0]: Invalid value: "{cidr}": {CIDR}']


S = "spec.topologySpreadConstraints"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"maxSkew": 0}, f"{S}[0].maxSkew: Invalid value: 0: must be greater than zero"),
        ({"maxSkew": -1}, f"{S}[0].maxSkew: Invalid value: -1: must be greater than zero"),
        ({"topologyKey": ""}, f"{S}[0].topologyKey: Required value: can not be empty"),
        (
            {"whenUnsatisfiable": "N/A"},
            f'{S}[0].whenUnsatisfiable: Unsupported value: "N/A": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ),
        ({"minDomains": 0}, f"{S}[0].minDomains: Invalid value: 0: must be greater than zero"),
        (
            {"minDomains": 3, "whenUnsatisfiable": "ScheduleAnyway"},
            f"{S}[0].minDomains: Invalid value: 3: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        ),
        (
            {"nodeTaintsPolicy": "invalid"},
            f'{S}[0].nodeTaintsPolicy: Unsupported value: "invalid": supported values: '
            '"Honor", "Ignore"',
        ),
    ],
)
def test_topology_spread(change: dict[str, Any], expected: str) -> None:
    base = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    assert problems(pod(topologySpreadConstraints=[{**base, **change}])) == [expected]


def test_topology_spread_duplicate_key_and_action() -> None:
    """Said of each constraint that a later one repeats (kube-apiserver v1.37.2's lines for
    three alike constraints, from ``kubectl create --dry-run=server``)."""
    c = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    assert problems(pod(topologySpreadConstraints=[c, dict(c), dict(c)])) == [
        f'{S}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{zone, DoNotSchedule}}"',
        f'{S}[1].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{zone, DoNotSchedule}}"',
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"maxSkew": 0, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 0},
            [
                f"{S}[0].maxSkew: Invalid value: 0: must be greater than zero",
                f"{S}[0].minDomains: Invalid value: 0: must be greater than zero",
                f"{S}[0].minDomains: Invalid value: 0: can only use minDomains if "
                "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
            ],
            id="minDomains, both wrongs",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["app", "b c"]},
            [
                f'{S}[0].matchLabelKeys[1]: Invalid value: "b c": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
                "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                # The pod's app=a was merged as "app In (a)", which repeats the selector's key;
                # upstream's path leaves out the field's name.
                f'{S}[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
            ],
            id="matchLabelKeys: a selector's key, a bad name",
        ),
        pytest.param(
            {
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                "matchLabelKeys": ["app", "app"],
            },
            [f'{S}[0][1]: Invalid value: "app": exists in both matchLabelKeys and labelSelector'],
            id="matchLabelKeys: a key twice, said once at its last index",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "x"}}, "matchLabelKeys": ["tier"]},
            [],
            id="matchLabelKeys: a key the pod does not carry merges nothing",
        ),
        pytest.param(
            {"matchLabelKeys": ["app"]},
            [
                f"{S}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector "
                "is not set"
            ],
            id="matchLabelKeys without a labelSelector",
        ),
    ],
)
def test_topology_spread_as_the_api_server_words_it(
    change: dict[str, Any], expected: list[str]
) -> None:
    """kube-apiserver v1.37.2's lines for these constraints, on a pod labelled app=a: its
    values of matchLabelKeys join the selector before validation (``mutateTopologySpread
    Constraints``, MatchLabelKeysInPodTopologySpreadSelectorMerge)."""
    base = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    obj = pod(topologySpreadConstraints=[{**base, **change}])
    obj["metadata"]["labels"] = {"app": "a"}
    assert problems(obj) == expected


def test_a_merged_value_is_validated_as_a_selector_value() -> None:
    """A bad label value of the pod reappears in the selector it was merged into."""
    c = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    c |= {"labelSelector": {"matchLabels": {"x": "y"}}, "matchLabelKeys": ["app"]}
    obj = pod(topologySpreadConstraints=[c])
    obj["metadata"]["labels"] = {"app": "a b"}
    found = problems(obj)
    assert [line.split(": ")[0] for line in found] == [
        "metadata.labels",
        f"{S}[0].labelSelector.matchExpressions[0].values[0]",
    ]


def test_max_skew_as_a_string_is_a_type_error() -> None:
    c = {"maxSkew": "1", "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    assert problems(pod(topologySpreadConstraints=[c])) == [
        f'{S}[0].maxSkew: Invalid value: "string": {S}[0].maxSkew in body must be of type '
        'integer: "string"'
    ]


NA = "spec.affinity.nodeAffinity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def _required_terms(*exprs: dict[str, Any], fields: Any = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields is not None:
        term["matchFields"] = fields
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": [term]}}}


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        (
            {"nodeAffinity": {REQ: {"nodeSelectorTerms": []}}},
            f"{NA}.{REQ}.nodeSelectorTerms: Required value: must have at least one node "
            "selector term",
        ),
        (
            _required_terms({"key": "a", "operator": "Foo", "values": ["x"]}),
            f'{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Foo": '
            "not a valid selector operator",
        ),
        (
            _required_terms({"key": "a", "operator": "In"}),
            f"{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be "
            "specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            _required_terms({"key": "a", "operator": "Exists", "values": ["x"]}),
            f"{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: may not be "
            "specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            _required_terms({"key": "a", "operator": "Gt", "values": ["1", "2"]}),
            f"{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be "
            "specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            _required_terms(
                fields=[{"key": "metadata.namespace", "operator": "In", "values": ["x"]}]
            ),
            f"{NA}.{REQ}.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "
            '"metadata.namespace": not a valid field selector key',
        ),
        (
            {"nodeAffinity": {PREF: [{"weight": 0, "preference": {}}]}},
            f"{NA}.{PREF}[0].weight: Invalid value: 0: must be in the range 1-100",
        ),
        (
            {"nodeAffinity": {PREF: [{"weight": 101, "preference": {}}]}},
            f"{NA}.{PREF}[0].weight: Invalid value: 101: must be in the range 1-100",
        ),
        (
            # Required, and then the label-name check's two lines (kube-apiserver v1.37.2's).
            {"podAffinity": {REQ: [{"labelSelector": {}, "topologyKey": ""}]}},
            f"spec.affinity.podAffinity.{REQ}[0].topologyKey: Required value: can not be empty\n"
            f'spec.affinity.podAffinity.{REQ}[0].topologyKey: Invalid value: "": name part must '
            "be non-empty\n"
            f'spec.affinity.podAffinity.{REQ}[0].topologyKey: Invalid value: "": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {
                "podAntiAffinity": {
                    PREF: [{"weight": -1, "podAffinityTerm": {"topologyKey": "zone"}}]
                }
            },
            f"spec.affinity.podAntiAffinity.{PREF}[0].weight: Invalid value: -1: must be in the "
            "range 1-100",
        ),
        (
            {
                "podAffinity": {
                    REQ: [
                        {
                            "labelSelector": {
                                "matchExpressions": [{"key": "a", "operator": "Bogus"}]
                            },
                            "topologyKey": "zone",
                        }
                    ]
                }
            },
            f"spec.affinity.podAffinity.{REQ}[0].labelSelector.matchExpressions[0].operator: "
            'Invalid value: "Bogus": not a valid selector operator',
        ),
    ],
)
def test_affinity(affinity: dict[str, Any], expected: str) -> None:
    assert problems(pod(affinity=affinity)) == expected.split("\n")


LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def test_required_node_affinity_values_are_label_values() -> None:
    """Since v1.30 (validation_test.go's "invalid label value in required node affinity"):
    a required term's values are label values; a preferred term's are not checked, as it
    can still match the only node."""
    bad = {"key": "a", "operator": "In", "values": ["ok", "x y"]}
    assert problems(pod(affinity=_required_terms(bad))) == [
        f"{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values[1]: Invalid value: "
        f'"x y": {LABEL_VALUE}'
    ]
    preferred = {"nodeAffinity": {PREF: [{"weight": 1, "preference": {"matchExpressions": [bad]}}]}}
    assert problems(pod(affinity=preferred)) == []


def test_match_fields_values_are_node_names() -> None:
    field = {"key": "metadata.name", "operator": "In", "values": ["Bad_Name"]}
    [line] = problems(pod(affinity=_required_terms(fields=[field])))
    assert line.startswith(
        f"{NA}.{REQ}.nodeSelectorTerms[0].matchFields[0].values[0]: Invalid value: "
        '"Bad_Name": a lowercase RFC 1123 subdomain'
    )


PA = f"spec.affinity.podAffinity.{REQ}[0]"


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["app"]},
            [f'{PA}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector'],
            id="a key of the selector, merged again",
        ),
        pytest.param(
            {"labelSelector": {}, "matchLabelKeys": ["app"], "mismatchLabelKeys": ["app"]},
            [
                f'{PA}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
                f'{PA}.matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys '
                "and mismatchLabelKeys",
            ],
            id="a key in both lists",
        ),
        pytest.param(
            {"matchLabelKeys": ["app"], "mismatchLabelKeys": ["x"]},
            [
                f"{PA}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not "
                "set",
                f"{PA}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is "
                "not set",
            ],
            id="no selector",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "x"}}, "matchLabelKeys": ["tier"]},
            [],
            id="a key the pod does not carry",
        ),
    ],
)
def test_pod_affinity_label_keys(term: dict[str, Any], expected: list[str]) -> None:
    """``ValidateMatchLabelKeysAndMismatchLabelKeys`` after the create strategy merged the
    pod's values into the selector (MatchLabelKeysInPodAffinity, GA): kube-apiserver
    v1.37.2's lines for a pod labelled app=web."""
    obj = pod(affinity={"podAffinity": {REQ: [{**term, "topologyKey": "zone"}]}})
    obj["metadata"]["labels"] = {"app": "web"}
    assert problems(obj) == expected


def test_selector_values_as_a_string_are_refused_not_matched_per_character() -> None:
    """``values: "xyz"`` once matched a node labelled ``a=x``."""
    affinity = _required_terms({"key": "a", "operator": "In", "values": "xyz"})
    [line] = problems(pod(affinity=affinity))
    assert line.startswith(
        f'{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: "string": '
    )
    assert line.endswith('in body must be of type array: "string"')


def test_namespaces_as_a_string_are_refused() -> None:
    affinity = {"podAffinity": {REQ: [{"topologyKey": "zone", "namespaces": "default"}]}}
    [line] = problems(pod(affinity=affinity))
    assert line.startswith(
        f'spec.affinity.podAffinity.{REQ}[0].namespaces: Invalid value: "string"'
    )


P = "spec.containers[0].ports[0]"


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        (
            {"containerPort": 80, "hostPort": 70000},
            f"{P}.hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        ({"containerPort": 0}, f"{P}.containerPort: Required value"),
        (
            {"containerPort": 65536},
            f"{P}.containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
        ),
        (
            {"containerPort": 80, "protocol": "tcp"},
            f'{P}.protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
        ),
    ],
)
def test_ports(port: dict[str, Any], expected: str) -> None:
    p = pod()
    p["spec"]["containers"][0]["ports"] = [port]
    assert problems(p) == [expected]


def test_an_empty_protocol_is_tcp_and_the_host_ip_is_not_checked() -> None:
    p = pod()
    p["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "protocol": "", "hostIP": "not-an-ip"}
    ]
    assert problems(p) == []


def test_host_ports_conflict_across_containers_and_within_an_init_container() -> None:
    """``AccumulateUniqueHostPorts``: protocol (defaulted), host IP and port."""
    p = pod()
    p["spec"]["containers"] = [
        {"name": "a", "ports": [{"containerPort": 1, "hostPort": 8080}]},
        {"name": "b", "ports": [{"containerPort": 1, "hostPort": 8080, "protocol": "TCP"}]},
        {"name": "c", "ports": [{"containerPort": 1, "hostPort": 8080, "protocol": "UDP"}]},
        {"name": "d", "ports": [{"containerPort": 1, "hostPort": 8080, "hostIP": "1.2.3.4"}]},
    ]
    init = [{"containerPort": 1, "hostPort": 9}, {"containerPort": 2, "hostPort": 9}]
    p["spec"]["initContainers"] = [
        {"name": "i", "ports": init},
        {"name": "j", "ports": [{"containerPort": 1, "hostPort": 9}]},
        {"name": "a"},
    ]
    assert problems(p) == [
        'spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"',
        'spec.initContainers[0].ports[1].hostPort: Duplicate value: "TCP//9"',
        'spec.initContainers[2].name: Duplicate value: "a"',
    ]


R = "spec.containers[0].resources"


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (
            {"requests": {"cpu": "-1"}},
            [f'{R}.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
        ),
        (
            {"requests": {"memory": "1 Gi"}},
            [
                f'{R}.requests[memory]: Invalid value: "1 Gi": quantities must match the regular '
                "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            ],
        ),
        (
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
            [f'{R}.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'],
        ),
        (
            {"requests": {"cpu": "1e999999999"}},
            [
                f'{R}.requests[cpu]: Invalid value: "1e999999999": must be no more than 2^63-1 '
                "(9223372036854775807) in magnitude"
            ],
        ),
        (
            {"requests": {"gpu": "1"}},
            [
                f'{R}.requests[gpu]: Invalid value: "gpu": must be a standard resource type or '
                "fully qualified",
                f'{R}.requests[gpu]: Invalid value: "gpu": must be a standard resource for '
                "containers",
            ],
        ),
        (
            {"requests": {"pods": "1"}},
            [
                f'{R}.requests[pods]: Invalid value: "pods": must be a standard resource for '
                "containers"
            ],
        ),
        (
            # A refused name does not spare its quantity the checks.
            {"requests": {"bad key!": "-1"}},
            [
                f'{R}.requests[bad key!]: Invalid value: "bad key!": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
                "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                f'{R}.requests[bad key!]: Invalid value: "bad key!": must be a standard resource '
                "for containers",
                f'{R}.requests[bad key!]: Invalid value: "-1": must be greater than or equal to 0',
            ],
        ),
        (
            # Quantities show as the API server holds them: Quantity.String(), rounded to 1m.
            {"requests": {"cpu": "-1.5"}},
            [f'{R}.requests[cpu]: Invalid value: "-1500m": must be greater than or equal to 0'],
        ),
        (
            {"limits": {"example.com/gpu": "1.5"}},
            [f'{R}.limits[example.com/gpu]: Invalid value: "1500m": must be an integer'],
        ),
        ({"limits": {"example.com/gpu": "0.9999"}}, []),  # rounded up to 1 first
        (
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1.5"}},
            [f'{R}.requests: Invalid value: "2": must be less than or equal to cpu limit of 1500m'],
        ),
        ({"requests": {"cpu": "1.0001"}, "limits": {"cpu": "1.001"}}, []),
        (
            # A negative amount still takes part in the comparisons that follow.
            {"requests": {"example.com/gpu": "-1"}},
            [
                f'{R}.requests[example.com/gpu]: Invalid value: "-1": must be greater than or '
                "equal to 0",
                f"{R}.limits: Required value: Limit must be set for non overcommitable resources",
            ],
        ),
        (
            {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "-1"}},
            [
                f'{R}.limits[example.com/gpu]: Invalid value: "-1": must be greater than or '
                "equal to 0",
                f'{R}.requests: Invalid value: "1": must be equal to example.com/gpu limit of -1',
            ],
        ),
        (
            {"requests": {"example.com/gpu": "1"}},
            [f"{R}.limits: Required value: Limit must be set for non overcommitable resources"],
        ),
        (
            {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
            [f'{R}.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
        ),
        (
            {"requests": {"cpu": "1", "hugepages-2Mi": "4Mi"}, "limits": {"hugepages-2Mi": "4Mi"}},
            [],
        ),
        (
            {"requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "2Mi"}},
            [f"{R}: Forbidden: HugePages require cpu or memory"],
        ),
        (
            {"requests": {"cpu": "1", "hugepages-2Mi": "3Mi"}, "limits": {"hugepages-2Mi": "3Mi"}},
            [
                f'{R}.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer '
                "multiple of hugepages-2Mi",
                f'{R}.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer '
                "multiple of hugepages-2Mi",
            ],
        ),
        (
            {"limits": {"memory": "1Gi", "hugepages-abc": "2Mi"}},
            [
                f'{R}.limits[hugepages-abc]: Invalid value: "2Mi": 2Mi is not positive integer '
                "multiple of hugepages-abc"
            ],
        ),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}, []),
    ],
)
def test_resources(resources: dict[str, Any], expected: list[str]) -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = resources
    assert problems(p) == expected


def test_the_overhead_is_checked_as_limits() -> None:
    """``validateOverhead`` reuses the container rules, with the overhead as limits."""
    assert problems(pod(overhead={"cpu": "-1"})) == [
        'spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_node_integer_resources_show_their_quantity() -> None:
    """``integerResources``, as ``Quantity.String()`` after the defaults' rounding."""
    n = node()
    n["status"] = {"capacity": {"pods": "1.5", "services": "2.5", "cpu": "-1.5"}}
    n["status"]["allocatable"] = {"pods": "0.9999"}  # rounded up to 1: whole
    assert problems(n) == [
        'status.capacity.pods: Invalid value: "1500m": must be an integer',
        'status.capacity.services: Invalid value: "2500m": must be an integer',
        'status.capacity.cpu: Invalid value: "-1500m": must be greater than or equal to 0',
    ]


def test_node_allocatable_quantities() -> None:
    n = node()
    n["status"]["allocatable"]["cpu"] = "-1"
    n["status"]["capacity"] = {"memory": "1e3Gi"}
    found = problems(n)
    assert found[0] == 'status.capacity.memory: Invalid value: "1e3Gi": ' + (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    assert (
        found[1]
        == 'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0'
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"a/b/c": "x"}, 'metadata.labels: Invalid value: "a/b/c": a valid label key must'),
        (
            {"a": "x" * 64},
            f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 bytes',
        ),
        (
            {"x" * 64: "v"},
            f'metadata.labels: Invalid value: "{"x" * 64}": name part must be no more than 63 '
            "bytes",
        ),
        ({"a": "has space"}, 'metadata.labels: Invalid value: "has space": a valid label must'),
        ({"a": None}, "metadata.labels: Invalid value: null: a label value must be a string"),
        ({"a": 5}, 'metadata.labels.a: Invalid value: "integer": metadata.labels.a in body must'),
    ],
)
def test_labels(labels: dict[str, Any], expected: str) -> None:
    p = pod()
    p["metadata"]["labels"] = labels
    found = problems(p)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_names() -> None:
    """A scheduler's name is not checked upstream; a node's is."""
    p = pod(schedulerName="Bad_Name", nodeName="Bad_Name", preemptionPolicy="Sometimes")
    p["metadata"]["name"] = "Bad_Name"
    found = problems(p)
    assert len(found) == 3, found
    assert found[0].startswith('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123')
    assert found[1].startswith('spec.nodeName: Invalid value: "Bad_Name": a lowercase RFC 1123')
    assert found[2] == (  # ValidatePreemptionPolicy's order
        'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: '
        '"PreemptLowerPriority", "Never"'
    )


def test_lengths_are_bytes_and_said_per_family() -> None:
    """Object names (util/validation) say "characters", label keys and values
    (api/validate/content) say "bytes"; both count UTF-8 bytes, as Go's len does."""
    p = pod()
    p["metadata"]["name"] = "a" * 254
    p["metadata"]["labels"] = {"app": "é" * 32}  # 32 characters, 64 bytes
    found = problems(p)
    assert (
        found[0]
        == f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'
    )
    assert (
        found[1] == f'metadata.labels: Invalid value: "{"é" * 32}": must be no more than 63 bytes'
    )
    assert found[2].startswith(f'metadata.labels: Invalid value: "{"é" * 32}": a valid label must')
    assert len(found) == 3


def priority_class(name: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            priority_class("huge", 2_000_000_000),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
        ),
        (
            priority_class("system-mine", 5),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are "
                "reserved for system use only. error: system-mine is not a known system "
                "priority class"
            ],
        ),
        (
            priority_class("system-node-critical", 5),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are "
                "reserved for system use only. error: value of system-node-critical "
                "PriorityClass must be 2000001000"
            ],
        ),
        (
            priority_class("system-cluster-critical", 2_000_000_000, globalDefault=True),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are "
                "reserved for system use only. error: globalDefault of system-cluster-critical "
                "PriorityClass must be false"
            ],
        ),
        (
            priority_class("ok", 1000, preemptionPolicy="Sometimes"),
            [
                'preemptionPolicy: Unsupported value: "Sometimes": supported values: '
                '"PreemptLowerPriority", "Never"'
            ],
        ),
        (priority_class("ok", 1000, preemptionPolicy=""), ["preemptionPolicy: Required value"]),
        (
            priority_class("big", 2**40),
            ["value: Invalid value: 1099511627776: must fit in int32"],
        ),
        (priority_class("ok", 1000, preemptionPolicy="Never"), []),
    ],
)
def test_priority_class(obj: dict[str, Any], expected: list[str]) -> None:
    assert problems(obj) == expected


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, **spec},
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            # The whole spec is the bad value: an internal type, its Go field names in JSON.
            pdb(minAvailable=1, maxUnavailable="10%", unhealthyPodEvictionPolicy="AlwaysAllow"),
            [
                'spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"x"}},'
                '"MaxUnavailable":"10%","UnhealthyPodEvictionPolicy":"AlwaysAllow"}: '
                "minAvailable and maxUnavailable cannot be both set"
            ],
        ),
        (
            pdb(minAvailable="101%"),
            ['spec.minAvailable: Invalid value: "101%": must not be greater than 100%'],
        ),
        (
            pdb(minAvailable="5%\n"),  # Go's $ does not match before a final newline
            [
                'spec.minAvailable: Invalid value: "5%\\n": a valid percent string must be a '
                "numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                "validation is '[0-9]+%')"
            ],
        ),
        (
            pdb(minAvailable="0" * 5000 + "99" * 3000 + "%"),  # strconv.Atoi saturates
            [
                f'spec.minAvailable: Invalid value: "{"0" * 5000 + "99" * 3000}%": must not be '
                "greater than 100%"
            ],
        ),
        (
            pdb(maxUnavailable=-1),
            ["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            pdb(selector={"matchExpressions": [{"key": "a", "operator": "Foo"}]}),
            [
                'spec.selector.matchExpressions[0].operator: Invalid value: "Foo": not a valid '
                "selector operator"
            ],
        ),
        (pdb(minAvailable="50%"), []),
    ],
)
def test_pdb(obj: dict[str, Any], expected: list[str]) -> None:
    assert problems(obj) == expected


def test_pdb_metadata_is_checked_only_once_the_spec_passes() -> None:
    """The PDB's own validation reads no metadata; the registry's generic check runs after
    it, with path-segment names (``rest.BeforeCreate``)."""
    bad = pdb(minAvailable=-1)
    bad["metadata"].update(name="Mutant", labels={"a": "b c"})
    assert problems(bad) == [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"
    ]
    fine = pdb(minAvailable=1)
    fine["metadata"]["name"] = "Mutant"
    assert problems(fine) == []
    fine["metadata"]["name"] = "mu%t/ant"
    assert problems(fine) == [
        "metadata.name: Invalid value: \"mu%t/ant\": may not contain '/'",
        "metadata.name: Invalid value: \"mu%t/ant\": may not contain '%'",
    ]
    fine["metadata"]["name"] = ".."
    assert problems(fine) == ["metadata.name: Invalid value: \"..\": may not be '..'"]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ([1, 2], ["expected a Kubernetes object (a mapping), got a list"]),
        (
            {"apiVersion": "v1", "metadata": {"name": "x"}},
            ["kind: Required value: every object needs a kind"],
        ),
        (
            {"kind": "Pod", "metadata": {"name": "x"}},
            ['apiVersion: Required value: Pod objects are "v1"'],
        ),
        (
            {"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "x"}},
            ['apiVersion: Unsupported value: "v2": supported values: "v1"'],
        ),
        (
            {"apiVersion": "../../_definitions\0", "kind": "ConfigMap", "metadata": {"name": "x"}},
            ['apiVersion: Unsupported value: "../../_definitions\x00": supported values: "v1"'],
        ),
        (
            {**pod(), "spec": {"containers": [{"name": "c"}], "bogus": 1}},
            ['spec.bogus: unknown field "bogus"'],
        ),
    ],
)
def test_object_level(obj: Any, expected: list[str]) -> None:
    assert problems(obj) == expected


def test_every_problem_is_listed() -> None:
    p = pod(
        tolerations=[{"key": "k", "operator": "Foo"}],
        topologySpreadConstraints=[
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Foo"}
        ],
    )
    bad = copy.deepcopy(p)
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    found = problems(bad)
    assert len(found) == 4, found
    assert found[0].startswith('spec.containers[0].ports[0].containerPort: Invalid value: "string"')


def test_names_and_label_values_are_whole_matches_as_in_go() -> None:
    """Python's ``$`` also matches before a final newline; Go's regexp does not."""
    from multisched.validation.names import is_dns1123_label, is_dns1123_subdomain

    assert is_dns1123_label("web") == [] and is_dns1123_subdomain("a.b") == []
    assert is_dns1123_label("web\n") and is_dns1123_subdomain("a.b\n")


def test_a_name_passed_by_one_check_is_still_judged_by_another() -> None:
    """Names that passed are remembered per check: "Web" is a valid label key, then an
    invalid namespace and container name, in every object that holds it."""
    for _ in range(2):
        obj = pod()
        obj["metadata"]["labels"] = {"Web": "Web"}
        obj["metadata"]["namespace"] = "Web"
        obj["spec"]["containers"][0]["name"] = "Web"
        lines = problems(obj)
        assert any(line.startswith('metadata.namespace: Invalid value: "Web"') for line in lines)
        assert any(
            line.startswith('spec.containers[0].name: Invalid value: "Web"') for line in lines
        )
        assert not any("metadata.labels" in line for line in lines)


def test_a_stored_pod_is_not_merged_again() -> None:
    """A snapshot's pod (creationTimestamp: stored by an API server) already carries the
    ``app In (a)`` that its create merged; validating it merges nothing more, as an update
    does. The same pod written by hand is a create, and the merge repeats the key."""
    merged = {"key": "app", "operator": "In", "values": ["a"]}
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"tier": "web"}, "matchExpressions": [merged]},
        "matchLabelKeys": ["app"],
    }
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchExpressions": [merged]},
        "matchLabelKeys": ["app"],
    }
    written = pod(
        topologySpreadConstraints=[spread],
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    written["metadata"]["labels"] = {"app": "a"}
    stored = copy.deepcopy(written)
    stored["metadata"]["creationTimestamp"] = "2026-11-28T10:00:00Z"
    assert problems(stored) == []
    found = problems(written)
    assert len(found) == 2 and all(
        'Invalid value: "app": exists in both matchLabelKeys and labelSelector' in p for p in found
    ), found
