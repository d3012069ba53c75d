"""Figures and the side-by-side table: both schedulers and the ratio multisched/kube-scheduler."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

KUBE_SCHEDULER = "kube-scheduler"
MULTISCHED = "multisched"


@dataclass(frozen=True, slots=True)
class Figure:
    """A measured value, or None with a note saying why there is none ("none in 120 s")."""

    value: float | None
    unit: str
    note: str = ""

    def text(self) -> str:
        if self.value is None:
            return self.note or "-"
        digits = 0 if abs(self.value) >= 100 else 1 if abs(self.value) >= 10 else 2
        shown = f"{self.value:.{digits}f} {self.unit}".rstrip()
        return f"{shown} {self.note}" if self.note else shown


@dataclass(slots=True)
class Row:
    scenario: str
    measure: str
    figures: dict[str, Figure] = field(default_factory=dict)

    def ratio(self) -> str:
        ours, theirs = self.figures.get(MULTISCHED), self.figures.get(KUBE_SCHEDULER)
        if ours is None or theirs is None or ours.value is None or not theirs.value:
            return "-"
        return f"{ours.value / theirs.value:.2f}x"


class Table:
    """Rows keyed by scenario id and measure, printed in scenario order."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Row] = {}

    def add(self, key: str, scenario: str, measure: str, who: str, figure: Figure) -> None:
        row = self._rows.setdefault((key, measure), Row(scenario, measure))
        row.figures[who] = figure

    def rows(self) -> list[Row]:
        return [self._rows[k] for k in sorted(self._rows, key=lambda k: k[0])]

    def render(self, contenders: list[str]) -> str:
        header = ["scenario", "measure", *contenders]
        if KUBE_SCHEDULER in contenders and MULTISCHED in contenders:
            header.append("multisched/kube-scheduler")
        lines = [header]
        last = ""
        for row in self.rows():
            cells = [row.scenario if row.scenario != last else "", row.measure]
            cells += [row.figures[c].text() if c in row.figures else "-" for c in contenders]
            if len(header) > len(cells):
                cells.append(row.ratio())
            lines.append(cells)
            last = row.scenario
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        out = []
        for n, line in enumerate(lines):
            out.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
            if n == 0:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)

    def dump(self, path: Path, meta: dict[str, object]) -> None:
        rows = [
            {
                "scenario": r.scenario,
                "measure": r.measure,
                "figures": {k: asdict(v) for k, v in r.figures.items()},
            }
            for r in self.rows()
        ]
        path.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
