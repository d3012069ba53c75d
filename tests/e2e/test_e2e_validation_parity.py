"""The cluster-file rules against kube-apiserver v1.28 itself: a valid Pod, mutated at the
fields scheduling reads, is sent to the API server (``kubectl create --dry-run=server``) and
checked by ``simulate``'s rules. Both must accept it, or both refuse it with the same lines.

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

from conftest import Kube
from multisched.validation import Document, object_problems

#: ``MULTISCHED_VALIDATION_SEED`` / ``_MUTANTS`` for another or a longer run.
SEED = int(os.environ.get("MULTISCHED_VALIDATION_SEED", "28"))
MUTANTS = int(os.environ.get("MULTISCHED_VALIDATION_MUTANTS", "150"))

#: A Pod using every field the rules look at.
BASE: dict[str, Any] = {
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

#: (path, values to try): each mutant sets one to three of them.
MUTATIONS: list[tuple[tuple[Any, ...], list[Any]]] = [
    (("metadata", "labels", "app"), ["", "a b", "-x", "x" * 64]),
    (("metadata", "labels"), [{"a/b/c": "x"}, {"": "x"}, {"example.com/ok": "y"}]),
    (("spec", "nodeSelector"), [{"disk": "a b"}, {"bad key!": "x"}]),
    (
        ("spec", "containers", 0, "resources", "requests", "cpu"),
        ["-1", "0", "1x", "100m", "0.5", "1e3", "1.5m"],
    ),
    (("spec", "containers", 0, "resources", "requests", "memory"), ["-1Mi", "1Qi", "64Mi"]),
    (("spec", "containers", 0, "resources", "limits"), [{"cpu": "50m"}, {"memory": "1Gi"}]),
    (("spec", "containers", 0, "ports", 0, "hostPort"), [0, -1, 70000, 8081]),
    (("spec", "containers", 0, "ports", 0, "containerPort"), [0, 70000, 9090]),
    (("spec", "containers", 0, "ports", 0, "protocol"), ["UDP", "SCTP", "HTTP", "tcp"]),
    (("spec", "tolerations", 0, "operator"), ["Exists", "In", ""]),
    (("spec", "tolerations", 0, "effect"), ["NoExecute", "PreferNoSchedule", "Never", ""]),
    (("spec", "tolerations", 0, "key"), ["", "a b", "example.com/k"]),
    (("spec", "tolerations", 0, "tolerationSeconds"), [5, -5]),
    (
        (
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
            0,
            "matchExpressions",
            0,
            "operator",
        ),
        ["NotIn", "Exists", "Gt", "Bogus"],
    ),
    (
        (
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
            0,
            "matchExpressions",
            0,
            "values",
        ),
        [[], ["a", "b"], ["1"], ["x y"]],
    ),
    (
        (
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        ),
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
        [["x"], ["1", "2"], []],
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


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> bool:
    """False when an earlier mutation took the path away (a list emptied, say)."""
    try:
        for step in path[:-1]:
            obj = obj[step]
        obj[path[-1]] = copy.deepcopy(value)
    except (IndexError, KeyError, TypeError):
        return False
    return True


def mutants() -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(SEED)
    out = []
    for i in range(MUTANTS):
        body = copy.deepcopy(BASE)
        body["metadata"]["name"] = f"mutant-{i}"
        said = []
        for path, values in rng.sample(MUTATIONS, rng.randint(1, 3)):
            value = rng.choice(values)
            if _set(body, path, value):
                said.append(f"{'.'.join(map(str, path))}={json.dumps(value)}")
        out.append(("; ".join(said), body))
    return out


_INVALID = re.compile(r'^The Pod "[^"]+" is invalid: ?(.*)$', re.S)


def api_server_lines(kube: Kube, body: dict[str, Any]) -> list[str] | None:
    """[] when the API server accepts the pod, its error lines when it refuses it as
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


def test_the_rules_agree_with_the_api_server(kube: Kube) -> None:
    disagreements, compared = [], 0
    for what, body in mutants():
        theirs = api_server_lines(kube, body)
        if theirs is None:
            continue
        compared += 1
        ours = object_problems(Document("mutant.yaml", "document 1", body))
        if sorted(ours) != sorted(theirs):
            disagreements.append(f"{what}\n  api server: {theirs}\n  ours:       {ours}")
    assert compared >= MUTANTS * 0.8, f"only {compared} mutants compared"
    assert not disagreements, "\n".join(disagreements)
