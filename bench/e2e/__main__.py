"""``python -m bench.e2e`` (``make bench-e2e``): issue 7's targets, measured side by side.

Needs etcd, kube-apiserver and openssl on PATH (skips with a message otherwise); runs
kube-scheduler too when it is on PATH. ``BENCH_E2E_SCALE=0.1`` shrinks every scenario.
Scenario (g), gangs: multisched with scheduler-plugins' Coscheduling on PodGroups of 8 pods,
kube-scheduler (no gang plugin) on the same pods ungrouped, in the same batches of 8.
Scenario (s), shapes: a backlog of each of scheduler_perf's pod shapes (plain, spread,
anti-affinity, affinity, mixed) on the bench's nodes, or on --shape-nodes (e.g. 500,5000).
Scenario (u), unschedulable: backlogs no node can take (too big; every node full), up to each
pod's PodScheduled=False. --candidate runs a second multisched build (another venv's script)
beside multisched in every run: the A/B of a change, on the same control plane within seconds
of each other. With --repeat, each run starts with the next scheduler in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from ..interpreter import describe
from .cgroups import HARNESS_MILLICPU, KUBEADM_MILLICPU, CgroupsUnavailable, pod_cgroups
from .controlplane import control_plane, missing_binaries
from .devices import device_scenario
from .gangs import gang_scenario
from .kube import Kube
from .objects import SHAPES
from .preemption import preemption_scenario, waiting_preemptors_scenario
from .procs import Contender, kube_scheduler, multisched
from .report import CANDIDATE, Table, medians
from .scenarios import TARGETS, Bench, Sizes, log, profile_scheduler_name
from .shapes import shape_scenario
from .unschedulable import unschedulable_scenario

SCENARIOS = "abcdvgsupr"
NOTES = """
first binding after start: from the scheduler's process start to the harness's watch seeing
  spec.nodeName on a pod that was pending before the start.
peak RSS: VmHWM of the scheduler's process when its measurement ends (2 s after the first
  binding of a start-up, after the last of a backlog); CPU: utime+stime from /proc/<pid>/stat.
CPU per pod: the scheduler's CPU between the first and the last binding of the backlog over
  the pods bound in between (pods/s over the same span); in the stream, from the first create
  to the last binding over the pods bound. API server + etcd CPU per pod: theirs over the same
  span; both schedulers share the machine's cores with them.
gang last-created-to-bound: per gang (for kube-scheduler, per batch of 8 pods created
  together), from the return of its last pod's create to the watch seeing its last pod bound;
  gangs are created one after another, so a gang also waits for those ahead of it. gangs bound
  whole: gangs with all 8 pods bound on the API server at the end (none may have 1 to 7).
creation-to-bound: from ADDED to the first event with spec.nodeName, both read by the harness
  on one watch of the pods (server timestamps have only second precision).
shapes (s): each a backlog as in (c), pods created before the scheduler starts. plain: requests
  only; spread: zone spread maxSkew 1 DoNotSchedule + hostname spread maxSkew 1 ScheduleAnyway
  over the pods of its app (20 apps); anti-affinity: required pod anti-affinity on hostname
  within a group of min(100, nodes) pods; affinity: preferred pod affinity (weight 100) on
  zone to its app's pods; mixed: the four in turn. Nodes are in 3 zones.
unschedulable (u): as (c), but the span and the counts are of each pod's first PodScheduled=False
  on the watch. too big: 1000 cpu per pod, more than any node has; full: 2 cpu per pod on
  nodes each holding a 63-cpu pod of the same priority (preemption finds no victim).
