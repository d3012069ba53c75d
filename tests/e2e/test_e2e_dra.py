"""Devices through Dynamic Resource Allocation (issue 42) on the v1.37.2 control plane, with
kube-controller-manager's resourceclaim controller (templates to claims, claims of deleted
pods released). The test plays the DRA driver: it publishes a ResourceSlice per node. No
kubelet runs, so nothing prepares the devices; what is checked is the scheduler's part.

One scenario, played once under multisched and once under kube-scheduler v1.37.2 on the same
API server (each run has its own nodes, driver and classes, so neither run's pods can use the
other's devices), then compared: placements and the pending pod's message."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import yaml
from parity_support import UPSTREAM, tear_down
from test_e2e_explain import multisched, only_nodes_labelled, profile
from test_e2e_operator import pod
from test_e2e_preemption import priority_class

from conftest import Kube

API = "resource.k8s.io/v1"
_runs = itertools.count()


class Driver:
    """A DRA driver as the scheduler sees one: a ResourceSlice per node, one pool each."""

    def __init__(self, kube: Kube, tag: str) -> None:
        self.kube = kube
        self.tag = tag
        self.name = f"{tag}.dra.multisched.io"
        self.objects: list[tuple[str, str]] = []

    def publish(self, node: str, models: list[str]) -> None:
        name = f"{self.tag}-{node}"
        self.kube.apply(
            {
                "apiVersion": API,
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": self.name,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": f"dev-{i}", "attributes": {"model": {"string": model}}}
                        for i, model in enumerate(models)
                    ],
                },
            }
        )
        self.objects.append(("resourceslice", name))

    def device_class(self, name: str, models: list[str], extended: str | None = None) -> None:
        listed = ", ".join(f'"{m}"' for m in models)
        spec: dict[str, Any] = {
            "selectors": [
                {
                    "cel": {
                        "expression": f'device.driver == "{self.name}" && '
                        f'device.attributes["{self.name}"].model in [{listed}]'
                    }
                }
            ]
        }
        if extended is not None:
            spec["extendedResourceName"] = extended
        self.kube.apply(
            {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
        )
        self.objects.append(("deviceclass", name))


def device_request(klass: str, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": klass, "count": 1}
    if selector is not None:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def claiming(name: str, scheduler: str, **source: str) -> dict[str, Any]:
    body = pod(name, scheduler, resourceClaims=[{"name": "gpu", **source}])
    body["spec"]["terminationGracePeriodSeconds"] = 0
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return body


def node_of(kube: Kube, name: str) -> str:
    return str(kube.get("pod", name).get("spec", {}).get("nodeName") or "")


def failed_message(kube: Kube, name: str) -> str:
    failed = [e for e in kube.events_for("Pod", name) if e["reason"] == "FailedScheduling"]
    return str(failed[-1]["message"]) if failed else ""


def generated_claim(kube: Kube, pod_name: str) -> str:
    statuses = kube.get("pod", pod_name).get("status", {}).get("resourceClaimStatuses") or []
    return str(statuses[0].get("resourceClaimName") or "") if statuses else ""


def check_claim_written_before_binding(kube: Kube, pod_name: str, claim: str) -> str:
    """The claim is allocated on the pod's node and reserved for the pod, and that write came
    first: resourceVersions are etcd revisions, and nothing touches either object after the
    binding (no kubelet), so the claim's is older than the bound pod's."""
    bound = kube.get("pod", pod_name)
    obj = kube.get("resourceclaim", claim)
    status = obj.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    assert len(results) == 1, obj
    reserved = [r.get("name") for r in status.get("reservedFor") or []]
    assert pod_name in reserved, obj
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    fields = [f for t in terms for f in t.get("matchFields") or []]
    assert fields and fields[0]["values"] == [bound["spec"]["nodeName"]], allocation
    assert int(obj["metadata"]["resourceVersion"]) < int(bound["metadata"]["resourceVersion"])
    return str(results[0]["pool"]) + "/" + str(results[0]["device"])


def play(kube: Kube, scheduler: str) -> dict[str, Any]:
    """The scenario under ``scheduler``; what it saw, with this run's tag taken out."""
    tag = f"dra{next(_runs)}"
    driver = Driver(kube, tag)
    n1, n2, n3 = (f"{tag}-n{i}" for i in (1, 2, 3))
    for node in (n1, n2, n3):
        kube.add_node(node)
    driver.publish(n1, ["small", "small"])
    driver.publish(n2, ["big"])
    driver.publish(n3, ["ext"])
    gpu, ext = f"{tag}-gpu", f"{tag}-ext"
    driver.device_class(gpu, ["small", "big"])
    extended = f"{tag}.example.com/gpu"
    driver.device_class(ext, ["ext"], extended=extended)
    big = f"{tag}-big"
    kube.apply(
        {
            "apiVersion": API,
            "kind": "ResourceClaim",
            "metadata": {"name": big, "namespace": "default"},
            "spec": device_request(gpu, f'device.attributes["{driver.name}"].model == "big"'),
        }
    )
    template = f"{tag}-any"
    kube.apply(
        {
            "apiVersion": API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template, "namespace": "default"},
            "spec": {"spec": device_request(gpu)},
        }
    )
    driver.objects += [("resourceclaim", big), ("resourceclaimtemplate", template)]
    pods = [f"{tag}-{p}" for p in ("big", "t1", "r1", "r2", "ext", "urgent")]
    seen: dict[str, Any] = {}
    untag = lambda text: text.replace(tag, "TAG")  # noqa: E731
    try:
        # A claim whose selector only n2's device passes.
        kube.apply(claiming(pods[0], scheduler, resourceClaimName=big))
        kube.wait_for(f"{pods[0]} bound", lambda: node_of(kube, pods[0]), 60)
        seen["big"] = (
            untag(node_of(kube, pods[0])),
            untag(check_claim_written_before_binding(kube, pods[0], big)),
        )
        # A template claim: the controller makes it, the scheduler allocates it.
        kube.apply(claiming(pods[1], scheduler, resourceClaimTemplateName=template))
        kube.wait_for(f"{pods[1]} bound", lambda: node_of(kube, pods[1]), 60)
        claim = generated_claim(kube, pods[1])
        seen["t1"] = (
            untag(node_of(kube, pods[1])),
            untag(check_claim_written_before_binding(kube, pods[1], claim).split("/")[0]),
        )
        # Two pods, one device left (n1's second): one is bound, the other waits.
        for name in pods[2:4]:
            kube.apply(claiming(name, scheduler, resourceClaimTemplateName=template))

        def one_bound_one_refused() -> tuple[str, str] | None:
            nodes = {n: node_of(kube, n) for n in pods[2:4]}
            bound = [n for n, node in nodes.items() if node]
            waiting = [n for n, node in nodes.items() if not node]
            if len(bound) == 1 and len(waiting) == 1 and failed_message(kube, waiting[0]):
                return bound[0], waiting[0]
            return None

        winner, loser = kube.wait_for("the race decided", one_bound_one_refused, 60)
        seen["race"] = (untag(node_of(kube, winner)), untag(failed_message(kube, loser)))
        # The winner goes; the controller releases its claim; the other pod gets the device.
        kube.run("delete", "pod", winner, "--force", "--grace-period=0")
        kube.wait_for(f"{loser} bound", lambda: node_of(kube, loser), 90)
        seen["race_after"] = untag(node_of(kube, loser))
        # An extended resource backed by a DeviceClass: the scheduler makes the claim.
        body = pod(pods[4], scheduler)
        body["spec"]["terminationGracePeriodSeconds"] = 0
        body["spec"]["containers"][0]["resources"] = {
            "requests": {extended: "1"},
            "limits": {extended: "1"},
        }
        kube.apply(body)
        kube.wait_for(f"{pods[4]} bound", lambda: node_of(kube, pods[4]), 60)
        status = kube.get("pod", pods[4]).get("status", {}).get("extendedResourceClaimStatus")
        assert status and status.get("resourceClaimName"), status
        ext_claim = kube.get("resourceclaim", status["resourceClaimName"])
        results = ext_claim["status"]["allocation"]["devices"]["results"]
        meta = ext_claim["metadata"]
        owner = meta["ownerReferences"][0]
        reserved = [r.get("name") for r in ext_claim["status"].get("reservedFor") or []]
        seen["ext"] = (
            untag(node_of(kube, pods[4])),
            [(untag(r["pool"]), r["request"]) for r in results],
            untag(meta["generateName"]),
            (owner["kind"], untag(owner["name"]), owner.get("controller")),
            meta["annotations"],
            untag(reserved[0]) if reserved else "",
            [(m["containerName"], untag(m["resourceName"])) for m in status["requestMappings"]],
        )
        # Written before the binding, as the claims above.
        assert int(meta["resourceVersion"]) < int(
            kube.get("pod", pods[4])["metadata"]["resourceVersion"]
        )
        # Every GPU is held by a pod of priority 0: one of priority 1000 that needs a GPU
        # waits, and nobody is preempted for it (a victim's claim is not freed by preemption).
        high = f"{tag}-high"
        kube.apply(priority_class(high, 1000))
        driver.objects.append(("priorityclass", high))
        urgent = claiming(pods[5], scheduler, resourceClaimTemplateName=template)
        urgent["spec"]["priorityClassName"] = high
        kube.apply(urgent)
        message = kube.wait_for("the urgent pod refused", lambda: failed_message(kube, pods[5]), 60)
        time.sleep(2)  # preemption's deletes run beside the cycle: give them time to show
        holders = [kube.get("pod", p) for p in (pods[0], pods[1], loser, pods[4])]
        kept = sorted(
            untag(h["spec"].get("nodeName") or "")
            for h in holders
            if not h["metadata"].get("deletionTimestamp")
        )
        nominated = kube.get("pod", pods[5]).get("status", {}).get("nominatedNodeName")
        seen["urgent"] = (untag(message), kept, nominated)
        return seen
    finally:
        tear_down(kube, pods, *driver.objects)
        kube.remove_nodes(n1, n2, n3)


