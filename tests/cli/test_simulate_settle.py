"""simulate answers for the cluster as its API server and controllers leave the input:
bindings written in the file completed, Immediate claims bound or provisioned, a claim
without a class given the default one, pods' label keys merged; each change said once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from multisched.cli import main
from multisched.scheduler.simulate import ClusterInput, InputError
from multisched.validation import Document

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler"}],
}
HOSTNAME = "kubernetes.io/hostname"


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def local_pv(name: str, on: str, klass: str = "local", **spec: Any) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [on]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": klass,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            **spec,
        },
    }


def claim(name: str, klass: str | None = "local", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        **spec,
    }
    if klass is not None:
        body["storageClassName"] = klass
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def pod(name: str, *claims: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "a", "rev": "1"}},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
            **spec,
        },
    }


def run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, docs: list[Any], *argv: str
) -> tuple[int, str, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    code = main(["simulate", str(path), "--seed", "1", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def cluster(*objs: dict[str, Any], trusted: bool = False) -> ClusterInput:
    return ClusterInput.from_documents(
        [Document("c.yaml", f"document {i + 1}", o) for i, o in enumerate(objs)], trusted=trusted
    )


def written_bound() -> list[dict[str, Any]]:
    """The issue's file: a claim bound to its PV the way a manifest shows it."""
    pv = local_pv("pv-a", "n2", claimRef={"namespace": "default", "name": "data"})
    pv["status"] = {"phase": "Bound"}
    pvc = claim("data", volumeName="pv-a")
    pvc["status"] = {"phase": "Bound"}
    return [CONFIG, node("n1", "8"), node("n2"), pv, pvc, pod("web", "data")]


def test_a_claim_written_bound_goes_with_its_pv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, tmp_path, written_bound(), "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    [web] = data["pods"]
    assert (web["status"], web["node"]) == ("Scheduled", "n2")
    changed = {s["object"]: s for s in data["settled"]}
    assert set(changed) == {"PersistentVolume pv-a", "PersistentVolumeClaim default/data"}
    claim_change = changed["PersistentVolumeClaim default/data"]
    assert "metadata.annotations[pv.kubernetes.io/bind-completed]" in claim_change["changed"]
    assert claim_change["by"] == "kube-controller-manager's PV controller"
    # The PV's claimRef gets the claim's uid; the user bound it, so no bound-by-controller.
    assert changed["PersistentVolume pv-a"]["changed"] == ["spec.claimRef"]


def test_the_table_says_each_kind_of_change_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, tmp_path, written_bound())
    assert code == 0
    notes = [line for line in err.splitlines() if line.startswith("note: cluster.yaml: settled")]
    assert len(notes) == 1
    assert "PersistentVolumeClaim default/data" in notes[0]
    assert "default/web" in out and "n2" in out


def test_an_immediate_claim_binds_to_an_available_pv_before_scheduling() -> None:
    docs = [
        {**CONFIG},
        node("n1"),
        local_pv("small", "n1", klass=""),
        local_pv("big", "n1", klass="", capacity={"storage": "5Gi"}),
        claim("data", klass=""),
    ]
    c = cluster(*docs)
    pvc = next(o for k, o in c.storage if k == "PersistentVolumeClaim")
    assert pvc["spec"]["volumeName"] == "small"  # the smallest that fits
    assert pvc["status"]["phase"] == "Bound"
    assert [s.kind for s in c.settled] == ["bound", "bound"]


def test_an_immediate_claim_with_a_provisioner_is_provisioned() -> None:
    klass = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "example.com/fast",
    }
    c = cluster(klass, claim("data", klass="fast"))
    pvs = [o for k, o in c.storage if k == "PersistentVolume"]
    assert [pv["spec"]["claimRef"]["name"] for pv in pvs] == ["data"]
    assert "provisioned" in [s.kind for s in c.settled]


def test_a_claim_without_a_class_gets_the_default_one() -> None:
    default = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    c = cluster(default, claim("data", klass=None), claim("empty", klass=""))
    classes = {
        o["metadata"]["name"]: o["spec"].get("storageClassName")
        for k, o in c.storage
        if k == "PersistentVolumeClaim"
    }
    # "" asks for no class; only an absent class is defaulted.
    assert classes == {"data": "standard", "empty": ""}
    [change] = c.settled
    assert (change.kind, change.by) == ("default-class", "kube-apiserver")


def test_pod_label_keys_are_merged_into_selectors() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "a"}},
        "topologyKey": HOSTNAME,
        "matchLabelKeys": ["rev"],
        "mismatchLabelKeys": ["app"],
    }
    spread = {
        "maxSkew": 1,
        "topologyKey": HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "a"}},
        "matchLabelKeys": ["rev"],
    }
    p = pod(
        "p",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        topologySpreadConstraints=[spread],
    )
    c = cluster(p)
    spec = c.pods[0][1]["spec"]
    merged = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert merged[0]["labelSelector"]["matchExpressions"] == [
        {"key": "rev", "operator": "In", "values": ["1"]},
        {"key": "app", "operator": "NotIn", "values": ["a"]},
    ]
    assert spec["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] == [
        {"key": "rev", "operator": "In", "values": ["1"]}
    ]
    [change] = c.settled
    assert change.object == "Pod default/p" and len(change.changed) == 2
    # The file's own object is left as written.
    assert "matchExpressions" not in term["labelSelector"]


