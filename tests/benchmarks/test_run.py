"""``make bench``'s worker runs on the engine as it is (it drives the scheduler directly,
so a renamed engine call breaks it where no other test looks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_worker_schedules_and_binds_a_small_cluster() -> None:
    args = ["--nodes", "20", "--pods", "60", "--kind", "complex", "--breakdown"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["nodes"] == 20 and figures["kind"] == "complex"
    assert figures["cycles_per_s"] > 0 and figures["queue_cycles_per_s"] > 0
    assert figures["breakdown_us_per_cycle"]
