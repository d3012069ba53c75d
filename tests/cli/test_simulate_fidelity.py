"""simulate as the API server would have stored its input: Priority admission, bound pods,
SchedulerProfiles as ``kubectl get sp -o yaml`` prints them, and ``--diff`` on a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from multisched.cli import main

NODE = """
apiVersion: v1
kind: Node
metadata: {name: only}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: default, uid: low-uid}
spec: {nodeName: only, priority: 1, containers: [{name: c, resources: {requests: {cpu: 800m}}}]}
"""

PROFILE = """
---
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: mine}
spec: {profiles: [{schedulerName: my-scheduler}]}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pods_of(out: str) -> dict[str, dict[str, Any]]:
    return {p["pod"]: p for p in json.loads(out)["pods"]}


def high_pod(extra: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: high, namespace: default, uid: high-uid}}
spec: {{schedulerName: my-scheduler, priorityClassName: urgent, {extra}
       containers: [{{name: c, resources: {{requests: {{cpu: 500m}}}}}}]}}
"""


def priority_class(policy: str) -> str:
    return f"""
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: urgent}}
value: 100
preemptionPolicy: {policy}
"""


def test_class_preemption_policy_never_is_admitted_into_the_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(NODE + priority_class("Never") + high_pod() + PROFILE)
    code, out, _ = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0
    result = json.loads(out)
    assert result["preempted"] == {}
    high = pods_of(out)["default/high"]
    assert high["status"] == "Unschedulable"
    assert high["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_pod_policy_wins_over_class_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Admission fills only an unset field (the class value is the default, not an override)."""
    path = tmp_path / "c.yaml"
    pod = high_pod("preemptionPolicy: PreemptLowerPriority,")
    path.write_text(NODE + priority_class("Never") + pod + PROFILE)
    code, out, _ = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0
    assert "default/low" in json.loads(out)["preempted"]
    assert pods_of(out)["default/high"]["node"] == "only"


def test_class_preempting_lower_priority_preempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(NODE + priority_class("PreemptLowerPriority") + high_pod() + PROFILE)
    code, out, _ = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0
    assert pods_of(out)["default/low"]["status"] == "Preempted"


def test_every_input_pod_has_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(NODE + PROFILE)
    code, out, _ = run(capsys, "simulate", str(path))
    assert code == 0
    (_header, row) = out.splitlines()
    assert row.split() == [
        "default/low",
        "default-scheduler",
        "Bound",
        "only",
        "bound",
        "by",
        "spec.nodeName",
    ]


def sp_list(*profiles: tuple[str, str, str]) -> str:
    """What ``kubectl get sp -o yaml`` prints: a List with status and server fields."""
    items = [
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "creationTimestamp": created,
                "generation": 1,
                "resourceVersion": "42",
                "managedFields": [{"manager": "kubectl-client-side-apply"}],
            },
            "spec": {"profiles": [{"schedulerName": sched}]},
            "status": {"observedGeneration": 1, "conditions": []},
        }
        for name, sched, created in profiles
    ]
    return "---\n" + yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
    )


