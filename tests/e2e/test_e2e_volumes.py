"""Stateful pods on a real API server, with the real PV controller (kube-controller-manager)
and a provisioner played by the test: local PVs, WaitForFirstConsumer provisioning, a
missing claim, a ReadWriteOncePod claim in use, a CSINode attach limit, and an API-server
restart while PreBind waits."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_e2e_explain import multisched
from test_e2e_operator import pod, profile

from conftest import FaultCluster, Kube
from volumes_support import (
    PROVISIONER,
    SELECTED_NODE,
    TestProvisioner,
    controller_manager_missing,
    csi_pv,
    local_pv,
    pv_controller,
)

_ids = itertools.count()


@pytest.fixture
def sched(kube: Kube, start_operator: Any) -> str:
    name = f"e2e-vol-{next(_ids)}"
    start_operator()
    kube.apply(profile(name, {"profiles": [{"schedulerName": name}]}))
    return name


def local_class(name: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def claim(name: str, klass: str, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": list(modes),
            "storageClassName": klass,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def with_claims(name: str, scheduler: str, *claims: str, cpu: str = "100m") -> dict[str, Any]:
    body = pod(
        name,
        scheduler,
        volumes=[
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ],
    )
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return body


def node_of(kube: Kube, name: str) -> str:
    return str(kube.get("pod", name).get("spec", {}).get("nodeName") or "")


def bound_to(kube: Kube, name: str, timeout: float = 45) -> str:
    node: str = kube.wait_for(f"pod {name} bound", lambda: node_of(kube, name), timeout)
    return node


def claim_phase(kube: Kube, name: str) -> str:
    return str(kube.get("pvc", name).get("status", {}).get("phase") or "")


def failed_messages(kube: Kube, name: str) -> list[str]:
    return [e["message"] for e in kube.events_for("Pod", name) if e["reason"] == "FailedScheduling"]


def test_local_pvs_decide_where_pods_go(kube: Kube, controllers: Path, sched: str) -> None:
    kube.add_node("vol-a", cpu="64")  # the emptiest: where a pod without volumes would go
    kube.add_node("vol-b", cpu="4")
    kube.add_node("vol-c", cpu="4")
    kube.apply(local_class("e2e-local"))
    pins = ["vol-b", "vol-c", "vol-b"]  # three local PVs; any fits any claim
    for i, node in enumerate(pins):
        kube.apply(local_pv(f"e2e-local-{i}", "e2e-local", node))
        kube.apply(claim(f"data-{i}", "e2e-local"))
    for i in range(len(pins)):
        kube.apply(with_claims(f"stateful-{i}", sched, f"data-{i}"))
    placed = []
    for i in range(len(pins)):
        node = bound_to(kube, f"stateful-{i}")
        placed.append(node)
        # The PV controller finished what PreBind wrote, with a PV on the pod's node.
        kube.wait_for(f"data-{i} Bound", lambda i=i: claim_phase(kube, f"data-{i}") == "Bound")
        volume = kube.get("pv", kube.get("pvc", f"data-{i}")["spec"]["volumeName"])
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [node]
    assert sorted(placed) == sorted(pins)  # never the emptier vol-a


def test_a_pod_whose_volumes_prebind_binds_is_nominated_to_its_node_first(
    kube: Kube, controllers: Path, sched: str
) -> None:
    """v1.35+ (NominatedNodeNameForExpectation): PreBind has volumes to bind, so the pod is
    nominated to its node before it is bound, for cluster autoscalers to see; a pod with no
    PreBind work is bound without one."""
    kube.add_node("expect-a", cpu="64")
    kube.add_node("expect-b", cpu="4")
    kube.apply(local_class("e2e-expect"))
    kube.apply(local_pv("e2e-expect-0", "e2e-expect", "expect-b"))
    kube.apply(claim("expect-data", "e2e-expect"))
    with kube.watching("pods", "--field-selector=metadata.name=expect-vol") as versions:
        kube.apply(with_claims("expect-vol", sched, "expect-data"))
        assert bound_to(kube, "expect-vol") == "expect-b"
    nominated = [v["status"].get("nominatedNodeName") for v in versions]
    assert "expect-b" in nominated, nominated
    with kube.watching("pods", "--field-selector=metadata.name=expect-plain") as versions:
        kube.apply(pod("expect-plain", sched))
        assert bound_to(kube, "expect-plain")
    assert not any(v["status"].get("nominatedNodeName") for v in versions)


def test_wait_for_first_consumer_claim_is_provisioned_on_the_chosen_node(
    kube: Kube, controllers: Path, sched: str
) -> None:
    kube.add_node("prov-a")
    kube.add_node("prov-b")
    kube.apply(local_class("e2e-dynamic", provisioner=PROVISIONER))
    kube.apply(claim("dyn", "e2e-dynamic"))
    with TestProvisioner(controllers) as provisioner:
        kube.apply(with_claims("vol-dynamic", sched, "dyn"))
        node = bound_to(kube, "vol-dynamic")
        annotations = kube.get("pvc", "dyn")["metadata"].get("annotations") or {}
        assert annotations.get(SELECTED_NODE) == node
        assert "default/dyn" in provisioner.provisioned
    assert claim_phase(kube, "dyn") == "Bound"
    volume = kube.get("pvc", "dyn")["spec"]["volumeName"]
    terms = kube.get("pv", volume)["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]


def test_a_missing_claim_keeps_the_pod_pending_until_it_appears(
    kube: Kube, controllers: Path, sched: str
) -> None:
    kube.add_node("miss-a")
    kube.apply(local_class("e2e-late"))
    kube.apply(with_claims("vol-waiting", sched, "late"))
    messages = kube.wait_for("FailedScheduling", lambda: failed_messages(kube, "vol-waiting"), 30)
    assert messages[0].startswith(
        '0/1 nodes are available: persistentvolumeclaim "late" not found.'
    )
    conditions = kube.get("pod", "vol-waiting")["status"].get("conditions") or []
    assert any(c["type"] == "PodScheduled" and c["reason"] == "Unschedulable" for c in conditions)
    assert node_of(kube, "vol-waiting") == ""
    kube.apply(local_pv("e2e-late-pv", "e2e-late", "miss-a"))
    kube.apply(claim("late", "e2e-late"))
    assert bound_to(kube, "vol-waiting") == "miss-a"


def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_out(
    kube: Kube, controllers: Path, sched: str
) -> None:
    kube.add_node("rwop-a")
    kube.add_node("rwop-b")
    kube.apply(local_class("e2e-rwop"))
    kube.apply(local_pv("e2e-rwop-pv", "e2e-rwop", "rwop-a", accessModes=["ReadWriteOncePod"]))
    kube.apply(claim("solo", "e2e-rwop", modes=("ReadWriteOncePod",)))
    kube.apply(with_claims("rwop-owner", sched, "solo"))
    assert bound_to(kube, "rwop-owner") == "rwop-a"
    kube.wait_for("solo Bound", lambda: claim_phase(kube, "solo") == "Bound")
    kube.apply(with_claims("rwop-second", sched, "solo"))
    messages = kube.wait_for("FailedScheduling", lambda: failed_messages(kube, "rwop-second"), 30)
    assert (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod" in messages[-1]
    )
    assert node_of(kube, "rwop-second") == ""
    # explain reads the claims from the cluster and names the volume reason per node.
    out = multisched(kube, "explain", "rwop-second", "-o", "json")
    assert out.returncode == 0, out.stderr
    (record,) = json.loads(out.stdout)["pods"]
    assert record["message"] == messages[-1]
    verdicts = record["explain"]["filter"]
    assert verdicts["rwop-a"] == (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod (VolumeRestrictions)"
    )
    # v1.37 does not narrow to the bound local PV's node (no GetEligibleNodes): every node
    # meets the claim's ReadWriteOncePod conflict.
    assert verdicts["rwop-b"] == verdicts["rwop-a"]


def test_a_csinode_limit_of_one_keeps_a_second_csi_volume_off_the_node(
    kube: Kube, controllers: Path, sched: str
) -> None:
    driver = "csi.e2e.multisched.io"
    kube.add_node("csi-a", cpu="64")  # emptiest: preferred but for the limit
    kube.add_node("csi-b", cpu="4")
    for node, count in (("csi-a", 1), ("csi-b", 10)):
        kube.apply(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": node},
                "spec": {
                    "drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]
                },
            }
        )
    kube.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "e2e-csi"},
            "provisioner": driver,
            "volumeBindingMode": "Immediate",
        }
    )
    for i in (1, 2):
        kube.apply(csi_pv(f"e2e-csi-{i}", "e2e-csi", driver, f"vol-{i}", f"csi-claim-{i}"))
        body = claim(f"csi-claim-{i}", "e2e-csi")
        body["spec"]["volumeName"] = f"e2e-csi-{i}"
        kube.apply(body)
    for i in (1, 2):
        kube.wait_for(
            f"csi-claim-{i} Bound", lambda i=i: claim_phase(kube, f"csi-claim-{i}") == "Bound"
        )
    kube.apply(with_claims("csi-first", sched, "csi-claim-1"))
    assert bound_to(kube, "csi-first") == "csi-a"
    kube.apply(with_claims("csi-second", sched, "csi-claim-2"))
    assert bound_to(kube, "csi-second") == "csi-b"


def test_an_apiserver_restart_during_prebind_leaves_no_half_bound_volumes(
    faults: FaultCluster, tmp_path: Path
) -> None:
    missing = controller_manager_missing()
    if missing:
        pytest.skip(missing)
    fc = faults
    kube = fc.kube
    nodes = [f"pb-{i}" for i in range(3)]
    for n in nodes:
        kube.add_node(n)
    kube.apply(local_class("e2e-slow", provisioner=PROVISIONER))
    names = [f"slow-{i}" for i in range(6)]
    for name in names:
        kube.apply(claim(name, "e2e-slow"))
    with (
        pv_controller(fc.plane.kubeconfig(), tmp_path),
        TestProvisioner(fc.plane.kubeconfig(), delay=4.0),
    ):
        op = fc.start_operator()
        kube.apply(profile("slow", {"profiles": [{"schedulerName": "slow"}]}))
        for name in names:
            kube.apply(with_claims(name, "slow", name))

        def all_selected() -> bool:
            claims = kube.get("pvc")["items"]
            selected = [
                c for c in claims if SELECTED_NODE in (c["metadata"].get("annotations") or {})
            ]
            return len(selected) == len(names)

        # Every pod is waiting in PreBind (selected-node written, the provisioner not yet done).
        kube.wait_for("selected-node on every claim", all_selected, 45)
        fc.plane.stop_apiserver()
        time.sleep(3)
        fc.plane.start_apiserver()
        placed = {name: bound_to(kube, name, timeout=120) for name in names}
        for name, node in placed.items():
            kube.wait_for(f"{name} Bound", lambda n=name: claim_phase(kube, n) == "Bound", 60)
            pvc = kube.get("pvc", name)
            assert pvc["metadata"]["annotations"][SELECTED_NODE] == node, (name, op.output())
            volume = kube.get("pv", pvc["spec"]["volumeName"])
            terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            assert terms[0]["matchExpressions"][0]["values"] == [node]
    assert "Traceback" not in op.output()
