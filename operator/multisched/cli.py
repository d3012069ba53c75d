"""The ``multisched`` command: ``simulate`` a cluster file, ``validate`` a profile, ``run``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

EXIT_INPUT = 2
#: libyaml's loader when PyYAML was built with it (the same documents, ~10x faster).
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_INPUT)


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    from multisched.live.snapfile import json_documents

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        _fail(f"{path}: {exc.strerror}")
    try:
        docs = json_documents(text)  # a snapshot: JSON-style documents, read at JSON speed
        if docs is None:
            docs = list(yaml.load_all(text, Loader=_YAML_LOADER))
    except yaml.YAMLError as exc:
        _fail(f"{path}: not valid YAML: {exc}".splitlines()[0])
    for i, doc in enumerate(docs, 1):
        yield f"{path.name}: document {i}", doc


def _load_config(configs: Sequence[tuple[str, dict[str, Any]]], registry: Any) -> Any:
    from multisched.config import ConfigError, parse_config_object, resolve

    if not configs:
        raise ValueError(
            "no SchedulerProfile or KubeSchedulerConfiguration found (add one or pass --profile)"
        )
    if len(configs) > 1:
        raise ValueError(
            f"{len(configs)} scheduler configurations found ({', '.join(w for w, _ in configs)}); "
            "give exactly one"
        )
    where, obj = configs[0]
    try:
        return resolve(parse_config_object(obj), registry)
    except ConfigError as exc:
        problems = "\n".join(f"  {line}" for line in str(exc).splitlines())
        raise ValueError(f"{where}: invalid scheduler configuration:\n{problems}") from None


def _effective_config(cluster: Any, proposed: list[tuple[str, Any]], registry: Any) -> Any:
    """The cluster's SchedulerProfiles combined as the operator does, ``--profile`` applied."""
    from multisched.live.configs import effective
    from multisched.scheduler.simulate import ClusterInput

    proposal = ClusterInput.from_documents(proposed).configs if proposed else []
    chosen = effective(cluster.configs, registry, _load_config, proposal)
    for line in chosen.left_out:
        print(f"warning: {line}", file=sys.stderr)
    return chosen.config


def cmd_simulate(args: argparse.Namespace) -> int:
    from multisched.report import render
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import ClusterInput, InputError, simulate

    if args.from_cluster or args.diff:
        from multisched.live.commands import cmd_simulate_live

        return cmd_simulate_live(args, _load_config, _documents)
    if not args.cluster:
        _fail("simulate needs a cluster file (or --from-cluster)")
    docs = list(_documents(Path(args.cluster)))
    proposed = list(_documents(Path(args.profile))) if args.profile else []
    registry = default_registry()
    try:
        cluster = ClusterInput.from_documents(docs)
        config = _effective_config(cluster, proposed, registry)
        result = asyncio.run(
            simulate(cluster, config, registry, seed=args.seed, explain=args.explain)
        )
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(render(result, args.output, args.explain))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from multisched.scheduler import default_registry

    registry = default_registry()
    configs = [(w, d) for w, d in _documents(Path(args.file)) if isinstance(d, dict)]
    try:
        config = _load_config(configs, registry)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for prof in config.profiles:
        print(f"{prof.scheduler_name}:")
        for point, names in prof.plugins.items():
            if names:
                shown = [
                    f"{n}({prof.score_weights.get(n, 1)})" if point == "score" else n for n in names
                ]
                print(f"  {point}: {', '.join(shown)}")
    return 0


def cmd_run(argv: list[str]) -> int:
    from multisched.operator.main import run

    return run(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="multisched", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="schedule the pending pods of a YAML cluster in memory")
    sim.add_argument(
        "cluster", nargs="?", help="multi-document YAML: Nodes, Pods, PriorityClasses, ..."
    )
    sim.add_argument("--profile", help="a SchedulerProfile or KubeSchedulerConfiguration file")
    _add_live_arguments(sim)
    sim.add_argument("--explain", action="store_true", help="per-node verdicts and scores")
    sim.add_argument("-o", "--output", choices=("table", "yaml", "json"), default="table")
    sim.add_argument("--seed", type=int, default=None, help="fix tie-breaking between nodes")
    sim.set_defaults(func=cmd_simulate)
    val = sub.add_parser("validate", help="check a SchedulerProfile/KubeSchedulerConfiguration")
    val.add_argument("file")
    val.set_defaults(func=cmd_validate)
    sub.add_parser(
        "run", help="run the scheduler against the current kubeconfig (kopf)", add_help=False
    )
    _add_live_commands(sub)
    return parser


def _add_live_arguments(sim: argparse.ArgumentParser) -> None:
    sim.add_argument(
        "--from-cluster", action="store_true", help="read the cluster through the kubeconfig"
    )
    sim.add_argument(
        "--diff",
        action="store_true",
        help="compare placements under the current profiles and --profile (exit 1 on changes)",
    )
    sim.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")


def _live(command: str) -> Any:
    """A live-cluster command, imported only when it runs (the API client loads slowly)."""

    def run(args: argparse.Namespace) -> int:
        from multisched.live import commands

        if command == "snapshot":
            return commands.cmd_snapshot(args)
        return commands.cmd_explain(args, _load_config, _documents)

    return run


def _add_live_commands(sub: Any) -> None:
    exp = sub.add_parser(
        "explain", help="why a pod is pending (or where it would go now), node by node"
    )
    exp.add_argument("pod", help="POD or NAMESPACE/POD")
    exp.add_argument("-n", "--namespace", help="default: the kubeconfig context's, else default")
    exp.add_argument("--profile", help="explain under this SchedulerProfile file instead")
    exp.add_argument("-o", "--output", choices=("table", "yaml", "json"), default="table")
    exp.add_argument("--seed", type=int, default=None, help="fix tie-breaking between nodes")
    exp.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")
    exp.set_defaults(func=_live("explain"))
    snap = sub.add_parser("snapshot", help="write the live cluster as a simulate cluster file")
    snap.add_argument("-o", "--output", dest="output_file", help="file to write (default: stdout)")
    snap.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")
    snap.set_defaults(func=_live("snapshot"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return cmd_run(argv[1:])
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
