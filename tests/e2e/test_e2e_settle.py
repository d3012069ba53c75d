"""simulate settles a file as the cluster does (issue 44), measured against the cluster: a
hand-written file of PVs, claims and pods is applied to a v1.37.2 control plane with the
real PV controller and kube-scheduler, and given, unchanged, to ``simulate``; every pod's node
or message must agree. Then ``simulate --from-cluster`` reads that cluster, settled by its
own controllers, and its settling changes nothing."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from parity_support import UPSTREAM
from test_e2e_explain import multisched
from test_e2e_operator import pod

from conftest import Kube, report_figure
from volumes_support import (
    csi_pv,
    local_pv,
)

ZONE = "topology.kubernetes.io/zone"
DRIVER = "csi.settle.multisched.io"
#: Nodes: cpu decides where an unconstrained pod goes (no ties to break at random).
NODES = {"settle-a": ("a", "16"), "settle-b": ("b", "8"), "settle-c": ("b", "4")}


#: Messages kube-scheduler words otherwise for reasons outside settling (scheduler
#: plugin parity, reported with issue 44): the cluster's text that marks each. The pods
#: still agree on being unschedulable, and the test fails if the cluster's wording changes.
KNOWN_GAPS = {
    # Rejected in PreFilter before DynamicResources' PreFilter ran, the pod meets that
    # plugin's PostFilter, which fails on its missing cycle state: "... not found" replaces
    # the preemption sentence.
    "settle-imm-none": "pod has unbound immediate PersistentVolumeClaims. not found",
}


def storage_class(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner") -> Any:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def claim(name: str, klass: str, *modes: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": list(modes or ("ReadWriteOnce",)),
            "storageClassName": klass,
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }


def user(name: str, *claims: str, **spec: Any) -> dict[str, Any]:
    body = pod(
        name,
        UPSTREAM,
        volumes=[
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ],
        **spec,
    )
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return body


def storage_objects() -> list[dict[str, Any]]:
    """PVs and claims as people write them: bindings spelled out, statuses included."""
    zonal = local_pv("settle-zonal", "settle-zone", "settle-a")
    zonal["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] = [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
    ]
    pre = local_pv(
        "settle-pre",
        "settle-wait",
        "settle-c",
        claimRef={"namespace": "default", "name": "pre"},
    )
    pre["status"] = {"phase": "Bound"}
    pre_claim = claim("pre", "settle-wait", volumeName="settle-pre")
    pre_claim["status"] = {"phase": "Bound"}
    objs: list[dict[str, Any]] = [
        storage_class("settle-imm", "Immediate"),
        storage_class("settle-wait", "WaitForFirstConsumer"),
        storage_class("settle-csi", "Immediate", DRIVER),
        storage_class("settle-zone", "Immediate"),
        pre,
        pre_claim,
        local_pv("settle-imm-b", "settle-imm", "settle-b"),
        claim("imm", "settle-imm"),
        claim("imm-none", "settle-imm", resources={"requests": {"storage": "5Gi"}}),
        zonal,
        claim("zonal", "settle-zone"),
        local_pv("settle-wait-a", "settle-wait", "settle-a"),
        claim("wait", "settle-wait"),
        local_pv("settle-rwop", "settle-imm", "settle-b", accessModes=["ReadWriteOncePod"]),
        claim("rwop", "settle-imm", "ReadWriteOncePod"),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "settle-a"},
            "spec": {
                "drivers": [{"name": DRIVER, "nodeID": "settle-a", "allocatable": {"count": 1}}]
            },
        },
    ]
    for i in (1, 2):
        objs.append(
            csi_pv(f"settle-csi-{i}", "settle-csi", DRIVER, f"settle-{i}", f"settle-csi-{i}")
        )
        objs.append(claim(f"settle-csi-{i}", "settle-csi", volumeName=f"settle-csi-{i}"))
    return objs


def pods() -> list[dict[str, Any]]:
    on_a = {"nodeSelector": {"kubernetes.io/hostname": "settle-a"}}
    return [
        user("settle-pre", "pre"),  # written bound: goes where its local PV is
        user("settle-imm", "imm"),  # Immediate, bound by the controller: settle-b
        user("settle-imm-none", "imm-none"),  # Immediate, no PV that large: unbound
        user("settle-zonal", "zonal"),  # a zonal PV: zone a
        user("settle-wait", "wait"),  # WaitForFirstConsumer: bound by the scheduler
        user("settle-rwop-1", "rwop"),
        user("settle-rwop-2", "rwop"),  # ReadWriteOncePod in use
        user("settle-csi-1", "settle-csi-1", **on_a),
        user("settle-csi-2", "settle-csi-2", **on_a),  # past settle-a's attach limit
    ]


def node_docs() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, ZONE: zone}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }
        for n, (zone, cpu) in NODES.items()
    ]


def is_bound(kube: Kube, name: str) -> bool:
    return bool(kube.get("pvc", name).get("status", {}).get("phase") == "Bound")


def cluster_answer(kube: Kube, name: str) -> tuple[str, str]:
    """(node, "") once bound, or ("", the last FailedScheduling message)."""
    node = str(kube.get("pod", name).get("spec", {}).get("nodeName") or "")
    if node:
        return node, ""
    failed = [e for e in kube.events_for("Pod", name) if e["reason"] == "FailedScheduling"]
    return "", failed[-1]["message"] if failed else ""


def settled_answer(kube: Kube, name: str) -> tuple[str, str]:
    def answered() -> tuple[str, str] | None:
        found = cluster_answer(kube, name)
        return found if any(found) else None

    result: tuple[str, str] = kube.wait_for(f"{name} scheduled or refused", answered, 60)
    return result


def test_simulate_agrees_with_the_cluster_on_a_file_of_volumes(
    kube: Kube, controllers: Path, kube_scheduler: Path, tmp_path: Path
) -> None:
    for n, (zone, cpu) in NODES.items():
        kube.add_node(n, {ZONE: zone}, cpu=cpu)
    storage, workload = storage_objects(), pods()
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(yaml.safe_dump_all([*node_docs(), *storage, *workload]))
    profile_file = tmp_path / "profile.yaml"
    profile_file.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": UPSTREAM}],
            }
        )
    )
    names = [p["metadata"]["name"] for p in workload]
    try:
        for obj in storage:
            kube.apply(obj)
        for c in ("imm", "pre", "settle-csi-1", "settle-csi-2", "zonal", "rwop"):
            kube.wait_for(f"{c} Bound", partial(is_bound, kube, c))
        on_cluster = {}
        for body in workload:  # one at a time: each placement counts for the next
            kube.apply(body)
            on_cluster[body["metadata"]["name"]] = settled_answer(kube, body["metadata"]["name"])

        out = multisched(
            kube, "simulate", str(cluster_file), "--profile", str(profile_file), "-o", "json"
        )
        assert out.returncode == 0, out.stderr
        simulated = {
            r["pod"].split("/")[1]: (r["node"] or "", "" if r["node"] else r["message"])
            for r in json.loads(out.stdout)["pods"]
        }
        agree = [n for n in names if simulated[n] == on_cluster[n]]
        same_node = [n for n in names if simulated[n][0] == on_cluster[n][0]]
        report_figure(
            f"settle parity: {len(same_node)}/{len(names)} pods on kube-scheduler's node (or "
            f"pending alike), {len(agree)}/{len(names)} with its exact message"
        )
        assert same_node == names, (simulated, on_cluster)
        differ = {
            n: (simulated[n][1], on_cluster[n][1])
            for n in names
            if n not in agree and KNOWN_GAPS.get(n, "\0") not in on_cluster[n][1]
        }
        assert not differ, "\n".join(
            f"{n}:\n  simulate {s}\n  cluster  {c}" for n, (s, c) in differ.items()
        )
        assert "settled" in json.loads(out.stdout)

        live = multisched(kube, "simulate", "--from-cluster", "-o", "json")
        assert live.returncode == 0, live.stderr
        assert "settled" not in json.loads(live.stdout)
    finally:
        kube.run(
            "delete", "pod", *names, "--force", "--grace-period=0", "--wait=false", check=False
        )
        for obj in reversed(storage):
            kind = obj["kind"].lower()
            kube.run("delete", kind, obj["metadata"]["name"], "--ignore-not-found", "--wait=false")


def test_a_pods_claims_from_a_template_are_settled_on_the_cluster_already(
    kube: Kube, controllers: Path, tmp_path: Path
) -> None:
    """kube-controller-manager's resourceclaim controller created the claim and wrote the
    pod's status: `simulate --from-cluster` settles nothing more, and the same pod written
    by hand gets the claim created, as the controller did."""
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "settle-gpu", "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example"}}]
                }
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "settle-trainer", "namespace": "default"},
        "spec": {
            "schedulerName": "settle-nobody",
            "resourceClaims": [{"name": "accel", "resourceClaimTemplateName": "settle-gpu"}],
            "containers": [
                {"name": "c", "image": "x", "resources": {"claims": [{"name": "accel"}]}}
            ],
        },
    }
    try:
        kube.apply(template)
        kube.apply(pod)

        def recorded() -> list[Any] | None:
            status = kube.get("pod", "settle-trainer").get("status") or {}
            return status.get("resourceClaimStatuses") or None

        statuses = kube.wait_for("the claim recorded", recorded, 60)
        made = str(statuses[0]["resourceClaimName"])
        assert made.startswith("settle-trainer-accel-")
        live = multisched(kube, "simulate", "--from-cluster", "-o", "json")
        assert live.returncode == 0, live.stderr
        assert "settled" not in json.loads(live.stdout)

        written = tmp_path / "claims.yaml"
        profile = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "settle-nobody"}],
        }
        written.write_text(yaml.safe_dump_all([profile, *node_docs(), template, pod]))
        out = multisched(kube, "simulate", str(written), "-o", "json")
        assert out.returncode == 0, out.stderr
        created = json.loads(out.stdout)["settled"][0]["object"]
        # The same base name; the 5 characters the API server drew differ.
        assert created.startswith("ResourceClaim default/settle-trainer-accel-")
        assert len(created.split("/")[1]) == len(made)
    finally:
        kube.run("delete", "pod", "settle-trainer", "--force", "--grace-period=0", check=False)
        kube.run("delete", "resourceclaimtemplate", "settle-gpu", "--ignore-not-found")
