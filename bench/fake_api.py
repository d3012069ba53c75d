"""A read-only fake API server for the live-command benchmarks (``python -m bench.fake_api``).

Serves paginated LISTs (limit/continue) of a synthetic cluster whose objects look like what
a real API server returns (managedFields, status conditions, container statuses), from
pre-encoded pages, so the measured side is the client. Prints its URL, then serves until
killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from typing import Any

from aiohttp import web

from .cluster import node, simple_pod

MANAGED = [
    {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2024-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {".": {}}, "f:phase": {}, "f:podIP": {}}},
        "subresource": "status",
    },
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2024-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}},
    },
]


def real_node(i: int, rng: random.Random) -> dict[str, Any]:
    obj = node(i, rng)
    meta = obj["metadata"]
    meta.update(
        uid=f"node-uid-{i}",
        resourceVersion=str(1000 + i),
        creationTimestamp="2024-01-01T00:00:00Z",
        annotations={"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/ctl": "true"},
        managedFields=MANAGED,
    )
    status = obj["status"]
    status["capacity"] = dict(status["allocatable"])
    status["conditions"] = [
        {
            "type": t,
            "status": "False" if t != "Ready" else "True",
            "lastHeartbeatTime": "2024-01-01T00:00:00Z",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
            "reason": f"Kubelet{t}",
            "message": f"kubelet reports {t}",
        }
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
    ]
    status["addresses"] = [{"type": "InternalIP", "address": f"10.0.{i // 256}.{i % 256}"}]
    status["nodeInfo"] = {"kubeletVersion": "v1.31.0", "osImage": "Debian", "machineID": "x" * 32}
    return obj


def real_pod(i: int, node_name: str = "") -> dict[str, Any]:
    obj = simple_pod(i, node_name)
    meta = obj["metadata"]
    meta.update(
        resourceVersion=str(100_000 + i),
        creationTimestamp=f"2024-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        generateName=f"app-{i % 50}-",
        ownerReferences=[
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"app-{i % 50}-5d9c",
                "uid": f"rs-{i % 50}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        managedFields=MANAGED,
    )
    spec = obj["spec"]
    spec.update(
        restartPolicy="Always",
        terminationGracePeriodSeconds=30,
        dnsPolicy="ClusterFirst",
        serviceAccountName="default",
        priority=0,
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        volumes=[{"name": "kube-api-access", "projected": {"sources": [{"configMap": {}}]}}],
    )
    spec["containers"][0].update(
        env=[{"name": "MODE", "value": "production"}],
        volumeMounts=[{"name": "kube-api-access", "mountPath": "/var/run/secrets"}],
        terminationMessagePath="/dev/termination-log",
        imagePullPolicy="IfNotPresent",
    )
    phase = "Running" if node_name else "Pending"
    obj["status"] = {"phase": phase, "qosClass": "Burstable"}
    if node_name:
        obj["status"].update(
            startTime="2024-01-01T00:00:00Z",
            podIP="10.1.0.1",
            conditions=[
                {"type": t, "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            containerStatuses=[
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "image": spec["containers"][0]["image"],
                    "imageID": "sha256:" + "0" * 64,
                    "containerID": "containerd://" + "1" * 64,
                    "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                }
            ],
        )
    return obj


def replica_set(app: int) -> dict[str, Any]:
    """The ReplicaSet that ``real_pod``'s owner reference names (default spreading reads
    its selector)."""
    labels = {"app": f"app-{app}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"app-{app}-5d9c", "namespace": "default", "uid": f"rs-{app}"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": []}},
        },
    }


def profile() -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {
            "name": "bench",
            "uid": "sp-uid",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "generation": 1,
        },
        "spec": {"profiles": [{"schedulerName": "bench"}]},
    }


def build(nodes: int, pods: int, pending: int) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(1)
    bound = pods - pending
    return {
        "/api/v1/nodes": [real_node(i, rng) for i in range(nodes)],
        "/api/v1/pods": [
            real_pod(i, f"node-{i % nodes:05d}" if i < bound else "") for i in range(pods)
        ],
        "/api/v1/namespaces": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        ],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [],
        "/apis/policy/v1/poddisruptionbudgets": [],
        "/apis/multisched.dev/v1alpha1/schedulerprofiles": [profile()],
        "/apis/apps/v1/replicasets": [replica_set(app) for app in range(50)],
        "/apis/apps/v1/statefulsets": [],
        "/api/v1/services": [],
        "/api/v1/replicationcontrollers": [],
    }


def pages(items: list[dict[str, Any]], size: int) -> list[bytes]:
    out = []
    chunks = [items[i : i + size] for i in range(0, len(items), size)] or [[]]
    for n, chunk in enumerate(chunks):
        more = n + 1 < len(chunks)
        meta = {"resourceVersion": "999", **({"continue": str(n + 1)} if more else {})}
        out.append(json.dumps({"kind": "List", "metadata": meta, "items": chunk}).encode())
    return out


def app(objects: dict[str, list[dict[str, Any]]], page_size: int = 500) -> web.Application:
    encoded = {path: pages(items, page_size) for path, items in objects.items()}

    async def handle(request: web.Request) -> web.Response:
        served = encoded.get(request.path)
        if served is None:
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        index = int(request.query.get("continue") or 0)
        return web.Response(body=served[index], content_type="application/json")

    application = web.Application()
    application.router.add_get("/{tail:.*}", handle)
    return application


async def serve(nodes: int, pods: int, pending: int) -> None:
    runner = web.AppRunner(app(build(nodes, pods, pending)))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--pending", type=int, default=1000)
    args = ap.parse_args()
    asyncio.run(serve(args.nodes, args.pods, args.pending))


if __name__ == "__main__":
    main()
