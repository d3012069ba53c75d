"""Pending pods of schedulerNames no SchedulerProfile serves (yet).

Anyone who may create pods can create any number of them for a scheduler that does not
exist, so what is kept of each is bounded: its uid, its ``namespace/name`` and its
schedulerName (about 200 bytes, whatever the pod's size). When a profile takes the name,
the pods are listed again, one field-selected list per name, and parsed from that listing.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from multisched.transport import ApiClient, list_pages

from .intake import PODS, UNASSIGNED_PODS

#: The pending pods of one schedulerName, a page at a time.
PendingPodLister = Callable[[str], AsyncGenerator[list[dict[str, Any]], None]]


class OtherSchedulerPod:
    """What finds a pending pod of another scheduler again, and nothing more."""

    __slots__ = ("key", "scheduler_name", "uid")

    def __init__(self, uid: str, key: str, scheduler_name: str) -> None:
        self.uid = uid
        self.key = key
        #: Interned: thousands of pods share a handful of names.
        self.scheduler_name = sys.intern(scheduler_name)

    def __repr__(self) -> str:
        return f"OtherSchedulerPod({self.key!r}, {self.scheduler_name!r})"


def field_value(value: str) -> str:
    """A field selector value, escaped as ``fields.EscapeValue`` escapes it."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def pending_selector(scheduler_name: str) -> str:
    """The unscheduled pods kopf watches, of one schedulerName (a selectable pod field)."""
    return f"{UNASSIGNED_PODS},spec.schedulerName={field_value(scheduler_name)}"


def pending_pod_lister(api_client: ApiClient) -> PendingPodLister:
    """Consistent lists (no resourceVersion): never older than what kopf's watch delivered,
    and answered from the watch cache by the API servers supported (ConsistentListFromCache)."""

    async def pending(scheduler_name: str) -> AsyncGenerator[list[dict[str, Any]], None]:
        async for page in list_pages(
            api_client, PODS, field_selector=pending_selector(scheduler_name)
        ):
            yield page.items

    return pending


def pod_key(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
