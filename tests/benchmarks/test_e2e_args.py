"""``python -m bench.e2e``'s arguments: what a quick run of one shape asks for."""

from __future__ import annotations

import pytest

from bench.e2e.__main__ import build_parser
from bench.e2e.objects import SHAPES


def test_every_shape_runs_unless_some_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_E2E_SHAPES", raising=False)
    assert build_parser().parse_args([]).shapes == SHAPES


def test_named_shapes_run_in_the_tables_order() -> None:
    args = build_parser().parse_args(["--shapes", "mixed, plain"])
    assert args.shapes == ("plain", "mixed")


def test_shapes_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_E2E_SHAPES", "spread")
    assert build_parser().parse_args([]).shapes == ("spread",)


def test_an_unknown_shape_is_refused_with_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--shapes", "plain,zigzag"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown shape zigzag" in err
    assert all(shape in err for shape in SHAPES)
