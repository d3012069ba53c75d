"""The real operator (kopf + handlers + runtime) in-process against kmock's Kubernetes emulator.

kmock stores what it is sent and streams it to watchers, but it is not an API server: it
sets no uid/resourceVersion/generation (``Cluster`` does), ignores label selectors, merges
patches as plain dicts (lists are replaced, as a JSON merge patch would), and has no
``pods/binding`` subresource - ``Cluster`` scripts one that sets ``spec.nodeName`` like the
API server does, and can be told to answer 409 instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import kopf
import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response

import multisched.operator  # noqa: F401 - registers the handlers
from kmock_support import PROFILES, declare_kinds, namespaces_listable, write_kubeconfig
from multisched.operator.options import Options
from multisched.operator.runtime import Runtime

_uids = itertools.count(1)


class Cluster:
    """Writes through kmock's HTTP API (so watchers see them) with the fields it omits."""

    def __init__(self, kmock: KubernetesEmulator) -> None:
        self.kmock = kmock
        #: Answer the next bindings with these HTTP statuses instead of binding.
        self.binding_failures: list[int] = []
        self.bindings: list[dict[str, Any]] = []
        self.lease_server = LeaseServer()
        #: Called with each binding request first (to stage a race, for example).
        self.before_bind: Callable[[Request], Awaitable[None]] | None = None

    # -- paths ----------------------------------------------------------------------------

    @staticmethod
    def path(kind: str, name: str = "", namespace: str = "") -> str:
        base = {
            "pods": "/api/v1",
            "nodes": "/api/v1",
            "namespaces": "/api/v1",
            "events": "/api/v1",
            "schedulerprofiles": "/apis/multisched.dev/v1alpha1",
        }[kind]
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{kind}" + (f"/{name}" if name else "")

    # -- writes ---------------------------------------------------------------------------

    async def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        n = next(_uids)
        meta.setdefault("uid", f"uid-{meta['name']}-{n}")
        meta.setdefault("resourceVersion", str(n))
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", f"2024-01-01T00:00:{n % 60:02d}Z")
        async with self.kmock.post(self.path(kind, namespace=meta.get("namespace", "")), json=obj):
            pass
        return obj

    async def patch(self, kind: str, name: str, patch: dict[str, Any], namespace: str = "") -> None:
        async with self.kmock.patch(self.path(kind, name, namespace), json=patch) as resp:
            assert resp.status == 200, await resp.text()

    async def edit_spec(self, kind: str, name: str, spec: dict[str, Any]) -> None:
        """A spec edit as the API server records it: the whole spec, generation + 1."""
        current = self.get(kind, name)
        generation = int(current["metadata"].get("generation", 1)) + 1
        # kmock merges dicts: clear the old spec first so removed fields go away.
        await self.patch(kind, name, {"spec": None})
        await self.patch(kind, name, {"metadata": {"generation": generation}, "spec": spec})

    async def delete(self, kind: str, name: str, namespace: str = "") -> None:
        async with self.kmock.delete(self.path(kind, name, namespace)) as resp:
            assert resp.status == 200, await resp.text()

    # -- reads ----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        resource = PROFILES if kind == "schedulerprofiles" else f"v1/{kind}"
        return dict(self.kmock.objects[resource, namespace, name].raw)

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        found = []
        for (resource, _, _), obj in self.kmock.objects.items():
            if resource.plural != "events" or obj.deleted:
                continue
            raw = dict(obj.raw)
            if name is None or raw["involvedObject"]["name"] == name:
                found.append(raw)
        return found

    def requests_for(self, pod: str) -> list[Request]:
        """Every write about one pod: to it, creating it, or an event about it."""

        def about(r: Request) -> bool:
            data = r.data if isinstance(r.data, dict) else {}
            return pod in (
                r.name,
                (data.get("metadata") or {}).get("name"),
                (data.get("involvedObject") or {}).get("name"),
            )

        return [r for r in self.kmock[lambda r: r.method != "GET"] if about(r)]

    # -- the scripted binding subresource -------------------------------------------------

    async def _bind(self, request: Request) -> Any:
        body = request.data
        self.bindings.append(body)
        if self.before_bind is not None:
            await self.before_bind(request)
        if self.binding_failures:
            status = self.binding_failures.pop(0)
            return Response(
                status=status,
                payload={
                    "apiVersion": "v1",
                    "kind": "Status",
                    "status": "Failure",
                    "code": status,
                    "message": f'Operation cannot be fulfilled on pods/binding "{request.name}"',
                },
            )
        await self.patch(
            "pods",
            str(request.name),
            {"spec": {"nodeName": body["target"]["name"]}},
            namespace=str(request.namespace),
        )
        return Response(
            status=201,
            payload={"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 201},
        )

    async def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 8.0) -> Any:
        """Poll ``check`` until truthy; the operator runs in the same loop meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = check()
            if result:
                return result
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what} (last: {result!r})")
            await asyncio.sleep(0.02)


class LeaseServer:
    """Leases with resourceVersion compare-and-swap (kmock has neither PUT nor versions).

    Every answer is a ``Response`` with an explicit status: kmock 0.8 copies the status of a
    returned ``Response`` onto the reaction, so a bare dict after a 404 would go out as 404.
    """

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0

    @staticmethod
    def matches(request: Request) -> bool:
        return request.resource is not None and request.resource.plural == "leases"

    @staticmethod
    def _status(code: int, message: str) -> Response:
        payload = {"kind": "Status", "status": "Failure", "code": code, "message": message}
        return Response(status=code, payload=payload)

    def __call__(self, request: Request) -> Any:
        if request.method == "GET":
            lease = self.leases.get((str(request.namespace), str(request.name)))
            return Response(status=200, payload=lease) if lease else self._status(404, "not found")
        body = copy.deepcopy(request.data)
        key = (str(request.namespace), body["metadata"]["name"])
        current = self.leases.get(key)
        if request.method == "POST" and current is not None:
            return self._status(409, "already exists")
        if request.method == "PUT" and (
            current is None
            or body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]
        ):
            return self._status(409, "the object has been modified")
        self.version += 1
        body["metadata"]["resourceVersion"] = str(self.version)
        self.leases[key] = body
        return Response(status=201 if request.method == "POST" else 200, payload=body)


@pytest.fixture(autouse=True)
def _namespaces_listable(monkeypatch: pytest.MonkeyPatch) -> None:
    namespaces_listable(monkeypatch)


@pytest.fixture
async def cluster(kmock: KubernetesEmulator) -> Cluster:
    declare_kinds(kmock)
    c = Cluster(kmock)
    kmock[lambda r: r.method == "POST" and r.subresource == "binding"] << c._bind
    kmock[LeaseServer.matches] << c.lease_server
    await c.create("namespaces", {"metadata": {"name": "default"}})
    return c


def kubeconfig(tmp_path: Path, url: str) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", url)


OperatorFactory = Callable[..., "contextlib.AbstractAsyncContextManager[Runtime]"]
OperatorsFactory = Callable[..., "contextlib.AbstractAsyncContextManager[list[Runtime]]"]


@pytest.fixture
def start_operators(cluster: Cluster, tmp_path: Path) -> OperatorsFactory:
    """``async with start_operators(n) as runtimes``: n kopf operators running our handlers,
    started one after the other, each with its caches synced.

    They are stopped together: kopf's shutdown waits for every task created since it
    started, which in a shared event loop includes the other operators' tasks.
    """

    @contextlib.asynccontextmanager
    async def start(count: int = 1, **options: Any) -> AsyncIterator[list[Runtime]]:
        opts = Options(
            **{
                "http_port": 0,
                "secure_port": 0,
                "kubeconfig": str(kubeconfig(tmp_path, str(cluster.kmock.url).rstrip("/"))),
                **options,
            }
        )
        stop = asyncio.Event()
        tasks: list[asyncio.Task[None]] = []
        runtimes: list[Runtime] = []
        try:
            for _ in range(count):
                memo = kopf.Memo(options=opts)
                task = asyncio.create_task(
                    kopf.operator(
                        clusterwide=True,
                        standalone=True,
                        memo=memo,
                        stop_flag=stop,
                        settings=kopf.OperatorSettings(),
                    )
                )
                tasks.append(task)
                runtimes.append(
                    await cluster.wait_for(
                        "the operator to sync", functools.partial(_synced, memo, task)
                    )
                )
            yield runtimes
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)

    return start


@pytest.fixture
def start_operator(start_operators: OperatorsFactory) -> OperatorFactory:
    """``async with start_operator() as runtime``: one operator."""

    @contextlib.asynccontextmanager
    async def start(**options: Any) -> AsyncIterator[Runtime]:
        async with start_operators(1, **options) as (runtime,):
            yield runtime

    return start


def _synced(memo: kopf.Memo, task: asyncio.Task[None]) -> Runtime | None:
    if task.done():
        task.result()  # raise what stopped it
        raise AssertionError("the operator exited")
    runtime = memo.get("runtime")
    return runtime if isinstance(runtime, Runtime) and runtime.synced else None
