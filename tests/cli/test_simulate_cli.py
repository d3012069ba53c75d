"""``multisched simulate`` and ``validate`` as a user runs them."""

import json
from pathlib import Path

import pytest

from multisched.cli import main

ROOT = Path(__file__).resolve().parents[2]
WALKTHROUGH = ROOT / "examples" / "cluster" / "seeds-walkthrough.yaml"
ZONES = ROOT / "examples" / "cluster" / "zones.yaml"

#: TaintToleration's reason for the example's control-plane node, as v1.28 words it.
CONTROL_PLANE_TAINT = "node(s) had untolerated taint(s)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_seeds_walkthrough_binds_only_our_pod(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(WALKTHROUGH), "-o", "json", "--seed", "1")
    assert code == 0
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    ours = pods["default/annotation-second-scheduler"]
    assert ours["status"] == "Scheduled"
    # The control-plane node is tainted: only the workers are candidates.
    assert ours["node"] in ("worker-1", "worker-2")
    for other in ("default/no-annotation", "default/annotation-default-scheduler"):
        assert pods[other]["status"] == "Pending"
        assert "no profile for schedulerName 'default-scheduler'" in pods[other]["message"]


def test_zones_example_messages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(ZONES), "-o", "json", "--seed", "1")
    assert code == 0
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    # Two web pods with maxSkew 1 over zones land in different zones.
    zones = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    assert {zones[pods["default/web-1"]["node"]], zones[pods["default/web-2"]["node"]]} == {
        "a",
        "b",
    }
    assert pods["default/ssd-only"]["node"] in ("a1", "b1")
    assert pods["default/too-big"]["message"] == (
        f"0/5 nodes are available: 1 {CONTROL_PLANE_TAINT}, "
        "1 node(s) were unschedulable, 3 Insufficient cpu. preemption: 0/5 nodes are "
        # 8 CPU is beyond every node's allocatable: unresolvable there too (v1.34+).
        "available: 5 Preemption is not helpful for scheduling."
    )
    assert pods["default/other-scheduler"]["status"] == "Pending"


def test_explain_lists_verdicts_and_scores(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(ZONES), "--explain", "-o", "yaml", "--seed", "1")
    assert code == 0
    import yaml

    pods = {p["pod"]: p for p in yaml.safe_load(out)["pods"]}
    web = pods["default/web-1"]["explain"]
    assert web["filter"]["cp"] == f"{CONTROL_PLANE_TAINT} (TaintToleration)"
    assert web["filter"]["b2"] == "node(s) were unschedulable (NodeUnschedulable)"
    node = pods["default/web-1"]["node"]
    detail = web["score"][node]
    assert detail["plugins"]["TaintToleration"]["weight"] == 3
    assert detail["total"] == sum(p["weighted"] for p in detail["plugins"].values())
    assert detail["total"] == max(s["total"] for s in web["score"].values())


def test_seed_fixes_tie_breaking(capsys: pytest.CaptureFixture[str]) -> None:
    outs = {run(capsys, "simulate", str(WALKTHROUGH), "--seed", "7")[1] for _ in range(3)}
    assert len(outs) == 1


def test_preemption_in_simulation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text("""
apiVersion: v1
kind: Node
metadata: {name: only}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: default, uid: low-uid}
spec: {nodeName: only, priority: 1, containers: [{name: c, resources: {requests: {cpu: 800m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: default, uid: high-uid}
spec: {schedulerName: my-scheduler, priority: 100,
       containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
""")
    profile = ROOT / "examples" / "profiles" / "my-scheduler.yaml"
    code, out, _ = run(capsys, "simulate", str(cluster), "--profile", str(profile), "-o", "json")
    assert code == 0
    result = json.loads(out)
    assert "default/low" in result["preempted"]
    pods = {p["pod"]: p for p in result["pods"]}
    assert pods["default/high"]["status"] == "Scheduled" and pods["default/high"]["node"] == "only"
    assert pods["default/low"]["status"] == "Preempted"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "kind: Widget\nmetadata: {name: w}\n",
            'bad.yaml: document 1 (Widget w): kind: Unsupported value: "Widget"',
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
            "bad.yaml: document 1 (Pod default/p): spec.containers: Required value",
        ),
        ("a: [\n", "not valid YAML"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
            "no SchedulerProfile or KubeSchedulerConfiguration found",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(SystemExit) as exc:
        code = main(["simulate", str(path)])
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert expected in err
    assert err.count("\n") == 1


def test_invalid_profile_names_profile_point_and_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("""
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  profiles:
    - schedulerName: my-scheduler
      plugins:
        filter:
          enabled: [{name: NoSuchPlugin}]
""")
    code, _, err = run(capsys, "validate", str(path))
    assert code == 2
    assert "profiles[0](my-scheduler).plugins.filter.enabled[0](NoSuchPlugin)" in err


def test_validate_prints_effective_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "validate", str(ROOT / "examples" / "profiles" / "my-scheduler.yaml")
    )
    assert code == 0
    assert "my-scheduler:" in out
    assert "score: TaintToleration(3), NodeAffinity(2)" in out
    assert "bind: DefaultBinder" in out
