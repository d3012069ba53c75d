"""scheduler-plugins' kinds as the gang and quota plugins read them: PodGroups
(``scheduling.x-k8s.io/v1alpha1``, Coscheduling) and ElasticQuotas (CapacityScheduling),
and the pods of each group.

One store, fed by the informers (or simulate's input) like the volume store. A pod belongs
to a group by the label ``scheduling.x-k8s.io/pod-group`` (the group's name, in the pod's
namespace); every pod the scheduler knows of is tracked, pending, bound or terminating, until it is
deleted or finishes, as scheduler-plugins' pod lister counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .pod_info import PodInfo

POD_GROUP = "PodGroup"
ELASTIC_QUOTA = "ElasticQuota"
GROUP_KINDS = (POD_GROUP, ELASTIC_QUOTA)
#: scheduler-plugins' ``v1alpha1.PodGroupLabel``.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
API_GROUP = "scheduling.x-k8s.io"
API_VERSION = f"{API_GROUP}/v1alpha1"

Obj = Mapping[str, Any]


def _group_key(raw: Obj) -> str:
    """``namespace/name`` of a PodGroup or ElasticQuota (both namespaced: "default" when
    unset)."""
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def group_of(pod: PodInfo) -> str:
    """The pod's group name ("" when it belongs to none)."""
    return pod.labels.get(POD_GROUP_LABEL, "")


class GroupStore:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, Obj]] = {kind: {} for kind in GROUP_KINDS}
        #: (namespace, group) -> uid -> pod.
        self._members: dict[tuple[str, str], dict[str, PodInfo]] = {}
        self._group_of: dict[str, tuple[str, str]] = {}
        #: namespace -> name -> ElasticQuota: the one that counts is picked per namespace.
        self._quotas: dict[str, dict[str, Obj]] = {}

    # -- objects --------------------------------------------------------------------------

    def upsert(self, kind: str, raw: Obj) -> None:
        key = _group_key(raw)
        self._objects[kind][key] = raw
        if kind == ELASTIC_QUOTA:
            namespace, name = key.split("/", 1)
            self._quotas.setdefault(namespace, {})[name] = raw

    def delete(self, kind: str, raw: Obj) -> None:
        key = _group_key(raw)
        self._objects[kind].pop(key, None)
        if kind == ELASTIC_QUOTA:
            namespace, name = key.split("/", 1)
            named = self._quotas.get(namespace)
            if named is not None:
                named.pop(name, None)
                if not named:
                    del self._quotas[namespace]

    def has(self, kind: str, raw: Obj) -> bool:
        return _group_key(raw) in self._objects[kind]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._objects[kind].get(f"{namespace}/{name}")

    def all(self, kind: str) -> Iterable[Obj]:
        return self._objects[kind].values()

    def pod_group(self, namespace: str, name: str) -> Obj | None:
        return self._objects[POD_GROUP].get(f"{namespace}/{name}")

    def pod_group_of(self, pod: PodInfo) -> Obj | None:
        group = group_of(pod)
        return self.pod_group(pod.namespace, group) if group else None

    def quotas(self) -> Iterable[Obj]:
        return self._objects[ELASTIC_QUOTA].values()

    def quota_for(self, namespace: str) -> Obj | None:
        """The namespace's ElasticQuota (scheduler-plugins allows one per namespace; with
        more, the first by name counts, as its lister order would have it)."""
        named = self._quotas.get(namespace)
        return named[min(named)] if named else None

    def quota_per_namespace(self) -> dict[str, Obj]:
        """Every namespace's ElasticQuota, as ``quota_for`` picks it."""
        return {namespace: named[min(named)] for namespace, named in self._quotas.items()}

    # -- member pods ----------------------------------------------------------------------

    def track_pod(self, pod: PodInfo) -> None:
        """A pod was seen (pending or bound): count it in its group, if any."""
        self.untrack_pod(pod.uid)
        group = group_of(pod)
        if not group or _finished(pod):
            return  # terminating pods still count, as upstream's pod lister keeps them
        key = (pod.namespace, group)
        self._members.setdefault(key, {})[pod.uid] = pod
        self._group_of[pod.uid] = key

    def untrack_pod(self, uid: str) -> None:
        key = self._group_of.pop(uid, None)
        if key is None:
            return
        members = self._members[key]
        members.pop(uid, None)
        if not members:
            del self._members[key]

    def members(self, namespace: str, group: str) -> list[PodInfo]:
        return list((self._members.get((namespace, group)) or {}).values())

    def groups_with_members(self) -> Iterable[tuple[str, str]]:
        return list(self._members)


def _finished(pod: PodInfo) -> bool:
    phase = (pod.raw.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed")
