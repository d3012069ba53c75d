"""``multisched simulate`` with DeviceTaintRules: a rule's NoSchedule taint keeps pods off
the devices it matches unless their claim tolerates it, as kube-scheduler v1.37 reads
slices through its tracker; bad rules are refused with one line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from multisched.cli import main

CLUSTER = """\
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  profiles:
  - schedulerName: default-scheduler
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""
NODE = """\
---
apiVersion: v1
kind: Node
metadata: {{name: {node}, labels: {{kubernetes.io/hostname: {node}}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node}-gpu}}
spec:
  driver: gpu.example.com
  pool: {{name: {node}, resourceSliceCount: 1, generation: 1}}
  nodeName: {node}
  devices:
  - name: gpu-0
"""
RULE = """\
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {{name: {name}}}
spec:
  deviceSelector: {selector}
  taint: {{key: example.com/broken, value: "yes", effect: {effect}}}
"""
TEMPLATE = """\
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu
          tolerations: {tolerations}
---
apiVersion: v1
kind: Pod
metadata: {{name: p1}}
spec:
  containers: [{{name: c, image: x}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
"""
TOLERATE = "[{key: example.com/broken, operator: Exists, effect: NoSchedule}]"


def cluster(
    tmp_path: Path,
    nodes: tuple[str, ...] = ("n1", "n2"),
    rules: tuple[tuple[str, str, str], ...] = (),
    tolerations: str = "[]",
) -> Path:
    text = CLUSTER + "".join(NODE.format(node=n) for n in nodes)
    text += "".join(RULE.format(name=n, selector=s, effect=e) for n, s, e in rules)
    path = tmp_path / "cluster.yaml"
    path.write_text(text + TEMPLATE.format(tolerations=tolerations))
    return path


def simulate(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, str]:
    code = main(["simulate", str(path), "-o", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    (pod,) = json.loads(out.out)["pods"]
    return dict(pod)


N1_GPU = "{driver: gpu.example.com, pool: n1, device: gpu-0}"


def test_a_no_schedule_rule_sends_the_pod_to_the_untainted_device(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pod = simulate(capsys, cluster(tmp_path, rules=(("broken", N1_GPU, "NoSchedule"),)))
    assert (pod["status"], pod["node"]) == ("Scheduled", "n2")
    # The rule decides: taint n2's device instead and the pod goes to n1.
    n2_gpu = N1_GPU.replace("n1", "n2")
    pod = simulate(capsys, cluster(tmp_path, rules=(("broken", n2_gpu, "NoSchedule"),)))
    assert (pod["status"], pod["node"]) == ("Scheduled", "n1")


def test_every_device_tainted_the_pod_waits_and_a_toleration_lets_it_in(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    everything = (("all", "{}", "NoSchedule"),)
    pod = simulate(capsys, cluster(tmp_path, rules=everything))
    assert pod["status"] == "Unschedulable"
    assert "0/2 nodes are available: 2 cannot allocate all claims." in pod["message"]
    pod = simulate(capsys, cluster(tmp_path, rules=everything, tolerations=TOLERATE))
    assert pod["status"] == "Scheduled"


@pytest.mark.parametrize(
    ("selector", "effect", "status"),
    [
        ("{}", "NoExecute", "Unschedulable"),  # NoExecute keeps new pods off too
        ("{}", "None", "Scheduled"),  # informational only
        ("{driver: other.example.com}", "NoSchedule", "Scheduled"),
        ("{pool: n2}", "NoSchedule", "Scheduled"),
        ("{device: gpu-1}", "NoSchedule", "Scheduled"),
        ("null", "NoSchedule", "Scheduled"),  # no selector matches no device
    ],
)
def test_effects_and_selectors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, selector: str, effect: str, status: str
) -> None:
    path = cluster(tmp_path, nodes=("n1",), rules=(("r", selector, effect),))
    assert simulate(capsys, path)["status"] == status


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("effect: NoSchedule", "effect: PreferNoSchedule"),
            'spec.taint.effect: Unsupported value: "PreferNoSchedule": supported values: '
            '"NoExecute", "NoSchedule", "None"',
        ),
        (
            ("key: example.com/broken", "key: -bad-"),
            'spec.taint.key: Invalid value: "-bad-": name part must consist of',
        ),
        (
            ('value: "yes"', 'value: "not ok"'),
            'spec.taint.value: Invalid value: "not ok": a valid label must be',
        ),
        (
            ("device: gpu-0}", "device: GPU_0}"),
            'spec.deviceSelector.device: Invalid value: "GPU_0": a lowercase RFC 1123 label',
        ),
        (
            ("pool: n1, device", "pool: N_1, device"),
            'spec.deviceSelector.pool: Invalid value: "N_1": a lowercase RFC 1123 subdomain',
        ),
        (
            ("driver: gpu.example.com, pool: n1", 'driver: "", pool: n1'),
            "spec.deviceSelector.driver: Required value",
        ),
        (
            ("metadata: {name: broken}", "metadata: {name: Broken}"),
            'metadata.name: Invalid value: "Broken": a lowercase RFC 1123 subdomain',
        ),
        (
            ("  taint:", "  owner: me\n  taint:"),
            'spec.owner: unknown field "owner"',
        ),
        (
            (', value: "yes", effect: NoSchedule', ""),
            "spec.taint.effect: Required value",
        ),
    ],
)
def test_bad_rules_are_refused_with_one_line_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: tuple[str, str], problem: str
) -> None:
    path = cluster(tmp_path, rules=(("broken", N1_GPU, "NoSchedule"),))
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    code = main(["simulate", str(path)])
    out = capsys.readouterr()
    assert (code, out.out) == (2, "")
    lines = out.err.splitlines()
    prefix = "error: cluster.yaml: document 7 (DeviceTaintRule "
    assert any(line.startswith(prefix) and problem in line for line in lines), out.err
    assert all(line.startswith("error: cluster.yaml: document ") for line in lines), out.err


def test_validate_accepts_a_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = cluster(tmp_path, rules=(("broken", N1_GPU, "NoSchedule"),))
    code = main(["validate", str(path)])
    assert code == 0, capsys.readouterr().err
