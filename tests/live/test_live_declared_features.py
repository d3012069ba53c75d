"""``snapshot`` and ``simulate --from-cluster`` keep what NodeDeclaredFeatures reads: the
nodes' status.declaredFeatures and the pod fields its features are inferred from."""

from __future__ import annotations

import json
from typing import Any

import yaml

from live_support import LiveCluster

SCHED = "my-scheduler"
RESTART_ALL = "RestartAllContainersOnContainerExits"


def node(name: str, cpu: str, declared: list[str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
    if declared:
        status["declaredFeatures"] = declared
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": status,
    }


def pod(name: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": SCHED,
            "containers": [{"name": "c", "image": "nginx", **container}],
            **spec,
        },
        "status": {"phase": "Pending"},
    }


RULES = {
    "restartPolicy": "Never",
    "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ],
}
TOKEN = {"name": "token", "mountPath": "/var/run/secrets", "readOnly": True}
NOEXEC = {"name": "data", "mountPath": "/data", "bindMountOptions": ["noexec"]}


async def populate(live: LiveCluster) -> None:
    await live.create("nodes", node("plain", "16"))
    await live.create("nodes", node("featured", "2", [RESTART_ALL]))
    await live.create("pods", pod("restarter", {**RULES, "volumeMounts": [TOKEN]}))
    await live.create(
        "pods",
        pod(
            "noexec",
            {"volumeMounts": [TOKEN, NOEXEC]},
            volumes=[{"name": "data", "emptyDir": {}}, {"name": "token", "emptyDir": {}}],
        ),
    )
    await live.create("pods", pod("userns", {}, hostNetwork=True, hostUsers=False))
    await live.create(
        "schedulerprofiles",
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": SCHED},
            "spec": {"profiles": [{"schedulerName": SCHED}]},
        },
    )


async def test_snapshot_keeps_declared_features_and_what_pods_need(live: LiveCluster) -> None:
    await populate(live)
    code, out, _ = await live.run("snapshot")
    assert code == 0
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out)}
    assert docs["featured"]["status"]["declaredFeatures"] == [RESTART_ALL]
    assert "declaredFeatures" not in docs["plain"]["status"]
    restarter = docs["restarter"]["spec"]["containers"][0]
    assert restarter["restartPolicyRules"] == RULES["restartPolicyRules"]
    assert "volumeMounts" not in restarter  # a mount without options tells the plugin nothing
    assert docs["noexec"]["spec"]["containers"][0]["volumeMounts"] == [NOEXEC]
    userns = docs["userns"]["spec"]
    assert (userns["hostNetwork"], userns["hostUsers"]) == (True, False)


async def test_from_cluster_places_pods_by_the_features_nodes_declare(live: LiveCluster) -> None:
    await populate(live)
    code, out, _ = await live.run("simulate", "--from-cluster", "-o", "json", "--seed", "1")
    assert code == 0
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    assert (pods["default/restarter"]["status"], pods["default/restarter"]["node"]) == (
        "Scheduled",
        "featured",
    )
    for name in ("default/noexec", "default/userns"):
        assert pods[name]["status"] == "Unschedulable"
        assert "2 node(s) didn't match Pod's required features" in pods[name]["message"]
