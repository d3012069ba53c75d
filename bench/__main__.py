"""``make bench``: scheduling throughput and memory at 100, 1000 and 5000 nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from .interpreter import describe

SCENARIOS = [
    ["--nodes", "100", "--kind", "simple", "--breakdown"],
    ["--nodes", "1000", "--kind", "simple", "--breakdown"],
    ["--nodes", "5000", "--kind", "simple", "--bound", "20000", "--breakdown"],
    ["--nodes", "1000", "--kind", "complex", "--pods", "200", "--breakdown"],
    ["--nodes", "5000", "--kind", "complex", "--bound", "20000", "--pods", "100"],
]


def main() -> int:
    print(
        "multisched bench: one core, default profile, scheduling cycles only "
        "(filter+score+select) and through the queue with assume/bind"
    )
    print(f"on {describe()}")
    for args in SCENARIOS:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.run", *args], capture_output=True, text=True, check=False
        )
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"\n{res['nodes']:>5} nodes, {res['bound']:>5} bound pods, {res['kind']:>7} pods: "
            f"{res['cycles_per_s']:>8.1f} cycles/s   (queue+assume+bind "
            f"{res['queue_cycles_per_s']:.1f}/s)   peak RSS {res['peak_rss_mb']} MB   "
            f"build {res['build_s']}s"
        )
        for key, us in (res.get("breakdown_us_per_cycle") or {}).items():
            print(f"      {key:<48} {us:>9.1f} us/cycle")
    return live()


def _run(*args: str) -> dict[str, Any] | None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.live", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode:
        print(proc.stderr, file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def live() -> int:
    """The live commands (issue 10): wall time is what a user waits; CPU time is the
    command's own work, steadier on a shared machine."""
    print(
        "\nsimulate FILE -o json, in-process: read + parse YAML + schedule + render "
        "(modules loaded by a first tiny run)"
    )
    for kind, target in (("simple", "target >= 1000/s"), ("mixed", "")):
        sim = _run("simulate", "1000", "2000", kind)
        if sim is None:
            return 1
        print(
            f"  {sim['nodes']} nodes, {sim['pending']} {kind} pending pods: "
            f"{sim['pods_per_s']:.0f} pods/s wall ({sim['seconds']} s), "
            f"{sim['pods_per_cpu_s']:.0f} pods/s CPU ({sim['cpu_seconds']} s)   {target}\n"
            f"  as a fresh process (interpreter start and imports included): "
            f"{sim['cold_pods_per_s']:.0f} pods/s ({sim['cold_process_s']} s)"
            + ("   target >= 1500/s" if kind == "mixed" else "")
        )
    print("\nsnapshot / explain end to end (fresh process, against bench.fake_api)")
    res = _run("live", "5000", "50000", "1000")
    if res is None:
        return 1
    print(
        f"  {res['nodes']} nodes, {res['pods']} pods:\n"
        f"    snapshot           {res['snapshot_s']:>6} s wall  {res['snapshot_cpu_s']:>6} s CPU"
        f"   ({res['snapshot_mb']} MB)   target <= 15 s\n"
        f"    explain (pending)  {res['explain_pending_s']:>6} s wall  "
        f"{res['explain_pending_cpu_s']:>6} s CPU   target <= 5 s\n"
        f"    explain (bound)    {res['explain_bound_s']:>6} s wall  "
        f"{res['explain_bound_cpu_s']:>6} s CPU\n"
        f"    simulate SNAPSHOT  {res['simulate_snapshot_s']:>6} s wall  "
        f"{res['simulate_snapshot_cpu_s']:>6} s CPU   ({res['pending']} pending pods)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
