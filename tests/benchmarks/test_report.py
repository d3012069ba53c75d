"""bench-e2e's table: multisched's figures over kube-scheduler's, and over the JSON reference's
when it ran; a candidate build's over kube-scheduler's and multisched's."""

from __future__ import annotations

from bench.e2e.report import (
    CANDIDATE,
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


def _ab(ks: float, ours: float, candidate: float) -> Table:
    table = Table({})
    for who, value in ((KUBE_SCHEDULER, ks), (MULTISCHED, ours), (CANDIDATE, candidate)):
        table.add("s", "plain", "CPU per pod", who, Figure(value, "ms"))
    return table


AB = [KUBE_SCHEDULER, MULTISCHED, CANDIDATE]


def test_one_run_shows_the_candidates_ratios_to_kube_scheduler_and_multisched() -> None:
    text = _ab(1.0, 1.2, 0.9).render(AB)
    header = text.splitlines()[0]
    assert "candidate/kube-scheduler" in header
    assert "candidate/multisched" in header
    # multisched/kube-scheduler, candidate/kube-scheduler, candidate/multisched
    assert [c.strip() for c in _cells(text) if c.strip().endswith("x")] == [
        "1.20x",
        "0.90x",
        "0.75x",
    ]


def test_the_ab_median_is_of_the_per_run_ratios_candidate_over_multisched() -> None:
    # Per run, candidate/multisched: 0.8, 1.5, 0.9 (median 0.9); the medians of the figures
    # (2.7 ms over 2.0 ms) would say 1.35.
    runs = [_ab(1.0, 1.0, 0.8), _ab(1.0, 2.0, 3.0), _ab(1.0, 3.0, 2.7)]
    text = medians(runs, AB)
    assert "candidate/multisched" in text.splitlines()[0]
    ratios = [c.strip() for c in _cells(text) if c.strip().endswith("x")]
    # multisched/kube-scheduler 1, 2, 3; candidate/kube-scheduler 0.8, 3, 2.7
    assert ratios == ["2.00x", "2.70x", "0.90x"]
    assert "0.80-1.50" in text


def test_the_targets_judge_multisched_not_the_candidate() -> None:
    from bench.e2e.report import Target

    table = Table({("s", "CPU per pod"): Target(1.0, relative=True)})
    for who, value in ((KUBE_SCHEDULER, 1.0), (MULTISCHED, 1.2), (CANDIDATE, 0.9)):
        table.add("s", "plain", "CPU per pod", who, Figure(value, "ms"))
    assert table.rows()[0].goal() == "<= 1x kube-scheduler: missed"


def _whole(*notes: str) -> list[Table]:
    tables = []
    for note in notes:
        table = Table({})
        table.add("g", "gangs", "gangs bound whole", MULTISCHED, Figure(None, "", note))
        tables.append(table)
    return tables


def test_a_check_the_runs_agree_on_is_shown_once() -> None:
    text = medians(_whole("10/10, 0 in part", "10/10, 0 in part"), [MULTISCHED])
    assert text.splitlines()[2].split("  ")[-1].strip() == "10/10, 0 in part"


def test_a_check_one_run_failed_is_not_lost_among_the_medians() -> None:
    text = medians(
        _whole("10/10, 0 in part", "9/10, 1 in part (g-7)", "10/10, 0 in part"), [MULTISCHED]
    )
    assert "10/10, 0 in part (2 of 3 runs); 9/10, 1 in part (g-7) (1 of 3 runs)" in text
