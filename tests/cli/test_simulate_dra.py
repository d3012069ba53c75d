"""``multisched simulate`` with DRA objects: DeviceClasses and ResourceSlices checked as the
API server checks them, every DRA kind loaded into the engine's store, and the per-pod
device report (json, yaml, table) read from the claims' ``status.allocation``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import pod_dict
from multisched.cache import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, DraStore, PodInfo
from multisched.cli import main
from multisched.report import render
from multisched.scheduler.simulate import (
    ANN_EXTENDED_RESOURCE_CLAIM,
    ClusterInput,
    InputError,
    Placement,
    SimulationResult,
    device_report,
    extended_resource_claims,
)

PROFILE = """\
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  profiles:
  - schedulerName: default-scheduler
"""
DEVICES = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  pool: {name: n1, resourceSliceCount: 1, generation: 1}
  nodeName: n1
  devices:
  - name: gpu-0
  - name: gpu-1
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu}
"""
POD = """\
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers: [{{name: c, image: x}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text + "---\n" + PROFILE)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cluster_text(pods: int) -> str:
    return DEVICES + "".join(POD.format(name=f"p{i}") for i in range(1, pods + 1))


def test_the_allocator_gets_the_files_devices_and_the_report_names_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two devices, three pods asking for one each: two get a different device, the third
    cannot be placed; each scheduled pod's report names its claim's device."""
    path = write(tmp_path, cluster_text(3))
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0, err
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    taken = []
    for name in ("default/p1", "default/p2"):
        assert pods[name]["status"] == "Scheduled"
        (device,) = pods[name]["devices"]
        assert device["claim"] == "gpu"
        assert device["resourceClaim"].startswith(name.split("/")[1] + "-gpu-")
        assert (device["request"], device["driver"], device["pool"]) == (
            "gpu",
            "gpu.example.com",
            "n1",
        )
        taken.append(device["device"])
    assert sorted(taken) == ["gpu-0", "gpu-1"]
    assert pods["default/p3"]["status"] == "Unschedulable"
    assert "devices" not in pods["default/p3"]

    code, out, _ = run(capsys, "simulate", str(path))
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("default/p1")]
    assert line.split()[2:5] == ["Scheduled", "n1", "devices:"]
    assert line.split()[5] in ("gpu->gpu.example.com/n1/gpu-0", "gpu->gpu.example.com/n1/gpu-1")


