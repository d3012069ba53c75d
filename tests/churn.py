"""Random clusters that change as the informers and the scheduler change them: nodes with and
without topology labels and taints, pods with random labels, (anti-)affinity of every kind,
namespace selectors and spread constraints, some terminating; ``Churn`` applies random
changes (pods bound, assumed, forgotten, relabelled or deleted; nodes relabelled, added and
removed). Shared by the equivalence tests of the state kept between cycles."""

from __future__ import annotations

import random
from typing import Any

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import Framework
from multisched.scheduler import Scheduler, default_registry

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"
KEYS = (ZONE, HOST, RACK)
NAMESPACES = ("default", "team-a", "team-b")
LABEL_VALUES = {"app": ["a0", "a1", "a2", "a3"], "tier": ["t0", "t1"], "group": ["g0", "g1"]}


def random_labels(rng: random.Random) -> dict[str, str]:
    return {k: rng.choice(vs) for k, vs in LABEL_VALUES.items() if rng.random() < 0.7}


def random_selector(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.05:
        return None  # nil: matches nothing
    if roll < 0.1:
        return {}  # empty: matches everything
    out: dict[str, Any] = {}
    if rng.random() < 0.8:
        key = rng.choice(list(LABEL_VALUES))
        out["matchLabels"] = {key: rng.choice(LABEL_VALUES[key])}
    if rng.random() < 0.3 or not out:
        key = rng.choice(list(LABEL_VALUES))
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
        expr: dict[str, Any] = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = rng.sample(LABEL_VALUES[key], rng.randint(1, 2))
        out["matchExpressions"] = [expr]
    return out


def random_term(rng: random.Random, namespace_selectors: bool) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": rng.choice(KEYS)}
    selector = random_selector(rng)
    if selector is not None:
        term["labelSelector"] = selector
    roll = rng.random()
    if roll < 0.15:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif namespace_selectors and roll < 0.25:
        term["namespaceSelector"] = rng.choice([{}, {"matchLabels": {"env": "prod"}}])
    return term


def random_affinity(rng: random.Random, namespace_selectors: bool) -> dict[str, Any] | None:
    if rng.random() < 0.35:
        return None
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        part: dict[str, Any] = {}
        if rng.random() < 0.4:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng, namespace_selectors) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.4:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.randint(1, 100),
                    "podAffinityTerm": random_term(rng, namespace_selectors),
                }
                for _ in range(rng.randint(1, 2))
            ]
        if part:
            out[kind] = part
    return out or None


def random_spread(rng: random.Random) -> list[dict[str, Any]] | None:
    if rng.random() < 0.2:
        return None
    out = []
    for _ in range(rng.randint(1, 3)):
        c: dict[str, Any] = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": rng.choice(KEYS),
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
        }
        selector = random_selector(rng)
        if selector is not None:
            c["labelSelector"] = selector
        if rng.random() < 0.2:
            c["minDomains"] = rng.randint(1, 5)
            c["whenUnsatisfiable"] = "DoNotSchedule"
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.2:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.15:
            c["matchLabelKeys"] = ["tier"]
        out.append(c)
    return out


def random_node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {}
    if rng.random() < 0.9:
        labels[ZONE] = f"z{rng.randrange(4)}"
    if rng.random() < 0.6:
        labels[RACK] = f"r{rng.randrange(6)}"
    taints = [{"key": "dedicated", "effect": "NoSchedule"}] if rng.random() < 0.15 else None
    return node_dict(
        f"n{i:03d}",
        cpu="64",
        memory="256Gi",
        labels=labels,
        taints=taints,
        hostname_label=rng.random() < 0.95,
    )


def random_bound_pod(rng: random.Random, name: str, node: str) -> PodInfo:
    meta: dict[str, Any] = {}
    if rng.random() < 0.08:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    body = pod_dict(
        name,
        rng.choice(NAMESPACES),
        labels=random_labels(rng),
        node_name=node,
        affinity=random_affinity(rng, namespace_selectors=True),
        metadata=meta,
    )
    return PodInfo.parse(body)


def random_node_affinity(rng: random.Random) -> dict[str, Any]:
    """Required node affinity: one or two terms (ORed) on the rack or zone, or by name."""
    terms = []
    for _ in range(rng.randint(1, 2)):
        roll = rng.random()
        if roll < 0.4:
            values = [f"r{i}" for i in rng.sample(range(6), rng.randint(1, 3))]
            expr = {"key": RACK, "operator": rng.choice(["In", "NotIn"]), "values": values}
            terms.append({"matchExpressions": [expr]})
        elif roll < 0.8:
            op = rng.choice(["Exists", "DoesNotExist"])
            terms.append({"matchExpressions": [{"key": rng.choice([ZONE, RACK]), "operator": op}]})
        else:
            name = f"n{rng.randrange(40):03d}"
            field = {"key": "metadata.name", "operator": "NotIn", "values": [name]}
            terms.append({"matchFields": [field]})
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def random_incoming(rng: random.Random, name: str) -> PodInfo:
    meta: dict[str, Any] = {}
    if rng.random() < 0.2:
        kind = rng.choice(["ReplicaSet", "StatefulSet", "Job"])
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
                "kind": kind,
                "name": "owner",
                "uid": "o",
                "controller": True,
            }
        ]
    tolerations = [{"key": "dedicated", "operator": "Exists"}] if rng.random() < 0.3 else None
    node_selector = {ZONE: rng.choice(["z0", "z1"])} if rng.random() < 0.15 else None
    affinity = random_affinity(rng, namespace_selectors=rng.random() < 0.3)
    if rng.random() < 0.25:  # required node affinity, which spread honors by default
        affinity = {**(affinity or {}), "nodeAffinity": random_node_affinity(rng)}
    return PodInfo.parse(
        pod_dict(
            name,
            rng.choice(NAMESPACES),
            labels=random_labels(rng),
            affinity=affinity,
            spread=random_spread(rng),
            tolerations=tolerations,
            node_selector=node_selector,
            metadata=meta,
        )
    )


