"""Word for word with kube-scheduler: the same unschedulable pods, one copy for kube-scheduler
(v1.28, default profile) and one for multisched (default plugins), on the same API server; the
FailedScheduling events and PodScheduled conditions must read the same.

Skipped, saying so, without a ``kube-scheduler`` binary on PATH."""

from __future__ import annotations

import copy
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_e2e_operator import pod, profile
from test_e2e_preemption import priority_class

from apiserver import free_port, signal_process
from conftest import Kube

PROFILE = "e2e-parity"
#: kube-scheduler's profile: its own name, so that it leaves other tests' pods alone.
UPSTREAM = "e2e-parity-upstream"


@pytest.fixture
def kube_scheduler(
    kubeconfig: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[subprocess.Popen[bytes]]:
    binary = shutil.which("kube-scheduler")
    if binary is None:
        pytest.skip("parity skipped: no kube-scheduler on PATH to compare with")
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: '{kubeconfig}'}}\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles: [{{schedulerName: {UPSTREAM}}}]\n"
    )
    log = tmp_path / "kube-scheduler.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        signal_process(proc, signal.SIGTERM)
        proc.wait(15)
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- kube-scheduler log ---\n{log.read_text(errors='replace')[-4000:]}")


def _container_with_port(port: int) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "ports": [{"containerPort": port, "hostPort": port}],
    }


def _hog_term() -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"parity-role": "hog"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }


#: Each class's binding mode and provisioner; each has a claim of its name.
STORAGE_CLASSES = {
    "parity-immediate": ("Immediate", "example.com/parity-none"),
    "parity-local": ("WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
}


def _claiming(claim: str) -> dict[str, Any]:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}


def _storage(kube: Kube) -> None:
    """An Immediate class with no provisioner running, and a local (no-provisioner) class,
    each with a claim."""
    for name, (mode, provisioner) in STORAGE_CLASSES.items():
        kube.apply(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
            }
        )
        kube.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": name,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )


def asking(body: dict[str, Any], cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    body["spec"].update(spec)
    if cpu is not None:
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return body


#: What each pair of pods asks for; no node can take any of them.
CASES: dict[str, dict[str, Any]] = {
    # beyond the small node's allocatable, short on the busy one, a taint, a cordon
    "big": {"cpu": "3"},
    "selector": {"nodeSelector": {"parity": "nowhere"}},
    "claim": _claiming("parity-missing"),
    # an Immediate claim no volume is bound to; a local-volume claim no volume can serve
    "unbound-claim": _claiming("parity-immediate"),
    "no-volume": _claiming("parity-local"),
    # the busy node's port is taken by the hog, the small node is short
    "ports": {"cpu": "3", "containers": [_container_with_port(8080)]},
    # only the busy node is selected, and the hog repels the pod there
    "anti-affinity": {
        "nodeSelector": {"kubernetes.io/hostname": "parity-busy"},
        "affinity": {"podAntiAffinity": _hog_term()},
    },
    "affinity": {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"parity-role": "nobody"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    },
    "spread": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "parity-zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"name": "multischeduler-example"}},
            }
        ]
    },
}


def _failure(kube: Kube, name: str) -> tuple[str, str] | None:
    """The pod's first FailedScheduling message and its PodScheduled condition, once both
    are written."""
    events = [e for e in kube.events_for("Pod", name) if e["reason"] == "FailedScheduling"]
    conditions = kube.get("pod", name)["status"].get("conditions") or []
    scheduled = [c for c in conditions if c["type"] == "PodScheduled"]
    if not events or not scheduled:
        return None
    first = min(events, key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
    cond = scheduled[0]
    return first["message"], f"{cond['status']} {cond.get('reason')}: {cond.get('message')}"


@pytest.fixture
def tidy(kube: Kube) -> Iterator[None]:
    """The test's pods, profile and storage go when it ends: the API server is shared, and a
    later test's operator would otherwise go on retrying these pods."""
    yield
    pods = [
        "parity-hog",
        *(f"{who}-{case}" for case in CASES for who in ("upstream", "multisched")),
    ]
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    kube.run("delete", "schedulerprofile", PROFILE, "--ignore-not-found", "--wait=false")
    kube.run("delete", "pvc", *STORAGE_CLASSES, "--ignore-not-found", "--wait=false")
    kube.run("delete", "storageclass", *STORAGE_CLASSES, "--ignore-not-found", "--wait=false")


def test_failed_scheduling_reads_as_kube_schedulers(
    kube: Kube, start_operator: Any, kube_scheduler: subprocess.Popen[bytes], tidy: None
) -> None:
    kube.add_node("parity-small", cpu="2")
    kube.add_node("parity-busy", cpu="4")
    kube.add_node("parity-tainted", cpu="8")
    kube.add_node("parity-cordoned", cpu="8")
    kube.run("taint", "node", "parity-tainted", "dedicated=parity:NoSchedule")
    kube.run("cordon", "parity-cordoned")
    kube.apply(priority_class("e2e-parity-high", 1000))
    hog = asking(pod("parity-hog"), "3", nodeName="parity-busy")
    hog["spec"]["priorityClassName"] = "e2e-parity-high"
    hog["spec"]["containers"] = [_container_with_port(8080)]
    hog["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    hog["metadata"]["labels"]["parity-role"] = "hog"
    kube.apply(hog)

    _storage(kube)
    op = start_operator()
    kube.apply(profile(PROFILE, {"profiles": [{"schedulerName": PROFILE}]}))
    for case, asks in CASES.items():
        spec = copy.deepcopy(asks)
        cpu = spec.pop("cpu", None)
        kube.apply(asking(pod(f"upstream-{case}", UPSTREAM), cpu, **spec))
        kube.apply(asking(pod(f"multisched-{case}", PROFILE), cpu, **spec))

    for case in CASES:
        theirs = kube.wait_for(
            f"kube-scheduler's verdict on {case}",
            lambda c=case: _failure(kube, f"upstream-{c}"),
            60,
        )
        ours = kube.wait_for(
            f"multisched's verdict on {case}", lambda c=case: _failure(kube, f"multisched-{c}"), 60
        )
        assert ours == theirs, f"{case}: {op.output()[-3000:]}"
    # The message the plugins' v1.28 statuses make for the first case, spelled out.
    big, _ = _failure(kube, "multisched-big") or ("", "")
    assert big == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: parity}, "
        "1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are "
        "available: 2 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.."
    )