def two_pods() -> str:
    return "".join(
        f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec: {{schedulerName: {sched}, containers: [{{name: c}}]}}
"""
        for name, sched in (("a", "sched-a"), ("b", "sched-b"))
    )


def test_reads_kubectl_get_sp_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    sps = sp_list(
        ("one", "sched-a", "2024-01-01T00:00:00Z"), ("two", "sched-b", "2024-01-02T00:00:00Z")
    )
    path.write_text(NODE + two_pods() + sps)
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert (code, err) == (0, "")
    pods = pods_of(out)
    assert pods["default/a"]["status"] == pods["default/b"]["status"] == "Scheduled"


def test_contested_name_stays_with_the_older_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    sps = sp_list(
        ("new", "sched-a", "2024-02-01T00:00:00Z"), ("old", "sched-a", "2024-01-01T00:00:00Z")
    )
    path.write_text(NODE + two_pods() + sps)
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0
    assert err == (
        "warning: SchedulerProfile new left out (SchedulerNameConflict): "
        'schedulerName "sched-a" is already served by SchedulerProfile "old"\n'
    )
    assert pods_of(out)["default/a"]["status"] == "Scheduled"


def test_proposal_replaces_the_same_named_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    sps = sp_list(
        ("one", "sched-a", "2024-01-01T00:00:00Z"), ("two", "sched-b", "2024-01-02T00:00:00Z")
    )
    path.write_text(NODE + two_pods() + sps)
    proposal = tmp_path / "p.yaml"
    proposal.write_text(
        "apiVersion: multisched.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: two}\n"
        "spec: {profiles: [{schedulerName: sched-c}]}\n"
    )
    code, out, _ = run(capsys, "simulate", str(path), "--profile", str(proposal), "-o", "json")
    assert code == 0
    pods = pods_of(out)
    assert pods["default/a"]["status"] == "Scheduled"  # "one" untouched
    assert pods["default/b"]["status"] == "Pending"  # sched-b retired by the edit

    code, out, _ = run(capsys, "simulate", str(path), "--profile", str(proposal), "--diff")
    assert code == 1
    assert out.splitlines()[0].split() == [
        "default/b",
        "only",
        "->",
        "pending:",
        "no",
        "profile",
        "for",
        "schedulerName",
        "'sched-b';",
        "left",
        "Pending",
    ]
    current = tmp_path / "current.yaml"  # kubectl get sp -o yaml > current.yaml
    current.write_text(sps)
    code, out, _ = run(capsys, "simulate", str(path), "--profile", str(current), "--diff")
    assert (code, out) == (0, "no pod changes placement under the proposed profile\n")


def test_nomination_in_the_input_holds_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pending pod the API shows nominated (its victim still terminating) keeps its room on
    the node from pods of no higher priority, as upstream's queue adds it to the nominator."""
    path = tmp_path / "c.yaml"
    path.write_text(
        """
apiVersion: v1
kind: Node
metadata: {name: only}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: victim, namespace: default, deletionTimestamp: "2024-01-01T00:00:00Z"}
spec: {nodeName: only, priority: 1, containers: [{name: c, resources: {requests: {cpu: 800m}}}]}
status:
  conditions: [{type: DisruptionTarget, status: "True", reason: PreemptionByScheduler}]
---
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: default}
spec: {schedulerName: my-scheduler, priority: 100,
       containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
status: {nominatedNodeName: only}
---
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: default}
spec: {schedulerName: my-scheduler, priority: 0,
       containers: [{name: c, resources: {requests: {cpu: 200m}}}]}
"""
        + PROFILE
    )
    code, out, _ = run(capsys, "simulate", str(path), "-o", "json", "--explain")
    assert code == 0
    pods = pods_of(out)
    assert pods["default/high"]["status"] == "Unschedulable"
    assert pods["default/small"]["status"] == "Unschedulable"
    assert pods["default/small"]["explain"]["filter"]["only"] == (
        "Insufficient cpu (NodeResourcesFit)"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--diff", "--profile", "p.yaml"), "simulate needs a cluster file (or --from-cluster)"),
        (("c.yaml", "--from-cluster"), "give a cluster file or --from-cluster, not both"),
        (("c.yaml", "--diff"), "--diff needs --profile (the proposed SchedulerProfile)"),
    ],
)
def test_live_flags_misused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(NODE + PROFILE)
    code, out, err = run(capsys, "simulate", *argv)
    assert (code, out, err) == (2, "", f"error: {expected}\n")


def test_a_config_note_is_printed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--profile`` with what kube-scheduler writes (leaderElection in it): the note that
    it is ignored comes once, though the file's configuration is resolved more than once."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(NODE)
    written = (
        Path(__file__).parent.parent / "config/fixtures/kube-scheduler-v1.37.2-write-config.yaml"
    )
    code, _, err = run(capsys, "simulate", str(cluster), "--profile", str(written))
    assert code == 0, err
    notes = [line for line in err.splitlines() if "leaderElection is ignored" in line]
    assert len(notes) == 1, err
