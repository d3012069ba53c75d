"""``multisched simulate`` with nodes declaring features (status.declaredFeatures) and pods
needing them: the default profile's NodeDeclaredFeatures keeps such a pod off the nodes that
do not declare what it needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from multisched.cli import main

CLUSTER = """
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: features}
spec:
  profiles:
    - schedulerName: my-scheduler
---
apiVersion: v1
kind: Node
metadata: {name: plain, labels: {kubernetes.io/hostname: plain}}
status:
  allocatable: {cpu: "64", memory: 64Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: featured, labels: {kubernetes.io/hostname: featured}}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
  declaredFeatures: [RestartAllContainersOnContainerExits, SomeFutureFeature]
---
apiVersion: v1
kind: Pod
metadata: {name: restarter, namespace: default}
spec:
  schedulerName: my-scheduler
  containers:
    - name: c
      image: nginx
      restartPolicy: Never
      restartPolicyRules:
        - action: RestartAllContainers
          exitCodes: {operator: In, values: [42]}
---
apiVersion: v1
kind: Pod
metadata: {name: noexec, namespace: default}
spec:
  schedulerName: my-scheduler
  containers:
    - name: c
      image: nginx
      volumeMounts: [{name: data, mountPath: /data, bindMountOptions: [noexec]}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: anywhere, namespace: default}
spec:
  schedulerName: my-scheduler
  containers: [{name: c, image: nginx}]
"""

NOT_DECLARED = "node(s) didn't match Pod's required features"


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *argv: str
) -> tuple[int, str, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    code = main(["simulate", str(cluster), "--seed", "1", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_pod_needing_a_feature_lands_only_on_the_node_declaring_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = simulate(tmp_path, capsys, CLUSTER, "--explain", "-o", "json")
    assert (code, err) == (0, "")
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}

    restarter = pods["default/restarter"]
    assert (restarter["status"], restarter["node"]) == ("Scheduled", "featured")
    assert restarter["explain"]["filter"] == {
        "featured": "passed",
        "plain": f"{NOT_DECLARED} (NodeDeclaredFeatures)",
    }

    # VolumeBindMountOptions: declared by no node.
    noexec = pods["default/noexec"]
    assert noexec["status"] == "Unschedulable"
    assert noexec["message"] == (
        f"0/2 nodes are available: 2 {NOT_DECLARED}. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )

    # A pod needing nothing is not held back, and goes where the scores send it.
    anywhere = pods["default/anywhere"]
    assert (anywhere["status"], anywhere["node"]) == ("Scheduled", "plain")
    assert set(anywhere["explain"]["filter"].values()) == {"passed"}


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        (
            '["MyFeature", "MyFeature"]',
            'status.declaredFeatures[1]: Duplicate value: "MyFeature"',
        ),
        (
            '["MyFeature", "AnotherFeature"]',
            'status.declaredFeatures[1]: Invalid value: "AnotherFeature": list must be sorted '
            "alphabetically",
        ),
        (
            '["Feature-name"]',
            'status.declaredFeatures[0]: Invalid value: "Feature-name": invalid feature name '
            '"Feature-name": must start with an UpperCamelCase segment, with subsequent '
            "segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and "
            "contain only alphanumeric characters and slashes",
        ),
    ],
)
def test_a_node_with_malformed_declared_features_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], declared: str, problem: str
) -> None:
    text = CLUSTER.replace(
        "declaredFeatures: [RestartAllContainersOnContainerExits, SomeFutureFeature]",
        f"declaredFeatures: {declared}",
    )
    code, out, err = simulate(tmp_path, capsys, text)
    assert (code, out) == (2, "")
    assert problem in err
    assert "Traceback" not in err
