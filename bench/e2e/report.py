"""Figures and the side-by-side table: both schedulers and the ratio multisched/kube-scheduler."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

KUBE_SCHEDULER = "kube-scheduler"
#: kube-scheduler speaking JSON to the API server (a reference, not a target).
KUBE_SCHEDULER_JSON = "kube-scheduler-json"
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


@dataclass(frozen=True, slots=True)
class Target:
    """Issue 7's goal for multisched's figure: absolute, or relative to kube-scheduler's."""

    bound: float
    unit: str = ""
    at_most: bool = True
    relative: bool = False

    def text(self) -> str:
        what = "x kube-scheduler" if self.relative else f" {self.unit}"
        return f"{'<=' if self.at_most else '>='} {self.bound:g}{what}"

    def verdict(self, row: Row) -> str:
        value = row.ratio_value() if self.relative else row.value(MULTISCHED)
        if value is None:
            ours = row.figures.get(MULTISCHED)
            # No figure because nothing happened in time: an upper bound on time is missed.
            return "missed" if ours is not None and ours.note and not self.relative else ""
        met = value <= self.bound if self.at_most else value >= self.bound
        return "met" if met else "missed"


@dataclass(slots=True)
class Row:
    scenario: str
    measure: str
    target: Target | None = None
    figures: dict[str, Figure] = field(default_factory=dict)

    def value(self, who: str) -> float | None:
        figure = self.figures.get(who)
        return figure.value if figure is not None else None

    def ratio_value(self, to: str = KUBE_SCHEDULER) -> float | None:
        """multisched's figure over ``to``'s."""
        ours, theirs = self.value(MULTISCHED), self.value(to)
        return ours / theirs if ours is not None and theirs else None

    def ratio(self, to: str = KUBE_SCHEDULER) -> str:
        ratio = self.ratio_value(to)
        return "-" if ratio is None else f"{ratio:.2f}x"

    def goal(self) -> str:
        if self.target is None:
            return ""
        verdict = self.target.verdict(self)
        return f"{self.target.text()}: {verdict}" if verdict else self.target.text()


class Table:
    """Rows keyed by scenario id and measure, printed in scenario order."""

    def __init__(self, targets: Mapping[tuple[str, str], Target]) -> None:
        self._rows: dict[tuple[str, str], Row] = {}
        self._targets = targets

    def add(self, key: str, scenario: str, measure: str, who: str, figure: Figure) -> None:
        row = self._rows.get((key, measure))
        if row is None:
            row = Row(scenario, measure, self._targets.get((key, measure)))
            self._rows[key, measure] = row
        row.figures[who] = figure

    def rows(self) -> list[Row]:
        return [self._rows[k] for k in sorted(self._rows, key=lambda k: k[0])]

    def render(self, contenders: list[str]) -> str:
        header = ["scenario", "measure", *contenders]
        references = _references(contenders)
        header += [f"multisched/{to}" for to in references]
        header.append("issue 7 target")
        lines = [header]
        last = ""
        for row in self.rows():
            cells = [row.scenario if row.scenario != last else "", row.measure]
            cells += [row.figures[c].text() if c in row.figures else "-" for c in contenders]
            cells += [row.ratio(to) for to in references]
            cells.append(row.goal())
            lines.append(cells)
            last = row.scenario
        return columns(lines)

    def dump(self, path: Path, meta: dict[str, object]) -> None:
        rows = [
            {
                "scenario": r.scenario,
                "measure": r.measure,
                "figures": {k: asdict(v) for k, v in r.figures.items()},
                "target": r.goal(),
            }
            for r in self.rows()
        ]
        path.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")


def columns(lines: list[list[str]]) -> str:
    """Rows of cells as aligned columns, the first row a header underlined."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _references(contenders: list[str]) -> list[str]:
    """The schedulers multisched's figures are divided by, of those measured."""
    if MULTISCHED not in contenders:
        return []
    return [c for c in (KUBE_SCHEDULER, KUBE_SCHEDULER_JSON) if c in contenders]


#: The columns of multisched's ratio to each reference in ``medians``; kube-scheduler's also
#: says in how many runs both had a figure.
_RATIO_COLUMNS = {
    KUBE_SCHEDULER: ["median ratio", "ratio range", "runs"],
    KUBE_SCHEDULER_JSON: ["median ratio to json", "range"],
}


def _median_ratio(rows: Sequence[Row], to: str) -> list[str]:
    """The median of the per-run ratios multisched/``to``, their range, and how many runs
    had both figures."""
    ratios = [x for r in rows if (x := r.ratio_value(to)) is not None]
    if not ratios:
        return ["-", "-", "0"]
    return [
        f"{statistics.median(ratios):.2f}x",
        f"{min(ratios):.2f}-{max(ratios):.2f}",
        str(len(ratios)),
    ]


def medians(tables: Sequence[Table], contenders: list[str]) -> str:
    """Several runs' tables as one: per row, the median of each contender's figures and the
    median of the per-run ratios multisched/kube-scheduler with their range (runs in which a
    figure is missing are left out of that row); and multisched/kube-scheduler-json's median
    ratio when that reference ran."""
    keyed: dict[tuple[str, str], list[Row]] = {}
    for table in tables:
        for key, row in sorted(table._rows.items(), key=lambda kv: kv[0][0]):
            keyed.setdefault(key, []).append(row)
    references = _references(contenders)
    header = ["scenario", "measure", *contenders]
    for to in references:
        header += _RATIO_COLUMNS[to]
    lines = [header]
    last = ""
    for rows in keyed.values():
        first = rows[0]
        cells = [first.scenario if first.scenario != last else "", first.measure]
        for c in contenders:
            values = [v for r in rows if (v := r.value(c)) is not None]
            unit = next((r.figures[c].unit for r in rows if c in r.figures), "")
            cells.append(Figure(statistics.median(values), unit).text() if values else "-")
        for to in references:
            cells += _median_ratio(rows, to)[: len(_RATIO_COLUMNS[to])]
        lines.append(cells)
        last = first.scenario
    return columns(lines)
