"""What the fault scenarios drive and observe besides the control plane itself.

- ``ClusterApi``: plain-JSON requests through kubernetes_asyncio on a private event-loop
  thread, so synchronous tests can create hundreds of nodes and pods with bounded
  concurrency, force-delete pods and delete nodes.
- ``NodeNameRecorder``: a pod watch that runs through the whole scenario (relisting after
  410 Gone and reconnecting across API-server outages) and records every ``nodeName`` a pod
  ever had, so a pod that moves is caught even if it ends up looking fine.
- ``check_invariants``: the final check every scenario ends with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

T = TypeVar("T")
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{message} ({status})")
        self.status = status


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


# -- quantities (an independent oracle: the operator's own parser is what is under test) --

_SUFFIXES = {
    "m": Decimal("0.001"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
}


def quantity(value: str | int | float) -> Decimal:
    text = str(value).strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "T"):
        if text.endswith(suffix):
            return Decimal(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return Decimal(text)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """Effective requests as kube-scheduler counts them: containers summed, init containers
    as a floor, plus overhead; every pod also takes one of the node's ``pods``."""
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or ():
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, Decimal(0)) + quantity(v)
    for c in spec.get("initContainers") or ():
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, Decimal(0)), quantity(v))
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, Decimal(0)) + quantity(v)
    total["pods"] = Decimal(1)
    return total


# -- object builders -----------------------------------------------------------------------


def pod_body(
    name: str,
    scheduler: str,
    cpu: str = "100m",
    memory: str = "64Mi",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }


def profile_body(name: str, scheduler: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": {"profiles": [{"schedulerName": scheduler or name}]},
    }


def key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


# -- the client ----------------------------------------------------------------------------


