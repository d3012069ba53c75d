"""Builders for the volume plugins' tests: PVs, claims, classes and CSI objects as the API
server stores them, and a simulate run over them with the default profile."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import node_dict, pod_dict
from multisched.config import parse_config_object, resolve
from multisched.scheduler import default_registry
from multisched.scheduler.simulate import ClusterInput, SimulationResult, simulate

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
WFFC = "WaitForFirstConsumer"


def node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return node_dict(name, cpu=cpu, labels={HOSTNAME: name, **labels})


def pod(name: str, *claims: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    raw = pod_dict(name, requests={"cpu": cpu})
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    raw["spec"]["volumes"] = [*volumes, *spec.pop("volumes", [])]
    raw["spec"].update(spec)
    return raw


def storage_class(
    name: str, mode: str = WFFC, provisioner: str = "kubernetes.io/no-provisioner", **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def claim(
    name: str,
    size: str = "1Gi",
    klass: str | None = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume: str = "",
    bound: bool = False,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec},
        "status": {"phase": "Pending"},
    }
    if klass is not None:
        body["spec"]["storageClassName"] = klass
    if volume:
        body["spec"]["volumeName"] = volume
    if bound:
        body["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        body["status"]["phase"] = "Bound"
    return body


def pv(
    name: str,
    size: str = "1Gi",
    klass: str = "local",
    host: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    claim_ref: str = "",
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": klass,
            "local": {"path": f"/mnt/{name}"},
            **spec,
        },
        "status": {"phase": phase},
    }
    if host is not None:
        body["spec"]["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [host]}]}
                ]
            }
        }
    if claim_ref:
        body["spec"]["claimRef"] = {
            "namespace": "default",
            "name": claim_ref,
            "uid": f"uid-{claim_ref}",
        }
        body["status"]["phase"] = "Bound"
    return body


def csi_node(name: str, driver: str, count: int, **notes: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": notes},
        "spec": {"drivers": [{"name": driver, "nodeID": name, "allocatable": {"count": count}}]},
    }


PROFILE = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler"}],
}


def run(*objects: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    """Schedule ``objects`` with the default profile; pod name -> its Placement."""
    cluster = ClusterInput.from_documents(
        [(f"doc {i}", o) for i, o in enumerate(objects)], trusted=True
    )
    config = resolve(parse_config_object(PROFILE), default_registry(load_entry_points=False))
    result: SimulationResult = asyncio.run(
        simulate(cluster, config, default_registry(load_entry_points=False), seed=seed)
    )
    return {p.pod.name: p for p in result.placements}
