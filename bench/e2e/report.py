"""Figures and the side-by-side table: both schedulers and the ratio multisched/kube-scheduler;
with a candidate (another multisched build), its ratios to kube-scheduler and to multisched."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

KUBE_SCHEDULER = "kube-scheduler"
#: kube-scheduler speaking JSON to the API server (a reference, not a target).
KUBE_SCHEDULER_JSON = "kube-scheduler-json"
MULTISCHED = "multisched"
#: A second multisched build measured in the same runs (``--candidate``): the A/B of a change.
CANDIDATE = "candidate"
#: The contenders that run multisched's profiles (gangs get Coscheduling), not kube-scheduler's.
MULTISCHEDS = (MULTISCHED, CANDIDATE)


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

    def ratio_value(self, to: str = KUBE_SCHEDULER, of: str = MULTISCHED) -> float | None:
        """``of``'s figure (multisched's) over ``to``'s."""
        ours, theirs = self.value(of), self.value(to)
        return ours / theirs if ours is not None and theirs else None

    def ratio(self, to: str = KUBE_SCHEDULER, of: str = MULTISCHED) -> str:
        ratio = self.ratio_value(to, of)
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
        pairs = _pairs(contenders)
        header += [f"{of}/{to}" for of, to in pairs]
        header.append("issue 7 target")
        lines = [header]
        last = ""
        for row in self.rows():
            cells = [row.scenario if row.scenario != last else "", row.measure]
            cells += [row.figures[c].text() if c in row.figures else "-" for c in contenders]
            cells += [row.ratio(to, of) for of, to in pairs]
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


def _pairs(contenders: list[str]) -> list[tuple[str, str]]:
    """The ratios shown, (of, to), of the contenders measured: multisched's to each
    reference, and the candidate's to kube-scheduler and to multisched."""
    return [pair for pair in _RATIO_COLUMNS if pair[0] in contenders and pair[1] in contenders]


#: The columns of each ratio in ``medians``; multisched's to kube-scheduler also says in how
#: many runs both had a figure.
_RATIO_COLUMNS = {
    (MULTISCHED, KUBE_SCHEDULER): ["median ratio", "ratio range", "runs"],
    (MULTISCHED, KUBE_SCHEDULER_JSON): ["median ratio to json", "range"],
    (CANDIDATE, KUBE_SCHEDULER): ["candidate's median ratio", "range"],
    (CANDIDATE, MULTISCHED): ["candidate/multisched", "range"],
}


def _median_ratio(rows: Sequence[Row], to: str, of: str = MULTISCHED) -> list[str]:
    """The median of the per-run ratios ``of``/``to``, their range, and how many runs had
    both figures."""
    ratios = [x for r in rows if (x := r.ratio_value(to, of)) is not None]
    if not ratios:
        return ["-", "-", "0"]
    return [
        f"{statistics.median(ratios):.2f}x",
        f"{min(ratios):.2f}-{max(ratios):.2f}",
        str(len(ratios)),
    ]


def _notes(notes: Sequence[str]) -> str:
    """Runs' notes of a figure without a value: the one they share, or each with its count."""
    if not any(notes):
        return "-"
    if len(set(notes)) == 1:
        return notes[0]
    counts = Counter(n for n in notes if n)
    return "; ".join(f"{note} ({n} of {len(notes)} runs)" for note, n in counts.most_common())


def medians(tables: Sequence[Table], contenders: list[str]) -> str:
    """Several runs' tables as one: per row, the median of each contender's figures and the
    median of the per-run ratios multisched/kube-scheduler with their range (runs in which a
    figure is missing are left out of that row); multisched/kube-scheduler-json's median
    ratio when that reference ran; and a candidate's to kube-scheduler and to multisched,
    each over the same run's figures."""
    keyed: dict[tuple[str, str], list[Row]] = {}
    for table in tables:
        for key, row in sorted(table._rows.items(), key=lambda kv: kv[0][0]):
            keyed.setdefault(key, []).append(row)
    pairs = _pairs(contenders)
    header = ["scenario", "measure", *contenders]
    for pair in pairs:
        header += _RATIO_COLUMNS[pair]
    lines = [header]
    last = ""
    for rows in keyed.values():
        first = rows[0]
        cells = [first.scenario if first.scenario != last else "", first.measure]
        for c in contenders:
            values = [v for r in rows if (v := r.value(c)) is not None]
            unit = next((r.figures[c].unit for r in rows if c in r.figures), "")
            if values:
                cells.append(Figure(statistics.median(values), unit).text())
            else:  # a check ("10/10, 0 in part") or "none in 120 s": what each run said
                cells.append(_notes([r.figures[c].note for r in rows if c in r.figures]))
        for of, to in pairs:
            cells += _median_ratio(rows, to, of)[: len(_RATIO_COLUMNS[of, to])]
        lines.append(cells)
        last = first.scenario
    return columns(lines)
