"""A nomination another component set (cluster autoscaler, Karpenter) is honoured: the
scheduler tries the nominated node first and binds the pod there when it fits (v1.35+)."""

from __future__ import annotations

import json
from typing import Any

from test_e2e_operator import pod, profile

from conftest import Kube

POOL = {"e2e.multisched.io/pool": "karpenter"}


def gated(name: str, scheduler: str) -> dict[str, Any]:
    body = pod(name, scheduler)
    body["spec"]["schedulingGates"] = [{"name": "example.com/provisioning"}]
    body["spec"]["nodeSelector"] = POOL  # the suite's other nodes are not candidates
    return body


def test_a_nomination_set_by_another_client_is_honoured(kube: Kube, start_operator: Any) -> None:
    name = "e2e-nominated"
    kube.add_node("karp-big", POOL, cpu="64")  # the emptier: where scoring alone sends a pod
    kube.add_node("karp-new", POOL, cpu="4")  # the node "Karpenter" launched for the pod
    # Scores alone would not send a pod here (TaintToleration's score, weight 3), so only
    # the nomination can.
    kube.run("taint", "node", "karp-new", "e2e.multisched.io/new=yes:PreferNoSchedule")
    op = start_operator()
    kube.apply(profile(name, {"profiles": [{"schedulerName": name}]}))
    for pod_name in ("karp-pod", "karp-control"):
        kube.apply(gated(pod_name, name))
    status = {"status": {"nominatedNodeName": "karp-new"}}
    kube.run(
        "patch", "pod", "karp-pod", "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    ungate = json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}])
    for pod_name in ("karp-pod", "karp-control"):
        kube.run("patch", "pod", pod_name, "--type=json", "-p", ungate)
    placed = {
        p: kube.wait_for(f"{p} bound", lambda p=p: kube.node_of(p), 45)
        for p in ("karp-pod", "karp-control")
    }
    assert placed == {"karp-pod": "karp-new", "karp-control": "karp-big"}, op.output()
