"""Cluster files as users write them: one error format, every problem at once, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from multisched.cli import main

ROOT = Path(__file__).resolve().parents[2]
ZONES = ROOT / "examples" / "cluster" / "zones.yaml"
PROFILE = """apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: z}
spec: {profiles: [{schedulerName: default-scheduler}]}
"""
NODE = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {a: x}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, *docs: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text("---\n".join(docs))
    return path


def test_the_issue_example_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_pod = """apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec:
  containers: [{name: c}]
  tolerations: [{key: k, operator: Foo}]
"""
    path = write(tmp_path, PROFILE, NODE, NODE.replace("n1", "n2"), bad_pod)
    code, out, err = run(capsys, "simulate", str(path))
    assert code == 2 and out == ""
    assert err == (
        "error: cluster.yaml: document 4 (Pod default/p1): spec.tolerations[0].operator: "
        'Unsupported value: "Foo": supported values: "Equal", "Exists"\n'
    )


def test_every_problem_of_every_document_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_node = NODE.replace('cpu: "2"', 'cpu: "-1"')
    bad_pod = """apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers: [{name: c, ports: [{containerPort: 80, hostPort: 70000}]}]
  topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Foo}]
"""
    path = write(tmp_path, PROFILE, bad_node, bad_pod, NODE)
    code, _, err = run(capsys, "simulate", str(path))
    assert code == 2
    assert err.splitlines() == [
        "error: cluster.yaml: document 2 (Node n1): status.allocatable.cpu: Invalid value: "
        '"-1": must be greater than or equal to 0',
        "error: cluster.yaml: document 3 (Pod default/p1): spec.containers[0].ports[0].hostPort: "
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
        "error: cluster.yaml: document 3 (Pod default/p1): spec.topologySpreadConstraints[0]"
        ".maxSkew: Invalid value: 0: must be greater than zero",
        "error: cluster.yaml: document 3 (Pod default/p1): spec.topologySpreadConstraints[0]"
        '.whenUnsatisfiable: Unsupported value: "Foo": supported values: "DoNotSchedule", '
        '"ScheduleAnyway"',
        'error: cluster.yaml: document 4 (Node n1): nodes "n1" already exists (also document 2)',
    ]


def test_string_selector_values_no_longer_match_per_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = """apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers: [{name: c}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: "xyz"}]}]
"""
    code, out, err = run(capsys, "simulate", str(write(tmp_path, PROFILE, NODE, pod)))
    assert code == 2 and out == ""
    assert 'matchExpressions[0].values: Invalid value: "string"' in err


def test_unknown_priority_class_and_two_global_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def pc(name: str) -> str:
        return (
            f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\n"
            "value: 10\nglobalDefault: true\n"
        )

    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec:\n"
    pod += "  priorityClassName: nope\n  containers: [{name: c}]\n"
    code, _, err = run(
        capsys, "simulate", str(write(tmp_path, PROFILE, NODE, pc("a"), pc("b"), pod))
    )
    assert code == 2
    assert err.splitlines() == [
        "error: cluster.yaml: document 4 (PriorityClass b): globalDefault: Invalid value: true: "
        "only one PriorityClass can be marked as globalDefault (also document 3)",
        "error: cluster.yaml: document 5 (Pod default/p1): spec.priorityClassName: Not found: "
        '"nope": no PriorityClass with name nope was found',
    ]


def test_system_priority_classes_exist_as_in_every_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec:\n"
    pod += "  priorityClassName: system-cluster-critical\n  containers: [{name: c}]\n"
    code, out, _ = run(capsys, "simulate", str(write(tmp_path, PROFILE, NODE, pod)), "-o", "json")
    assert code == 0
    assert json.loads(out)["pods"][0]["status"] == "Scheduled"


def test_pod_requesting_1e18_cpu_is_unschedulable_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec:\n"
    pod += "  containers: [{name: c, resources: {requests: {cpu: 1e18}}}]\n"
    code, out, _ = run(capsys, "simulate", str(write(tmp_path, PROFILE, NODE, pod)), "-o", "json")
    assert code == 0
    [placement] = json.loads(out)["pods"]
    assert placement["status"] == "Unschedulable"
    assert placement["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_validate_counts_only_scheduler_configurations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "validate", str(ZONES))
    assert (code, err) == (0, "")
    assert out.startswith("my-scheduler:\n")


def test_validate_reads_a_configuration_embedded_in_a_configmap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = """apiVersion: v1
kind: ConfigMap
metadata: {name: my-scheduler-config, namespace: kube-system}
data:
  my-scheduler-config.yaml: |
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
      - schedulerName: my-scheduler
