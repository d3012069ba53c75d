"""Requests through kubernetes_asyncio's ``call_api``: one JSON request, one paginated LIST
(limit/continue) of a kind, as plain JSON objects, and one WATCH stream, line by line.

The generated models of kubernetes_asyncio are slow to build and lossy (MicroTime), so
bodies are decoded as plain JSON only; the ApiClient still does auth, TLS and refresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from .errors import ApiError, translated
from .kubeconfig import ApiClient

#: Objects per page: big enough to keep round trips few, small enough for the API server.
DEFAULT_PAGE_SIZE = 500
JSON = "application/json"
#: A list of the objects' metadata only (``PartialObjectMetadataList``), as client-go's
#: metadata informers ask for it: a fraction of the bytes, for a caller that needs no spec.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class Resource:
    """A kind's REST coordinates: ``group`` is "" for the core API."""

    group: str
    version: str
    plural: str

    def path(self, namespace: str = "") -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{self.plural}"

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[dict[str, Any]]
    #: The collection's resourceVersion: a watch from here misses nothing.
    resource_version: str


def decode_json(raw: bytes) -> Any:
    """orjson (C, three times the standard library's speed on a list of pods), or the
    standard library for what orjson refuses and JSON allows: nesting beyond 1,024 levels,
    integers beyond 64 bits. Raises ValueError or RecursionError on what neither reads."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def raise_for_status(status: int, raw: bytes, fallback: str) -> None:
    if 200 <= status < 300:
        return
    reason = message = ""
    try:
        data = decode_json(raw) if raw else {}
    except (ValueError, RecursionError):
        data = {}
    if isinstance(data, dict):
        reason, message = str(data.get("reason") or ""), str(data.get("message") or "")
    raise ApiError(status, message or raw.decode(errors="replace")[:200], reason or fallback)


async def request_json(
    api_client: ApiClient,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    query: list[tuple[str, str]] | None = None,
    timeout: float = 30.0,
    content_type: str = JSON,
) -> dict[str, Any]:
    """One request with a JSON body and answer; a non-2xx answer is ``ApiError``."""
    status, raw = await request_raw(
        api_client, method, path, body, query=query, timeout=timeout, content_type=content_type
    )
    return _object(status, raw, f"{method} {path}")


def _object(status: int, raw: bytes, what: str) -> dict[str, Any]:
    data = decode_json(raw) if raw else {}
    if not isinstance(data, dict):
        raise ApiError(status, f"{what}: not a JSON object", "InvalidResponse")
    return data


async def request_raw(
    api_client: ApiClient,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    query: list[tuple[str, str]] | None = None,
    timeout: float = 30.0,
    content_type: str = JSON,
    accept: str = JSON,
) -> tuple[int, bytes]:
    """``request_json``'s answer as the status and the bytes the server sent (a 2xx answer)."""
    headers = {"Accept": accept}
    if body is not None:
        headers["Content-Type"] = content_type
    try:
        resp = await api_client.call_api(
            path,
            method,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
        try:
            raw: bytes = await resp.read()
        finally:
            resp.release()
    except aiohttp.ClientError as exc:
        raise translated(exc) from exc
    raise_for_status(resp.status, raw, str(resp.reason or ""))
    return resp.status, raw


async def list_pages(
    api_client: ApiClient,
    resource: Resource,
    *,
    field_selector: str = "",
    label_selector: str = "",
    page_size: int = DEFAULT_PAGE_SIZE,
    timeout: float = 60.0,
    accept: str = JSON,
    resource_version: str = "",
) -> AsyncIterator[ListResult]:
    """Every object of the kind, all namespaces, one page at a time, so that a caller can
    digest a page and let it go before the next one arrives. All pages are one snapshot:
    they carry the same resourceVersion.

    The next page is asked for as soon as a page's continue token is read from the head of
    its answer, before the page is decoded and handed over: the API server reads the next
    page while this one is decoded and digested (a listing of 10,000 pods is 20 pages).

    A continue token that expired mid-list (410) is raised to the caller, which lists
    again from the start, as the reflector does. ``accept``: ``METADATA_ONLY`` lists the
    objects' metadata alone. ``resource_version="0"``: any recent state, which the API
    server answers from its watch cache instead of reading every object of the kind from
    etcd to apply a field selector (as the reflector's first list asks for it).
    """

    def fetch(token: str) -> asyncio.Task[tuple[int, bytes]]:
        query: list[tuple[str, str]] = [("limit", str(page_size))]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if token:
            query.append(("continue", token))
        elif resource_version:
            query.append(("resourceVersion", resource_version))
        request = request_raw(
            api_client, "GET", resource.path(), query=query, timeout=timeout, accept=accept
        )
        return asyncio.ensure_future(request)

    pending: asyncio.Task[tuple[int, bytes]] | None = fetch("")
    try:
        while pending is not None:
            status, raw = await pending
            early = continue_token(raw)
            pending = fetch(early) if early else None
            if pending is not None:
                await asyncio.sleep(0)  # the request goes out now, not after this page
            page = _object(status, raw, f"GET {resource.path()}")
            del raw
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if token != early:  # the head was read wrong: ask for the page the list names
                if pending is not None:
                    await _cancelled(pending)
                pending = fetch(token) if token else None
            items = [item for item in page.get("items") or () if isinstance(item, dict)]
            del page
            yield ListResult(items, str(meta.get("resourceVersion") or ""))
    finally:
        if pending is not None:  # the caller stopped early: the next page is not wanted
            await _cancelled(pending)


async def _cancelled(task: asyncio.Task[tuple[int, bytes]]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


#: A list's ``metadata`` comes before its items (the API server writes the fields in
#: order); its continue token is base64, which JSON writes without escapes.
_CONTINUE = re.compile(
    rb'\s*\{\s*(?:"(?:kind|apiVersion)"\s*:\s*"[^"]*"\s*,\s*)*'
    rb'"metadata"\s*:\s*\{[^{}]*?"continue"\s*:\s*"([A-Za-z0-9+/=_-]+)"'
)


def continue_token(raw: bytes) -> str:
    """The continue token at the head of a list's answer ("" when none is found there; the
    decoded list is the authority either way)."""
    match = _CONTINUE.match(raw, 0, 4096)
    return match.group(1).decode() if match else ""


async def list_objects(
    api_client: ApiClient,
    resource: Resource,
    *,
    field_selector: str = "",
    label_selector: str = "",
    page_size: int = DEFAULT_PAGE_SIZE,
    timeout: float = 60.0,
) -> ListResult:
    """Every object of the kind, all namespaces, in one list (see ``list_pages``)."""
    items: list[dict[str, Any]] = []
    resource_version = ""
    async for page in list_pages(
        api_client,
        resource,
        field_selector=field_selector,
        label_selector=label_selector,
        page_size=page_size,
        timeout=timeout,
    ):
        items.extend(page.items)
        resource_version = page.resource_version or resource_version
    return ListResult(items, resource_version)


class WatchStream:
    """An open WATCH's answer (200), read line by line."""

    __slots__ = ("_resp",)

    def __init__(self, resp: Any) -> None:
        self._resp = resp

    async def lines(self, on_line: Callable[[bytes], None]) -> int:
        """Hand every non-blank line (one watch event's JSON) to ``on_line`` as it comes,
        until the server ends the stream; the number of lines handed over. What
        ``on_line`` raises ends the stream and is raised here."""
        count = 0
        buffer = bytearray()
        try:
            async for chunk in self._resp.content.iter_any():
                buffer += chunk
                start = 0
                while (end := buffer.find(b"\n", start)) >= 0:
                    line = bytes(buffer[start:end])
                    start = end + 1
                    if line.strip():
                        count += 1
                        on_line(line)
                del buffer[:start]
        except aiohttp.ClientError as exc:
            raise translated(exc) from exc
        return count


@contextlib.asynccontextmanager
async def watch(
    api_client: ApiClient,
    resource: Resource,
    query: list[tuple[str, str]],
    *,
    connect_timeout: float,
    read_timeout: float,
) -> AsyncIterator[WatchStream]:
    """A WATCH of the kind (``query`` holds ``watch=true`` and the rest), open while the
    block runs. A refusal (not 2xx) is ``ApiError``, raised before the block. The server
    ends the stream when the query's timeout is up; ``read_timeout`` only catches a server
    that went silent without closing the connection."""
    timeouts = aiohttp.ClientTimeout(
        total=None, connect=connect_timeout, sock_connect=connect_timeout, sock_read=read_timeout
    )
    try:
        resp = await api_client.call_api(
            resource.path(),
            "GET",
            query_params=query,
            header_params={"Accept": JSON},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeouts,
        )
    except aiohttp.ClientError as exc:
        raise translated(exc) from exc
    try:
        if resp.status != 200:
            try:
                raw = await resp.read()
            except aiohttp.ClientError as exc:
                raise translated(exc) from exc
            raise_for_status(resp.status, raw, str(resp.reason or ""))
        yield WatchStream(resp)
    finally:
        resp.release()
