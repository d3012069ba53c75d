"""``make bench``: scheduling throughput and memory at 100, 1000 and 5000 nodes."""

from __future__ import annotations

import json
import subprocess
import sys

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