class ClusterApi:
    """Raw JSON calls on a private event loop; the sync methods block until done."""

    def __init__(self, kubeconfig: Path, concurrency: int = 16) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.concurrency = concurrency
        self.client: k8s.ApiClient = self.call(self._connect(kubeconfig))

    @staticmethod
    async def _connect(kubeconfig: Path) -> k8s.ApiClient:
        cfg = k8s.Configuration()
        await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        return k8s.ApiClient(cfg)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 300) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call(self.client.close(), 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Sequence[tuple[str, str]] = (),
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        """One call; a connection the restarted API server dropped is retried (a create
        whose first try landed then answers 409, which counts as done)."""
        for attempt in range(4):
            try:
                return await self._request_once(method, path, body, query, content_type, timeout)
            except aiohttp.ClientConnectionError:
                if attempt == 3:
                    raise
                await asyncio.sleep(0.3)
            except ApiError as exc:
                if attempt and method == "POST" and exc.status == 409:
                    return {}
                raise
        raise AssertionError("unreachable")

    async def _request_once(
        self,
        method: str,
        path: str,
        body: Any,
        query: Sequence[tuple[str, str]],
        content_type: str,
        timeout: float,
    ) -> dict[str, Any]:
        resp = await self.client.call_api(
            path,
            method,
            query_params=list(query),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
        try:
            raw = await resp.read()
        finally:
            resp.release()
        data = json.loads(raw) if raw else {}
        if not 200 <= resp.status < 300:
            raise ApiError(resp.status, str(data.get("message") or resp.reason))
        return dict(data)

    async def _bounded(self, calls: Iterable[Coroutine[Any, Any, Any]]) -> list[Any]:
        sem = asyncio.Semaphore(self.concurrency)

        async def one(c: Coroutine[Any, Any, Any]) -> Any:
            async with sem:
                return await c

        return list(await asyncio.gather(*(one(c) for c in calls)))

    # -- lists --------------------------------------------------------------------------

    async def list_all(self, path: str, **query: str) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            q = [("limit", "500"), *query.items()] + ([("continue", cont)] if cont else [])
            page = await self.request("GET", path, query=q)
            items += page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items, str((page.get("metadata") or {}).get("resourceVersion") or "")

    def pods(self) -> list[dict[str, Any]]:
        return self.call(self.list_all("/api/v1/pods"))[0]

    def nodes(self) -> list[dict[str, Any]]:
        return self.call(self.list_all("/api/v1/nodes"))[0]

    # -- writes -------------------------------------------------------------------------

    async def _create_node(
        self, name: str, cpu: str, memory: str, pods: str, labels: Mapping[str, str]
    ) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        }
        await self.request("POST", "/api/v1/nodes", body)
        # The TaintNodesByCondition admission adds not-ready; no kubelet will lift it.
        await self.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            [{"op": "replace", "path": "/spec/taints", "value": []}],
            content_type=JSON_PATCH,
        )
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        status = {
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake node",
                    }
                ],
            }
        }
        await self.request(
            "PATCH", f"/api/v1/nodes/{name}/status", status, content_type=MERGE_PATCH
        )

    def create_nodes(
        self,
        names: Iterable[str],
        cpu: str = "2",
        memory: str = "8Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Fake nodes: allocatable set through the status subresource, Ready, untainted."""
        calls = [self._create_node(n, cpu, memory, pods, labels or {}) for n in names]
        self.call(self._bounded(calls))

    def create_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        calls = [
            self.request("POST", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", p)
            for p in pods
        ]
        self.call(self._bounded(calls))

    async def _delete(self, path: str, body: Mapping[str, Any] | None = None) -> None:
        try:
            await self.request("DELETE", path, body)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def force_delete_pods(self, keys: Iterable[str]) -> None:
        """``kubectl delete --force --grace-period=0``: gone at once, kubelet or not."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        calls = []
        for k in keys:
            ns, name = k.split("/", 1)
            calls.append(self._delete(f"/api/v1/namespaces/{ns}/pods/{name}", body))
        self.call(self._bounded(calls))

    def delete_node(self, name: str) -> None:
        self.call(self._delete(f"/api/v1/nodes/{name}"))

    def delete_profile(self, name: str) -> None:
        self.call(self._delete(f"/apis/multisched.dev/v1alpha1/schedulerprofiles/{name}"))


# -- the nodeName recorder ---------------------------------------------------------------


@dataclass(slots=True)
class PodTrack:
    key: str
    #: Every distinct nodeName in the order seen ("" is never recorded).
    nodes: list[str] = field(default_factory=list)


class NodeNameRecorder:
    """Watches all pods for the whole scenario and records each pod's nodeNames."""

    def __init__(self, api: ClusterApi) -> None:
        self.api = api
        self.tracks: dict[str, PodTrack] = {}
        self.relists = 0
        self.errors = 0
        self.last_error = ""
        self._lock = threading.Lock()
        self._task: concurrent.futures.Future[None] | None = None

    def start(self) -> None:
        self._task = asyncio.run_coroutine_threadsafe(self._run(), self.api.loop)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    @property
    def broken(self) -> str | None:
        """Why the watch stopped for good, if it did (then ``moved`` proves nothing)."""
        task = self._task
        if task is None or not task.done() or task.cancelled():
            return None if task is not None else "never started"
        return repr(task.exception())

    def _record(self, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        with self._lock:
            track = self.tracks.setdefault(uid, PodTrack(key(pod)))
            if node and (not track.nodes or track.nodes[-1] != node):
                track.nodes.append(node)

    def moved(self) -> dict[str, list[str]]:
        """Pods whose nodeName changed once set, with the nodes they had."""
        with self._lock:
            return {t.key: list(t.nodes) for t in self.tracks.values() if len(t.nodes) > 1}

    async def _run(self) -> None:
        rv = ""
        while True:
            try:
                if not rv:
                    items, rv = await self.api.list_all("/api/v1/pods")
                    self.relists += 1
                    for pod in items:
                        self._record(pod)
                rv = await self._watch(rv)
            except Gone:
                rv = ""
            except (aiohttp.ClientError, OSError, TimeoutError, ApiError, ValueError) as exc:
                self.errors += 1
                self.last_error = repr(exc)
                await asyncio.sleep(0.2)

    async def _watch(self, rv: str) -> str:
        query = [
            ("watch", "true"),
            ("resourceVersion", rv),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "60"),
        ]
        resp = await self.api.client.call_api(
            "/api/v1/pods",
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=90,
        )
        try:
            if resp.status == 410:
                raise Gone()
            if resp.status != 200:
                raise ApiError(resp.status, "watch refused")
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise ApiError(int(obj.get("code") or 0), str(obj.get("message")))
                if event.get("type") != "BOOKMARK":
                    self._record(obj)
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
        finally:
            resp.release()
        return rv


# -- the final check ---------------------------------------------------------------------


@dataclass(slots=True)
class Verdict:
    problems: list[str] = field(default_factory=list)
    bound_after_s: float | None = None

    def fail(self, what: str) -> None:
        self.problems.append(what)


def _short(items: Iterable[str], limit: int = 8) -> str:
    items = list(items)
    more = f" ... (+{len(items) - limit})" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def wait_bound(api: ClusterApi, keys: set[str], timeout: float) -> tuple[set[str], float]:
    """Waits until every pod of ``keys`` has a nodeName; returns the unbound and the wait."""
    start = time.monotonic()
    unbound = set(keys)
    while True:
        pods = {key(p): p for p in api.pods()}
        unbound = {k for k in keys if not (pods.get(k, {}).get("spec") or {}).get("nodeName")}
        if not unbound or time.monotonic() - start > timeout:
            return unbound, time.monotonic() - start
        time.sleep(0.3)


def check_invariants(
    api: ClusterApi,
    recorder: NodeNameRecorder,
    meant_bound: Iterable[str],
    alive: Mapping[str, Any],
    timeout: float = 90,
) -> Verdict:
    """Every pod meant to be bound is bound; no nodeName ever changed; no node is above its
    allocatable; no pod is bound to a node that does not exist; the operators still run."""
    verdict = Verdict()
    keys = set(meant_bound)
    unbound, waited = wait_bound(api, keys, timeout)
    pods = api.pods()
    if unbound:
        by_key = {key(p): p for p in pods}
        detail = []
        for k in sorted(unbound)[:5]:
            conds = ((by_key.get(k) or {}).get("status") or {}).get("conditions") or []
            msg = next((c.get("message") for c in conds if c.get("type") == "PodScheduled"), None)
            detail.append(f"{k}: {msg or 'no PodScheduled condition'}")
        verdict.fail(
            f"{len(unbound)}/{len(keys)} pods still unbound after {timeout:.0f}s: "
            + "; ".join(detail)
        )
    else:
        verdict.bound_after_s = waited
    if recorder.broken:
        verdict.fail(f"the nodeName recorder stopped: {recorder.broken}")
    moved = recorder.moved()
    if moved:
        verdict.fail(
            f"nodeName changed once set for {len(moved)} pods: "
            + _short(f"{k} {' -> '.join(v)}" for k, v in sorted(moved.items()))
        )
    nodes = {n["metadata"]["name"]: n for n in api.nodes()}
    used: dict[str, dict[str, Decimal]] = {}
    missing = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if node not in nodes:
            missing.append(f"{key(pod)} on {node}")
            continue
        total = used.setdefault(node, {})
        for k, v in pod_requests(pod).items():
            total[k] = total.get(k, Decimal(0)) + v
    if missing:
        verdict.fail(f"{len(missing)} pods bound to missing nodes: {_short(missing)}")
    over = []
    for name, total in sorted(used.items()):
        alloc = (nodes[name].get("status") or {}).get("allocatable") or {}
        for res, amount in total.items():
            if res in alloc and amount > quantity(alloc[res]):
                over.append(f"{name} {res} {amount} > {alloc[res]}")
    if over:
        verdict.fail(f"{len(over)} nodes above allocatable: {_short(over)}")
    dead = [
        f"{name} (exit {proc.returncode})"
        for name, proc in alive.items()
        if proc.poll() is not None
    ]
    if dead:
        verdict.fail(f"operator process(es) not running: {', '.join(dead)}")
    return verdict