def test_settled_objects_settle_to_themselves() -> None:
    """What --from-cluster reads was settled by the cluster: nothing changes."""
    first = cluster(*written_bound())
    stored = [o for _, o in first.storage] + [o for _, o in first.pods]
    again = cluster(*stored, trusted=True)
    assert again.settled == []
    assert [o for _, o in again.storage] == [o for _, o in first.storage]
    for (_, before), (_, after) in zip(first.pods, again.pods, strict=True):
        assert before is after


def test_a_snapshot_file_of_a_settled_cluster_settles_to_itself() -> None:
    """A snapshot's objects carry the creation time the API server set: stored, not created.
    Its Immediate claim waiting for a provisioner keeps waiting, as on the cluster."""
    klass = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "example.com/fast",
        "volumeBindingMode": "Immediate",
    }
    waiting = claim("waiting", klass="fast")
    waiting["status"] = {"phase": "Pending"}
    stamp = {"creationTimestamp": "2026-01-01T00:00:00Z"}
    settled = cluster(*written_bound())
    stored = [{**o, "metadata": {**o["metadata"], **stamp}} for _, o in settled.storage]
    stored.append({**waiting, "metadata": {**waiting["metadata"], **stamp}})
    assert cluster(klass, *stored).settled == []
    # Written without one, the same claim is created: the ideal provisioner serves it.
    assert [c.kind for c in cluster(klass, waiting).settled] == ["bound", "provisioned"]


def test_inputs_that_need_no_settling_are_untouched() -> None:
    for path in sorted((ROOT / "examples" / "cluster").glob("*.yaml")):
        from multisched.validation import read_documents

        c = ClusterInput.from_documents(read_documents(path))
        assert c.settled == [], path.name


def test_a_second_object_of_a_name_already_exists() -> None:
    profile = {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "p"},
        "spec": {"profiles": [{"schedulerName": "a"}]},
    }
    with pytest.raises(InputError) as caught:
        cluster(profile, node("n1"), profile)
    assert list(caught.value.lines) == [
        'c.yaml: document 3 (SchedulerProfile p): schedulerprofiles.multisched.dev "p" already '
        "exists (also document 1)"
    ]
    # ConfigMaps are namespaced: one name in two namespaces is two objects.
    maps = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": ns}}
        for ns in ("a", "b")
    ]
    assert cluster(*maps).settled == []


def test_of_two_profiles_serving_one_scheduler_name_the_younger_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the operator refuses it live: the first written (the older) serves the name."""

    def profile(name: str, cpu: str) -> dict[str, Any]:
        weights = {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}
        args = {"scoringStrategy": weights} if cpu == "most" else {}
        return {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": name},
            "spec": {
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "pluginConfig": [{"name": "NodeResourcesFit", "args": args}],
                    }
                ]
            },
        }

    web = pod("web")
    web["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    docs = [profile("one", "most"), profile("two", "least"), node("n1", "8"), node("n2"), web]
    code, out, err = run(capsys, tmp_path, docs, "-o", "json")
    assert code == 0
    assert err == (
        "warning: SchedulerProfile two left out (SchedulerNameConflict): schedulerName "
        '"default-scheduler" is already served by SchedulerProfile "one"\n'
    )
    # "one" packs (MostAllocated): the fuller node, n2.
    assert json.loads(out)["pods"][0]["node"] == "n2"


def test_a_live_clusters_waiting_claim_is_left_to_its_own_provisioner() -> None:
    klass = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "example.com/fast",
        "volumeBindingMode": "Immediate",
    }
    waiting = claim("data", klass="fast")
    waiting["status"] = {"phase": "Pending"}
    c = cluster(klass, waiting, trusted=True)
    assert c.settled == []
    assert [k for k, _ in c.storage] == ["StorageClass", "PersistentVolumeClaim"]


def _claim_template(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example"}}]
                }
            }
        },
    }


def _claiming_pod(name: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "accel", "resourceClaimTemplateName": template}],
            "containers": [
                {"name": "c", "image": "x", "resources": {"claims": [{"name": "accel"}]}}
            ],
        },
    }


def test_claims_from_templates_are_created_as_the_resourceclaim_controller_creates_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [CONFIG, node("n1"), _claim_template("gpu"), _claiming_pod("trainer", "gpu")]
    code, out, err = run(capsys, tmp_path, docs, "-o", "json")
    assert code == 0, err
    settled = json.loads(out)["settled"]
    created, status = settled
    assert created["object"].startswith("ResourceClaim default/trainer-accel-")
    assert created["by"] == "kube-controller-manager's resourceclaim controller"
    assert status == {
        "object": "Pod default/trainer",
        "changed": ["status.resourceClaimStatuses"],
        "by": "kube-controller-manager's resourceclaim controller",
        "why": "records the claims created for it (accel from the template gpu)",
    }
    # The pod still waits: the file has no DeviceClass for the claim's request.
    (placement,) = json.loads(out)["pods"]
    assert placement["node"] in ("", None)
    assert "request gpu: device class gpu.example does not exist" in placement["message"]
    code, out, err = run(capsys, tmp_path, docs)
    notes = [line for line in err.splitlines() if "resourceclaim controller" in line]
    assert len(notes) == 2 and all(line.startswith("note: ") for line in notes)


def test_a_claim_template_is_checked_as_the_api_server_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _claim_template("Bad_Name")
    code, out, err = run(capsys, tmp_path, [node("n1"), bad, _claim_template("Bad_Name")])
    assert code == 2 and out == ""
    assert 'metadata.name: Invalid value: "Bad_Name"' in err
    dup = run(capsys, tmp_path, [node("n1"), _claim_template("t"), _claim_template("t")])
    assert dup[0] == 2
    assert 'resourceclaimtemplates.resource.k8s.io "t" already exists (also document' in dup[2]
