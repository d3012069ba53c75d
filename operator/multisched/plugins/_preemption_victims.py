"""Preemption building blocks: pod importance, PodDisruptionBudgets, picking a node.

Upstream ``framework/preemption`` and ``defaultpreemption``: victims are ordered by
importance (priority, then earlier start), PDB-violating victims are reprieved first,
and among candidate nodes the one that hurts least wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from multisched.cache import LabelSelector, PodInfo, SelectorError

#: Added to priorities before summing so negative priorities still count per pod.
_PRIORITY_OFFSET = 2**31


class Candidate:
    """A node preemption could free, with its victims ordered most important first."""

    __slots__ = ("name", "num_pdb_violations", "victims")

    def __init__(self, name: str, victims: list[PodInfo], num_pdb_violations: int) -> None:
        self.name = name
        self.victims = victims
        self.num_pdb_violations = num_pdb_violations

    def __repr__(self) -> str:
        names = [v.name for v in self.victims]
        return f"Candidate({self.name}, victims={names}, pdb={self.num_pdb_violations})"


def start_time(pod: PodInfo, now: float) -> float:
    """``status.startTime`` as epoch seconds; a pod not started counts as starting ``now``."""
    raw = pod.start_time
    if not raw:
        return now
    try:
        return datetime.fromisoformat(str(raw)).timestamp()
    except ValueError:
        return now


def importance_key(now: float) -> Callable[[PodInfo], tuple[int, float]]:
    """Sort key putting the most important pod first (upstream ``MoreImportantPod``)."""

    def key(pod: PodInfo) -> tuple[int, float]:
        return (-pod.priority, start_time(pod, now))

    return key


class Pdb:
    """The parts of a policy/v1 PodDisruptionBudget preemption reads."""

    __slots__ = ("disrupted_pods", "disruptions_allowed", "namespace", "selector")

    def __init__(
        self,
        namespace: str,
        selector: LabelSelector,
        disruptions_allowed: int,
        disrupted_pods: frozenset[str],
    ) -> None:
        self.namespace = namespace
        self.selector = selector
        self.disruptions_allowed = disruptions_allowed
        self.disrupted_pods = disrupted_pods

    @classmethod
    def parse_all(cls, raws: Iterable[Mapping[str, Any]]) -> list[Pdb]:
        """PDBs that can select pods; a nil, empty or invalid selector selects nothing."""
        out = []
        for raw in raws:
            spec = raw.get("spec") or {}
            status = raw.get("status") or {}
            sel_raw = spec.get("selector")
            if sel_raw is None:
                continue
            try:
                selector = LabelSelector.parse(sel_raw)
            except (SelectorError, KeyError, TypeError):
                continue
            if selector.is_empty():
                continue
            out.append(
                cls(
                    (raw.get("metadata") or {}).get("namespace") or "default",
                    selector,
                    int(status.get("disruptionsAllowed") or 0),
                    frozenset(status.get("disruptedPods") or ()),
                )
            )
        return out


def split_by_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[Pdb]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Upstream ``filterPodsWithPDBViolation``: (violating, non-violating), order kept.

    Each matching pod uses up one allowed disruption of its PDBs, in the PDBs' order, up to
    the first one it takes below zero: a violating pod charges no later PDB. A pod already in
    a PDB's ``disruptedPods`` was counted by the API server and uses none.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        (violating if _violates(pod, pdbs, allowed) else non_violating).append(pod)
    return violating, non_violating


def _violates(pod: PodInfo, pdbs: Sequence[Pdb], allowed: list[int]) -> bool:
    """Upstream ``podIsViolating``: charges ``allowed`` and stops at the first overdraft."""
    if not pod.labels:
        return False
    for i, pdb in enumerate(pdbs):
        if pdb.namespace != pod.namespace or not pdb.selector.matches(pod.labels):
            continue
        if pod.name in pdb.disrupted_pods:
            continue
        allowed[i] -= 1
        if allowed[i] < 0:
            return True
    return False


def _earliest_start_of_highest_priority(victims: Sequence[PodInfo], now: float) -> float:
    """Upstream ``GetEarliestPodStartTime``."""
    top = max(v.priority for v in victims)
    return min(start_time(v, now) for v in victims if v.priority == top)


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """Upstream ``pickOneNodeForPreemption``: each criterion narrows the ties of the last.

    1. fewest PDB violations; 2. lowest highest-priority victim; 3. smallest sum of
    priorities; 4. fewest victims; 5. latest start of the highest-priority victims;
    6. the first remaining candidate.
    """
    if not candidates:
        return None
    criteria: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_highest_priority(c.victims, now),
    ]
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]
