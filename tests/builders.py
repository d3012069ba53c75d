"""Small builders of API objects for tests, in the spirit of upstream's ``st.MakePod()``."""

from __future__ import annotations

import itertools
from typing import Any

from multisched.cache import NodeInfo, PodInfo

_uid = itertools.count(1)


def pod_dict(
    name: str = "p",
    namespace: str = "default",
    *,
    requests: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str = "",
    scheduler_name: str | None = None,
    priority: int | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    host_ports: list[int] | None = None,
    images: list[str] | None = None,
    spread: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A v1 Pod; ``status`` is the pod status, ``metadata`` extra metadata fields (merged)."""
    container: dict[str, Any] = {"name": "c", "image": (images or ["pause"])[0]}
    if requests:
        container["resources"] = {"requests": requests}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    containers = [container] + [
        {"name": f"c{i}", "image": img} for i, img in enumerate((images or [])[1:], 1)
    ]
    body: dict[str, Any] = {"containers": containers, **spec}
    if node_name:
        body["nodeName"] = node_name
    if scheduler_name:
        body["schedulerName"] = scheduler_name
    if priority is not None:
        body["priority"] = priority
    if tolerations:
        body["tolerations"] = tolerations
    if node_selector:
        body["nodeSelector"] = node_selector
    if affinity:
        body["affinity"] = affinity
    if spread:
        body["topologySpreadConstraints"] = spread
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}-{next(_uid)}",
            "labels": labels or {},
            **(metadata or {}),
        },
        "spec": body,
    }
    if status:
        pod["status"] = status
    return pod


def make_pod(name: str = "p", **kw: Any) -> PodInfo:
    return PodInfo.parse(pod_dict(name, **kw))


def node_dict(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    images: list[tuple[list[str], int]] | None = None,
    extra: dict[str, str] | None = None,
    hostname_label: bool = True,
) -> dict[str, Any]:
    """A v1 Node; ``hostname_label=False`` leaves out the default kubernetes.io/hostname label."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": allocatable, "capacity": dict(allocatable)}
    if images:
        status["images"] = [{"names": n, "sizeBytes": s} for n, s in images]
    default_labels = {"kubernetes.io/hostname": name} if hostname_label else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**default_labels, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def make_node(name: str = "n", *, pods_on: list[PodInfo] | None = None, **kw: Any) -> NodeInfo:
    info = NodeInfo.from_node(node_dict(name, **kw))
    for pod in pods_on or ():
        info.add_pod(pod)
    return info


class RecordingClient:
    """The scheduler's API client: bindings are recorded as (pod key, node), then fail with
    ``error`` when set; deletions and nominations succeed, storage writes echo."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []
        self.nominated: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.bound.append((pod.key, node_name))
        if self.error is not None:
            raise self.error

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        pass

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated.append((pod.key, node_name))

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


class RecordingEvents:
    """The scheduler's event recorder: ("Scheduled", pod, node) and ("FailedScheduling", pod,
    reason, message) in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        self.log.append(("Scheduled", pod.key, node_name))

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        self.log.append(("FailedScheduling", pod.key, reason, message))


class PreemptingClient:
    """The client a PostFilter preempts through: victims (pod names, with the reason given)
    and nominations are recorded; bindings succeed."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.reasons: list[str] = []
        self.nominated: dict[str, str] = {}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        pass

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.deleted.append(pod.name)
        self.reasons.append(reason)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated[pod.name] = node_name
