"""Victim for victim with kube-scheduler (v1.37.2) on the same API server: a pod that must
preempt gets the node and victims from ``simulate --from-cluster`` that kube-scheduler then
picks and evicts. Skipped, saying so, without a ``kube-scheduler`` binary on PATH."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from parity_support import PROFILE, UPSTREAM, apply_profile, asking, tear_down
from test_e2e_explain import multisched
from test_e2e_operator import pod
from test_e2e_preemption import (
    backlog_at_start_up,
    check_highest_priority_went_first,
    delete_backlog,
    priority_class,
)

from conftest import Kube

#: The preemption cluster: victims per node (name, priority class, cpu); each node has 4 cpu.
VICTIMS = {
    "preempt-p1": (("victim-a", "e2e-parity-low", "2"), ("victim-b", "e2e-parity-low", "2")),
    "preempt-p2": (("victim-c", "e2e-parity-mid", "3"), ("victim-d", "e2e-parity-low", "1")),
    "preempt-p3": (("victim-e", "e2e-parity-low", "4"),),
}
#: victim-e is guarded by a PodDisruptionBudget that allows no disruption.
GUARDED = "victim-e"


def _preemptor(name: str, scheduler: str) -> dict[str, Any]:
    body = asking(pod(name, scheduler), "3", priorityClassName="e2e-parity-top")
    body["spec"]["terminationGracePeriodSeconds"] = 0
    return body


@pytest.fixture
def preemption_cluster(kube: Kube, profile_fields: dict[str, Any]) -> Iterator[list[str]]:
    for name, value in (("e2e-parity-low", 10), ("e2e-parity-mid", 20), ("e2e-parity-top", 10**5)):
        kube.apply(priority_class(name, value))
    victims = []
    for node, pods in VICTIMS.items():
        kube.add_node(node, cpu="4")
        for name, klass, cpu in pods:
            body = asking(pod(name), cpu, nodeName=node, priorityClassName=klass)
            body["spec"]["terminationGracePeriodSeconds"] = 0  # no kubelet: gone at deletion
            if name == GUARDED:
                body["metadata"]["labels"]["parity-guard"] = "yes"
            kube.apply(body)
            victims.append(name)
    kube.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "parity-guard", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"parity-guard": "yes"}}},
        }
    )
    apply_profile(kube, profile_fields)
    yield victims
    pods = [*victims, "upstream-preemptor", "multisched-preemptor"]
    tear_down(kube, pods, ("pdb", "parity-guard"))


def test_preemption_picks_kube_schedulers_node_and_victims(
    kube: Kube, kube_scheduler: Path, preemption_cluster: list[str]
) -> None:
    """The node and victims ``simulate --from-cluster`` picks for a pending pod that must
    preempt, against the ones kube-scheduler then picks and evicts: fewest PDB violations
    first (not preempt-p3), then the lowest highest-priority victim (preempt-p1)."""
    kube.apply(_preemptor("multisched-preemptor", PROFILE))
    out = multisched(kube, "simulate", "--from-cluster", "-o", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    ours = {p["pod"]: p for p in result["pods"]}["default/multisched-preemptor"]
    our_victims = {key.split("/", 1)[1] for key in result["preempted"]} & set(preemption_cluster)

    kube.apply(_preemptor("upstream-preemptor", UPSTREAM))
    node = kube.wait_for(
        "kube-scheduler's preemptor bound", lambda: kube.node_of("upstream-preemptor"), 60
    )
    left = {p["metadata"]["name"] for p in kube.get("pods", "-n", "default")["items"]}
    their_victims = set(preemption_cluster) - left

    assert (ours["node"], our_victims) == (node, their_victims)
    assert (node, their_victims) == ("preempt-p1", {"victim-a", "victim-b"})


def test_kube_scheduler_binds_a_backlogs_highest_priority_pod_first_when_it_starts(
    kube: Kube, request: pytest.FixtureRequest
) -> None:
    """What multisched's start-up test holds it to (test_e2e_preemption), done by
    kube-scheduler: its backlog is created before it starts, as multisched's is."""
    label = "e2e-startup-order-upstream"
    backlog_at_start_up(kube, UPSTREAM, "order-upstream", label)
    try:
        request.getfixturevalue("kube_scheduler")  # started now: the backlog is waiting
        check_highest_priority_went_first(kube, "order-upstream", label)
    finally:
        delete_backlog(kube, label)
