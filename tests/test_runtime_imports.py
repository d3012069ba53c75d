"""``multisched run`` (the image) ships without the cli extra: the operator imports none of
kubernetes-validate, jsonschema or referencing, and the offline commands say what is missing
in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA = ("kubernetes_validate", "jsonschema", "referencing")

#: A finder that refuses the cli extra, as an image without it would.
BLOCK = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRA!r}:
            raise ImportError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
EXTRA = {EXTRA!r}
sys.path.insert(0, {str(ROOT / "operator")!r})
"""


def _python(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_operator_runs_without_the_cli_extra() -> None:
    out = _python(
        """
import multisched.operator.main, multisched.operator.runtime
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.scheduler import default_registry
spec = parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]})
resolve(spec, default_registry())
print(sorted(m for m in sys.modules if m.split(".")[0] in EXTRA))
"""
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_simulate_without_the_cli_extra_says_so_in_one_line() -> None:
    example = ROOT / "examples" / "cluster" / "volumes.yaml"
    out = _python(
        "from multisched.cli import main; raise SystemExit(main(sys.argv[1:]))",
        "simulate",
        str(example),
    )
    assert out.returncode == 2
    assert out.stderr == "error: simulate needs the cli extra: pip install 'multisched[cli]'\n"
    assert out.stdout == ""
