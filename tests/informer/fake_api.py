"""A scripted list-and-watch API on loopback: real HTTP, every answer chosen by the test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s


def obj(name: str, rv: int, uid: str | None = None, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": str(rv)}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


class FakeApi:
    """``/api/v1/nodes``: LIST pages ``objects``; each WATCH plays the next script entry.

    A script entry is an HTTP status (answered with a Status body), or a list of events
    (dicts or raw bytes, sent one line each) after which the stream closes, or stays open
    when the list ends with ``...``.
    """

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.list_rv = "1"
        self.list_status = 200
        self.watches: list[Any] = []
        self.requests: list[dict[str, str]] = []
        self.list_gate: asyncio.Event | None = None
        #: Writes a list page's JSON (default: kind, metadata, items, as the API server does).
        self.render_list: Callable[[dict[str, Any]], bytes] | None = None
        self.server: TestServer | None = None

    def put(self, *objs: dict[str, Any]) -> None:
        for o in objs:
            self.objects[o["metadata"]["name"]] = o

    @property
    def list_requests(self) -> list[dict[str, str]]:
        return [r for r in self.requests if "watch" not in r]

    @property
    def watch_requests(self) -> list[dict[str, str]]:
        return [r for r in self.requests if "watch" in r]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.requests.append(query)
        if "watch" not in query:
            return await self._list(query)
        script = self.watches.pop(0) if self.watches else ["..."]
        if isinstance(script, int):
            return _status(script)
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for event in script:
            if event == "...":
                await asyncio.sleep(3600)
            raw = event if isinstance(event, bytes) else json.dumps(event).encode()
            await resp.write(raw + b"\n")
        return resp

    async def _list(self, query: dict[str, str]) -> web.StreamResponse:
        if self.list_gate is not None:
            await self.list_gate.wait()
        if self.list_status != 200:
            return _status(self.list_status)
        names = sorted(self.objects)
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or len(names) or 1)
        page = names[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": self.list_rv}
        if start + limit < len(names):
            meta["continue"] = str(start + limit)
        body = {"kind": "NodeList", "metadata": meta, "items": [self.objects[n] for n in page]}
        if self.render_list is not None:
            return web.Response(body=self.render_list(body), content_type="application/json")
        return web.json_response(body)

    async def __aenter__(self) -> k8s.ApiClient:
        app = web.Application()
        app.router.add_get("/api/v1/nodes", self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        self.api_client = k8s.ApiClient(
            k8s.Configuration(host=str(self.server.make_url("")).rstrip("/"))
        )
        return self.api_client

    async def __aexit__(self, *exc: object) -> None:
        await self.api_client.close()
        assert self.server is not None
        await self.server.close()


def _status(code: int) -> web.Response:
    body = {"kind": "Status", "status": "Failure", "code": code, "reason": "Scripted"}
    if code == 410:
        body["reason"] = "Expired"
        body["message"] = "too old resource version"
    return web.json_response(body, status=code)


class Recorder:
    """The handlers: what the informer told the store, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.live: dict[str, dict[str, Any]] = {}

    def upsert(self, o: dict[str, Any]) -> None:
        self.seen.append(("upsert", o["metadata"]["name"]))
        self.live[o["metadata"]["name"]] = o

    def delete(self, o: dict[str, Any]) -> None:
        self.seen.append(("delete", o["metadata"]["name"]))
        self.live.pop(o["metadata"]["name"], None)


async def until(what: str, check: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def running(coro: Any) -> AsyncIterator[asyncio.Task[Any]]:
    task = asyncio.ensure_future(coro)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
