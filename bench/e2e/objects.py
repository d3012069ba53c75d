"""The API objects a benchmark cluster is made of: nodes, running pods, pending pods, and the
pending pods of scenario (s), shaped as kube-scheduler's scheduler_perf workloads shape them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

RUN_LABEL = "bench.multisched.dev/run"
ROLE_LABEL = "bench.multisched.dev/role"
#: As scheduler_perf labels its nodes for the spreading and affinity workloads: three zones.
ZONES = 3
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
#: The label of a group of pods that repel one another (anti-affinity shape).
GROUP_LABEL = "group"
#: Scenario (s)'s shapes; "mixed" takes the four others in turn, pod by pod.
BASIC_SHAPES = ("plain", "spread", "anti-affinity", "affinity")
SHAPES = (*BASIC_SHAPES, "mixed")
#: Pods per anti-affinity group, at most: each needs a node of its own.
GROUP_PODS = 100
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
                HOSTNAME_KEY: name,
                "kubernetes.io/os": "linux",
                ZONE_KEY: f"zone-{i % ZONES}",
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
        labels = {"app": f"running-{i % 50}", ROLE_LABEL: "running"}
        yield _pod(f"running-{i:06d}", labels, {"nodeName": node_name(i % nodes)})


def filler_pods(nodes: int, cpu: str) -> Iterator[dict[str, Any]]:
    """One bound pod per node asking for ``cpu`` (priority 0, as every bench pod)."""
    for i in range(nodes):
        pod = _pod(f"filler-{i:06d}", {ROLE_LABEL: "filler"}, {"nodeName": node_name(i)})
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
        yield pod


def pending_pods(run: str, scheduler_name: str, count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield pending_pod(run, scheduler_name, i)


def pending_pod(run: str, scheduler_name: str, i: int) -> dict[str, Any]:
    labels = {RUN_LABEL: run, "app": f"{run}-{i % 20}"}
    return _pod(f"{run}-{i:06d}", labels, {"schedulerName": scheduler_name})


def shaped_pods(
    run: str, scheduler_name: str, count: int, shape: str, nodes: int
) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield shaped_pod(run, scheduler_name, i, shape, nodes)


def shaped_pod(run: str, scheduler_name: str, i: int, shape: str, nodes: int) -> dict[str, Any]:
    """``pending_pod`` (its app label one of 20) with the constraints of ``shape``.

    plain: requests only. spread: a hard zone spread and a soft hostname spread over the pods
    of its app. anti-affinity: no two pods of its group (min(GROUP_PODS, nodes) pods, label
    group=gNN) on one node. affinity: preferably in a zone with pods of its app. mixed: the
    four in turn; the k-th pod of a shape within the mix is shaped as that shape's k-th pod.
    """
    pod = pending_pod(run, scheduler_name, i)
    k = i
    if shape == "mixed":
        shape, k = BASIC_SHAPES[i % len(BASIC_SHAPES)], i // len(BASIC_SHAPES)
    labels, spec = pod["metadata"]["labels"], pod["spec"]
    own_app = {"matchLabels": {"app": labels["app"]}}
    if shape == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": own_app,
            },
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME_KEY,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": own_app,
            },
        ]
    elif shape == "anti-affinity":
        group = f"g{k // min(GROUP_PODS, nodes):02d}"
        labels[GROUP_LABEL] = group
        term = {"labelSelector": {"matchLabels": {GROUP_LABEL: group}}, "topologyKey": HOSTNAME_KEY}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    elif shape == "affinity":
        term = {"labelSelector": own_app, "topologyKey": ZONE_KEY}
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term}
                ]
            }
        }
    elif shape != "plain":
        raise ValueError(f"unknown pod shape {shape!r}")
    return pod