def test_no_slice_no_device(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The slice is what offers the devices: without it the same pod waits."""
    text = cluster_text(1)
    start = text.index("kind: ResourceSlice")
    end = text.index("---", start)
    path = write(tmp_path, text[: text.rindex("---", 0, start)] + text[end:])
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0, err
    (pod,) = json.loads(out)["pods"]
    assert pod["status"] == "Unschedulable"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("resourceSliceCount: 1", "resourceSliceCount: 0"),
            "document 3 (ResourceSlice n1-gpu): spec.pool.resourceSliceCount: Invalid value: 0: "
            "must be greater than zero",
        ),
        (
            ("  nodeName: n1\n", "  nodeName: n1\n  allNodes: true\n"),
            'document 3 (ResourceSlice n1-gpu): spec: Invalid value: "{`nodeName`, `allNodes`}": '
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
            "required, but multiple fields are set",
        ),
        (
            ("  nodeName: n1\n", ""),
            "document 3 (ResourceSlice n1-gpu): spec: Required value: exactly one of `nodeName`, "
            "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ),
        (
            ("- name: gpu-1", "- name: gpu-0"),
            'document 3 (ResourceSlice n1-gpu): spec.devices[1]: Duplicate value: "gpu-0"',
        ),
        (
            ("- name: gpu-1", "- name: GPU_1"),
            'document 3 (ResourceSlice n1-gpu): spec.devices[1].name: Invalid value: "GPU_1": '
            "a lowercase RFC 1123 label must consist of",
        ),
        (
            ("  driver: gpu.example.com\n", ""),
            "document 3 (ResourceSlice n1-gpu): spec.driver: Required value",
        ),
        (
            ("pool: {name: n1,", "pool: {name: N_1,"),
            'document 3 (ResourceSlice n1-gpu): spec.pool.name: Invalid value: "N_1": '
            "a lowercase RFC 1123 subdomain",
        ),
        (
            ("metadata: {name: gpu}", "metadata: {name: Gpu}"),
            'document 2 (DeviceClass Gpu): metadata.name: Invalid value: "Gpu": '
            "a lowercase RFC 1123 subdomain",
        ),
        (
            ("  - cel: {expression: 'device.driver == \"gpu.example.com\"'}", "  - {}"),
            "document 2 (DeviceClass gpu): spec.selectors[0].cel: Required value",
        ),
        (
            (
                "metadata: {name: gpu}\nspec:\n",
                "metadata: {name: gpu}\nspec:\n  extendedResourceName: cpu\n",
            ),
            'document 2 (DeviceClass gpu): spec.extendedResourceName: Invalid value: "cpu": '
            "must be a valid extended resource name",
        ),
        (
            ("  nodeName: n1\n", "  nodeName: n1\n  owner: me\n"),
            'document 3 (ResourceSlice n1-gpu): spec.owner: unknown field "owner"',
        ),
        (
            ("kind: DeviceClass\n", "kind: DeviceClass\napiVersion: resource.k8s.io/v1beta1\n"),
            "apiVersion",
        ),
    ],
)
def test_bad_device_objects_are_refused_with_one_line_each(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    edit: tuple[str, str],
    problem: str,
) -> None:
    text = cluster_text(1)
    assert edit[0] in text
    path = write(tmp_path, text.replace(edit[0], edit[1], 1))
    code, out, err = run(capsys, "simulate", str(path))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert any(problem in line for line in lines), err
    assert all(line.startswith("error: cluster.yaml: document ") for line in lines), err
    assert "Traceback" not in err


def test_every_dra_kind_goes_into_the_engines_store(tmp_path: Path) -> None:
    """Classes, slices, templates, the file's claims and the claims the resourceclaim
    controller made: all reach ``on_dra_object`` before any pod, each with a uid."""
    text = cluster_text(1) + (
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "metadata: {name: shared, namespace: team}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}\n"
    )
    path = write(tmp_path, text)
    from multisched.validation import read_documents

    cluster = ClusterInput.from_documents(read_documents(path))
    store = DraStore()
    fed: list[str] = []

    class Feed:
        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: None  # the other kinds are not looked at here

        def on_dra_object(self, kind: str, raw: dict[str, Any], deleted: bool = False) -> None:
            assert not deleted
            fed.append(kind)
            store.upsert(kind, raw)

    cluster.load_into(Feed())  # type: ignore[arg-type]
    assert sorted(set(fed)) == ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                                "ResourceSlice"]  # fmt: skip
    assert store.get_device_class("gpu") is not None
    assert [s["metadata"]["name"] for s in store.list_slices()] == ["n1-gpu"]
    assert store.get_template("default", "one-gpu") is not None
    shared = store.get_claim("team", "shared")
    assert shared is not None and shared["metadata"]["uid"]
    (made,) = [c for c in store.objects(RESOURCE_CLAIM) if c["metadata"]["name"] != "shared"]
    assert made["metadata"]["name"].startswith("p1-gpu-")
    for obj in (*store.objects(DEVICE_CLASS), *store.objects(RESOURCE_SLICE)):
        assert obj["metadata"]["uid"]


def test_a_bad_device_object_from_a_list_is_an_input_error() -> None:
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1,
                                                          "generation": 0}}}  # fmt: skip
    with pytest.raises(InputError) as caught:
        ClusterInput.from_documents([("here", bad)])
    (line,) = caught.value.lines
    assert line == (
        "here (ResourceSlice s): spec: Required value: exactly one of `nodeName`, "
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    )


# -- the report, from claims whose allocation is set ------------------------------------


def allocated_claim(name: str, results: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **meta},
        "spec": {},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def gpu(device: str, request: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": "gpu.example.com", "pool": "n1", "device": device,
            **extra}  # fmt: skip


def test_device_report_reads_each_claims_allocation() -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, allocated_claim("direct", [gpu("gpu-0")]))
    store.upsert(
        RESOURCE_CLAIM,
        allocated_claim(
            "web-cache-abcde",
            [gpu("gpu-1", "cache", shareID="s-1"), gpu("gpu-2", "cache", adminAccess=True)],
        ),
    )
    store.upsert(RESOURCE_CLAIM, {"metadata": {"name": "pending", "namespace": "default"}})
    raw = pod_dict("web")
    raw["spec"]["resourceClaims"] = [
        {"name": "main", "resourceClaimName": "direct"},
        {"name": "cache", "resourceClaimTemplateName": "t"},
        {"name": "later", "resourceClaimName": "pending"},  # not allocated: nothing to say
        {"name": "gone", "resourceClaimName": "missing"},
        {"name": "unrecorded", "resourceClaimTemplateName": "t"},
    ]
    raw["status"] = {
        "resourceClaimStatuses": [{"name": "cache", "resourceClaimName": "web-cache-abcde"}]
    }
    pod = PodInfo.parse(raw)
    extended = allocated_claim(
        "web-extended-resources-x",
        [gpu("gpu-3", "container-0-request-0")],
        annotations={ANN_EXTENDED_RESOURCE_CLAIM: "true"},
        ownerReferences=[{"kind": "Pod", "name": "web", "uid": pod.uid, "controller": True}],
    )
    store.upsert(RESOURCE_CLAIM, extended)
    report = device_report(pod, store, extended_resource_claims(store))
    assert report == [
        {"claim": "main", "resourceClaim": "direct", "request": "gpu",
         "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
        {"claim": "cache", "resourceClaim": "web-cache-abcde", "request": "cache",
         "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1", "shareID": "s-1"},
        {"claim": "cache", "resourceClaim": "web-cache-abcde", "request": "cache",
         "driver": "gpu.example.com", "pool": "n1", "device": "gpu-2", "adminAccess": "true"},
        {"claim": "extended resources", "resourceClaim": "web-extended-resources-x",
         "request": "container-0-request-0", "driver": "gpu.example.com", "pool": "n1",
         "device": "gpu-3"},
    ]  # fmt: skip
    # Another pod's extended-resource claim is not this one's.
    other = PodInfo.parse(pod_dict("other"))
    assert device_report(other, store, extended_resource_claims(store)) == []

    result = SimulationResult()
    placement = Placement(pod, "Scheduled", "n1", "Successfully assigned default/web to n1")
    placement.devices = report[:2]
    result.placements.append(placement)
    as_json = json.loads(render(result, "json", False))
    assert as_json["pods"][0]["devices"] == report[:2]
    assert yaml.safe_load(render(result, "yaml", False))["pods"][0]["devices"] == report[:2]
    (row,) = render(result, "table", False).splitlines()[1:]
    assert row.split("   ")[-1].strip() == (
        "devices: main->gpu.example.com/n1/gpu-0, cache->gpu.example.com/n1/gpu-1#s-1"
    )


def test_the_table_names_volumes_then_devices() -> None:
    result = SimulationResult()
    pod = PodInfo.parse(pod_dict("web"))
    placement = Placement(pod, "Scheduled", "n1", "Successfully assigned default/web to n1")
    placement.volumes = [{"claim": "data", "volume": "pv-1"}]
    placement.devices = [
        {"claim": "gpu", "resourceClaim": "c", "request": "gpu", "driver": "d", "pool": "p",
         "device": "x", "adminAccess": "true"},
    ]  # fmt: skip
    result.placements.append(placement)
    (row,) = render(result, "table", False).splitlines()[1:]
    assert row.endswith("volumes: data->pv-1; devices: gpu->d/p/x (admin access)")


GPU_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "gpus.yaml"


def test_the_gpu_example_places_pods_by_their_devices(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/cluster/gpus.yaml, as the README's section runs it."""
    assert main(["simulate", str(GPU_EXAMPLE), "-o", "json"]) == 0
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert pods["default/trainer"]["node"] == "gpu-2"
    got = sorted(
        (pods[f"default/infer-{i}"]["node"], pods[f"default/infer-{i}"]["devices"][0]["device"])
        for i in (1, 2)
    )
    assert got == [("gpu-1", "gpu-0"), ("gpu-1", "gpu-1")]
    refused = pods["default/infer-3"]
    assert refused["status"] == "Unschedulable"
    assert refused["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims.")


HELD = """\
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: high}}
value: 1000
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: held-{i}, uid: uid-held-{i}}}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {{deviceClassName: gpu}}
status:
  allocation:
    devices:
      results: [{{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-{i}}}]
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{{key: metadata.name, operator: In, values: [n1]}}]
  reservedFor: [{{resource: pods, name: low-{i}, uid: uid-low-{i}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: low-{i}, uid: uid-low-{i}}}
spec:
  nodeName: n1
  priority: 0
  containers: [{{name: c, image: x}}]
  resourceClaims: [{{name: gpu, resourceClaimName: held-{i}}}]
"""


def test_preemption_does_not_free_a_victims_devices_as_upstreams_does_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Both devices are held by pods of priority 0: a pod of priority 1000 that needs one
    is not placed by preempting them. Upstream's DynamicResources refuses a node as
    UnschedulableAndUnresolvable, which preemption skips, and has no PreFilterExtensions
    (its dry run could not free a victim's claim anyway): no victim, the pod waits."""
    held = "".join(HELD.replace("{{name: high}}", "{{name: high-{i}}}").format(i=i) for i in (0, 1))
    pending = POD.format(name="urgent").replace(
        "containers:", "priorityClassName: high-0\n  containers:"
    )
    path = write(tmp_path, DEVICES + held + pending)
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0, err
    result = json.loads(out)
    pods = {p["pod"]: p for p in result["pods"]}
    urgent = pods["default/urgent"]
    assert urgent["status"] == "Unschedulable"
    assert urgent["message"] == (
        "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling."
    )
    assert not urgent.get("nominatedNode")
    assert not result["preempted"]
    # The control: the same pods holding CPU instead, and the urgent pod asking for it, are
    # preempted (so the priorities are in effect, and only devices are never freed so).
    cpu = held.replace("containers: [{name: c, image: x}]", _CPU_HOG)
    wants_cpu = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: urgent}\n"
        f"spec:\n  priorityClassName: high-0\n  {_CPU_HOG}\n"
    )
    path = write(tmp_path, DEVICES + cpu + wants_cpu)
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["preempted"], out


_CPU_HOG = "containers: [{name: c, image: x, resources: {requests: {cpu: '2'}}}]"
