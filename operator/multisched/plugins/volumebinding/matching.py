"""``FindMatchingVolume`` for one claim, prepared once per pod and asked once per node.

Upstream walks every PV of the claim's class for every node. The walk's node-independent
tests (claimRef, size, volume mode, deletion, phase, selector, class, access modes) give the
same answer on every node, so they run once, in PreFilter; per node only the PV's node
affinity is left. Local PVs (every term names hostnames) are filed by hostname, so a node
looks only at its own and at the PVs that may live anywhere.

The answer is upstream's: a PV already bound to the claim wins where its node affinity
allows it and nothing else is considered; otherwise the smallest fitting PV, the earliest
listed among equals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from multisched.cache import LabelSelector, SelectorError

from .pv_helpers import (
    LABEL_HOSTNAME,
    Obj,
    access_modes_fit,
    claim_class,
    claim_request,
    is_volume_bound_to_claim,
    meta,
    node_affinity_error,
    only_on_hosts,
    pv_capacity,
    pv_class,
    spec,
    volume_mode_mismatch,
)


class ClaimMatcher:
    """The PVs that could serve one claim, waiting only for a node."""

    __slots__ = ("anywhere", "by_host", "claim", "prebound")

    def __init__(self, claim: Obj, volumes: Sequence[Obj]) -> None:
        self.claim = claim
        #: PVs already bound to the claim, in list order: the first reached decides.
        self.prebound: list[tuple[int, Obj]] = []
        #: Candidates as (capacity, list position, PV), smallest first.
        self.anywhere: list[tuple[int, int, Obj]] = []
        self.by_host: dict[str, list[tuple[int, int, Obj]]] = {}
        requested = claim_request(claim)
        wanted_class = claim_class(claim)
        selector = claim_selector(claim)
        for i, pv in enumerate(volumes):
            pv_spec = spec(pv)
            if pv_spec.get("claimRef") and not is_volume_bound_to_claim(pv, claim):
                continue
            capacity = pv_capacity(pv)
            if capacity < requested or volume_mode_mismatch(claim, pv):
                continue
            if meta(pv).get("deletionTimestamp") is not None:
                continue
            if is_volume_bound_to_claim(pv, claim):
                self.prebound.append((i, pv))
                continue
            if (pv.get("status") or {}).get("phase") != "Available":
                continue
            if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
                continue
            if pv_class(pv) != wanted_class or not access_modes_fit(claim, pv):
                continue
            entry = (capacity, i, pv)
            hosts = only_on_hosts(pv)
            if hosts is None:
                self.anywhere.append(entry)
            else:
                for host in hosts:
                    self.by_host.setdefault(host, []).append(entry)
        self.anywhere.sort(key=_order)
        for entries in self.by_host.values():
            entries.sort(key=_order)

    def find(self, node_labels: Mapping[str, str], excluded: Mapping[str, Any]) -> Obj | None:
        """The PV for this claim on a node with ``node_labels``; ``excluded``: PV names
        another claim of the pod took on this node."""
        pre = [(i, pv) for i, pv in self.prebound if meta(pv).get("name") not in excluded]
        if pre:
            # Upstream returns the first pre-bound PV it meets, which comes before any
            # later candidate; an earlier smaller candidate does not matter either way.
            pv = pre[0][1]
            return pv if node_affinity_error(pv, node_labels) is None else None
        best = _first_fitting(self.anywhere, node_labels, excluded)
        host = node_labels.get(LABEL_HOSTNAME)
        if host is not None and host in self.by_host:
            local = _first_fitting(self.by_host[host], node_labels, excluded)
            if local is not None and (best is None or _order(local) < _order(best)):
                best = local
        return best[2] if best is not None else None


def _order(entry: tuple[int, int, Obj]) -> tuple[int, int]:
    return entry[0], entry[1]


def _first_fitting(
    entries: list[tuple[int, int, Obj]], node_labels: Mapping[str, str], excluded: Mapping[str, Any]
) -> tuple[int, int, Obj] | None:
    for entry in entries:
        pv = entry[2]
        if meta(pv).get("name") in excluded:
            continue
        if node_affinity_error(pv, node_labels) is None:
            return entry
    return None


class SelectorUnusable(Exception):
    """The claim's selector cannot be read (upstream: an error for the whole pod)."""


def claim_selector(claim: Obj) -> LabelSelector | None:
    raw = spec(claim).get("selector")
    if raw is None:
        return None
    try:
        return LabelSelector.parse(raw)
    except (SelectorError, TypeError, ValueError, AttributeError) as exc:
        key = f"{meta(claim).get('namespace')}/{meta(claim).get('name')}"
        raise SelectorUnusable(
            f"error creating internal label selector for claim: {key}: {exc}"
        ) from None
