"""bench-e2e's table: multisched's figures over kube-scheduler's, and over the JSON reference's
when it ran."""

from __future__ import annotations

from bench.e2e.report import (
    KUBE_SCHEDULER,
    KUBE_SCHEDULER_JSON,
    MULTISCHED,
    Figure,
    Table,
    medians,
)

ALL = [KUBE_SCHEDULER, KUBE_SCHEDULER_JSON, MULTISCHED]


def _table(ks: float, ks_json: float, ours: float) -> Table:
    table = Table({})
    for who, value in ((KUBE_SCHEDULER, ks), (KUBE_SCHEDULER_JSON, ks_json), (MULTISCHED, ours)):
        table.add("s", "plain", "CPU per pod", who, Figure(value, "ms"))
    return table


def _cells(text: str) -> list[str]:
    row = text.splitlines()[2]
    return row.split("  ")


def test_one_run_shows_the_ratio_to_each_reference() -> None:
    text = _table(1.0, 1.5, 1.2).render(ALL)
    header = text.splitlines()[0]
    assert "multisched/kube-scheduler " in header
    assert "multisched/kube-scheduler-json" in header
    assert [c.strip() for c in _cells(text) if c.strip().endswith("x")] == ["1.20x", "0.80x"]


def test_medians_are_of_the_per_run_ratios_to_each_reference() -> None:
    runs = [_table(1.0, 1.5, 1.2), _table(2.0, 2.0, 1.0), _table(1.0, 1.0, 1.5)]
    text = medians(runs, ALL)
    assert "median ratio to json" in text.splitlines()[0]
    ratios = [c.strip() for c in _cells(text) if c.strip().endswith("x")]
    # to kube-scheduler 1.2, 0.5, 1.5; to the JSON reference 0.8, 0.5, 1.5
    assert ratios == ["1.20x", "0.80x"]
    assert "0.50-1.50" in text


def test_without_the_json_reference_the_table_is_as_before() -> None:
    text = medians([_table(1.0, 1.5, 1.2)], [KUBE_SCHEDULER, MULTISCHED])
    assert "json" not in text
    assert "1.20x" in text
