"""One line each on what a gang is waiting for and how much of a quota is used, read from a
scheduler's live state (``explain``, ``/debug/queue``)."""

from __future__ import annotations

from multisched.cache import PodInfo, Resource
from multisched.cache.groups import group_of
from multisched.cache.resources import format_amount

from .scheduler import Scheduler


def gang_line(scheduler: Scheduler, pod: PodInfo) -> str | None:
    """``gang team-a/train: 5 of 8 assumed, waiting at Permit, 41 s left``; None for a
    pod in no group."""
    group = group_of(pod)
    if not group:
        return None
    name = f"{pod.namespace}/{group}"
    groups = scheduler.cache.groups
    obj = groups.pod_group(pod.namespace, group)
    if obj is None:
        return f"gang {name}: no such PodGroup"
    min_member = (obj.get("spec") or {}).get("minMember") or 0
    members = groups.members(pod.namespace, group)
    placed = sum(1 for m in members if scheduler.cache.get_pod(m.uid) is not None)
    held = [
        w
        for _, w in scheduler.held_at_permit()
        if w.pod.namespace == pod.namespace and group_of(w.pod) == group
    ]
    if held:
        left = min(w.seconds_left() for w in held)
        return (
            f"gang {name}: {placed} of {min_member} assumed, waiting at Permit, {left:.0f} s left"
        )
    return f"gang {name}: {placed} of {min_member} assumed or bound, {len(members)} pods exist"


def quota_line(scheduler: Scheduler, namespace: str) -> str | None:
    """``quota team-a/q: cpu 3 used (min 2, max 4)``: what the namespace's pods on nodes
    request against its ElasticQuota; None without one."""
    quota = scheduler.cache.groups.quota_for(namespace)
    if quota is None:
        return None
    spec = quota.get("spec") or {}
    try:
        least, most = Resource.from_list(spec.get("min")), Resource.from_list(spec.get("max"))
    except ValueError as exc:
        return f"quota {namespace}: unreadable ({exc})"
    used = scheduler.cache.snapshot.namespace_requests(namespace)
    names = sorted({*(spec.get("min") or {}), *(spec.get("max") or {})})
    parts = []
    for res in names:
        bounds = [
            f"{word} {format_amount(res, r.get(res))}"
            for word, r, given in (("min", least, spec.get("min")), ("max", most, spec.get("max")))
            if res in (given or {})
        ]
        parts.append(f"{res} {format_amount(res, used.get(res))} used ({', '.join(bounds)})")
    name = (quota.get("metadata") or {}).get("name")
    return f"quota {namespace}/{name}: " + "; ".join(parts)
