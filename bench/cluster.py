"""Synthetic clusters and pods for the benchmarks (deterministic for a given seed)."""

from __future__ import annotations

import random
from typing import Any

ZONES = ("zone-a", "zone-b", "zone-c")
IMAGES = [f"registry.example/app-{i}:v1" for i in range(20)]


def node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"node-{i:05d}"
    spec: dict[str, Any] = {}
    if i % 10 == 0:
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    if i % 25 == 0:
        spec.setdefault("taints", []).append(
            {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": ZONES[i % 3],
                "disktype": "ssd" if i % 2 else "hdd",
                "pool": f"pool-{i % 7}",
            },
        },
        "spec": spec,
        "status": {
            "allocatable": {
                "cpu": "32",
                "memory": "128Gi",
                "pods": "110",
                "ephemeral-storage": "200Gi",
            },
            "images": [
                {"names": [img], "sizeBytes": rng.randint(50, 900) * 1024 * 1024}
                for img in rng.sample(IMAGES, 4)
            ],
        },
    }


def simple_pod(i: int, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": IMAGES[i % len(IMAGES)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
        "schedulerName": "bench",
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i}",
            "namespace": "default",
            "uid": f"uid-{i}",
            "labels": {"app": f"app-{i % 50}"},
        },
        "spec": spec,
    }


def complex_pod(i: int) -> dict[str, Any]:
    pod = simple_pod(i)
    app = pod["metadata"]["labels"]["app"]
    pod["spec"].update(
        {
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "pool", "operator": "NotIn", "values": ["pool-6"]}
                                ]
                            }
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "disktype", "operator": "In", "values": ["ssd"]}
                                ]
                            },
                        }
                    ],
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 50,
                            "podAffinityTerm": {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {"app": app}},
                            },
                        }
                    ]
                },
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                },
            ],
        }
    )
    return pod
