"""Default spreading point for point with kube-scheduler (v1.37.2) on the same API server: a
pod with no spread constraints of its own is spread by PodTopologySpread's system defaults
over the pods its Services and its controller select (upstream ``DefaultSelector``). The
scores come from ``explain`` and kube-scheduler's -v=10 log; the last test lets both
schedulers place a pod, ours through the operator's informers. Skipped, saying so, without a
``kube-scheduler`` binary on PATH."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from parity_support import PROFILE, UPSTREAM, apply_profile, asking, tear_down
from test_e2e_operator import pod
from test_e2e_parity_scores import _compare_scores, scoring_cluster

from conftest import Kube

__all__ = ["scoring_cluster"]  # the fixture, used by name

#: A ReplicaSet's selector, and its template's labels: one more than the selector holds.
RS_SELECTOR = {"app": "parity-rs", "pod-template-hash": "5d8f7c"}
RS_LABELS = {**RS_SELECTOR, "tier": "front"}


def _labelled(body: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    body["metadata"]["labels"].update(labels)
    return body


def _service(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector, "ports": [{"port": 80}]},
    }


def _controller_ref(kube: Kube, api_version: str, kind: str, name: str) -> dict[str, Any]:
    """The owner reference a controller puts on its pods (the object must exist)."""
    uid = kube.get(kind.lower(), name)["metadata"]["uid"]
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


@pytest.fixture
def replica_set(kube: Kube) -> Iterator[dict[str, Any]]:
    """An inert ReplicaSet (no controller runs, 0 replicas) and three running pods it owns,
    one of them relabelled out of the template's ``tier`` (its selector still holds it)."""
    kube.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "parity-rs", "namespace": "default"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": RS_SELECTOR},
                "template": {
                    "metadata": {"labels": RS_LABELS},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
                },
            },
        }
    )
    owner = _controller_ref(kube, "apps/v1", "ReplicaSet", "parity-rs")
    running = [
        ("parity-rs-1", "score-a", RS_LABELS),
        ("parity-rs-2", "score-c", RS_LABELS),
        ("parity-rs-3", "score-c", RS_SELECTOR),
    ]
    for name, node, labels in running:
        kube.apply(_owned(asking(pod(name), "500m", nodeName=node), owner, labels))
    yield owner
    tear_down(kube, [name for name, _, _ in running], ("replicaset", "parity-rs"))


def _owned(body: dict[str, Any], owner: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    body["metadata"]["ownerReferences"] = [owner]
    return _labelled(body, labels)


def test_a_replica_sets_pod_is_spread_as_kube_scheduler_spreads_it(
    kube: Kube, kube_scheduler: Path, scoring_cluster: None, replica_set: dict[str, Any]
) -> None:
    """The ReplicaSet's selector counts all three of its pods, the relabelled one too."""
    _compare_scores(
        kube,
        kube_scheduler,
        lambda name, sched: _owned(asking(pod(name, sched), "500m"), replica_set, RS_LABELS),
    )


SERVICES = {
    "parity-svc": {"app": "parity-svc"},
    "parity-svc-front": {"tier": "front"},
    "parity-svc-other": {"app": "parity-unrelated"},
}


@pytest.fixture
def services(kube: Kube) -> Iterator[None]:
    """Three Services, two of which select the probe (their selectors are merged), and
    running pods that match both, one, or the other."""
    for name, selector in SERVICES.items():
        kube.apply(_service(name, selector))
    running = [
        ("parity-svc-1", "score-a", {"app": "parity-svc", "tier": "front"}),
        ("parity-svc-2", "score-c", {"app": "parity-svc"}),
        ("parity-svc-3", "score-c", {"app": "parity-svc", "tier": "front"}),
        ("parity-svc-4", "score-b", {"tier": "front"}),
    ]
    for name, node, labels in running:
        kube.apply(_labelled(asking(pod(name), "500m", nodeName=node), labels))
    yield
    tear_down(kube, [name for name, _, _ in running], *(("service", name) for name in SERVICES))


def test_a_services_pod_is_spread_as_kube_scheduler_spreads_it(
    kube: Kube, kube_scheduler: Path, scoring_cluster: None, services: None
) -> None:
    """A bare pod (no controller) behind two Services: spread over the pods both select."""
    _compare_scores(
        kube,
        kube_scheduler,
        lambda name, sched: _labelled(
            asking(pod(name, sched), "500m"), {"app": "parity-svc", "tier": "front"}
        ),
    )


RC_LABELS = {"app": "parity-rc", "tier": "back"}


@pytest.fixture
def replication_controller(kube: Kube) -> Iterator[dict[str, Any]]:
    """An inert ReplicationController selecting app, a Service selecting tier: the probe's
    selector is both, merged (the RC's map joins the Services' labels)."""
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "parity-rc", "namespace": "default"},
            "spec": {
                "replicas": 0,
                "selector": {"app": "parity-rc"},
                "template": {
                    "metadata": {"labels": RC_LABELS},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
                },
            },
        }
    )
    kube.apply(_service("parity-rc-back", {"tier": "back"}))
    owner = _controller_ref(kube, "v1", "ReplicationController", "parity-rc")
    running = [
        ("parity-rc-1", "score-a", RC_LABELS),
        ("parity-rc-2", "score-c", {"app": "parity-rc"}),
        ("parity-rc-3", "score-b", {"tier": "back"}),
        ("parity-rc-4", "score-d", RC_LABELS),
    ]
    for name, node, labels in running:
        kube.apply(_owned(asking(pod(name), "500m", nodeName=node), owner, labels))
    yield owner
    tear_down(
        kube,
        [name for name, _, _ in running],
        ("replicationcontroller", "parity-rc"),
        ("service", "parity-rc-back"),
    )


