"""``multisched run`` imports the operator with the collector off, and turns it back on; the
one-shot commands run with the young generation tuned."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator

import pytest

from multisched import cli, heap
from multisched.cli import main


@pytest.fixture
def collector_on() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_run_imports_the_operator_with_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    during_import: list[bool] = []
    ran: list[tuple[list[str], bool]] = []

    def run(argv: list[str]) -> int:
        ran.append((argv, gc.isenabled()))
        return 3

    # The operator's module as the import statement reads it: ``from ... import run``.
    operator_main = types.ModuleType("multisched.operator.main")

    def module_getattr(name: str) -> object:
        if name == "run":
            during_import.append(gc.isenabled())
            return run
        raise AttributeError(name)

    operator_main.__getattr__ = module_getattr  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "multisched.operator.main", operator_main)

    assert main(["run", "--all-namespaces"]) == 3
    assert during_import == [False]
    assert ran == [(["--all-namespaces"], True)]  # on again before the operator runs
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_failed_import_turns_the_collector_back_on(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = types.ModuleType("multisched.operator.main")  # has no ``run``
    monkeypatch.setitem(sys.modules, "multisched.operator.main", broken)
    with pytest.raises(ImportError):
        main(["run"])
    assert gc.isenabled()


def test_a_one_shot_command_runs_with_the_young_generation_tuned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, int]] = []

    def validate(args: object) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(cli, "cmd_validate", validate)
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        assert main(["validate", "profile.yaml"]) == 0
        assert seen == [(heap.YOUNG_THRESHOLD, 10, 10)]
        assert gc.get_threshold() == (700, 10, 10)  # main leaves the process as it was
    finally:
        gc.set_threshold(*before)


def test_sigusr2_during_start_up_does_not_end_the_operator() -> None:
    """The dump it asks for is served once the runtime starts; before, the process ignores
    it instead of ending (Python's default). The signal arrives while the operator's
    modules are imported, here as ``run`` is looked up."""
    code = textwrap.dedent(
        """
        import os, signal, sys, types
        main = types.ModuleType("multisched.operator.main")
        def getattr_(name):
            os.kill(os.getpid(), signal.SIGUSR2)
            return lambda argv: 0
        main.__getattr__ = getattr_
        sys.modules["multisched.operator.main"] = main
        from multisched.cli import main as cli_main
        sys.exit(cli_main(["run"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
