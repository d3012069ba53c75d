"""``python -m bench.e2e``'s arguments: what a quick run of one shape asks for, and the
candidate build an A/B runs beside multisched."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from bench.e2e.__main__ import _interpreter_of, build_parser, run_order
from bench.e2e.objects import SHAPES
from bench.e2e.procs import Contender


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


def test_a_candidate_is_another_builds_executable_script(tmp_path: Path) -> None:
    script = tmp_path / "multisched"
    script.write_text(f"#!{sys.executable}\n")
    script.chmod(0o755)
    assert build_parser().parse_args(["--candidate", str(script)]).candidate == script
    assert build_parser().parse_args([]).candidate is None


def test_the_candidate_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "multisched"
    script.write_text(f"#!{sys.executable}\n")
    script.chmod(0o755)
    monkeypatch.setenv("BENCH_E2E_CANDIDATE", str(script))
    assert build_parser().parse_args([]).candidate == script


@pytest.mark.parametrize("mode", [0o644, None])
def test_a_candidate_that_cannot_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: int | None
) -> None:
    script = tmp_path / "multisched"
    if mode is not None:
        script.write_text(f"#!{sys.executable}\n")
        script.chmod(mode)
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--candidate", str(script)])
    assert exc.value.code == 2
    assert f"'{script}' is not an executable file" in capsys.readouterr().err


def test_the_candidates_interpreter_is_named_from_its_shebang(tmp_path: Path) -> None:
    script = tmp_path / "multisched"
    script.write_text(f"#!{sys.executable}\nprint('hello')\n")
    assert _interpreter_of(script).startswith(f"CPython {platform.python_version()} (")
    script.write_text("print('no shebang')\n")
    assert _interpreter_of(script) == "an unknown interpreter"
    script.write_text("#!/nonexistent/python\n")
    assert _interpreter_of(script) == "an unknown interpreter"


def test_each_run_starts_with_the_next_scheduler_in_turn() -> None:
    ks, ms, cand = (Contender(name, "s", [name], "--port") for name in ("ks", "ms", "cand"))
    orders = [[c.name for c in run_order([ks, ms, cand], n)] for n in range(4)]
    assert orders == [
        ["ks", "ms", "cand"],
        ["ms", "cand", "ks"],
        ["cand", "ks", "ms"],
        ["ks", "ms", "cand"],
    ]
    assert [c.name for c in run_order([ks, ms], 1)] == ["ms", "ks"]
    assert run_order([], 3) == []