def test_devices_are_allocated_as_kube_scheduler_allocates_them(
    kube: Kube, controllers: Path, multisched_profile: str, kube_scheduler: Path
) -> None:
    ours = play(kube, multisched_profile)
    assert ours["big"] == ("TAG-n2", "TAG-n2/dev-0")
    assert ours["t1"] == ("TAG-n1", "TAG-n1")
    assert ours["race"][0] == "TAG-n1"
    assert "cannot allocate all claims" in ours["race"][1], ours["race"][1]
    assert ours["race_after"] == "TAG-n1"
    # The extended resource: a claim made for the pod, on the one node with such a device.
    node, results, generate_name, owner, annotations, reserved, mappings = ours["ext"]
    assert (node, results) == ("TAG-n3", [("TAG-n3", "container-0-request-0")])
    assert generate_name == "TAG-ext-extended-resources-"
    assert owner == ("Pod", "TAG-ext", True)
    assert annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert reserved == "TAG-ext"
    assert mappings == [("c", "TAG.example.com/gpu")]
    message, kept, nominated = ours["urgent"]
    assert "cannot allocate all claims" in message, message
    assert (kept, nominated) == (["TAG-n1", "TAG-n1", "TAG-n2", "TAG-n3"], None)
    theirs = play(kube, UPSTREAM)
    assert ours == theirs


