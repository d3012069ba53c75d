"""DefaultPreemption on a real API server: a pod of higher priority takes the node of one of
lower priority, as kube-scheduler's preemption does it."""

from __future__ import annotations

import re
from typing import Any

import yaml
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
    with kube.watching("pods", "--field-selector=metadata.name=preemptor") as versions:
        kube.apply(asking(pod("preemptor", name), "1", "e2e-high"))
        node = kube.wait_for("the preemptor to be bound", lambda: kube.node_of("preemptor"), 45)
    assert node == "preempt-1", op.output()
    # The victim is gone (this name is not taken again), its preemption recorded as
    # upstream words it; the preemptor was nominated to the node in its status before it
    # was bound (since v1.35 the API server clears the nomination at binding).
    pods = kube.get("pods", "-n", "default")["items"]
    assert victim_uid not in {p["metadata"]["uid"] for p in pods}
    nominated = [v["status"].get("nominatedNodeName") for v in versions]
    assert "preempt-1" in nominated, nominated
    preemptor = kube.get("pod", "preemptor")
    assert not preemptor["status"].get("nominatedNodeName")  # cleared by the binding
    preempted = [e for e in kube.events_for("Pod", "victim") if e["reason"] == "Preempted"]
    assert [e["message"] for e in preempted] == [
        f"Preempted by pod {preemptor['metadata']['uid']} on node preempt-1"
    ], op.output()
    # A preemption that found its victims says so at the end of the message (as v1.37).
    failed = [e for e in kube.events_for("Pod", "preemptor") if e["reason"] == "FailedScheduling"]
    assert [e["message"] for e in failed] == [
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement "
        "for pod on node preempt-1, preempting 1 victims"
    ]


#: The backlog a scheduler finds when it starts: more pods of low priority than the node
#: takes, listed (by name) before the one of high priority.
BACKLOG = 300
ROOM = 10


def backlog_at_start_up(kube: Kube, scheduler: str, node: str, label: str) -> None:
    """``BACKLOG`` pods of low priority and, listed after them, one of high priority, all
    for ``scheduler`` and pinned to ``node`` (room for ``ROOM``), before it starts."""
    kube.add_node(node, cpu=str(ROOM))
    kube.apply(priority_class("e2e-order-low", 10))
    kube.apply(priority_class("e2e-order-high", 1000))
    docs = [
        asking(pod(f"{label}-low-{i:04d}", scheduler), "1", "e2e-order-low") for i in range(BACKLOG)
    ]
    docs.append(asking(pod(f"{label}-zz-high", scheduler), "1", "e2e-order-high"))
    for body in docs:
        body["metadata"]["labels"] = {"e2e": label}
        body["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    kube.apply(yaml.safe_dump_all(docs))


def check_highest_priority_went_first(kube: Kube, node: str, label: str) -> None:
    """The high-priority pod holds a place on the node, and no low-priority pod was
    preempted for it: it was bound before the node filled up. (The scheduler's log is
    printed by its fixture if this fails.)"""

    def bound() -> list[str]:
        pods = kube.get("pods", "-n", "default", "-l", f"e2e={label}")["items"]
        return [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")]

    kube.wait_for(f"{ROOM} pods bound", lambda: len(bound()) >= ROOM, 60)
    assert kube.node_of(f"{label}-zz-high") == node
    preempted = [
        e["involvedObject"]["name"]
        for e in kube.get("events", "-n", "default")["items"]
        if e.get("reason") == "Preempted" and e["involvedObject"]["name"].startswith(label)
    ]
    assert preempted == []
    assert len(bound()) == ROOM


def delete_backlog(kube: Kube, label: str) -> None:
    kube.run(
        "delete",
        "pods",
        "-n",
        "default",
        "-l",
        f"e2e={label}",
        "--force",
        "--grace-period=0",
        "--wait=false",
        check=False,
    )


def test_a_backlogs_highest_priority_pod_goes_first_when_the_scheduler_starts(
    kube: Kube, start_operator: Any
) -> None:
    """kube-scheduler takes in its whole first listing before its first cycle
    (WaitForHandlersSync; the parity test holds it to that), so the pod of highest priority
    in a backlog is bound first. A scheduler that began with the pods listed first would fill
    the node with low-priority pods, then preempt one of them for the high-priority pod."""
    name = "e2e-startup-order"
    kube.apply(profile(name, {"profiles": [{"schedulerName": name}]}))
    backlog_at_start_up(kube, name, "order-1", name)
    try:
        op = start_operator()
        check_highest_priority_went_first(kube, "order-1", name)
        # Earlier tests' pending pods are in the listing too.
        assert re.search(r"kopf handed over all \d+ pending pods of its first listing", op.output())
    finally:
        delete_backlog(kube, name)
