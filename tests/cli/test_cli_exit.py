"""How the command leaves its process (``cli.entry``): without tearing its heap down, but
with everything written and every exit handler run, and with the command's exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builders import node_dict, pod_dict

ROOT = Path(__file__).resolve().parents[2]
#: Buffered streams, as a user's shell gives a command (this suite may run unbuffered).
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _cluster(tmp_path: Path, pods: int) -> Path:
    import yaml

    profile = {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "p"},
        "spec": {"profiles": [{"schedulerName": "default-scheduler"}]},
    }
    docs = [profile, *(node_dict(f"n{i}", cpu="64") for i in range(3))]
    docs += [pod_dict(f"p{i:03d}", requests={"cpu": "100m"}) for i in range(pods)]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


#: The console script, with ``code`` run first.
PROGRAM = "import sys\n{code}\nsys.argv = ['multisched', *sys.argv[1:]]\n" + (
    "from multisched.cli import entry\nentry()\n"
)


def _command(
    *argv: str, code: str = "", stdout: Any = subprocess.PIPE, module: bool = False
) -> subprocess.CompletedProcess[str]:
    """The console script (``module``: ``python -m multisched``), buffered, as a user runs it."""
    launch = ["-m", "multisched"] if module else ["-c", PROGRAM.format(code=code)]
    return subprocess.run(
        [sys.executable, *launch, *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=BUFFERED,
        check=False,
    )


@pytest.mark.parametrize("pods", [1, 200])
def test_the_whole_output_reaches_a_pipe(tmp_path: Path, pods: int) -> None:
    """Less than one buffer of JSON through a pipe (all of it still buffered when the
    command returns), and many buffers: all of it is written."""
    proc = _command("simulate", str(_cluster(tmp_path, pods)), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert (len(proc.stdout) < 8192) == (pods == 1)  # io.DEFAULT_BUFFER_SIZE
    placed = json.loads(proc.stdout)["pods"]
    assert [p["status"] for p in placed] == ["Scheduled"] * pods


def test_exit_handlers_run_and_the_code_is_the_commands(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    handler = f"import atexit\natexit.register(lambda: open({str(ran)!r}, 'w').write('yes'))"
    proc = _command("simulate", str(_cluster(tmp_path, 1)), code=handler)
    assert proc.returncode == 0, proc.stderr
    assert ran.read_text() == "yes"
    ran.unlink()
    missing = tmp_path / "missing.yaml"
    proc = _command("simulate", str(missing), code=handler)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "missing.yaml" in proc.stderr
    assert ran.read_text() == "yes"


def test_an_error_message_on_stderr_is_whole(tmp_path: Path) -> None:
    """stderr is written before the process ends (a pipe buffers it as well)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n")
    proc = _command("simulate", str(bad), module=True)
    assert proc.returncode == 2
    assert proc.stderr.endswith("\n") and "spec.containers" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path) -> None:
    """``multisched simulate ... | head``: the reader closes the pipe after a few bytes, long
    before the output (four times a pipe's buffer) is written."""
    program = PROGRAM.format(code="")
    with subprocess.Popen(
        [sys.executable, "-c", program, "simulate", str(_cluster(tmp_path, 1500)), "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=BUFFERED,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(10).startswith(b"{")
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 1
    assert err == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("pods", [1, 300])
def test_a_full_disk_is_one_line(tmp_path: Path, pods: int) -> None:
    """Output that fails to be written: while the command writes it, or at the last flush."""
    with open("/dev/full", "w") as full:
        proc = _command("simulate", str(_cluster(tmp_path, pods)), "-o", "json", stdout=full)
    assert proc.returncode == 1
    assert proc.stderr == "error: writing the output: No space left on device\n"