def test_a_profile_edit_is_previewed_with_the_clusters_devices(
    kube: Kube, controllers: Path, start_operator: Any, tmp_path: Path
) -> None:
    """``simulate --from-cluster --diff`` reads DeviceClasses, ResourceSlices and the claim
    the controller generated, and allocates as the operator will: of two gold nodes, the
    previewed node is the one with the device, and applying the edit puts the pod there."""
    tag = f"dra{next(_runs)}"
    sp, sched = f"{tag}-sp", f"{tag}-sched"
    driver = Driver(kube, tag)
    with_device, without = f"{tag}-gold-a", f"{tag}-gold-b"
    for node in (with_device, without):
        kube.add_node(node, labels={"tier": f"gold-{tag}"})
    driver.publish(with_device, ["big"])
    gpu, template = f"{tag}-gpu", f"{tag}-any"
    driver.device_class(gpu, ["big"])
    kube.apply(
        {
            "apiVersion": API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template, "namespace": "default"},
            "spec": {"spec": device_request(gpu)},
        }
    )
    driver.objects.append(("resourceclaimtemplate", template))
    waiting = f"{tag}-waiting"
    try:
        # Today the profile wants nodes nobody has: the pod stays pending, claim unallocated.
        kube.apply(profile(sp, sched, **only_nodes_labelled("tier", f"platinum-{tag}")))
        start_operator()
        kube.apply(claiming(waiting, sched, resourceClaimTemplateName=template))
        kube.wait_for("the FailedScheduling event", lambda: failed_message(kube, waiting), 45)
        claim = kube.wait_for("the generated claim", lambda: generated_claim(kube, waiting), 30)
        edit = tmp_path / "edit.yaml"
        edit.write_text(
            yaml.safe_dump(profile(sp, sched, **only_nodes_labelled("tier", f"gold-{tag}")))
        )
        out = multisched(
            kube, "simulate", "--from-cluster", "--diff", "--profile", str(edit), "-o", "json"
        )
        assert out.returncode == 1, out.stdout + out.stderr
        changes = {c["pod"]: c for c in json.loads(out.stdout)["changes"]}
        preview = changes[f"default/{waiting}"]
        assert (preview["before"], preview["after"]) == ("unschedulable", with_device)
        # The preview allocated in memory only: the claim is still unallocated.
        assert not kube.get("resourceclaim", claim).get("status", {}).get("allocation")

        kube.run("apply", "-f", str(edit))
        node = kube.wait_for("the edit to place the pod", lambda: node_of(kube, waiting), 45)
        assert node == preview["after"]
        assert check_claim_written_before_binding(kube, waiting, claim) == f"{with_device}/dev-0"
    finally:
        tear_down(kube, [waiting], *driver.objects, ("schedulerprofile", sp))
        kube.remove_nodes(with_device, without)
