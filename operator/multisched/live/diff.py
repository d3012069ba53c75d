"""``simulate --diff``: what a proposed profile changes, pod by pod."""

from __future__ import annotations

from dataclasses import dataclass

from multisched.scheduler.simulate import Placement, SimulationResult


@dataclass(frozen=True, slots=True)
class Change:
    pod: str
    before: str
    after: str
    #: The FailedScheduling (or other) message of the new outcome, when it has one.
    message: str


def where(p: Placement) -> str:
    """A pod's end state in one word: its node, or what kept it off one."""
    if p.status in ("Scheduled", "Bound"):
        return p.node
    return {"Unschedulable": "unschedulable", "Pending": "pending"}.get(p.status, p.status.lower())


def changes(live: SimulationResult, proposed: SimulationResult) -> list[Change]:
    after = {p.pod.key: p for p in proposed.placements}
    out: list[Change] = []
    for p in live.placements:
        q = after.pop(p.pod.key, None)
        if q is None:
            continue
        a, b = where(p), where(q)
        if a != b:
            message = "" if q.status in ("Scheduled", "Bound") else q.message
            out.append(Change(p.pod.key, a, b, message))
    return out


def render(found: list[Change]) -> str:
    if not found:
        return "no pod changes placement under the proposed profile\n"
    width = max(len(c.pod) for c in found)
    lines = []
    for c in found:
        line = f"{c.pod.ljust(width)}   {c.before} -> {c.after}"
        if c.message:
            line += f": {c.message}"
        lines.append(line)
    lines.append(f"{len(found)} pod(s) change placement")
    return "\n".join(lines) + "\n"
