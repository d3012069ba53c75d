"""A PodGroup (``scheduling.x-k8s.io/v1alpha1``) as the plugin reads it.

Upstream gets a typed PodGroup from its client; one that does not decode is "not found".
Here a group whose fields are not of their API types reads as ``None``, likewise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from multisched.cache import PodInfo, QuantityError, to_int, to_milli
from multisched.cache.groups import group_of
from multisched.cache.resources import CPU

#: ``util.DefaultWaitTime``: the Permit wait when neither the group nor the args set one.
DEFAULT_WAIT_TIME_SECONDS = 60
#: Go's zero ``time.Time`` (year 1) in Unix seconds: a group without a creationTimestamp.
ZERO_TIME = -62135596800.0


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    #: spec.minResources in the scheduler's units (CPU in millicores); None when unset.
    min_resources: dict[str, int] | None
    schedule_timeout_seconds: int | None
    #: metadata.creationTimestamp in Unix seconds.
    creation_time: float

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def full_name(pod: PodInfo) -> str:
    """``util.GetPodGroupFullName``: "<namespace>/<group>", "" for a pod of no group."""
    group = group_of(pod)
    return f"{pod.namespace}/{group}" if group else ""


def read_pod_group(raw: Mapping[str, Any]) -> PodGroup | None:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    min_member = spec.get("minMember")
    min_member = 0 if min_member is None else min_member  # null decodes to Go's zero
    timeout = spec.get("scheduleTimeoutSeconds")
    if not _is_int(min_member) or (timeout is not None and not _is_int(timeout)):
        return None
    try:
        created = _unix_time(str(meta.get("creationTimestamp") or ""))
        resources = _resources(spec.get("minResources"))
    except (ValueError, TypeError, QuantityError):
        return None
    return PodGroup(
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
        min_member,
        resources,
        timeout,
        created,
    )


def wait_time_seconds(pg: PodGroup | None, schedule_timeout: int) -> int:
    """``util.GetWaitTimeDuration``: the group's scheduleTimeoutSeconds, else the args'
    permitWaitingTimeSeconds, else 60 s."""
    if pg is not None and pg.schedule_timeout_seconds is not None:
        return pg.schedule_timeout_seconds
    if schedule_timeout != 0:
        return schedule_timeout
    return DEFAULT_WAIT_TIME_SECONDS


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _resources(raw: Any) -> dict[str, int] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise TypeError("minResources is not a map")
    return {str(name): to_milli(qty) if name == CPU else to_int(qty) for name, qty in raw.items()}


@lru_cache(maxsize=4096)
def _unix_time(timestamp: str) -> float:
    if not timestamp:
        return ZERO_TIME
    moment = datetime.fromisoformat(timestamp)
    if moment.tzinfo is None:  # RFC 3339 always has an offset; a bare time is read as UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
