"""Extended resources backed by devices, end to end through ``multisched simulate`` (the
framework, NodeResourcesFit and DynamicResources): a pod asking for ``example.com/gpu``,
which no node advertises but a DeviceClass names, gets a ResourceClaim created for it in
PreBind, allocated from the ResourceSlices, and recorded in its
``status.extendedResourceClaimStatus``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from multisched.cli import main

PROFILE = """\
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  profiles:
  - schedulerName: default-scheduler
"""
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {{name: n1, labels: {{kubernetes.io/hostname: n1}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n2, labels: {{kubernetes.io/hostname: n2}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  {extended}
  selectors:
  - cel: {{expression: 'device.driver == "gpu.example.com"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: n1-gpu}}
spec:
  driver: gpu.example.com
  pool: {{name: n1, resourceSliceCount: 1, generation: 1}}
  nodeName: n1
  devices:
  - name: gpu-0
  - name: gpu-1
"""
POD = """\
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, uid: {name}-uid}}
spec:
  containers:
  - name: main
    image: x
    resources: {{requests: {{cpu: 100m, {resource}: "{count}"}}, limits: {{{resource}: "{count}"}}}}
"""
GPU = "example.com/gpu"


def simulate(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    pods: list[tuple[str, int]],
    resource: str = GPU,
    extended: str = f"extendedResourceName: {GPU}",
) -> dict[str, dict[str, Any]]:
    text = CLUSTER.format(extended=extended) + "".join(
        POD.format(name=name, resource=resource, count=count) for name, count in pods
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(text + "---\n" + PROFILE)
    code = main(["simulate", str(path), "-o", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return {p["pod"]: p for p in json.loads(out.out)["pods"]}


def test_a_pod_gets_its_extended_resource_from_devices(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two devices on n1 and none on n2: the pods asking for one each get a device of n1
    through the claim made for them; the third finds none left."""
    pods = simulate(capsys, tmp_path, [("p1", 1), ("p2", 1), ("p3", 1)])
    taken = []
    for name in ("p1", "p2"):
        placed = pods[f"default/{name}"]
        assert (placed["status"], placed["node"]) == ("Scheduled", "n1")
        (device,) = placed["devices"]
        assert device["claim"] == "extended resources"
        assert device["resourceClaim"].startswith(f"{name}-extended-resources-")
        assert (device["driver"], device["pool"]) == ("gpu.example.com", "n1")
        assert device["request"] == "container-0-request-1"  # cpu, then example.com/gpu
        taken.append(device["device"])
    assert sorted(taken) == ["gpu-0", "gpu-1"]
    assert pods["default/p3"]["status"] == "Unschedulable"


def test_two_devices_for_one_pod_by_the_implicit_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The class's implicit name works as its extendedResourceName does."""
    pods = simulate(
        capsys,
        tmp_path,
        [("p1", 2)],
        resource="deviceclass.resource.kubernetes.io/gpu",
        extended="extendedResourceName: null",
    )
    placed = pods["default/p1"]
    assert (placed["status"], placed["node"]) == ("Scheduled", "n1")
    assert sorted(d["device"] for d in placed["devices"]) == ["gpu-0", "gpu-1"]


def test_without_a_class_the_resource_is_the_nodes_to_provide(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = simulate(capsys, tmp_path, [("p1", 1)], resource="example.com/other")
    assert pods["default/p1"]["status"] == "Unschedulable"
    assert "Insufficient example.com/other" in pods["default/p1"]["message"]