def test_a_replication_controllers_pod_is_spread_as_kube_scheduler_spreads_it(
    kube: Kube,
    kube_scheduler: Path,
    scoring_cluster: None,
    replication_controller: dict[str, Any],
) -> None:
    _compare_scores(
        kube,
        kube_scheduler,
        lambda name, sched: _owned(
            asking(pod(name, sched), "500m"), replication_controller, RC_LABELS
        ),
    )


SPREAD_NODES = [f"parity-spread-{i}" for i in range(1, 7)]
SPREAD_APP = {"app": "parity-spread"}


def test_the_operator_spreads_a_services_pods_as_kube_scheduler_does(
    kube: Kube, start_operator: Any, kube_scheduler: Path
) -> None:
    """Six alike nodes, each running one pod of the same size: five of them are a Service's.
    A new bare pod of that Service goes to the sixth, in kube-scheduler and in multisched's
    operator (whose informers bring the Service); either would be a 1-in-6 guess without."""
    for name in SPREAD_NODES:
        kube.add_node(name, cpu="4")
    kube.apply(_service("parity-spread", SPREAD_APP))
    running = [f"parity-spread-pod-{i}" for i in range(1, 7)]
    for i, (name, node) in enumerate(zip(running, SPREAD_NODES, strict=True)):
        labels = SPREAD_APP if i < 5 else {"app": "parity-filler"}
        kube.apply(_labelled(asking(pod(name), "500m", nodeName=node), labels))
    probes = {"upstream-spread": UPSTREAM, "multisched-spread": PROFILE}
    try:
        kube.apply(_labelled(asking(pod("upstream-spread", UPSTREAM), "500m"), SPREAD_APP))
        theirs = kube.wait_for(
            "kube-scheduler's binding", lambda: kube.node_of("upstream-spread"), 60
        )
        assert theirs == SPREAD_NODES[-1]
        kube.run("delete", "pod", "upstream-spread", "--force", "--grace-period=0")
        op = start_operator()
        apply_profile(kube, {})
        kube.apply(_labelled(asking(pod("multisched-spread", PROFILE), "500m"), SPREAD_APP))
        ours = kube.wait_for("multisched's binding", lambda: kube.node_of("multisched-spread"), 60)
        assert ours == theirs, op.output()[-3000:]
    finally:
        tear_down(kube, [*running, *probes], ("service", "parity-spread"))
