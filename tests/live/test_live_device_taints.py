"""``snapshot`` and ``simulate --from-cluster`` read DeviceTaintRules (when served) as
kube-scheduler v1.37 does, and a snapshot's rules taint the same devices offline."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import yaml
from kmock import ResourceInfo
from test_live_commands import SCHED, node, pod, profile

from live_support import LiveCluster, run_cli

DRIVER = "gpu.example.com"


async def create_dra(live: LiveCluster, plural: str, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    meta.setdefault("uid", f"uid-{meta['name']}")
    meta.setdefault("resourceVersion", "1")
    ns = meta.get("namespace")
    path = "/apis/resource.k8s.io/v1" + (f"/namespaces/{ns}" if ns else "") + f"/{plural}"
    async with live.kmock.post(path, json=obj) as resp:
        assert resp.status in (200, 201), await resp.text()


async def populate(live: LiveCluster, rule: bool) -> None:
    """One node with one GPU, a pod whose claim asks for it, and (``rule``) a rule that
    taints that GPU NoSchedule."""
    for plural, kind, namespaced in (
        ("deviceclasses", "DeviceClass", False),
        ("resourceslices", "ResourceSlice", False),
        ("resourceclaims", "ResourceClaim", True),
        ("devicetaintrules", "DeviceTaintRule", False),
    ):
        live.kmock.resources[f"resource.k8s.io/v1/{plural}"] = ResourceInfo(
            kind=kind, singular=kind.lower(), namespaced=namespaced, verbs={"get", "list", "create"}
        )
    await live.create("nodes", node("n1", "4"))
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    await create_dra(
        live, "deviceclasses", {"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}}
    )
    spec = {
        "driver": DRIVER,
        "pool": {"name": "n1", "resourceSliceCount": 1, "generation": 1},
        "nodeName": "n1",
        "devices": [{"name": "gpu-0"}],
    }
    await create_dra(live, "resourceslices", {"metadata": {"name": "n1-gpu"}, "spec": spec})
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    claim = {
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }
    await create_dra(live, "resourceclaims", claim)
    if rule:
        taint_rule = {
            "metadata": {"name": "broken"},
            "spec": {
                "deviceSelector": {"driver": DRIVER, "device": "gpu-0"},
                "taint": {
                    "key": "example.com/broken",
                    "effect": "NoSchedule",
                    "timeAdded": "2024-01-01T00:00:00Z",
                },
            },
        }
        await create_dra(live, "devicetaintrules", taint_rule)
    trainer = pod("trainer", "1", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}])
    await live.create("pods", trainer)
    await live.create("schedulerprofiles", profile(SCHED))


async def statuses(live: LiveCluster) -> tuple[str, str]:
    """The pod's status offline (from the snapshot) and online; they must agree."""
    code, snap, err = await live.run("snapshot")
    assert code == 0, err
    code, offline, err = await asyncio.to_thread(run_cli, "simulate", "-", "-o", "json", stdin=snap)
    assert code == 0, err
    code, online, err = await live.run("simulate", "--from-cluster", "-o", "json")
    assert code == 0, err
    assert online == offline
    (result,) = json.loads(online)["pods"]
    return result["status"], snap


async def test_a_served_rule_is_snapshotted_and_taints_the_device(live: LiveCluster) -> None:
    await populate(live, rule=True)
    status, snap = await statuses(live)
    assert status == "Unschedulable"
    (rule,) = [d for d in yaml.safe_load_all(snap) if d["kind"] == "DeviceTaintRule"]
    assert rule["apiVersion"] == "resource.k8s.io/v1"
    assert rule["spec"]["taint"]["key"] == "example.com/broken"


async def test_without_the_rule_the_same_pod_fits(live: LiveCluster) -> None:
    await populate(live, rule=False)
    status, snap = await statuses(live)
    assert status == "Scheduled"
    assert all(d["kind"] != "DeviceTaintRule" for d in yaml.safe_load_all(snap))