"""
    code, out, err = run(capsys, "validate", str(write(tmp_path, cm, NODE)))
    assert (code, err) == (0, "")
    assert out.startswith("my-scheduler:\n")
    code, out, _ = run(capsys, "simulate", str(write(tmp_path, cm, NODE, name="c2.yaml")))
    assert code == 0


def test_validate_errors_name_the_configmap_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = """apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  config.yaml: |
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles: [{schedulerName: s, plugins: {filter: {enabled: [{name: Nope}]}}}]
"""
    code, _, err = run(capsys, "validate", str(write(tmp_path, cm)))
    assert code == 2
    assert err.startswith(
        "error: cluster.yaml: document 1 (ConfigMap default/cfg) data[config.yaml]: "
        "profiles[0](s).plugins.filter.enabled[0](Nope): unknown plugin"
    )


def test_plugin_args_are_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = """apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: z}
spec:
  profiles:
    - schedulerName: s
      pluginConfig:
        - name: PodTopologySpread
          args:
            defaultingType: List
            defaultConstraints:
              - {maxSkew: "1", topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
"""
    code, _, err = run(capsys, "validate", str(write(tmp_path, profile)))
    assert code == 2
    assert err == (
        "error: cluster.yaml: document 1 (SchedulerProfile z): profiles[0](s).pluginConfig[0]"
        "(PodTopologySpread).args.defaultConstraints[0].maxSkew: must be an integer, got '1'\n"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"apiVersion: v1\nkind: Node\nmetadata: {name: \xe9}\n", "not UTF-8 text"),
        (
            (
                "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
                + "".join(
                    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9)
                )
            ).encode(),
            "aliases expand to more than",
        ),
        (
            (
                PROFILE + "---\n" + NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                "spec: {containers: [{name: c, resources: {requests: {cpu: 1e999999999}}}]}\n"
            ).encode(),
            "must be no more than 2^63-1",
        ),
    ],
)
def test_hostile_input_through_the_real_command(tmp_path: Path, data: bytes, expected: str) -> None:
    """As a user runs it: a process, exit 2, one line naming the file, no traceback."""
    path = tmp_path / "cluster.yaml"
    path.write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "multisched", "simulate", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: cluster.yaml: ")
    assert expected in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_list_items_are_named_by_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listing = """apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "1"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2}, spec: {taints: [{key: k, effect: Bogus}]}}
"""
    code, _, err = run(capsys, "simulate", str(write(tmp_path, PROFILE, listing)))
    assert code == 2
    assert err == (
        "error: cluster.yaml: document 2 items[1] (Node n2): metadata.taints[0].effect: "
        'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"\n'
    )


def test_profile_flag_reads_a_manifest_and_wins_over_an_inline_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = """apiVersion: apps/v1
kind: Deployment
metadata: {name: my-scheduler, namespace: kube-system}
spec: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: my-scheduler-config, namespace: kube-system}
data:
  config.yaml: |
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles: [{schedulerName: my-scheduler}]
"""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n"
    pod += "spec: {schedulerName: my-scheduler, containers: [{name: c}]}\n"
    cluster = write(tmp_path, PROFILE, NODE, pod)
    profile = write(tmp_path, manifest, name="manifest.yaml")
    code, out, err = run(capsys, "simulate", str(cluster), "--profile", str(profile), "-o", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["pods"][0]["node"] == "n1"


@pytest.mark.parametrize("example", sorted((ROOT / "examples" / "cluster").glob("*.yaml")))
def test_libyaml_and_the_bounded_reader_give_the_same_result(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trailing "# &" comment sends a file through the bounded reader: the command's
    output, problems and exit code are the same either way."""
    from multisched.validation import yamlsafe

    text = example.read_text()
    bad = text + "---\n" + NODE.replace("n1", "N_1").replace('"2"', "two") + "bogus: 1\n"
    for variant in (text, bad):
        fast, slow = tmp_path / "fast.yaml", tmp_path / "slow.yaml"
        fast.write_text(variant)
        slow.write_text(variant + "# &\n")
        assert yamlsafe._fast_load(variant) is not None or "&" in variant or "?" in variant
        first = run(capsys, "simulate", str(fast), "-o", "json", "--seed", "1")
        second = run(capsys, "simulate", str(slow), "-o", "json", "--seed", "1")
        assert first == (second[0], second[1], second[2].replace("slow.yaml", "fast.yaml"))


def test_a_profile_whose_metadata_is_not_a_mapping_is_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the property test at 1,000 examples: the configurations were combined by
    # name before the config room could word the problem.
    path = write(tmp_path, PROFILE.replace("metadata: {name: z}", "metadata: true"), NODE)
    code, _, err = run(capsys, "simulate", str(path))
    assert code in (0, 2)
    assert all(
        line.startswith(("error: cluster.yaml", "warning:", "note:")) for line in err.splitlines()
    )
