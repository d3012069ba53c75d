"""Rendering of simulate results: table (like kubectl), yaml or json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from multisched.scheduler.settle import Settlement
from multisched.scheduler.simulate import Placement, SimulationResult


def as_records(result: SimulationResult, explain: bool) -> list[dict[str, Any]]:
    return [_record(p, explain) for p in result.placements]


def _record(p: Placement, explain: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "pod": p.pod.key,
        "schedulerName": p.pod.scheduler_name,
        "status": p.status,
        "node": p.node or None,
        "message": p.message,
    }
    if p.nominated_node:
        rec["nominatedNodeName"] = p.nominated_node
    if p.volumes:
        rec["volumes"] = p.volumes
    if p.devices:
        rec["devices"] = p.devices
    if explain and p.outcome is not None:
        rec["explain"] = _explain(p)
    return rec


def _explain(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"filter": {}, "score": {}}
    outcome = p.outcome
    assert outcome is not None
    if outcome.fit_error is not None:
        diagnosis = outcome.fit_error.diagnosis
        shown = {
            n: f"{s.message()} ({s.plugin})" if s.plugin else s.message()
            for n, s in diagnosis.node_to_status.items()
        }
        out["filter"] = dict(sorted(shown.items()))
        return out
    record = outcome.schedule.explain if outcome.schedule is not None else None
    if record is None:
        return out
    out["filter"] = {
        n: "passed" if s is None else f"{s.message()} ({s.plugin})"
        for n, s in sorted(record.verdicts.items())
    }
    if record.scores is not None:
        names, detail, totals = record.scores
        for i, node in enumerate(names):
            out["score"][node] = {
                "total": totals[i],
                "plugins": {
                    d.plugin: {"raw": d.raw[i], "weight": d.weight, "weighted": d.weighted[i]}
                    for d in detail
                },
            }
    return out


def render(
    result: SimulationResult, fmt: str, explain: bool, settled: Sequence[Settlement] = ()
) -> str:
    """``settled``: what settling the input changed (``settled`` in yaml and json; the
    table's notes are ``settled_notes``)."""
    records = as_records(result, explain)
    data: dict[str, Any] = {"pods": records, "preempted": result.preempted}
    if settled:
        data["settled"] = [s.as_record() for s in settled]
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(data, sort_keys=False, width=1000))
    return _table(records, result)


#: Per kind of settling change: what was done, as a note says it.
_SETTLED_DONE = {
    "bound": "completes the bindings written in the input and binds Immediate claims",
    "phase": "sets the phases of PVs and claims",
    "provisioned": "provisions a PV for each claim that waits for one",
    "default-class": "gives claims without a class the default StorageClass",
    "label-keys": "merges pods' matchLabelKeys/mismatchLabelKeys into their label selectors",
    "claim-created": "creates the ResourceClaims pods ask for from templates",
    "claim-status": "records those claims in the pods' status.resourceClaimStatuses",
}
#: Objects a note names before "and N more".
_NOTE_NAMES = 4


def settled_notes(settled: Sequence[Settlement]) -> list[str]:
    """One line per kind of change: who made it, what, and the objects it touched."""
    kinds: dict[str, list[Settlement]] = {}
    for change in settled:
        kinds.setdefault(change.kind, []).append(change)
    lines = []
    for kind, changes in kinds.items():
        names = [c.object for c in changes[:_NOTE_NAMES]]
        if len(changes) > _NOTE_NAMES:
            names.append(f"and {len(changes) - _NOTE_NAMES} more")
        lines.append(
            f"settled before scheduling, as on a cluster: {changes[0].by} "
            f"{_SETTLED_DONE.get(kind, kind)} ({', '.join(names)}; -o yaml shows each change)"
        )
    return lines


def _table(records: list[dict[str, Any]], result: SimulationResult) -> str:
    rows = [("POD", "SCHEDULER", "STATUS", "NODE", "MESSAGE")]
    for r in records:
        rows.append(
            (
                r["pod"],
                r["schedulerName"],
                r["status"],
                r["node"] or "<none>",
                r["message"] if r["status"] != "Scheduled" else _scheduled_text(r),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row, rec in zip(rows, [None, *records], strict=True):
        lines.append(
            "   ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "   " + row[4]
        )
        if rec is not None and "explain" in rec:
            lines.extend(_explain_lines(rec["explain"]))
    for victim, reason in sorted(result.preempted.items()):
        lines.append(f"preempted {victim}: {reason}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _scheduled_text(record: dict[str, Any]) -> str:
    """What a scheduled pod got besides its node: its volumes, then its devices."""
    return "; ".join(t for t in (_volumes_text(record), _devices_text(record)) if t)


def _devices_text(record: dict[str, Any]) -> str:
    """``devices: gpu->gpu.example.com/node-1/gpu-0, ...`` (a share: ``#<shareID>``)."""
    parts = []
    for d in record.get("devices") or ():
        text = f"{d['claim']}->{d['driver']}/{d['pool']}/{d['device']}"
        if "shareID" in d:
            text += f"#{d['shareID']}"
        if d.get("adminAccess"):
            text += " (admin access)"
        parts.append(text)
    return f"devices: {', '.join(parts)}" if parts else ""


def _volumes_text(record: dict[str, Any]) -> str:
    """``volumes: data->pv-n2, logs->pvc-1 (provisioned, selected-node n1)``."""
    parts = []
    for v in record.get("volumes") or ():
        text = f"{v['claim']}->{v['volume'] or '?'}"
        if "selectedNode" in v:
            text += f" (provisioned, selected-node {v['selectedNode']})"
        parts.append(text)
    return f"volumes: {', '.join(parts)}" if parts else ""


def _explain_lines(explain: dict[str, Any]) -> list[str]:
    lines = []
    for node, verdict in explain["filter"].items():
        score = explain["score"].get(node)
        text = f"    {node}: {verdict}"
        if score is not None:
            parts = ", ".join(
                f"{name} {v['raw']}x{v['weight']}={v['weighted']}"
                for name, v in score["plugins"].items()
            )
            text += f"; score {score['total']} ({parts})"
        lines.append(text)
    return lines
