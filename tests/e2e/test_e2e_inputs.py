"""Anything the API server accepts, the operator answers: a pod that fits no node by far."""

from __future__ import annotations

import json
from decimal import Decimal
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


#: Odd quantities: the API server's grammar accepts some that look wrong ("e3" and "Gi" are
#: 0, "1.G" is 1G) and refuses others; simulate and the operator must read them alike.
ODD_QUANTITIES = ("e3", "Gi", ".5", "1.G", "+1", "-", ".", "0.0", "1e3", "1Gi1", "e", "1ee3")


def test_quantity_grammar_is_the_api_servers(kube: Kube) -> None:
    from multisched.validation.quantity import QuantityError, parse_quantity

    for text in ODD_QUANTITIES:
        body = pod(f"q-{abs(hash(text)) % 10**8}", "nobody")
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": text}}
        proc = kube.run(
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
            stdin=json.dumps(body),
            check=False,
        )
        try:
            ours: Decimal | None = parse_quantity(text)
        except QuantityError:
            ours = None
        if proc.returncode:
            assert ours is None, f"{text!r}: the API server refuses it ({proc.stderr.strip()})"
            continue
        stored = json.loads(proc.stdout)["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        assert ours is not None, f"{text!r}: the API server stores it as {stored!r}"
        assert parse_quantity(stored) == ours, f"{text!r}: stored as {stored!r}, we read {ours}"