class Churn:
    """Random changes to the cluster, as the informers and the scheduler make them."""

    def __init__(self, rng: random.Random, cache: Cache) -> None:
        self.rng = rng
        self.cache = cache
        self.nodes = 0
        self.serial = 0

    def node_names(self) -> list[str]:
        return [n.name for n in self.cache.snapshot.node_info_list]

    def add_node(self) -> None:
        self.cache.add_node(random_node(self.rng, self.nodes))
        self.nodes += 1

    def add_pod(self) -> PodInfo | None:
        names = self.node_names()
        if not names:
            return None
        self.serial += 1
        pod = random_bound_pod(self.rng, f"b{self.serial}", self.rng.choice(names))
        self.cache.add_pod(pod)
        return pod

    def step(self) -> None:
        rng, cache = self.rng, self.cache
        roll = rng.random()
        pods = list(cache.pods())
        if roll < 0.35 or not pods:
            self.add_pod()
        elif roll < 0.5:
            cache.remove_pod(rng.choice(pods).uid)
        elif roll < 0.6:
            # A label change: the same pod observed again with other labels.
            old = rng.choice(pods)
            raw = dict(old.raw)
            if "spec" in raw:
                raw["metadata"] = {**raw["metadata"], "labels": random_labels(rng)}
                cache.update_pod(PodInfo.parse(raw))
        elif roll < 0.72:
            self.serial += 1
            pod = random_incoming(rng, f"a{self.serial}")
            names = self.node_names()
            if names:
                assumed = cache.assume_pod(pod, rng.choice(names))
                if rng.random() < 0.5:
                    cache.forget_pod(assumed)
        elif roll < 0.8:
            names = self.node_names()
            if names:
                info = cache.snapshot.node_info_map[rng.choice(names)]
                raw = dict(info.raw)
                raw["metadata"] = {
                    **raw["metadata"],
                    "labels": random_node(rng, 0)["metadata"]["labels"],
                }
                raw["metadata"]["labels"][HOST] = info.name
                if rng.random() < 0.5:  # resized: allocatable changes too
                    status = dict(raw.get("status") or {})
                    room = {**status.get("allocatable", {}), "cpu": rng.choice(["4", "16", "64"])}
                    raw["status"] = {**status, "allocatable": room}
                cache.update_node(raw)
        elif roll < 0.85:
            names = self.node_names()
            if len(names) > 5:
                cache.remove_node(rng.choice(names))
        elif roll < 0.9:
            self.add_node()
        else:
            self.add_pod()


def populated(rng: random.Random, nodes: int, pods: int) -> tuple[Cache, Churn]:
    """A cache of ``nodes`` random nodes and ``pods`` bound pods, its namespaces labelled."""
    cache = Cache()
    cache.set_namespace("default", {"env": "prod"})
    cache.set_namespace("team-a", {"env": "prod"})
    cache.set_namespace("team-b", {"env": "dev"})
    churn = Churn(rng, cache)
    for _ in range(nodes):
        churn.add_node()
    for _ in range(pods):
        churn.add_pod()
    add_workloads(rng, cache)
    return cache, churn


def add_workloads(rng: random.Random, cache: Cache) -> None:
    """Per namespace, the ReplicaSet and StatefulSet ``random_incoming``'s pods may name as
    their controller, and two Services: the default selectors of pods without constraints."""
    for namespace in NAMESPACES:
        for kind in ("ReplicaSet", "StatefulSet"):
            selector = random_selector(rng)
            raw = {"metadata": {"name": "owner", "namespace": namespace}, "spec": {}}
            if selector is not None:
                raw["spec"]["selector"] = selector
            cache.workloads.upsert(kind, raw)
        for i in range(2):
            key = rng.choice(list(LABEL_VALUES))
            selector = {key: rng.choice(LABEL_VALUES[key])}
            spec = {"selector": selector}
            cache.workloads.upsert(
                "Service", {"metadata": {"name": f"svc-{i}", "namespace": namespace}, "spec": spec}
            )


def default_framework(cache: Cache) -> Framework:
    """The default profile (scheduler name "s") over ``cache``."""
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    return Scheduler(config, registry, cache=cache).profiles["s"]
