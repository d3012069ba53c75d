"""Scenario (r): a backlog of pods with a ResourceClaim each, on devices a driver publishes.

Every node has a ResourceSlice of 8 devices (one pool per node, as a GPU driver publishes
them); there is one single-device claim per pod, of a DeviceClass whose CEL selector picks the
bench driver's devices. Each scheduler runs DynamicResources for real: the structured
allocator per node, the claim's allocation and reservedFor written before the binding. The
resourceclaim controller (kube-controller-manager) releases the claims of a run's deleted pods,
so the next contender finds every device free. Fresh claims per scheduler, the same shape.
"""

from __future__ import annotations

import itertools
from typing import Any

from . import volumes
from .objects import RUN_LABEL, node_name, pending_pod
from .report import Figure
from .scenarios import NAMESPACE, Bench, log

API = "/apis/resource.k8s.io/v1"
DEVICE_CLASSES = f"{API}/deviceclasses"
SLICES = f"{API}/resourceslices"
DRIVER = "gpu.bench.multisched.io"
CLASS = "bench-gpu"
DEVICES_PER_NODE = 8
#: A repeat's claims get new names: the last run's may still be on their way out.
_repeats = itertools.count()


def claims_path(namespace: str) -> str:
    return f"{API}/namespaces/{namespace}/resourceclaims"


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def node_slice(i: int) -> dict[str, Any]:
    node = node_name(i)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"bench-{node}", "labels": {"bench-dra": "yes"}},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "attributes": {"model": {"string": "bench"}, "index": {"int": d}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for d in range(DEVICES_PER_NODE)
            ],
        },
    }


def claim(run: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{run}-gpu-{i:06d}", "labels": {RUN_LABEL: run}},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS, "count": 1}}]
            }
        },
    }


def claiming_pod(run: str, scheduler_name: str, i: int) -> dict[str, Any]:
    pod = pending_pod(run, scheduler_name, i)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{run}-gpu-{i:06d}"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


async def device_scenario(bench: Bench, key: str = "r") -> None:
    """(r): ``shape_backlog`` pods with a claim each, on ``nodes`` nodes of 8 devices."""
    missing = volumes.controller_manager_missing()
    if missing:
        log(missing.replace("no PV controller, scenario (v)", "no claim controller, scenario (r)"))
        return
    count = min(bench.sizes.shape_backlog, bench.sizes.nodes * DEVICES_PER_NODE)
    nodes = bench.sizes.nodes
    scenario = (
        f"backlog of {count} pods with a device claim each, {nodes} nodes of "
        f"{DEVICES_PER_NODE} devices"
    )
    await bench.kube.create(DEVICE_CLASSES, device_class(), exist_ok=True)
    await bench.kube.create_many(SLICES, (node_slice(i) for i in range(nodes)), bench.concurrency)
    with volumes.pv_controller(bench.cp.kubeconfig, bench.cp.workdir):
        for c in bench.contenders:
            run = f"{key}{next(_repeats)}-{c.name}"
            await bench.kube.create_many(
                claims_path(NAMESPACE), (claim(run, i) for i in range(count)), bench.concurrency
            )
            pods = (claiming_pod(run, c.scheduler_name, i) for i in range(count))
            d = await bench.drain(c, run, pods, count)
            bench.add_drained(key, scenario, c.name, d, d.shortfall())
            log(
                f"{key} {c.name}: {d.bound}/{count} bound, {Figure(d.rate, 'pods/s').text()}, "
                f"{Figure(d.cpu, 'ms').text()} CPU per pod"
            )
            await bench._clean(run)
            # The controller drops the deleted pods from reservedFor and deallocates the claims.
            if not await bench.kube.delete_collection(
                claims_path(NAMESPACE), f"{RUN_LABEL}={run}", bench.timeout
            ):
                log(f"warning: claims of {run} still present after {bench.timeout:.0f} s")
    await bench.kube.delete_collection(SLICES, "bench-dra=yes", bench.timeout)
