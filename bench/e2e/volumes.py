"""Scenario (v): a StatefulSet-like backlog, each pod with its own claim on local PVs.

Every pod has a claim of a ``WaitForFirstConsumer`` class with no provisioner, and there is
one local PV per pod, pinned to a node. Each scheduler must find the PV for every claim on the
nodes, promise it, write its claimRef, and wait for the PV controller (the real one: a
kube-controller-manager running ``persistentvolume-binder``) before binding the pod; so both
run every volume plugin for real. Fresh PVs and claims per scheduler, the same shape.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .objects import RUN_LABEL, node_name, pending_pod

CLASS = "bench-local"
PVS = "/api/v1/persistentvolumes"


def claims_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


def storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": CLASS},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def local_pv(run: str, i: int, nodes: int) -> dict[str, Any]:
    from volumes_support import local_pv as pinned

    pv = pinned(f"{run}-pv-{i:06d}", CLASS, node_name(i % nodes), "10Gi", labels={RUN_LABEL: run})
    pv["spec"]["persistentVolumeReclaimPolicy"] = "Retain"
    return pv


def claim(run: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"{run}-data-{i:06d}", "labels": {RUN_LABEL: run}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": CLASS,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def stateful_pod(run: str, scheduler_name: str, i: int) -> dict[str, Any]:
    pod = pending_pod(run, scheduler_name, i)
    pod["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": f"{run}-data-{i:06d}"}}
    ]
    return pod


def controller_manager_missing() -> str:
    if shutil.which("kube-controller-manager") is None:
        return "kube-controller-manager is not on PATH: no PV controller, scenario (v) skipped"
    return ""


@contextlib.contextmanager
def pv_controller(kubeconfig: Path, workdir: Path) -> Iterator[None]:
    """The e2e suite's PV controller (tests/e2e/volumes_support.py), started once."""
    from volumes_support import pv_controller as start

    with start(kubeconfig, workdir):
        yield
