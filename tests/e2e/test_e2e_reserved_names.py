"""No takeover of another scheduler's name: kube-scheduler and multisched on one API server.
The API server refuses a SchedulerProfile claiming default-scheduler (the CRD's CEL rule),
and a profile claiming a name listed in --reserved-scheduler-names stays Ready=False and
binds nothing, while kube-scheduler keeps binding its own pods."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_e2e_operator import pod, profile

from conftest import FaultCluster


@pytest.fixture
def kube_scheduler(
    faults: FaultCluster, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes] | None]:
    if shutil.which("kube-scheduler") is None:
        yield None
        return
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: {faults.plane.kubeconfig('admin')}}}\n"
        "leaderElection: {leaderElect: false}\n"
    )
    with (tmp_path / "kube-scheduler.log").open("wb") as log:
        proc = subprocess.Popen(
            ["kube-scheduler", f"--config={config}", "--secure-port=0"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def ready_condition(faults: FaultCluster, name: str) -> dict[str, Any]:
    status = faults.kube.get("schedulerprofile", name).get("status") or {}
    return next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})


def test_reserved_names_are_never_served(
    faults: FaultCluster, kube_scheduler: subprocess.Popen[bytes] | None
) -> None:
    kube = faults.kube
    kube.add_node("rn-1")
    # The CRD's CEL rule: no profile may even be stored under kube-scheduler's name.
    takeover = profile("takeover", {"profiles": [{"schedulerName": "default-scheduler"}]})
    refused = kube.run("apply", "-f", "-", stdin=json.dumps(takeover), check=False)
    assert refused.returncode != 0
    assert "default-scheduler is kube-scheduler's name" in refused.stderr

    op = faults.start_operator(
        "--reserved-scheduler-names=default-scheduler,e2e-reserved", user="replica-a"
    )
    kube.apply(profile("squatter", {"profiles": [{"schedulerName": "e2e-reserved"}]}))
    kube.apply(profile("honest", {"profiles": [{"schedulerName": "e2e-honest"}]}))
    condition = kube.wait_for(
        "squatter judged", lambda: ready_condition(faults, "squatter") or None, 30
    )
    assert (condition["status"], condition["reason"]) == ("False", "ReservedSchedulerName")
    assert 'schedulerName "e2e-reserved" is reserved for another scheduler' in condition["message"]
    warnings = [
        e
        for e in kube.events_for("SchedulerProfile", "squatter")
        if e["reason"] == "ReservedSchedulerName"
    ]
    assert warnings and warnings[0]["type"] == "Warning"

    kube.apply(pod("reserved-pod", "e2e-reserved"))
    kube.apply(pod("honest-pod", "e2e-honest"))
    kube.apply(pod("kube-pod"))  # no schedulerName: kube-scheduler's
    kube.wait_for(
        "honest-pod bound", lambda: kube.get("pod", "honest-pod")["spec"].get("nodeName"), 45
    )
    if kube_scheduler is not None:
        kube.wait_for(
            "kube-pod bound by kube-scheduler",
            lambda: kube.get("pod", "kube-pod")["spec"].get("nodeName"),
            45,
        )
    time.sleep(2)  # room for a binding that should not happen
    assert not kube.get("pod", "reserved-pod")["spec"].get("nodeName"), op.output()
    ours = {r.name for r in faults.audit.bindings() if r.user == "replica-a"}
    assert ours == {"honest-pod"}, ours
    if kube_scheduler is not None:
        theirs = {r.name for r in faults.audit.bindings() if r.user == "admin"}
        assert "kube-pod" in theirs
