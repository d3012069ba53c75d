"""What the running scheduler holds, as the secure port shows it (``/debug/queue``,
``/configz``, ``/debug/cache``) and SIGUSR2 logs it (upstream's cache debugger dumps the
cache comparison and the pending pods on that signal).

Everything here reads the live objects; nothing is recomputed. ``compare_with_api`` lists
the API a page at a time and keeps only what the comparison needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from multisched.config import component_config
from multisched.framework import QueuedPodInfo
from multisched.meta import time_at
from multisched.scheduler import Scheduler
from multisched.scheduler.introspect import (
    QUEUE_NAMES,
    CacheDiff,
    EngineView,
    gang_line,
    quota_line,
)
from multisched.transport import JSON, METADATA_ONLY, ApiClient, ApiError, list_pages

from .handlers_sync import NOT_ACCEPTABLE
from .intake import ASSIGNED_PODS, NODES, PODS
from .profiles import ProfileBook

QUEUES = QUEUE_NAMES
#: Pods listed by ``/debug/queue`` without ``?pod=`` (the counts are always complete).
DEFAULT_LIMIT = 500
#: The most pods one answer lists, whatever ``limit`` asks: the view is built in memory.
MAX_LIMIT = 5000
#: Assigned pods per page of ``/debug/cache``'s listing: each page is decoded whole (a
#: real pod ~25 KB, ~4x that while orjson decodes), then cut down to uid, key and node.
#: 100 keeps a comparison of 10,000 pods ~16 MB above rest (500: ~70 MB), and no slower.
PAGE_SIZE = 100


def _stamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time_at(seconds)


def pod_entry(engine: EngineView, where: str, qpi: QueuedPodInfo) -> dict[str, Any]:
    """One queued pod: where it is, its attempts, why it failed last, what woke it last
    and what would wake it next."""
    pod = qpi.pod
    entry: dict[str, Any] = {
        "pod": pod.key,
        "uid": pod.uid,
        "schedulerName": pod.scheduler_name,
        "queue": where,
        "priority": pod.priority,
        "attempts": qpi.attempts,
        "firstSeen": _stamp(qpi.first_seen),
        "unschedulablePlugins": sorted(qpi.unschedulable_plugins),
        "message": qpi.message,
        "wokenBy": qpi.woken_by,
        "wokenAt": _stamp(qpi.woken_at),
    }
    if where in ("unschedulable", "gated"):
        entry["waitingFor"] = engine.waits_for(qpi)
    if where == "backoff":
        entry["backoffRemainingSeconds"] = round(engine.backoff_remaining(qpi), 3)
    nominated = engine.nominated_node(pod.uid)
    if nominated:
        entry["nominatedNodeName"] = nominated
    return entry


def queue_view(
    engine: EngineView,
    *,
    leading: bool,
    pod: str | None = None,
    limit: int = DEFAULT_LIMIT,
    notes: Callable[[QueuedPodInfo], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Counts per profile and queue, and the pods (``pod``: only that namespace/name)."""
    counts: dict[str, dict[str, int]] = {}
    pods: list[dict[str, Any]] = []
    total = 0
    for where, qpi in engine.queued_pods():
        per = counts.setdefault(qpi.pod.scheduler_name, dict.fromkeys(QUEUES, 0))
        per[where] += 1
        if pod is not None and qpi.pod.key != pod:
            continue
        total += 1
        if len(pods) < limit:
            entry = pod_entry(engine, where, qpi)
            if notes is not None:
                entry.update(notes(qpi))
            pods.append(entry)
    view: dict[str, Any] = {"leading": leading, "profiles": counts, "pods": pods}
    if total > len(pods):
        view["truncated"] = total - len(pods)
    if pod is not None and not pods:
        view["notQueued"] = _not_queued(engine, pod)
    return view


def _not_queued(engine: EngineView, key: str) -> str:
    cached = engine.cached_pod(key)
    if cached is not None:
        node, assumed = cached
        state = "assumed on" if assumed else "bound to"
        return f"pod {key} is not in the queue: it is {state} {node}"
    return (
        f"pod {key} is not in the queue: it is unknown to this scheduler (no such pending "
        "pod, or its schedulerName is not served here)"
    )


