"""Rendering of simulate results: table (like kubectl), yaml or json."""

from __future__ import annotations

import json
from typing import Any

import yaml

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


def render(result: SimulationResult, fmt: str, explain: bool) -> str:
    records = as_records(result, explain)
    if fmt == "json":
        return json.dumps({"pods": records, "preempted": result.preempted}, indent=2) + "\n"
    if fmt == "yaml":
        return str(
            yaml.safe_dump(
                {"pods": records, "preempted": result.preempted}, sort_keys=False, width=1000
            )
        )
    return _table(records, result)


def _table(records: list[dict[str, Any]], result: SimulationResult) -> str:
    rows = [("POD", "SCHEDULER", "STATUS", "NODE", "MESSAGE")]
    for r in records:
        rows.append(
            (
                r["pod"],
                r["schedulerName"],
                r["status"],
                r["node"] or "<none>",
                r["message"] if r["status"] != "Scheduled" else _volumes_text(r),
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
