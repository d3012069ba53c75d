"""``explain`` and ``simulate --from-cluster --diff`` against a real API server, checked
against what the operator then does."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import Kube

_ids = itertools.count()


def profile(name: str, scheduler: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": {"profiles": [{"schedulerName": scheduler, **fields}]},
    }


def only_nodes_labelled(key: str, value: str) -> dict[str, Any]:
    """A profile field: NodeAffinity's addedAffinity pinning the scheduler to labelled nodes."""
    return {
        "pluginConfig": [
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": key, "operator": "In", "values": [value]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            }
        ]
    }


def pod(name: str, scheduler: str, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        },
    }


def multisched(kube: Kube, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "multisched", *argv],
        capture_output=True,
        text=True,
        env=kube.env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def names() -> tuple[str, str]:
    n = next(_ids)
    return f"e2e-explain-{n}", f"e2e-explain-sched-{n}"


def test_pending_pod_is_explained_as_the_operator_reports_it(
    kube: Kube, start_operator: Any, names: tuple[str, str]
) -> None:
    sp, sched = names
    kube.add_node("worker-1")
    kube.add_node("worker-2")
    # The walkthrough's second pod, before any profile serves its schedulerName.
    kube.apply(pod("second", sched))
    out = multisched(kube, "explain", "second", "-o", "json")
    assert out.returncode == 0, out.stderr
    (rec,) = json.loads(out.stdout)["pods"]
    assert rec["status"] == "Pending"
    assert rec["message"] == f"no profile for schedulerName '{sched}'; left Pending"

    # With the profile (applied, not yet served): where it would go, node by node.
    kube.apply(profile(sp, sched))
    out = multisched(kube, "explain", "default/second", "-o", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (rec,) = data["pods"]
    assert data["profile"] == f"SchedulerProfile/{sp}"
    assert rec["status"] == "Scheduled" and rec["node"] in ("worker-1", "worker-2")
    assert rec["explain"]["filter"]["worker-1"] == "passed"

    # A pod no node can hold: explain's FailedScheduling message is the operator's event.
    kube.apply(pod("too-big", sched, cpu="64"))
    start_operator()
    bound = kube.wait_for("second to be bound", lambda: kube.node_of("second"), 45)
    assert bound in ("worker-1", "worker-2")
    events = kube.wait_for(
        "the FailedScheduling event",
        lambda: [e for e in kube.events_for("Pod", "too-big") if e["reason"] == "FailedScheduling"],
        45,
    )
    out = multisched(kube, "explain", "too-big")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert (
        lines[0]
        == f"pod default/too-big: schedulerName {sched}, profile from SchedulerProfile {sp}"
    )
    assert "    worker-1: Insufficient cpu (NodeResourcesFit)" in lines
    row = next(line for line in lines if line.startswith("default/too-big"))
    assert row.split()[2] == "Unschedulable"
    assert row.endswith(events[-1]["message"])

    # A bound pod: where it would go now (its own request no longer counted).
    out = multisched(kube, "explain", "second", "-o", "yaml")
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout)["currentNode"] == bound

    # As a kubectl plugin: kubectl finds the kubectl-multisched entry point on PATH.
    bin_dir = str(Path(sys.executable).parent)
    plugin = subprocess.run(
        ["kubectl", "multisched", "explain", "second", "-o", "json"],
        capture_output=True,
        text=True,
        env={**kube.env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        timeout=120,
        check=False,
    )
    assert plugin.returncode == 0, plugin.stderr
    assert json.loads(plugin.stdout)["currentNode"] == bound

    out = multisched(kube, "explain", "no-such-pod")
    assert (out.returncode, out.stdout) == (2, "")
    # Other tests' SchedulerProfiles share this API server: a broken one is warned about.
    lines = out.stderr.splitlines()
    assert [x for x in lines if not x.startswith("warning: ")] == [
        "error: pod default/no-such-pod not found"
    ]


def test_profile_edit_previewed_then_applied(
    kube: Kube, start_operator: Any, names: tuple[str, str], tmp_path: Any
) -> None:
    sp, sched = names
    gold = f"gold-{sched}"
    kube.add_node(gold, labels={"tier": f"gold-{sched}"})
    kube.add_node("worker-1")
    # Today the profile wants nodes nobody has: the pod stays pending.
    kube.apply(profile(sp, sched, **only_nodes_labelled("tier", f"platinum-{sched}")))
    start_operator()
    kube.apply(pod(f"waiting-{sched}", sched))
    kube.wait_for(
        "the FailedScheduling event",
        lambda: [
            e
            for e in kube.events_for("Pod", f"waiting-{sched}")
            if e["reason"] == "FailedScheduling"
        ],
        45,
    )

    unchanged = tmp_path / "unchanged.yaml"
    unchanged.write_text(kube.run("get", "sp", sp, "-o", "yaml").stdout)
    out = multisched(kube, "simulate", "--from-cluster", "--diff", "--profile", str(unchanged))
    assert out.returncode == 0, out.stdout + out.stderr

    edit = tmp_path / "edit.yaml"
    edit.write_text(
        yaml.safe_dump(profile(sp, sched, **only_nodes_labelled("tier", f"gold-{sched}")))
    )
    out = multisched(
        kube, "simulate", "--from-cluster", "--diff", "--profile", str(edit), "-o", "json"
    )
    assert out.returncode == 1, out.stderr
    changes = {c["pod"]: c for c in json.loads(out.stdout)["changes"]}
    preview = changes[f"default/waiting-{sched}"]
    assert preview["before"] == "unschedulable"
    assert preview["after"] == gold

    kube.run("apply", "-f", str(edit))
    node = kube.wait_for("the edit to place the pod", lambda: kube.node_of(f"waiting-{sched}"), 45)
    assert node == preview["after"]
