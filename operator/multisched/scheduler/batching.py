"""Opportunistic batching (v1.35+ ``OpportunisticBatching``, on by default; upstream
``framework/runtime/batch.go`` and ``Framework.SignPod``).

A pod's signature says which pods get the same Filter verdicts and scores on any set of
nodes, even after one of them is placed. When the next pod popped has the previous pod's
signature, the previous cycle's feasible nodes are reused: only the node the previous pod
went to is filtered again (and dropped if it no longer fits); every other node kept its
verdict, since only that node changed. The candidates are then scored and a host selected
as in any cycle, and the host is filtered again before it is used, as upstream re-checks
its hint.

Where this differs from upstream, it is to keep every placement the one-by-one path makes:
the state is kept only while the cluster changed at the placed nodes alone (upstream only
lets it age out after 500 ms), only after a search that covered every node (upstream also
reuses a partial search, whose nodes a later cycle would not have searched), never while
pods are nominated to nodes (their resources would change other nodes' verdicts), and the
candidates are all scored again rather than only the re-filtered node (the same totals, and
so the same tie-breaking draw, as the one-by-one path).
"""

from __future__ import annotations

import json
from bisect import insort
from collections.abc import Callable, Mapping, Sequence
from time import perf_counter
from typing import Any

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.framework import CycleState, Framework

#: Upstream's ``maxBatchAge``: a batch is not reused past this age.
MAX_BATCH_AGE = 0.5

# ``scheduler_batch_attempts_total`` results (upstream metrics.BatchAttempt*).
ATTEMPT_NO_HINT = "no_hint"
ATTEMPT_HINT_USED = "hint_used"
ATTEMPT_HINT_NOT_USED = "hint_not_used"

# ``scheduler_batch_cache_flushed_total`` reasons (upstream metrics.BatchFlush*).
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_NOMINATED = "pod_nominated"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_FILTER_ERROR = "filter_error"
# Ours (see the module's docstring): a node other than the placed ones changed; the search
# that made the list stopped before the last node; pods are nominated to nodes.
FLUSH_CLUSTER_CHANGED = "cluster_changed"
FLUSH_PARTIAL_SEARCH = "partial_search"
FLUSH_NOMINATED_PODS = "nominated_pods"

#: Upstream's signer names (kube-scheduler framework/signers.go).
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
LABELS = "v1.Pod.Labels"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
NODE_NAME = "v1.Pod.Spec.NodeName"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"

#: A plugin's signature fragments for a pod, or None: the pod cannot be signed.
Signer = Callable[[Any, PodInfo], "dict[str, Any] | None"]


def _spec(pod: PodInfo) -> Mapping[str, Any]:
    return pod.raw.get("spec") or {}


def _containers(pod: PodInfo) -> list[Mapping[str, Any]]:
    spec = _spec(pod)
    return [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]


def _resources(pod: PodInfo) -> Any:
    r = pod.requests
    return [r.milli_cpu, r.memory, r.ephemeral_storage, sorted(r.scalar.items())]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def volumes_signer(pod: PodInfo) -> list[str]:
    """Upstream ``VolumesSigner``: each volume's source, sorted; ConfigMaps and Secrets do
    not change scheduling but differ per pod, so they are left out."""
    return sorted(
        _canonical({k: v for k, v in vol.items() if k != "name"})
        for vol in _spec(pod).get("volumes") or ()
        if "configMap" not in vol and "secret" not in vol
    )


def tolerations_signer(pod: PodInfo) -> list[list[str]]:
    """Upstream ``TolerationsSigner``: the tolerations ordered by key, then value."""
    tols = sorted(pod.tolerations, key=lambda t: (t.key, t.value))
    return [[t.key, t.operator, t.value, t.effect] for t in tols]


def host_ports_signer(pod: PodInfo) -> list[int]:
    """Upstream ``HostPortsSigner``: the distinct host ports of all containers, sorted."""
    return sorted(
        {p["hostPort"] for c in _containers(pod) for p in c.get("ports") or () if p.get("hostPort")}
    )


def _requirements(reqs: Any) -> list[str]:
    return sorted(_canonical({**r, "values": sorted(r.get("values") or ())}) for r in reqs or ())


