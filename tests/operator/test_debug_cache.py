"""``/debug/cache`` on a big cluster: nodes and assigned pods are read a page at a time and
cut down to what the comparison needs, so its memory does not grow with the pods listed;
and one comparison runs at a time."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from builders import node_dict, pod_dict
from conftest import Cluster, OperatorFactory
from kmock_support import answer_reviews
from multisched.cache import Cache, PodInfo
from multisched.cache.comparer import CacheDiff
from multisched.operator import debug
from multisched.operator.intake import ASSIGNED_PODS
from multisched.queue import SchedulingQueue
from multisched.scheduler.introspect import EngineView
from multisched.transport import METADATA_ONLY
from ports import free_port

PODS = 10_000
NODES = 100
#: The bound the task sets: a comparison of 10,000 pods within 50 MB of resting memory.
BOUND = 50 * 1024 * 1024


#: What the kubelet and controllers leave on a running pod besides its spec.
STATUS = {
    "phase": "Running",
    "podIP": "10.1.0.1",
    "conditions": [
        {"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ],
    "containerStatuses": [
        {
            "name": "app",
            "ready": True,
            "restartCount": 0,
            "imageID": "sha256:" + "0" * 64,
            "containerID": "containerd://" + "1" * 64,
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
        }
    ],
}
MANAGED = [
    {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {f"f:{k}": {} for k in STATUS}, "f:spec": {"f:nodeName": {}}},
    }
    for manager in ("kubelet", "kube-scheduler", "kube-controller-manager")
]


def big_pod(i: int) -> dict[str, Any]:
    """A bound pod about the size of a real one (~25 KB decoded): managed fields, a
    status, environment, and kubectl apply's annotation holding the pod once more."""
    pod = pod_dict(
        f"pod-{i}",
        node_name=f"node-{i % NODES:05d}",
        requests={"cpu": "100m", "memory": "128Mi"},
        labels={"app": f"app-{i % 50}", "pod-template-hash": "5d9c7b"},
        tolerations=[
            {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ],
    )
    pod["spec"]["containers"][0]["env"] = [
        {"name": f"SETTING_{k}", "value": f"value-{k}"} for k in range(40)
    ]
    pod["metadata"].update(
        uid=f"uid-{i}",
        resourceVersion=str(100_000 + i),
        managedFields=MANAGED,
        annotations={"kubectl.kubernetes.io/last-applied-configuration": json.dumps(pod)},
    )
    pod["status"] = STATUS
    return pod


class PagedApi:
    """Nodes and pods on loopback, paged by limit/continue as the API server pages them;
    nodes as metadata only when asked (or 406 with ``metadata_only=False``). Pages are
    encoded once and kept, as the API server's own memory, outside the measured process
    state (the first comparison fills them)."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.objects = {"/api/v1/nodes": nodes, "/api/v1/pods": pods}
        self.metadata_only = True
        self.queries: list[tuple[str, dict[str, str], str]] = []
        self._pages: dict[tuple[str, int, int, str], bytes] = {}

    async def _list(self, request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        self.queries.append((request.path, dict(request.query), accept))
        partial = accept == METADATA_ONLY
        if partial and not self.metadata_only:
            return web.json_response({"kind": "Status", "code": 406}, status=406)
        items = self.objects[request.path]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or len(items))
        key = (request.path, start, limit, accept)
        if key not in self._pages:
            page = items[start : start + limit]
            if partial:
                page = [{"metadata": item["metadata"]} for item in page]
            meta: dict[str, Any] = {"resourceVersion": "7"}
            if start + limit < len(items):
                meta["continue"] = str(start + limit)
            self._pages[key] = json.dumps(
                {"kind": "List", "metadata": meta, "items": page}
            ).encode()
        return web.Response(body=self._pages[key], content_type="application/json")


@pytest.fixture
async def big_api() -> AsyncIterator[tuple[PagedApi, k8s.ApiClient]]:
    nodes = [node_dict(f"node-{i:05d}") for i in range(NODES)]
    api = PagedApi(nodes, [big_pod(i) for i in range(PODS)])
    app = web.Application()
    app.router.add_get("/api/v1/{plural}", api._list)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    client = k8s.ApiClient(k8s.Configuration(host=str(server.make_url("")).rstrip("/")))
    try:
        yield api, client
    finally:
        await client.close()
        await server.close()


def cache_of(api: PagedApi) -> Cache:
    """The cache as the informers left it, but for three differences: a pod never seen
    (missed), one seen bound elsewhere (moved), one the API no longer lists (redundant)."""
    cache = Cache()
    for raw in api.objects["/api/v1/nodes"]:
        cache.add_node(raw)
    pods = api.objects["/api/v1/pods"]
    for raw in pods[1:]:
        cache.add_pod(PodInfo.parse(raw))
    cache.remove_pod(pods[2]["metadata"]["uid"])
    cache.add_pod(PodInfo.parse({**pods[2], "spec": {**pods[2]["spec"], "nodeName": "node-00099"}}))
    cache.add_pod(PodInfo.parse(pod_dict("gone", node_name="node-00001")))
    return cache


def engine_of(cache: Cache) -> EngineView:
    """The engine's view of ``cache`` (its queue plays no part in a comparison)."""
    return EngineView(SchedulingQueue(lambda a, b: a.timestamp < b.timestamp), cache)


async def measured(cache: Cache, client: k8s.ApiClient) -> tuple[CacheDiff, int]:
    """A comparison, and how far it took the traced memory above where it started."""
    tracemalloc.start()
    try:
        resting = tracemalloc.get_traced_memory()[0]
        diff = await debug.compare_with_api(engine_of(cache), client)
        return diff, tracemalloc.get_traced_memory()[1] - resting
    finally:
        tracemalloc.stop()


async def test_comparing_10000_pods_stays_within_50_mb_and_finds_every_difference(
    big_api: tuple[PagedApi, k8s.ApiClient],
) -> None:
    api, client = big_api
    cache = cache_of(api)
    pods = api.objects["/api/v1/pods"]
    listed = len(json.dumps(pods))  # what one unpaged list of them would be, undecoded
    await debug.compare_with_api(engine_of(cache), client)  # the server encodes its pages once
    api.queries.clear()

    diff, peak = await measured(cache, client)

    assert peak < BOUND, f"the comparison peaked {peak / 2**20:.1f} MB above rest"
    assert peak < listed  # less than the raw bytes of one whole listing, let alone decoded
    assert diff.missed_pods == ["default/pod-0"]
    assert diff.moved_pods == {"default/pod-2": ("node-00099", "node-00002")}
    assert diff.redundant_pods == ["default/gone"]
    assert diff.missed_nodes == diff.redundant_nodes == []
    # Paged, pods from a consistent list (resourceVersion=0 would make the watch cache
    # ignore the limit), nodes as metadata only.
    node_queries = [q for q in api.queries if q[0] == "/api/v1/nodes"]
    pod_queries = [q for q in api.queries if q[0] == "/api/v1/pods"]
    assert {accept for *_, accept in node_queries} == {METADATA_ONLY}
    assert len(pod_queries) == PODS // debug.PAGE_SIZE
    assert all(q["limit"] == str(debug.PAGE_SIZE) for _, q, _ in pod_queries)
    assert all("resourceVersion" not in q for _, q, _ in pod_queries)
    assert pod_queries[0][1]["fieldSelector"] == ASSIGNED_PODS


async def test_a_server_without_metadata_only_lists_gets_whole_nodes(
    big_api: tuple[PagedApi, k8s.ApiClient],
) -> None:
    api, client = big_api
    api.metadata_only = False
    cache = Cache()
    cache.add_node(api.objects["/api/v1/nodes"][0])
    diff = await debug.compare_with_api(engine_of(cache), client)
    assert diff.missed_nodes == [f"node-{i:05d}" for i in range(1, NODES)]
    assert [q[2] for q in api.queries if q[0] == "/api/v1/nodes"][:2] == [
        METADATA_ONLY,
        "application/json",
    ]


async def test_a_second_concurrent_comparison_is_told_to_retry(
    cluster: Cluster, start_operator: OperatorFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "test-token"  # the kmock kubeconfig's
    answer_reviews(cluster.kmock, {token: "admin"}, {("admin", "/debug/cache")})
    await cluster.create("nodes", node_dict("small"))
    listing = asyncio.Event()
    release = asyncio.Event()
    compare_with_api = debug.compare_with_api

    async def slow_compare(engine: EngineView, client: k8s.ApiClient) -> CacheDiff:
        listing.set()
        await release.wait()
        return await compare_with_api(engine, client)

    monkeypatch.setattr(debug, "compare_with_api", slow_compare)
    port = free_port()
    async with (
        start_operator(secure_port=port, bind_address="127.0.0.1"),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http,
    ):
        url = f"https://127.0.0.1:{port}/debug/cache"
        first = asyncio.ensure_future(http.get(url, ssl=False))
        await asyncio.wait_for(listing.wait(), 10)
        async with http.get(url, ssl=False) as second:
            assert second.status == 429
            assert second.headers["Retry-After"].isdigit()
            assert "already running" in (await second.json())["message"]
        release.set()
        async with await first as resp:
            assert resp.status == 200
            assert (await resp.json())["consistent"] is True
        async with http.get(url, ssl=False) as again:  # the lock is let go
            assert again.status == 200