preemption (p): as many pods as nodes, of a higher PriorityClass, 40 cpu each, created at once
  into a running scheduler; each node holds a 63-cpu pod of priority 0, so each pod binds after
  preempting one (victims per pod: fillers gone over pods bound; one is the fewest). pods/s and
  CPU from the first create to the last binding, as in the stream. Then a backlog as in (c)
  beside 10 such pods whose victims have a 30 s grace period that no kubelet ends: the
  preemptors stay nominated to their nodes (pods of lower priority must fit there beside them)."""


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        raise SystemExit(f"error: {name}={raw!r} is not a number") from None


def _node_counts(raw: str) -> list[int]:
    """``"500,5000"`` as [500, 5000]; empty: [] (the bench's own node count)."""
    try:
        counts = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a list of node counts") from None
    if any(n < 1 for n in counts):
        raise argparse.ArgumentTypeError(f"{raw!r}: node counts must be >= 1")
    return counts


def _shapes(raw: str) -> tuple[str, ...]:
    """``"plain,spread"`` as those shapes, in SHAPES' order; empty: every shape."""
    wanted = {part.strip() for part in raw.split(",") if part.strip()}
    unknown = sorted(wanted - set(SHAPES))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown shape {', '.join(unknown)} (the shapes: {', '.join(SHAPES)})"
        )
    return tuple(shape for shape in SHAPES if shape in wanted) or SHAPES


def _candidate(raw: str) -> Path | None:
    """The ``multisched`` script of another venv; empty: none."""
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise argparse.ArgumentTypeError(f"{raw!r} is not an executable file")
    return path.absolute()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__)
    parser.add_argument(
        "--scale",
        type=float,
        default=_float_env("BENCH_E2E_SCALE", 1.0),
        help="multiply every scenario's size (default $BENCH_E2E_SCALE or 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=_float_env("BENCH_E2E_TIMEOUT", 120.0),
        help="seconds any one wait may last (default $BENCH_E2E_TIMEOUT or 120)",
    )
    parser.add_argument(
        "--scenarios",
        default=os.environ.get("BENCH_E2E_SCENARIOS", SCENARIOS),
        help="which of a (10k running), b (50k running), c (backlog), d (stream), v (backlog "
        "of pods with local-PV claims), g (gangs of 8: Coscheduling; kube-scheduler gets them "
        "ungrouped), s (backlogs of pod shapes: plain, spread, anti-affinity, affinity, mixed), "
        "u (backlogs of pods no node can take, up to their PodScheduled=False), p (a burst of "
        "pods that each preempt a lower-priority pod), r (backlog of pods with a device claim "
        "each: DRA); default abcdvgsupr",
    )
    parser.add_argument(
        "--shape-nodes",
        type=_node_counts,
        default=os.environ.get("BENCH_E2E_SHAPE_NODES", ""),  # argparse applies the type
        metavar="N[,N...]",
        help="node counts scenario s runs its shapes at, one after another, e.g. 500,5000 "
        "(not scaled; default $BENCH_E2E_SHAPE_NODES or the bench's node count: 500 x scale)",
    )
    parser.add_argument(
        "--shapes",
        type=_shapes,
        default=os.environ.get("BENCH_E2E_SHAPES", ""),  # argparse applies the type
        metavar="SHAPE[,SHAPE...]",
        help=f"which of scenario s's shapes to run ({', '.join(SHAPES)}; default "
        "$BENCH_E2E_SHAPES or all): one shape, repeated, with --candidate, is the quick "
        "A/B of a change",
    )
    parser.add_argument(
        "--schedulers",
        default="kube-scheduler,multisched",
        help="comma-separated subset of kube-scheduler,kube-scheduler-json,multisched "
        "(kube-scheduler-json: the same kube-scheduler with a JSON client, as multisched's "
        "must be; a reference that tells the wire format's share of a ratio)",
    )
    parser.add_argument(
        "--candidate",
        type=_candidate,
        default=os.environ.get("BENCH_E2E_CANDIDATE", ""),  # argparse applies the type
        metavar="PATH",
        help="another build's multisched script (e.g. /tmp/venv-b/bin/multisched: a change "
        "installed in a second venv, or another interpreter), run beside multisched in "
        "every run; the table adds its median per-run ratios to kube-scheduler and to "
        "multisched (default $BENCH_E2E_CANDIDATE or none)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the scenarios this many times on one control plane and print, per figure, "
        "the median and the median of the per-run ratios with their range",
    )
    parser.add_argument(
        "--pod-cgroups",
        action="store_true",
        default=os.environ.get("BENCH_E2E_POD_CGROUPS", "") not in ("", "0", "false"),
        help="run each process in a CPU cgroup of its own weighted by its CPU request, as the "
        "kubelet runs pods (kubeadm's: kube-apiserver 250m, etcd and kube-scheduler 100m; "
        "multisched: the chart's), instead of all in one, where Linux shares busy cores per "
        "thread; needs root and a CPU controller (default $BENCH_E2E_POD_CGROUPS or off)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=32, help="API requests in flight while populating"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--logs", type=Path, help="keep the logs of etcd, kube-apiserver and the schedulers here"
    )
    return parser


