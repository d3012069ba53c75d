"""What a recorder writes, through the ``Api`` under a guard: core/v1 Events (named once, so
that a POST retried after its answer was lost is stored once) and pod status patches."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .api import Api
from .errors import ApiError
from .requests import MERGE_PATCH, STRATEGIC_MERGE_PATCH


class RecordWrites:
    """Events and pod status patches, each sent only while ``guard`` holds."""

    def __init__(self, api: Api, guard: Callable[[], bool]) -> None:
        self.api = api
        self.guard = guard

    async def create_event(self, body: dict[str, Any]) -> str:
        """POST the Event under ``metadata.name`` (a name is made when it has none; an
        AlreadyExists answer means an earlier attempt was stored); returns the name."""
        meta = body["metadata"]
        name = (
            meta.get("name") or f"{body['involvedObject'].get('name', 'object')}.{time.time_ns():x}"
        )
        body = {**body, "metadata": {**meta, "name": name}}
        try:
            await self.api.request(
                "POST",
                f"/api/v1/namespaces/{meta['namespace']}/events",
                body,
                guard=self.guard,
                kind="events",
            )
        except ApiError as exc:
            if exc.status != 409:
                raise
            # AlreadyExists: the POST of a retry whose first answer was lost; stored once.
        return name

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patch an Event (``ApiError`` 404 when it is gone)."""
        await self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/events/{name}",
            patch,
            content_type=MERGE_PATCH,
            guard=self.guard,
            kind="events",
        )

    async def patch_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Strategic-merge ``status`` into the pod's status (conditions merge by type)."""
        await self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": status},
            content_type=STRATEGIC_MERGE_PATCH,
            guard=self.guard,
            kind="status patches",
        )
