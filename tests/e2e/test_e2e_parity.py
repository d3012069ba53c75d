"""Word for word with kube-scheduler (v1.37.2) on the same API server: the same unschedulable
pods, one copy for each scheduler, must get the same FailedScheduling events and PodScheduled
conditions. Skipped, saying so, without a ``kube-scheduler`` binary on PATH.

Scores are compared in ``test_e2e_parity_scores.py``, preemption in
``test_e2e_parity_preemption.py``."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from parity_support import PROFILE, UPSTREAM, apply_profile, asking, tear_down
from test_e2e_operator import pod
from test_e2e_preemption import priority_class

from conftest import Kube, report_figure


def _container_with_port(port: int) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "ports": [{"containerPort": port, "hostPort": port}],
    }


def _container_asking(requests: dict[str, str], limits: bool = False) -> dict[str, Any]:
    resources = {"requests": requests, **({"limits": requests} if limits else {})}
    return {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": resources}


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
    # a resource no node has; ephemeral storage, which these nodes do not report
    "gpu": {"containers": [_container_asking({"example.com/gpu": "1"}, limits=True)]},
    "ephemeral": {"containers": [_container_asking({"ephemeral-storage": "1Gi"})]},
    # a node name no node has (NodeAffinity's PreFilter narrows the nodes to none)
    "node-name": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["nowhere"]}
                            ]
                        }
                    ]
                }
            }
        }
    },
    # NodeAffinity's PreFilter narrows the nodes to the small one, which is too small
    "node-name-small": {
        "cpu": "3",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": ["parity-small"],
                                }
                            ]
                        }
                    ]
                }
            }
        },
    },
    # only the small node is selected, and the wary pod there repels this one
    "existing-anti-affinity": {
        "labels": {"parity-role": "shy"},
        "nodeSelector": {"kubernetes.io/hostname": "parity-small"},
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


#: Pods kept from scheduling by a gate: no FailedScheduling event, only the condition.
GATED = {"schedulingGates": [{"name": "example.com/parity-hold"}]}


def _condition(kube: Kube, name: str) -> str | None:
    conditions = kube.get("pod", name)["status"].get("conditions") or []
    for c in conditions:
        if c["type"] == "PodScheduled":
            return f"{c['status']} {c.get('reason')}: {c.get('message')}"
    return None


_DRA_QUIRK = " not found"
#: The cases a PreFilter plugin may reject outright (VolumeBinding's claims, NodeAffinity's
#: node name): only these can meet v1.37.2's DynamicResources PostFilter error.
PRE_FILTER_REJECTED = {"claim", "unbound-claim", "no-volume", "node-name"}


def _apart_by_the_dra_postfilter(theirs: tuple[str, str], ours: tuple[str, str]) -> bool:
    """Where we part from v1.37.2 on purpose. When a PreFilter ahead of DynamicResources
    rejects the pod (a claim, a node name, ...), DynamicResources' PreFilter never runs and
    its PostFilter then fails to read its cycle state: an Error "not found" that ends the
    message and skips preemption. We answer as if that PostFilter had nothing to do (the pod
    has no claims to free), so preemption says what it finds. True when the two answers
    differ by exactly that, in the event and in the condition alike."""
    for upstream, mine in zip(theirs, ours, strict=True):
        if not upstream.endswith(_DRA_QUIRK):
            return False
        head = upstream.removesuffix(_DRA_QUIRK)
        if not mine.startswith(head + " preemption: "):
            return False
    return True


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
        "parity-wary",
        *(f"{who}-{case}" for case in (*CASES, "gated") for who in ("upstream", "multisched")),
    ]
    claims = [(kind, name) for name in STORAGE_CLASSES for kind in ("pvc", "storageclass")]
    tear_down(kube, pods, *claims)


def test_failed_scheduling_reads_as_kube_schedulers(
    kube: Kube,
    start_operator: Any,
    kube_scheduler: Path,
    tidy: None,
    profile_fields: dict[str, Any],
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
    shy = {
        "labelSelector": {"matchLabels": {"parity-role": "shy"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    kube.apply(
        asking(
            pod("parity-wary"),
            nodeName="parity-small",
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [shy]}},
        )
    )

    _storage(kube)
    op = start_operator()
    apply_profile(kube, profile_fields)
    for case, asks in {**CASES, "gated": GATED}.items():
        for who, scheduler in (("upstream", UPSTREAM), ("multisched", PROFILE)):
            spec = copy.deepcopy(asks)
            cpu, labels = spec.pop("cpu", None), spec.pop("labels", {})
            body = asking(pod(f"{who}-{case}", scheduler), cpu, **spec)
            body["metadata"]["labels"].update(labels)
            kube.apply(body)

    apart: list[str] = []
    for case in CASES:
        theirs = kube.wait_for(
            f"kube-scheduler's verdict on {case}",
            lambda c=case: _failure(kube, f"upstream-{c}"),
            60,
        )
        ours = kube.wait_for(
            f"multisched's verdict on {case}", lambda c=case: _failure(kube, f"multisched-{c}"), 60
        )
        if ours != theirs and _apart_by_the_dra_postfilter(theirs, ours):
            apart.append(case)
            continue
        assert ours == theirs, f"{case}: {op.output()[-3000:]}"
    # Only pods a PreFilter rejects meet the quirk; every other case is word for word.
    assert set(apart) <= PRE_FILTER_REJECTED, apart
    report_figure(f"[parity] apart by v1.37.2's DynamicResources PostFilter: {sorted(apart)}")
    gated = [
        kube.wait_for(f"{who}'s condition on a gated pod", lambda w=who: _condition(kube, w), 60)
        for who in ("upstream-gated", "multisched-gated")
    ]
    assert gated[0] == gated[1], gated
    # The message the plugins' v1.37 statuses make for the first case, spelled out (3 CPU is
    # beyond the small node's allocatable: unresolvable there, as on the tainted and the
    # cordoned node).
    big, _ = _failure(kube, "multisched-big") or ("", "")
    assert big == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are "
        "available: 1 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling."
    )
