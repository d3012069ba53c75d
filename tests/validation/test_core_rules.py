"""The API server's rules for what scheduling reads; cases from pkg/apis/core/validation's
validation_test.go (tolerations, taints, affinity, spread, ports, resources), the scheduling
and policy validation tests, and apimachinery's label tests. Each case is one change to a
valid object and the exact line(s) the API server's wording gives."""

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
            f'{T}.operator: Invalid value: core.Toleration{{Key:"foo", Operator:"Exists", '
            'Value:"bar", Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when '
            "`operator` is 'Exists'",
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
            'metadata.taints[1]: Duplicate value: core.Taint{Key:"k", Value:"", '
            'Effect:"NoSchedule", TimeAdded:<nil>}: taints must be unique by key and effect pair',
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


def test_a_duplicate_taint_prints_its_time_added_in_the_local_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        taints = [
            {"key": "k", "effect": "NoExecute"},
            {"key": "k", "effect": "NoExecute", "timeAdded": "2023-01-02T03:04:05.5+01:00"},
        ]
        assert problems(node(taints=taints)) == [
            'metadata.taints[1]: Duplicate value: core.Taint{Key:"k", Value:"", '
            'Effect:"NoExecute", TimeAdded:time.Date(2023, time.January, 2, 2, 4, 5, 500000000, '
            "time.Local)}: taints must be unique by key and effect pair"
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


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"podCIDR": "10.0.0.0/24"}, []),
        ({"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}, []),
        ({"podCIDRs": ["010.0.0.0/24"]}, []),  # k8s.io/utils parses IPv4 leading zeros
        (
            {"podCIDR": "not-a-cidr"},
            ['spec.podCIDRs[0]: Invalid value: []string{"not-a-cidr"}: must be valid CIDR'],
        ),
        (
            # The singular field wins when the two disagree.
            {"podCIDR": "x", "podCIDRs": ["10.0.0.0/24"]},
            ['spec.podCIDRs[0]: Invalid value: []string{"x"}: must be valid CIDR'],
        ),
        (
            {"podCIDRs": ["10.0.0.0/24", "x"]},
            [
                'spec.podCIDRs[1]: Invalid value: []string{"10.0.0.0/24", "x"}: must be valid CIDR',
                "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual "
                "stack with error:invalid CIDR[1]: <nil> (invalid CIDR address: x)",
                'spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "x"}: may specify no '
                "more than one CIDR for each IP family",
            ],
        ),
        (
            {"podCIDRs": ["10.0.0.0/24", "10.0.0.0/24"]},
            [
                'spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "10.0.0.0/24"}: may '
                "specify no more than one CIDR for each IP family",
                'spec.podCIDRs[1]: Duplicate value: "10.0.0.0/24"',
            ],
        ),
        (
            # A masked IPv4-mapped network is IPv4 (To4).
            {"podCIDRs": ["10.0.0.0/24", "::ffff:1.2.3.4/120"]},
            [
                'spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "::ffff:1.2.3.4/120"}: '
                "may specify no more than one CIDR for each IP family"
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
    assert problems(node(podCIDRs=[cidr])) == [
        f'spec.podCIDRs[0]: Invalid value: []string{{"{cidr}"}}: must be valid CIDR'
    ]


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
    """Said of each constraint that a later one repeats (kube-apiserver v1.28's lines for
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
                f'{S}[0].matchLabelKeys[0]: Invalid value: "app": exists in both '
                "matchLabelKeys and labelSelector",
                f'{S}[0].matchLabelKeys[1]: Invalid value: "b c": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
                "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ],
            id="matchLabelKeys: a selector's key, a bad name",
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
    """kube-apiserver v1.28's lines for these constraints (``kubectl create --dry-run=server``)."""
    base = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    assert problems(pod(topologySpreadConstraints=[{**base, **change}])) == expected


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
            # Required, and then the label-name check's two lines (kube-apiserver v1.28's).
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
        (
            {"containerPort": 80, "hostIP": "not-an-ip"},
            f'{P}.hostIP: Invalid value: "not-an-ip": must be a valid IP address',
        ),
    ],
)
def test_ports(port: dict[str, Any], expected: str) -> None:
    p = pod()
    p["spec"]["containers"][0]["ports"] = [port]
    assert problems(p) == [expected]


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
                f'{R}.requests[gpu]: Invalid value: "gpu": must be a standard resource for '
                "containers"
            ],
        ),
        (
            {"limits": {"example.com/gpu": "1.5"}},
            [f'{R}.limits[example.com/gpu]: Invalid value: "1.5": must be an integer'],
        ),
        (
            {"requests": {"example.com/gpu": "1"}},
            [f"{R}.limits: Required value: Limit must be set for non overcommitable resources"],
        ),
        (
            {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
            [f'{R}.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
        ),
        ({"requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "2Mi"}}, []),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}, []),
    ],
)
def test_resources(resources: dict[str, Any], expected: list[str]) -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = resources
    assert problems(p) == expected


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
        ({"a/b/c": "x"}, 'metadata.labels: Invalid value: "a/b/c": a qualified name must'),
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
    p = pod(schedulerName="Bad_Name", nodeName="", preemptionPolicy="Sometimes")
    p["metadata"]["name"] = "Bad_Name"
    found = problems(p)
    assert found[0].startswith('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123')
    assert found[1].startswith('spec.schedulerName: Invalid value: "Bad_Name": a lowercase RFC')
    assert found[2] == (  # ValidatePreemptionPolicy's order
        'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: '
        '"PreemptLowerPriority", "Never"'
    )


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
            # The whole spec is the bad value; its pointers print as (0x…) or (nil).
            pdb(minAvailable=1, maxUnavailable=1),
            [
                "spec: Invalid value: policy.PodDisruptionBudgetSpec{"
                "MinAvailable:(*intstr.IntOrString)(0x…), Selector:(*v1.LabelSelector)(0x…), "
                "MaxUnavailable:(*intstr.IntOrString)(0x…), "
                "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: "
                "minAvailable and maxUnavailable cannot be both set"
            ],
        ),
        (
            pdb(minAvailable="101%"),
            [
                "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
                'StrVal:"101%"}: must not be greater than 100%'
            ],
        ),
        (
            pdb(minAvailable="5%\n"),  # Go's $ does not match before a final newline
            [
                "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
                'StrVal:"5%\\n"}: a valid percent string must be a numeric string followed by '
                "an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ],
        ),
        (
            pdb(minAvailable="0" * 5000 + "99" * 3000 + "%"),  # strconv.Atoi saturates
            [
                "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
                f'StrVal:"{"0" * 5000 + "99" * 3000}%"}}: must not be greater than 100%'
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