def _version(argv: list[str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    return out.strip().splitlines()[-1] if out.strip() else "?"


def _interpreter_of(script: Path) -> str:
    """The CPython a console script runs on (its ``#!`` line), described as ours is."""
    first = script.read_bytes().split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return "an unknown interpreter"
    argv = [
        *first[2:].decode().split(),
        "-c",
        "from bench.interpreter import describe; print(describe())",
    ]
    try:
        out = subprocess.run(
            argv, capture_output=True, text=True, check=False, cwd=Path(__file__).parents[2]
        ).stdout.strip()
    except OSError:
        out = ""
    return out or "an unknown interpreter"


def _load() -> str:
    """Other work on the machine skews every figure: say how busy it was."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} CPUs"


async def bench(args: argparse.Namespace) -> int:
    sizes = Sizes.scaled(args.scale)
    wanted = {w.strip() for w in args.schedulers.split(",") if w.strip()}
    with pod_cgroups(args.pod_cgroups) as cgroups, control_plane(args.logs, cgroups) as cp:
        contenders: list[Contender] = []
        if "kube-scheduler" in wanted:
            ks = kube_scheduler(cp)
            if ks is None:
                log("kube-scheduler is not on PATH: measuring multisched alone")
            else:
                contenders.append(ks)
                log(f"kube-scheduler: {_version([ks.argv[0], '--version'])}")
        if "kube-scheduler-json" in wanted and (ks_json := kube_scheduler(cp, json=True)):
            contenders.append(ks_json)
        if "multisched" in wanted:
            contenders.append(multisched(cp, profile_scheduler_name()))
            # The script runs on this interpreter (bench.e2e.procs.multisched).
            log(f"multisched {metadata.version('multisched')} on {describe()}")
        if args.candidate is not None:
            contenders.append(multisched(cp, profile_scheduler_name(), args.candidate, CANDIDATE))
            log(f"candidate: {args.candidate} on {_interpreter_of(args.candidate)}")
        if not contenders:
            print("error: no scheduler to measure", file=sys.stderr)
            return 2
        kept = "" if args.logs else " (removed at exit; --logs DIR keeps them)"
        log(f"kube-apiserver: {_version(['kube-apiserver', '--version'])}")
        log(f"logs in {cp.workdir}{kept}")
        log(f"scale {args.scale}: {sizes}; timeout {args.timeout:.0f} s; {_load()}")
        log(_grouping(cgroups is not None, contenders))
        async with Kube(cp.url, cp.token) as kube:
            b = Bench(kube, cp, contenders, sizes, args.timeout, args.concurrency)
            await b.setup()
            tables = [b.table, *(Table(TARGETS) for _ in range(args.repeat - 1))]
            # Running pods only grow ((a) adds 10,000, (b) 50,000): every run of a phase is
            # done before the next phase adds pods, so that each run measures what it names.
            for phase in _phases(args.scenarios):
                for n, table in enumerate(tables):
                    b.contenders = run_order(contenders, n)
                    if args.repeat > 1:
                        log(f"{phase}: run {n + 1} of {args.repeat} ({b.contenders[0].name} first)")
                    b.table = table
                    await _scenarios(b, args, sizes, phase)
        log(f"done; {_load()}")
        names = [c.name for c in contenders]
        print()
        if len(tables) > 1:
            print(f"medians of {len(tables)} runs")
            print(medians(tables, names))
        else:
            print(b.table.render(names))
        print(NOTES)
        if args.scale != 1:
            print(f"issue 7's targets are set for scale 1; this run is at scale {args.scale}.")
        if args.json:
            meta = {"scale": args.scale, "sizes": sizes.__repr__(), "schedulers": names}
            for n, table in enumerate(tables, 1):
                # One file per run when repeated: name-run1.json, name-run2.json, ...
                path = (
                    args.json.with_stem(f"{args.json.stem}-run{n}")
                    if len(tables) > 1
                    else args.json
                )
                table.dump(path, meta)
    return 0


def _grouping(pod_cgroups: bool, contenders: list[Contender]) -> str:
    if not pod_cgroups:
        return (
            "CPU: every process in one group, busy cores shared per thread (--pod-cgroups: per pod)"
        )
    weights = [f"{name} {m}m" for name, m in KUBEADM_MILLICPU.items() if name != "kube-scheduler"]
    weights += [f"{c.name} {c.millicpu}m" for c in contenders]
    weights.append(f"this harness {HARNESS_MILLICPU}m")
    return f"CPU: a cgroup per process, weighted by its CPU request: {', '.join(weights)}"


def run_order(contenders: list[Contender], n: int) -> list[Contender]:
    """Run ``n`` (from 0) starts with the next contender in turn: no scheduler always runs
    first, or always right after another, whose backlog the API server has just deleted."""
    k = n % len(contenders) if contenders else 0
    return contenders[k:] + contenders[:k]


def _phases(scenarios: str) -> list[str]:
    """The scenarios in the order they run: those without running pods, then (a), then (b)."""
    first = "".join(key for key in "cdvgsupr" if key in scenarios)
    later = [key for key in "ab" if key in scenarios]
    return [phase for phase in (first, *later) if phase]


async def _scenarios(b: Bench, args: argparse.Namespace, sizes: Sizes, phase: str) -> None:
    if "c" in phase:
        await b.backlog()
    if "d" in phase:
        await b.stream()
    if "v" in phase:
        await b.volume_backlog()
    if "g" in phase:
        await gang_scenario(b)
    if "r" in phase:
        await device_scenario(b)
    if "s" in phase:  # before (a), (b): no running pods for the shapes to scan
        await shape_scenario(b, args.shape_nodes or [sizes.nodes], args.shapes)
    if "u" in phase:
        await unschedulable_scenario(b)
    if "p" in phase:
        await preemption_scenario(b)
        await waiting_preemptors_scenario(b)
    if "a" in phase:
        await b.startup("a", sizes.running)
    if "b" in phase:
        await b.startup("b", sizes.running_large)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.scale <= 0 or args.timeout <= 0 or args.concurrency < 1 or args.repeat < 1:
        print(
            "error: --scale and --timeout must be > 0, --concurrency and --repeat >= 1",
            file=sys.stderr,
        )
        return 2
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        print(f"error: unknown scenario(s) {''.join(sorted(unknown))}", file=sys.stderr)
        return 2
    missing = missing_binaries()
    if missing:
        print(
            f"bench-e2e skipped: {', '.join(missing)} not on PATH "
            "(put etcd and kube-apiserver, and kube-scheduler to compare, on PATH)"
        )
        return 0
    try:
        return asyncio.run(bench(args))
    except KeyboardInterrupt:
        return 130
    except CgroupsUnavailable as exc:
        print(f"error: --pod-cgroups: {exc}", file=sys.stderr)
        return 2
    except (Exception, ExceptionGroup) as exc:  # the servers and schedulers are stopped by now
        print(f"bench-e2e failed: {_first_cause(exc)}", file=sys.stderr)
        return 1


def _first_cause(exc: BaseException) -> str:
    """Task groups wrap failures; the first leaf says what went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    raise SystemExit(main())
