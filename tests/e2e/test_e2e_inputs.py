"""Anything the API server accepts, the operator answers: a pod that fits no node by far."""

from __future__ import annotations

from typing import Any

from test_e2e_operator import pod, profile

from conftest import Kube


def test_pod_requesting_1e18_cpu_gets_failed_scheduling(kube: Kube, start_operator: Any) -> None:
    kube.add_node("huge-test-1")
    op = start_operator()
    kube.apply(profile("huge-sched", {"profiles": [{"schedulerName": "huge-sched"}]}))
    body = pod("huge", "huge-sched")
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e18"}}
    kube.apply(body)
    # The API server stores it canonically; the operator must read that form.
    assert kube.get("pod", "huge")["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1E"
    }

    def failed() -> list[dict[str, Any]]:
        return [e for e in kube.events_for("Pod", "huge") if e["reason"] == "FailedScheduling"]

    events = kube.wait_for("a FailedScheduling event", failed, 45)
    assert "Insufficient cpu" in events[0]["message"], op.output()
    conditions = kube.get("pod", "huge")["status"].get("conditions") or []
    scheduled = [c for c in conditions if c["type"] == "PodScheduled"]
    assert scheduled and scheduled[0]["status"] == "False"
    assert scheduled[0]["reason"] == "Unschedulable"