def configz(book: ProfileBook) -> dict[str, Any]:
    """The resolved configuration in force and, per SchedulerProfile, the generation and
    revision it comes from (kube-scheduler's ``/configz`` shows ``componentconfig``)."""
    combined = book.combined
    objects = []
    for obj in sorted(book.objects.values(), key=lambda o: o.order):
        verdict = combined.verdicts.get(obj.name)
        objects.append(
            {
                "name": obj.name,
                "generation": obj.generation,
                "appliedGeneration": obj.applied_generation,
                "revision": obj.revision[1] if obj.revision else None,
                "ready": bool(verdict and verdict.ready),
                "reason": verdict.reason if verdict else None,
                "schedulerNames": sorted(
                    name for name, owner in combined.owners.items() if owner == obj.name
                ),
            }
        )
    return {"componentconfig": component_config(combined.config), "schedulerProfiles": objects}


def assigned_pods(
    items: Iterable[Mapping[str, Any]], into: dict[str, tuple[str, str]] | None = None
) -> dict[str, tuple[str, str]]:
    """uid -> (namespace/name, nodeName) of listed pods, for ``compare`` (added to ``into``)."""
    out: dict[str, tuple[str, str]] = {} if into is None else into
    for item in items:
        meta = item.get("metadata") or {}
        node = (item.get("spec") or {}).get("nodeName")
        if meta.get("uid") and node:
            out[meta["uid"]] = (f"{meta.get('namespace')}/{meta.get('name')}", node)
    return out


def node_names(items: Iterable[Mapping[str, Any]]) -> set[str]:
    return {str((n.get("metadata") or {}).get("name")) for n in items}


async def compare_with_api(engine: EngineView, api_client: ApiClient) -> CacheDiff:
    """The cache against a fresh listing of nodes and assigned pods, read a page at a time:
    of each page only what ``compare`` needs is kept (a node's name; a pod's uid, key and
    node), so memory stays flat in the cluster's size (a decoded pod is tens of KB).

    No ``resourceVersion=0``: the watch cache ignores ``limit`` for it (apiserver
    ``cacher.go`` ``computeListLimit``) and would answer every pod in one page. A plain
    paginated list is a consistent read that v1.31+ API servers answer from the watch
    cache too (ConsistentListFromCache; its continue pages from cache snapshots,
    ListFromCacheSnapshot, v1.34+), and is what a comparison wants: the state now.
    """
    names: set[str] = set()
    accept = METADATA_ONLY
    while True:
        try:
            async for page in list_pages(api_client, NODES, accept=accept):
                names |= node_names(page.items)
            break
        except ApiError as exc:  # a server without metadata-only lists: whole nodes
            if exc.status != NOT_ACCEPTABLE or accept == JSON:
                raise
            accept, names = JSON, set()
    pods: dict[str, tuple[str, str]] = {}
    async for page in list_pages(
        api_client, PODS, field_selector=ASSIGNED_PODS, page_size=PAGE_SIZE
    ):
        assigned_pods(page.items, into=pods)
    return engine.compare(names, pods)


def diff_document(diff: CacheDiff) -> dict[str, Any]:
    return {
        "consistent": diff.consistent,
        "missedNodes": diff.missed_nodes,
        "redundantNodes": diff.redundant_nodes,
        "missedPods": diff.missed_pods,
        "redundantPods": diff.redundant_pods,
        "movedPods": {k: {"cache": c, "api": a} for k, (c, a) in diff.moved_pods.items()},
        "assumedPods": diff.assumed_pods,
        "lines": diff.lines(),
    }


def scheduler_notes(scheduler: Scheduler, qpi: QueuedPodInfo) -> dict[str, Any]:
    """A pod's gang, its namespace's quota, and its wait at Permit, when it has them."""
    out: dict[str, Any] = {}
    gang = gang_line(scheduler, qpi.pod)
    if gang:
        out["gang"] = gang
    quota = quota_line(scheduler, qpi.pod.namespace)
    if quota:
        out["quota"] = quota
    for fwk in scheduler.profiles.values():
        waiting = fwk.get_waiting_pod(qpi.pod.uid)
        if waiting is not None:
            out["permit"] = {
                "waitingFor": waiting.pending_plugins,
                "secondsLeft": round(waiting.seconds_left(), 1),
                "node": waiting.pod.node_name,
            }
    return out
