"""The API objects a benchmark cluster is made of: nodes, running pods, pending pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

RUN_LABEL = "bench.multisched.dev/run"
ZONES = 3
PAUSE = "registry.k8s.io/pause:3.9"
#: Room for 50,000 running pods on 500 nodes plus every pending pod of a scenario.
NODE_PODS = "250"


def node_name(i: int) -> str:
    return f"bench-node-{i:05d}"


def node(i: int) -> dict[str, Any]:
    name = node_name(i)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
            },
        },
    }


def node_status() -> dict[str, Any]:
    """What a kubelet would report: Ready, with room."""
    room = {"cpu": "64", "memory": "256Gi", "pods": NODE_PODS, "ephemeral-storage": "500Gi"}
    return {
        "capacity": room,
        "allocatable": room,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "bench node",
            }
        ],
    }


def _pod(name: str, labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": PAUSE,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def running_pods(start: int, stop: int, nodes: int) -> Iterator[dict[str, Any]]:
    """Pods created already bound: assigned and not terminal, as a scheduler's cache counts them."""
    for i in range(start, stop):
        labels = {"app": f"running-{i % 50}", "bench.multisched.dev/role": "running"}
        yield _pod(f"running-{i:06d}", labels, {"nodeName": node_name(i % nodes)})


def pending_pods(run: str, scheduler_name: str, count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield pending_pod(run, scheduler_name, i)


def pending_pod(run: str, scheduler_name: str, i: int) -> dict[str, Any]:
    labels = {RUN_LABEL: run, "app": f"{run}-{i % 20}"}
    return _pod(f"{run}-{i:06d}", labels, {"schedulerName": scheduler_name})
