"""The few API calls the benchmark makes, as plain JSON over aiohttp.

Models would cost more CPU than the schedulers being measured; the harness shares their cores.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any

import aiohttp

#: Transient answers worth another try while populating (throttling, an etcd leader change).
RETRY_STATUSES = frozenset({429, 500, 503, 504})
ATTEMPTS = 5
#: No call of the benchmark may hang it; a watch may stay quiet as long as it likes.
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=10)
WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10)


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, text: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {text[:300]}")
        self.status = status


class Kube:
    """One aiohttp session against the bench's API server (self-signed, token auth)."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self._token = token
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Kube:
        self._session = aiohttp.ClientSession(
            base_url=self.url,
            connector=aiohttp.TCPConnector(ssl=False, limit=0),
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=REQUEST_TIMEOUT,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use Kube as an async context manager"
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        allow: Iterable[int] = (),
    ) -> dict[str, Any]:
        """The decoded answer; statuses in ``allow`` come back as ``{}``, others raise."""
        headers = {"Content-Type": content_type}
        for attempt in range(ATTEMPTS):
            try:
                async with self.session.request(
                    method, path, json=body, params=params, headers=headers
                ) as resp:
                    if resp.status < 300:
                        answer: dict[str, Any] = await resp.json()
                        return answer
                    text = await resp.text()
                    if resp.status in allow:
                        return {}
                    if resp.status not in RETRY_STATUSES or attempt == ATTEMPTS - 1:
                        raise ApiError(method, path, resp.status, text)
            except (TimeoutError, aiohttp.ClientConnectionError):
                if attempt == ATTEMPTS - 1:
                    raise
            await asyncio.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")

    async def create(self, path: str, body: Mapping[str, Any], exist_ok: bool = False) -> None:
        await self.request("POST", path, body, allow=(409,) if exist_ok else ())

    async def create_many(
        self, path: str, bodies: Iterable[Mapping[str, Any]], concurrency: int
    ) -> int:
        """POSTs every body with at most ``concurrency`` requests in flight; the count."""
        items = iter(bodies)
        done = 0

        async def worker() -> None:
            nonlocal done
            for body in items:  # shared iterator: each body goes to exactly one worker
                await self.create(path, body)
                done += 1

        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
        return done

    async def patch_status(self, path: str, status: Mapping[str, Any]) -> None:
        await self.request(
            "PATCH",
            f"{path}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )

    async def list(
        self, path: str, label_selector: str = "", limit: int = 0, field_selector: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item (paginated when ``limit``) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params = {"labelSelector": label_selector} if label_selector else {}
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit:
            params["limit"] = str(limit)
        while True:
            page = await self.request("GET", path, params=params)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion", ""))
            params = {**params, "continue": meta["continue"]}

    async def any_left(self, path: str, label_selector: str) -> bool:
        params = {"limit": "1", "labelSelector": label_selector}
        page = await self.request("GET", path, params=params)
        return bool(page.get("items"))

    async def delete_collection(self, path: str, label_selector: str, timeout: float) -> bool:
        """Deletes at once (grace 0: no kubelet will ever confirm) and waits until gone."""
        await self.request(
            "DELETE",
            path,
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
            params={"labelSelector": label_selector},
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if not await self.any_left(path, label_selector):
                return True
            await asyncio.sleep(0.5)
        return False

    async def watch(
        self, path: str, label_selector: str, resource_version: str
    ) -> AsyncGenerator[bytes, None]:
        """Raw event lines of one watch stream from ``resource_version``."""
        params = {
            "watch": "1",
            "labelSelector": label_selector,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3600",
        }
        async with self.session.get(path, params=params, timeout=WATCH_TIMEOUT) as resp:
            if resp.status != 200:
                raise ApiError("WATCH", path, resp.status, await resp.text())
            async for line in resp.content:
                if line.strip():
                    yield line