def _term(term: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        "MatchExpressions": _requirements(term.get("matchExpressions")),
        "MatchFields": _requirements(term.get("matchFields")),
    }


def node_affinity_signer(pod: PodInfo) -> dict[str, list[str]] | None:
    """Upstream ``NodeAffinitySigner``: the required terms and the preferred ones (with
    their weights), each term's requirements and values sorted, the terms sorted."""
    aff = (_spec(pod).get("affinity") or {}).get("nodeAffinity")
    if aff is None:
        return None
    required = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    preferred = aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return {
        "Required": sorted(_canonical(_term(t)) for t in required.get("nodeSelectorTerms") or ()),
        "Preferred": sorted(
            _canonical(
                {"Weight": p.get("weight", 0), "Preference": _term(p.get("preference") or {})}
            )
            for p in preferred
        ),
    }


def _image_names(pod: PodInfo) -> Any:
    return sorted({c.get("image") or "" for c in _containers(pod)})


def _resources_signer(pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    # "signature disabled when dra extended resources are used in the cluster"
    requests_devices = getattr(pl, "requests_devices", None)
    if requests_devices is not None and requests_devices(pod):
        return None
    return {RESOURCES: _resources(pod)}


def _volumes_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {VOLUMES: volumes_signer(pod)}


def _tolerations_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {TOLERATIONS: tolerations_signer(pod)}


def _dynamic_resources_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    # "pods with dra resource claims are not signable"
    return None if pod.resource_claims else {}


def _inter_pod_affinity_signer(pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    if pod.affinity_terms or pod.anti_affinity_terms:
        return None
    if pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms:
        return None
    if getattr(pl, "ignore_preferred_terms_of_existing_pods", False):
        return {}
    return {LABELS: sorted(pod.labels.items())}


def _pod_topology_spread_signer(pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    if pod.topology_spread_constraints:
        return None
    if getattr(pl, "system_defaulted", False) or getattr(pl, "default_constraints", None):
        return None  # "pods with default topology constraints are not signable"
    return {}


def _node_affinity_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {
        NODE_AFFINITY: node_affinity_signer(pod),
        NODE_SELECTOR: sorted(pod.node_selector.items()),
    }


def _node_name_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {NODE_NAME: pod.node_name}


def _node_ports_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {HOST_PORTS: host_ports_signer(pod)}


def _image_locality_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {IMAGE_NAMES: _image_names(pod)}


def _features_signer(_pl: Any, pod: PodInfo) -> dict[str, Any] | None:
    return {FEATURES: pod.required_node_features}


#: Upstream's in-tree ``SignPlugin``s. A PreFilter, Filter, PreScore or Score plugin that is
#: not here makes every pod of its profile unsignable (upstream ``computeBatchablePlugins``).
SIGNERS: dict[str, Signer] = {
    "NodeResourcesFit": _resources_signer,
    "NodeResourcesBalancedAllocation": _resources_signer,
    "NodeVolumeLimits": _volumes_signer,
    "VolumeBinding": _volumes_signer,
    "VolumeZone": _volumes_signer,
    "VolumeRestrictions": _volumes_signer,
    "DynamicResources": _dynamic_resources_signer,
    "NodeDeclaredFeatures": _features_signer,
    "TaintToleration": _tolerations_signer,
    "NodeUnschedulable": _tolerations_signer,
    "InterPodAffinity": _inter_pod_affinity_signer,
    "PodTopologySpread": _pod_topology_spread_signer,
    "NodeAffinity": _node_affinity_signer,
    "NodeName": _node_name_signer,
    "NodePorts": _node_ports_signer,
    "ImageLocality": _image_locality_signer,
}


_MAY_REFUSE = (_pod_topology_spread_signer, _inter_pod_affinity_signer, _dynamic_resources_signer)


def batchable_plugins(fwk: Framework) -> list[tuple[Any, Signer]] | None:
    """The profile's signing plugins, or None when one of its PreFilter, Filter, PreScore or
    Score plugins cannot sign (upstream ``computeBatchablePlugins``)."""
    out: list[tuple[Any, Signer]] = []
    seen: set[str] = set()
    for pl in [
        *fwk.pre_filter_plugins,
        *fwk.filter_plugins,
        *fwk.pre_score_plugins,
        *fwk.score_plugins,
    ]:
        if pl.name in seen:
            continue
        seen.add(pl.name)
        signer = SIGNERS.get(pl.name)
        if signer is None:
            return None
        out.append((pl, signer))
    # The plugins that may refuse a pod go first: most refused pods cost one check.
    out.sort(key=lambda ps: ps[1] not in _MAY_REFUSE)
    return out


def sign_pod(plugins: Sequence[tuple[Any, Signer]] | None, pod: PodInfo) -> str | None:
    """Upstream ``SignPod``: the scheduler name and every plugin's fragments, as one
    canonical string; None when a plugin cannot sign the pod."""
    if plugins is None:
        return None
    sig: dict[str, Any] = {SCHEDULER_NAME: pod.scheduler_name}
    for pl, signer in plugins:
        fragments = signer(pl, pod)
        if fragments is None:
            return None
        sig.update(fragments)
    return json.dumps(sig, sort_keys=True, default=repr)


def _pod_needs_volume_state(pod: PodInfo) -> bool:
    """Claims change as pods are placed (binding, capacity): such pods are not batched."""
    return any(
        "persistentVolumeClaim" in vol or "ephemeral" in vol
        for vol in _spec(pod).get("volumes") or ()
    )


class _BatchState:
    __slots__ = ("created", "epoch", "evaluated", "live", "log_len", "names", "signature")

    def __init__(self, signature: str, names: list[str], evaluated: int) -> None:
        self.signature = signature
        #: The feasible nodes of the search that made the batch, in the order it met them:
        #: a node offered again goes back to its place, where the search would meet it.
        self.names = names
        #: Positions in ``names`` of the nodes still to offer, ascending.
        self.live: list[int] = []
        #: Nodes the search evaluated (every node it was given).
        self.evaluated = evaluated
        self.created = perf_counter()
        self.epoch = 0
        self.log_len = 0

    def stamp(self, snapshot: Snapshot) -> None:
        """The cluster as this cycle left it, before its pod is assumed."""
        self.epoch = snapshot.log_epoch
        self.log_len = len(snapshot.node_log)


class OpportunisticBatch:
    """One profile's batch state (upstream ``OpportunisticBatch``)."""

    __slots__ = (
        "batched_pods",
        "chosen_node",
        "fwk",
        "last_cycle",
        "plugins",
        "signature",
        "state",
    )

    def __init__(self, fwk: Framework) -> None:
        self.fwk = fwk
        self.plugins = batchable_plugins(fwk)
        self.state: _BatchState | None = None
        self.last_cycle = -1
        self.chosen_node = ""
        #: This cycle's pod signature (signed once per cycle).
        self.signature: str | None = None
        #: Pods placed from a batch (upstream ``batchedPods``, for tests).
        self.batched_pods = 0

    def sign(self, pod: PodInfo) -> str | None:
        sig = None
        if self.plugins is not None and not _pod_needs_volume_state(pod):
            sig = sign_pod(self.plugins, pod)
        self.signature = sig
        return sig

    def flush(self, reason: str) -> None:
        """Upstream ``logUnusableState``: the state cannot serve this pod (it stays until
        this cycle's results replace it, and the next pod's checks fail on it again)."""
        self.fwk.recorder.batch_flush(reason)

    def candidates(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, cycle: int
    ) -> tuple[list[NodeInfo], int] | None:
        """Upstream ``GetNodeHint``: the feasible nodes this pod may reuse, in the search's
        order, and how many nodes that search evaluated; None: no hint."""
        nodes = None
        if self._compatible(pod, snapshot, cycle) and self._refresh(state, pod, snapshot):
            assert self.state is not None
            names = self.state.names
            get = snapshot.node_info_map.get
            found = [get(names[i]) for i in self.state.live]
            if None in found:
                self.flush(FLUSH_NODE_MISSING)
            else:
                nodes = [n for n in found if n is not None]
        if not nodes:
            self.fwk.recorder.batch_attempt(ATTEMPT_NO_HINT)
            return None
        assert self.state is not None
        return nodes, self.state.evaluated

    def _compatible(self, pod: PodInfo, snapshot: Snapshot, cycle: int) -> bool:
        """Upstream ``batchStateCompatible``, and the cluster changed only where the batch
        placed its last pod."""
        st = self.state
        if st is None or not st.live:
            return False
        if cycle != self.last_cycle + 1:
            self.flush(FLUSH_POD_SKIPPED)
            return False
        if pod.nominated_node_name:
            self.flush(FLUSH_POD_NOMINATED)
            return False
        if self.signature is None or self.signature != st.signature:
            self.flush(FLUSH_POD_INCOMPATIBLE)
            return False
        if perf_counter() > st.created + MAX_BATCH_AGE:
            self.flush(FLUSH_EXPIRED)
            return False
        placed = snapshot.get(self.chosen_node)
        if placed is None:
            self.flush(FLUSH_NODE_MISSING)
            return False
        # Since the batch's last cycle, at most the assume of its pod: one change, at its node
        # (a pod bound there by anyone else could carry terms that reject this pod elsewhere).
        changes = snapshot.node_log[st.log_len :]
        if snapshot.log_epoch != st.epoch or (changes and changes != [placed.index]):
            known = snapshot.node_info_map
            gone = any(st.names[i] not in known for i in st.live)
            self.flush(FLUSH_NODE_MISSING if gone else FLUSH_CLUSTER_CHANGED)
            return False
        if self.fwk.nominator.nominated_node_names():
            self.flush(FLUSH_NOMINATED_PODS)
            return False
        return True

    def _refresh(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> bool:
        """Upstream ``refreshHintCandidates``: the node the last pod went to is filtered
        again and, if this pod still fits there, offered again."""
        st = self.state
        assert st is not None
        placed = snapshot.get(self.chosen_node)
        assert placed is not None  # checked by _compatible
        status = self.fwk.run_filter_plugins(state, pod, placed)
        if status is None:
            insort(st.live, st.names.index(self.chosen_node))
            return True
        if not status.is_rejected():
            self.flush(FLUSH_FILTER_ERROR)
            return False
        return True

    def host_fits(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, host: str) -> bool:
        """Upstream's ``evaluateNominatedNode`` of the hint: the host chosen from the batch
        passes Filter before it is used (the node just re-filtered needs no second pass)."""
        if host != self.chosen_node:
            node = snapshot.get(host)
            fits = node is not None and (
                self.fwk.run_filter_plugins_with_nominated_pods(state, pod, node) is None
            )
            if not fits:
                # Upstream keeps its state until the results of the full search replace it.
                self.fwk.recorder.batch_attempt(ATTEMPT_HINT_NOT_USED)
                self.state = None
                return False
        return True

    def store(
        self,
        hinted: bool,
        host: str,
        feasible: Sequence[NodeInfo],
        evaluated: int,
        searched_all: bool,
        snapshot: Snapshot,
        cycle: int,
    ) -> None:
        """Upstream ``StoreScheduleResults``: after this cycle's pod got ``host`` from
        ``feasible`` (the batch's candidates when ``hinted``)."""
        self.last_cycle = cycle
        self.chosen_node = host
        st = self.state
        if hinted and st is not None:
            # The batch goes on without the node just taken (the state is kept as it is).
            self.fwk.recorder.batch_attempt(ATTEMPT_HINT_USED)
            self.batched_pods += 1
            st.live.remove(st.names.index(host))
            st.stamp(snapshot)
            return
        sig = self.signature
        if sig is not None and self.fwk.nominator.nominated_node_names():
            # Nominated pods weighed in this search; they may leave without a node changing.
            self.flush(FLUSH_NOMINATED_PODS)
            self.state = None
            return
        if sig is not None and len(feasible) > 1 and searched_all:
            st = self.state = _BatchState(sig, [n.name for n in feasible], evaluated)
            chosen = st.names.index(host)
            st.live = [i for i in range(len(feasible)) if i != chosen]
            st.stamp(snapshot)
            return
        if sig is None:
            self.flush(FLUSH_POD_NOT_BATCHABLE)
        else:
            self.flush(FLUSH_PARTIAL_SEARCH if len(feasible) > 1 else FLUSH_EMPTY_LIST)
        self.state = None
