"""The cluster-file rules against kube-apiserver v1.37.2 itself: a valid Pod (and a Node, a
PersistentVolume, ...), mutated at the fields scheduling reads, is sent to the API server
(``kubectl create --dry-run=server``) and checked by ``simulate``'s rules. Both must accept
it, or both refuse it with the same lines: v1.37's wording (label keys, lengths in bytes,
bad values other than plain strings and numbers printed as JSON), and what the create
strategy does first (a pod's values of matchLabelKeys merged into its selectors).

Mutations keep each field's type: a value of the wrong type is refused by the API server's
decoder in its own words (and by our OpenAPI check in the schema's), so that comparison
would say nothing about the rules.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from typing import Any

import pytest

from conftest import Kube
from multisched.validation import Document, object_problems

#: ``MULTISCHED_VALIDATION_SEED`` / ``_MUTANTS`` for another or a longer run.
Mutations = list[tuple[tuple[Any, ...], list[Any]]]

SEED = int(os.environ.get("MULTISCHED_VALIDATION_SEED", "28"))
MUTANTS = int(os.environ.get("MULTISCHED_VALIDATION_MUTANTS", "150"))

#: A Pod using every field the rules look at.
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "mutant", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}],
            }
        ],
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {
                            "matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]
                        },
                    }
                ],
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    },
}

NODE_TERMS = (
    "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
)  # fmt: skip
#: (path, values to try): each mutant sets one to three of them.
POD_MUTATIONS: Mutations = [
    (("metadata", "labels", "app"), ["", "a b", "-x", "x" * 64]),
    (("metadata", "labels"), [{"a/b/c": "x"}, {"": "x"}, {"example.com/ok": "y"}]),
    (("spec", "nodeSelector"), [{"disk": "a b"}, {"bad key!": "x"}]),
    (
        ("spec", "containers", 0, "resources", "requests", "cpu"),
        ["-1", "0", "1x", "100m", "0.5", "1e3", "1.5m", "-1.5"],
    ),
    (("spec", "containers", 0, "resources", "requests", "memory"), ["-1Mi", "1Qi", "64Mi"]),
    (("spec", "containers", 0, "resources", "limits"), [{"cpu": "50m"}, {"memory": "1Gi"}]),
    (("spec", "containers", 0, "ports", 0, "hostPort"), [0, -1, 70000, 8081]),
    (("spec", "containers", 0, "ports", 0, "containerPort"), [0, 70000, 9090]),
    (("spec", "containers", 0, "ports", 0, "protocol"), ["UDP", "SCTP", "HTTP", "tcp", ""]),
    (("spec", "tolerations", 0, "operator"), ["Exists", "In", "", "Gt"]),
    (("spec", "tolerations", 0, "effect"), ["NoExecute", "PreferNoSchedule", "Never", ""]),
    (("spec", "tolerations", 0, "key"), ["", "a b", "example.com/k"]),
    (("spec", "tolerations", 0, "tolerationSeconds"), [5, -5]),
    (
        (*NODE_TERMS, 0, "matchExpressions", 0, "operator"),
        ["NotIn", "Exists", "Gt", "Bogus"],
    ),
    (
        (*NODE_TERMS, 0, "matchExpressions", 0, "values"),
        [[], ["a", "b"], ["1"], ["x y"]],
    ),
    (
        NODE_TERMS,
        [[], [{}]],
    ),
    (
        (
            "spec",
            "affinity",
            "nodeAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "weight",
        ),
        [0, 101, 100, -1],
    ),
    (
        (
            "spec",
            "affinity",
            "nodeAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "preference",
            "matchExpressions",
            0,
            "values",
        ),
        [["x"], ["1", "2"], [], ["x y"]],
    ),
    (
        (
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "weight",
        ),
        [0, 101],
    ),
    (
        (
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "podAffinityTerm",
            "topologyKey",
        ),
        ["", "a b", "zone"],
    ),
    (
        (
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "podAffinityTerm",
            "labelSelector",
        ),
        [
            {"matchExpressions": [{"key": "app", "operator": "In"}]},
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        ],
    ),
    (
        (
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "podAffinityTerm",
            "matchLabelKeys",
        ),
        [["app"], ["tier"], ["a b"]],
    ),
    (
        (
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "podAffinityTerm",
            "mismatchLabelKeys",
        ),
        [["app"], ["tier"]],
    ),
    (("spec", "topologySpreadConstraints", 0, "maxSkew"), [0, -1, 3]),
    (("spec", "topologySpreadConstraints", 0, "topologyKey"), ["", "a b"]),
    (("spec", "topologySpreadConstraints", 0, "whenUnsatisfiable"), ["ScheduleAnyway", "Never"]),
    (("spec", "topologySpreadConstraints", 0, "minDomains"), [0, 2]),
    (("spec", "topologySpreadConstraints", 0, "nodeAffinityPolicy"), ["Ignore", "Always"]),
    (("spec", "topologySpreadConstraints", 0, "matchLabelKeys"), [["app"], ["tier"], ["a b"]]),
    (("spec", "schedulingGates"), [[{"name": "example.com/gate"}], [{"name": "bad gate"}]]),
    (("spec", "priorityClassName"), ["system-node-critical"]),
    (("spec", "preemptionPolicy"), ["Never", "Sometimes"]),
    (("spec", "overhead"), [{"cpu": "10m"}]),
]


NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "mutant", "labels": {"zone": "a"}},
    "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
}
NODE_MUTATIONS: Mutations = [
    (("metadata", "labels", "zone"), ["", "a b", "x" * 64]),
    (("spec", "taints", 0, "key"), ["", "a b", "example.com/k"]),
    (("spec", "taints", 0, "value"), ["", "a b"]),
    (("spec", "taints", 0, "effect"), ["NoExecute", "", "Never"]),
    (
        ("spec", "taints"),
        [
            [{"key": "k", "effect": "NoSchedule"}] * 2,
            [],
            [
                {"key": "k", "effect": "NoExecute"},
                {"key": "k", "effect": "NoExecute", "timeAdded": "2023-01-02T03:04:05Z"},
            ],
        ],
    ),
    (("spec", "unschedulable"), [True]),
    (
        ("spec", "podCIDR"),
        ["10.0.0.0/24", "not-a-cidr", "010.1.0.0/16", "10.0.0.1/24", "::ffff:1.2.3.4/120"],
    ),
    (
        ("spec", "podCIDRs"),
        [
            ["10.0.0.0/24", "fd00::/64"],
            ["10.0.0.0/24", "x"],
            ["10.0.0.0/24", "10.0.0.0/24"],
            ["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"],
            ["10.0.0.0/33"],
        ],
    ),
    (
        ("status",),
        [
            {"capacity": {"cpu": "-1"}},
            {"capacity": {"pods": "110"}, "allocatable": {"cpu": "-1"}},
            {"capacity": {"pods": "1.5", "cpu": "-0.5"}},
        ],
    ),
]

CLAIM: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "mutant", "namespace": "default"},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "resources": {"requests": {"storage": "1Gi"}},
    },
}
CLAIM_MUTATIONS: Mutations = [
    (
        ("spec", "accessModes"),
        [[], ["ReadWriteOncePod", "ReadWriteOnce"], ["WriteSometimes"], ["X", "X"]],
    ),
    (
        ("spec", "resources", "requests", "storage"),
        ["0", "-1Gi", "1x", "10Mi", "-1.5", "-2n", "0.5Gi"],
    ),
    (("spec", "resources", "requests"), [{}, {"cpu": "1"}]),
    (("spec", "storageClassName"), ["", "a b", "fast"]),
    (("spec", "volumeMode"), ["Block", "Raw"]),
    (("spec", "selector"), [{"matchLabels": {"a": "b c"}}, {"matchLabels": {"a": "b"}}]),
    (("spec", "volumeName"), ["pv-1", "a b"]),
]

VOLUME: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "mutant"},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "local": {"path": "/mnt/disk"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                        ]
                    }
                ]
            }
        },
    },
}
VOLUME_MUTATIONS: Mutations = [
    (("spec", "capacity", "storage"), ["0", "-1", "1x", "100Mi", "-1.5", "-2n", "1.5Gi"]),
    (
        ("spec", "capacity"),
        [{}, {"cpu": "1"}, {"storage": "1Gi", "memory": "-0.5"}, {"cpu": "-1.5Gi"}],
    ),
    (
        ("spec", "accessModes"),
        [[], ["ReadOnlyMany"], ["Sometimes"], ["ReadWriteOncePod", "ReadOnlyMany"]],
    ),
    (("spec", "local", "path"), ["", "relative", "/a/../b"]),
    (("spec", "storageClassName"), ["fast", "Bad Name"]),
    (("spec", "nodeAffinity"), [{}, {"required": {"nodeSelectorTerms": []}}]),
    (
        (
            "spec",
            "nodeAffinity",
            "required",
            "nodeSelectorTerms",
            0,
            "matchExpressions",
            0,
            "operator",
        ),
        ["NotIn", "Gt", "Bogus"],
    ),
    (("spec", "persistentVolumeReclaimPolicy"), ["Retain", "Recycle", "Keep"]),
    (("spec", "volumeMode"), ["Block", "Raw"]),
    (("spec", "hostPath"), [{"path": "/x"}, {"path": "/x", "type": "Weird"}, {"path": "/"}]),
    (("spec", "csi"), [{"driver": "Ab.c", "volumeHandle": ""}]),
    (("metadata", "annotations"), [{"volume.beta.kubernetes.io/mount-options": "ro"}]),
    (("spec", "claimRef"), [{"name": "c", "namespace": "default"}, {"name": "c"}]),
]

STORAGE_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "mutant"},
    "provisioner": "kubernetes.io/no-provisioner",
    "volumeBindingMode": "WaitForFirstConsumer",
}
STORAGE_CLASS_MUTATIONS: Mutations = [
    (("provisioner",), ["", "a b", "example.com/x", "Example.COM/Foo"]),
    (("parameters",), [{"": "x"}, {"type": "gp2"}]),
    (("volumeBindingMode",), ["Immediate", "Later"]),
    (("reclaimPolicy",), ["Retain", "Recycle", "Keep"]),
    (
        ("allowedTopologies",),
        [
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
            [{"matchLabelExpressions": [{"key": "zone", "values": []}]}],
            [{"matchLabelExpressions": []}],
            [{"matchLabelExpressions": []}, {"matchLabelExpressions": []}],
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}] * 2,
        ],
    ),
]

BUDGET: dict[str, Any] = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "mutant", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
}
BUDGET_MUTATIONS: Mutations = [
    (("spec", "minAvailable"), [-1, 0, "50%", "150%", "x%", "5"]),
    (("spec", "maxUnavailable"), [1, "10%", -2]),
    (("spec", "selector"), [{"matchLabels": {"app": "a b"}}, {}]),
    (("spec", "unhealthyPodEvictionPolicy"), ["AlwaysAllow", "Never", ""]),
    # Checked only once the spec passes, and only as a path segment.
    (("metadata", "name"), ["Mutant", "mu%tant"]),
    (("metadata", "labels"), [{"app": "a b"}]),
]

PRIORITY_CLASS: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "mutant"},
    "value": 1000,
}
PRIORITY_CLASS_MUTATIONS: Mutations = [
    (("value",), [0, -5, 1_000_000_000, 1_000_000_001]),
    (("preemptionPolicy",), ["Never", "Sometimes", ""]),
    (("description",), ["x"]),
    (("globalDefault",), [True, False]),
    (("metadata", "name"), ["system-mutant", "Mutant", "system-node-critical"]),
]

SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "mutant", "namespace": "default"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}
SERVICE_MUTATIONS: Mutations = [
    (("metadata", "name"), ["1web", "web.v1", "Web"]),
    (("spec", "selector"), [{"app": "a b"}, {"bad key!": "x"}, {}, {"app": ""}]),
]

_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "x"}]},
}
REPLICA_SET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "mutant", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _TEMPLATE},
}
STATEFUL_SET: dict[str, Any] = {
    **REPLICA_SET,
    "kind": "StatefulSet",
    "spec": {**REPLICA_SET["spec"], "serviceName": "web"},
}
APPS_MUTATIONS: Mutations = [
    (("metadata", "name"), ["web.v1", "Web"]),
    (
        ("spec", "selector"),
        [
            {},
            {"matchLabels": {}},
            {"matchLabels": {"app": "db"}},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
            {"matchExpressions": [{"key": "app", "operator": "Bogus"}]},
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        ],
    ),
    (("spec", "template", "metadata", "labels"), [{"app": "db"}, {"app": "web", "v": "2"}, {}]),
]
CONTROLLER: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "mutant", "namespace": "default"},
    "spec": {"selector": {"app": "web"}, "template": _TEMPLATE},
}
CONTROLLER_MUTATIONS: Mutations = [
    (("metadata", "name"), ["web.v1", "Web", "w" * 254]),
    (("spec", "selector"), [{}, {"app": "db"}, {"app": "web", "v": "2"}]),
    (("spec", "template", "metadata", "labels"), [{"app": "db"}, {}]),
]

#: kind: (base object, mutations, mutants of it).
KINDS: dict[str, tuple[dict[str, Any], Mutations, int]] = {
    "Pod": (POD, POD_MUTATIONS, MUTANTS),
    "Node": (NODE, NODE_MUTATIONS, MUTANTS // 3),
    "PersistentVolumeClaim": (CLAIM, CLAIM_MUTATIONS, MUTANTS // 3),
    "PersistentVolume": (VOLUME, VOLUME_MUTATIONS, MUTANTS // 3),
    "StorageClass": (STORAGE_CLASS, STORAGE_CLASS_MUTATIONS, MUTANTS // 5),
    "PodDisruptionBudget": (BUDGET, BUDGET_MUTATIONS, MUTANTS // 5),
    "PriorityClass": (PRIORITY_CLASS, PRIORITY_CLASS_MUTATIONS, MUTANTS // 5),
    "Service": (SERVICE, SERVICE_MUTATIONS, MUTANTS // 10),
    "ReplicaSet": (REPLICA_SET, APPS_MUTATIONS, MUTANTS // 5),
    "StatefulSet": (STATEFUL_SET, APPS_MUTATIONS, MUTANTS // 5),
    "ReplicationController": (CONTROLLER, CONTROLLER_MUTATIONS, MUTANTS // 10),
}


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> bool:
    """False when an earlier mutation took the path away (a list emptied, say)."""
    try:
        for step in path[:-1]:
            obj = obj[step]
        obj[path[-1]] = copy.deepcopy(value)
    except (IndexError, KeyError, TypeError):
        return False
    return True


def mutants(base: dict[str, Any], mutations: Mutations, count: int) -> list[tuple[str, Any]]:
    rng = random.Random(f"{SEED}/{base['kind']}")
    out = []
    for i in range(count):
        body = copy.deepcopy(base)
        said = []
        for path, values in rng.sample(mutations, rng.randint(1, min(3, len(mutations)))):
            value = rng.choice(values)
            if _set(body, path, value):
                said.append(f"{'.'.join(map(str, path))}={json.dumps(value)}")
        if body["metadata"]["name"] == base["metadata"]["name"]:
            body["metadata"]["name"] = f"mutant-{i}"
        out.append(("; ".join(said), body))
    return out


_INVALID = re.compile(r'^The \w+ "[^"]*" is invalid: ?(.*)$', re.S)


def api_server_lines(kube: Kube, body: dict[str, Any]) -> list[str] | None:
    """[] when the API server accepts the object, its error lines when it refuses it as
    invalid, None for any other refusal (admission, decoding)."""
    out = kube.run("create", "--dry-run=server", "-f", "-", stdin=json.dumps(body), check=False)
    if out.returncode == 0:
        return []
    text = out.stderr.strip().removeprefix("Error from server (Invalid): ")
    match = _INVALID.match(text)
    if match is None:
        return None
    # A pointer field prints as its address, which no one else can know.
    rest = re.sub(r"\(0x[0-9a-f]+\)", "(0x…)", match.group(1).strip())
    if rest.startswith("* ") or "\n* " in rest:
        return [line[2:] for line in rest.splitlines() if line.startswith("* ")]
    return [rest]


@pytest.mark.parametrize("kind", KINDS)
def test_the_rules_agree_with_the_api_server(kube: Kube, kind: str) -> None:
    base, mutations, count = KINDS[kind]
    disagreements, compared = [], 0
    for what, body in mutants(base, mutations, count):
        theirs = api_server_lines(kube, body)
        if theirs is None:
            continue
        compared += 1
        ours = object_problems(Document("mutant.yaml", "document 1", body))
        if sorted(ours) != sorted(theirs):
            disagreements.append(f"{what}\n  api server: {theirs}\n  ours:       {ours}")
    assert compared >= count * 0.8, f"only {compared} of {count} mutants compared"
    assert not disagreements, "\n".join(disagreements)
