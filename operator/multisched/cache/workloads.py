"""Services, ReplicationControllers, ReplicaSets and StatefulSets, as upstream's
``helper.DefaultSelector`` reads them through its listers: the selector of a pod with no
spread constraints of its own (PodTopologySpread's default constraints).

Only the selectors are kept. A ReplicaSet's pod template, its status, a Service's ports: none
of it counts for scheduling, and a cluster holds many of these objects (ten ReplicaSets per
Deployment by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .labels import LabelSelector, Requirement, SelectorError

SERVICE = "Service"
REPLICATION_CONTROLLER = "ReplicationController"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
WORKLOAD_KINDS = (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)
#: The controller kinds ``DefaultSelector`` follows, by the (group, version, kind) of the
#: pod's controller reference: any other version of them is "not owned by a supported
#: controller".
CONTROLLER_KINDS: dict[tuple[str, str, str], str] = {
    ("", "v1", REPLICATION_CONTROLLER): REPLICATION_CONTROLLER,
    ("apps", "v1", REPLICA_SET): REPLICA_SET,
    ("apps", "v1", STATEFUL_SET): STATEFUL_SET,
}


def group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: "v1" and "/v1" are the core group's; None when it
    cannot be parsed (more than one "/")."""
    if api_version in ("", "/"):
        return "", ""
    group, slash, version = api_version.partition("/")
    if not slash:
        return "", api_version
    return None if "/" in version else (group, version)


Obj = Mapping[str, Any]
Labels = tuple[tuple[str, str], ...]


class ControllerSelector:
    """What a controller adds to a pod's default selector.

    A ReplicationController's map is merged into the Services' labels (``labels.Merge``); a
    ReplicaSet's or StatefulSet's selector adds its requirements (``selector.Add``), its
    matchLabels among them. ``usable`` is False for a selector upstream cannot convert
    (``LabelSelectorAsSelector`` fails, or yields Nothing): it adds nothing then.
    """

    __slots__ = ("match_labels", "merge", "requirements", "usable")

    def __init__(
        self,
        match_labels: Labels,
        requirements: tuple[Requirement, ...] = (),
        *,
        merge: bool = False,
        usable: bool = True,
    ) -> None:
        self.match_labels = match_labels
        self.requirements = requirements
        self.merge = merge
        self.usable = usable


_UNUSABLE = ControllerSelector((), usable=False)


def _namespaced(raw: Obj) -> tuple[str, str]:
    meta = raw.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _label_map(value: Any) -> Labels | None:
    """A ``map[string]string`` selector as sorted pairs (None when it is not a map)."""
    if not isinstance(value, Mapping):
        return None
    return tuple(sorted((str(k), str(v)) for k, v in value.items()))


def _controller_selector(kind: str, spec: Obj) -> ControllerSelector:
    selector = spec.get("selector")
    if kind == REPLICATION_CONTROLLER:
        labels = _label_map(selector)
        return _UNUSABLE if labels is None else ControllerSelector(labels, merge=True)
    if not isinstance(selector, Mapping):
        return _UNUSABLE  # nil: LabelSelectorAsSelector gives Nothing, which adds nothing
    try:
        parsed = LabelSelector.parse(selector)
    except (SelectorError, KeyError, TypeError, AttributeError):
        return _UNUSABLE
    return ControllerSelector(parsed.match_labels, parsed.requirements)


class WorkloadStore:
    def __init__(self) -> None:
        #: namespace -> Service name -> its selector (matchLabels only: a Service's map).
        #: Services with a nil or empty selector are left out: they match nothing.
        self._services: dict[str, dict[str, LabelSelector]] = {}
        #: (kind, namespace, name) -> what the controller adds to its pods' selector.
        self._controllers: dict[tuple[str, str, str], ControllerSelector] = {}

    def upsert(self, kind: str, raw: Obj) -> None:
        namespace, name = _namespaced(raw)
        spec = raw.get("spec") or {}
        if kind == SERVICE:
            labels = _label_map(spec.get("selector")) if spec.get("selector") else None
            named = self._services.setdefault(namespace, {})
            if labels:
                named[name] = LabelSelector(dict(labels), ())
            else:
                named.pop(name, None)
            if not named:
                del self._services[namespace]
            return
        self._controllers[(kind, namespace, name)] = _controller_selector(kind, spec)

    def delete(self, kind: str, raw: Obj) -> None:
        namespace, name = _namespaced(raw)
        if kind == SERVICE:
            named = self._services.get(namespace)
            if named is not None:
                named.pop(name, None)
                if not named:
                    del self._services[namespace]
            return
        self._controllers.pop((kind, namespace, name), None)

    def service_selectors(self, namespace: str) -> Iterable[LabelSelector]:
        """The selectors of the namespace's Services (none nil)."""
        return (self._services.get(namespace) or {}).values()

    def controller(self, kind: str, namespace: str, name: str) -> ControllerSelector | None:
        """The controller's selector; None when it is not known (the lister's NotFound)."""
        return self._controllers.get((kind, namespace, name))
