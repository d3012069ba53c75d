"""LIST every kind scheduling reads, with the informers' list code, into plain objects.

Errors become one ``LiveError`` line naming what is missing (kubeconfig, API server,
permission), never a traceback.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import yaml

from multisched.informer.kinds import DRA, GROUPS, STORAGE, WORKLOADS
from multisched.transport import (
    ApiClient,
    ApiError,
    Configuration,
    ConnectionFailed,
    Resource,
    TransportError,
    list_objects,
)
from multisched.transport import kubeconfig as kubeconfig_loader
from multisched.transport.kubeconfig import kubeconfig_path, server

NODES = Resource("", "v1", "nodes")
PODS = Resource("", "v1", "pods")
NAMESPACES = Resource("", "v1", "namespaces")
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses")
PDBS = Resource("policy", "v1", "poddisruptionbudgets")
PROFILES = Resource("multisched.dev", "v1alpha1", "schedulerprofiles")

#: Kinds that may be absent from a cluster (CRD not installed; resource.k8s.io/v1 not
#: served): read as none.
OPTIONAL = frozenset({PROFILES, *GROUPS.values(), *DRA.values()})

#: Finished pods hold no resources; the operator drops them too (upstream's informer filter).
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class LiveError(Exception):
    """One line for the user: what could not be read and why."""


@dataclass(slots=True, repr=False)
class LiveCluster:
    """What was listed. No generated repr: asyncio's SIGINT check formats the main task's
    result (``signal.getsignal`` in ``asyncio.run``), which took seconds at 50,000 pods."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    #: Storage objects, DRA objects, PodGroups and ElasticQuotas, Services and pod
    #: controllers, by kind (``STORAGE``'s, ``DRA``'s, ``GROUPS``' and ``WORKLOADS``' keys).
    storage: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Kinds that could not be read (forbidden, not served): one line each, for stderr.
    warnings: list[str] = field(default_factory=list)


def context_namespace(kubeconfig: str | None = None) -> str:
    """The current context's namespace, as kubectl defaults ``-n`` ("" when unset)."""
    try:
        with open(kubeconfig_path(kubeconfig)) as f:
            data = yaml.safe_load(f)
        current = data.get("current-context")
        for ctx in data.get("contexts") or ():
            if ctx.get("name") == current:
                return str((ctx.get("context") or {}).get("namespace") or "")
    except (OSError, yaml.YAMLError, AttributeError):
        pass
    return ""


async def load_configuration(kubeconfig: str | None = None) -> Configuration:
    try:
        return await kubeconfig_loader.load_configuration(kubeconfig)
    except kubeconfig_loader.KubeconfigError as exc:
        raise LiveError(str(exc)) from None


async def connect(kubeconfig: str | None = None) -> ApiClient:
    return kubeconfig_loader.connect(await load_configuration(kubeconfig), "multisched")


def _describe(resource: Resource, exc: Exception, server: str) -> str:
    what = f"cannot list {resource}"
    if isinstance(exc, ApiError):
        message = exc.message or exc.reason
        if exc.status == 403:
            # "nodes is forbidden: User ..." -> "forbidden: User ..."
            _, sep, rest = message.partition(" is forbidden: ")
            return f"{what}: forbidden: {rest if sep else message}"
        if exc.status == 401:
            return f"{what}: unauthorized: the kubeconfig's credentials were refused"
        return f"{what}: {message} ({exc.status})"
    if isinstance(exc, ConnectionFailed | OSError):
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{what}: cannot reach the API server at {server}: {reason}"
    if isinstance(exc, TimeoutError):
        return f"{what}: the API server at {server} did not answer in time"
    return f"{what}: {exc}"


async def list_kind(
    api_client: ApiClient, resource: Resource, timeout: float = 30.0
) -> list[dict[str, Any]]:
    where = server(api_client) or "?"
    try:
        return (await list_objects(api_client, resource, timeout=timeout)).items
    except ApiError as exc:
        if resource in OPTIONAL and exc.status == 404:
            return []
        raise LiveError(_describe(resource, exc, where)) from None
    except (TimeoutError, TransportError, OSError) as exc:
        raise LiveError(_describe(resource, exc, where)) from None


async def read_cluster(api_client: ApiClient) -> LiveCluster:
    """Every object scheduling reads, listed concurrently; finished pods are left out.

    Storage, DRA, group and workload kinds the account may not list (or the cluster does not
    serve) are read as none, with a warning: the pods without volumes are still explained
    right."""
    kinds = (NODES, PODS, NAMESPACES, PRIORITY_CLASSES, PDBS, PROFILES)
    storage_kinds = [*STORAGE.items(), *DRA.items(), *GROUPS.items(), *WORKLOADS.items()]
    results = await asyncio.gather(
        *(list_kind(api_client, r) for r in kinds),
        *(list_kind(api_client, r) for _, r in storage_kinds),
        return_exceptions=True,
    )
    lists: list[list[dict[str, Any]]] = []
    # Report the first failure in a fixed order (nodes before pods ...), not the fastest.
    for res in results[: len(kinds)]:
        if isinstance(res, BaseException):
            raise res
        lists.append(res)
    nodes, pods, namespaces, priority_classes, pdbs, profiles = lists
    cluster = LiveCluster(
        nodes=nodes,
        pods=[p for p in pods if (p.get("status") or {}).get("phase") not in TERMINAL_PHASES],
        namespaces=namespaces,
        priority_classes=priority_classes,
        pdbs=pdbs,
        profiles=profiles,
    )
    for (kind, _), res in zip(storage_kinds, results[len(kinds) :], strict=True):
        if isinstance(res, LiveError):
            cluster.warnings.append(f"{res}; {_judged_without(kind)}")
            cluster.storage[kind] = []
        elif isinstance(res, BaseException):
            raise res
        else:
            cluster.storage[kind] = res
    return cluster


def _judged_without(kind: str) -> str:
    if kind in WORKLOADS:
        return f"default topology spreading is judged without {kind}s"
    if kind in DRA:
        return f"pods with resource claims are judged without {kind}s"
    what = "gangs and quotas" if kind in GROUPS else "volumes"
    return f"{what} are judged without {kind}s"


async def read(kubeconfig: str | None = None) -> LiveCluster:
    """Connect, read, close."""
    api_client = await connect(kubeconfig)
    try:
        return await read_cluster(api_client)
    finally:
        await api_client.close()
