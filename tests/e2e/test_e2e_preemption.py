"""DefaultPreemption on a real API server: a pod of higher priority takes the node of one of
lower priority, as kube-scheduler's preemption does it."""

from __future__ import annotations

from typing import Any

from test_e2e_operator import pod, profile

from conftest import Kube


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def asking(body: dict[str, Any], cpu: str, priority_class_name: str) -> dict[str, Any]:
    spec = body["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    spec["priorityClassName"] = priority_class_name
    spec["terminationGracePeriodSeconds"] = 0  # no kubelet ends it: gone at deletion
    return body


def test_a_higher_priority_pod_preempts_and_binds_to_the_victims_node(
    kube: Kube, start_operator: Any
) -> None:
    name = "e2e-preempting"
    kube.add_node("preempt-1", cpu="2")
    kube.apply(priority_class("e2e-low", 10))
    kube.apply(priority_class("e2e-high", 1000))
    op = start_operator()
    kube.apply(profile(name, {"profiles": [{"schedulerName": name}]}))
    kube.apply(asking(pod("victim", name), "2", "e2e-low"))
    kube.wait_for("the victim to be bound", lambda: kube.node_of("victim"), 45)
    victim_uid = kube.get("pod", "victim")["metadata"]["uid"]
    kube.apply(asking(pod("preemptor", name), "1", "e2e-high"))
    node = kube.wait_for("the preemptor to be bound", lambda: kube.node_of("preemptor"), 45)
    assert node == "preempt-1", op.output()
    # The victim is gone (this name is not taken again), its preemption recorded as
    # upstream words it; the preemptor was nominated to the node in its status.
    pods = kube.get("pods", "-n", "default")["items"]
    assert victim_uid not in {p["metadata"]["uid"] for p in pods}
    preemptor = kube.get("pod", "preemptor")
    assert preemptor["status"].get("nominatedNodeName") == "preempt-1"
    preempted = [e for e in kube.events_for("Pod", "victim") if e["reason"] == "Preempted"]
    assert [e["message"] for e in preempted] == [
        f"Preempted by pod {preemptor['metadata']['uid']} on node preempt-1"
    ], op.output()
    # A preemption that found its victims adds nothing to the message (upstream sets the
    # PostFilter message only from a status that is not Success).
    failed = [e for e in kube.events_for("Pod", "preemptor") if e["reason"] == "FailedScheduling"]
    assert [e["message"] for e in failed] == ["0/1 nodes are available: 1 Insufficient cpu."]
