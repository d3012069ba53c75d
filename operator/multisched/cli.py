"""The ``multisched`` command: ``simulate`` a cluster file, ``validate`` a profile, ``run``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_INPUT = 2


def _report(lines: Sequence[str]) -> int:
    """Every problem on its own line; exit code 2 (bad input), never a traceback."""
    for line in lines:
        print(f"error: {_printable(line)}", file=sys.stderr)
    return EXIT_INPUT


def _printable(line: str) -> str:
    """Control characters from the input (a key with a newline in it) shown escaped, so one
    problem stays one line."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


def _load_config(configs: Sequence[tuple[str, dict[str, Any]]], registry: Any, source: str) -> Any:
    """The one scheduler configuration among ``configs`` ((label, object) pairs), resolved;
    ``source`` names the file(s) searched."""
    from multisched.config import ConfigError, config_notes, parse_config_object, resolve
    from multisched.validation import InputErrors

    if not configs:
        raise InputErrors(
            [
                f"{source}: no SchedulerProfile or KubeSchedulerConfiguration found "
                "(add one or pass --profile)"
            ]
        )
    if len(configs) > 1:
        raise InputErrors(
            [
                f"{source}: {len(configs)} scheduler configurations found "
                f"({', '.join(w for w, _ in configs)}); give exactly one"
            ]
        )
    where, obj = configs[0]
    for note in config_notes(obj):
        print(f"note: {_printable(f'{where}: {note}')}", file=sys.stderr)
    try:
        return resolve(parse_config_object(obj), registry)
    except ConfigError as exc:
        raise InputErrors(f"{where}: {problem}" for problem in exc.problems) from None


def cmd_simulate(args: argparse.Namespace) -> int:
    from multisched.report import render
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import ClusterInput, simulate
    from multisched.validation import InputErrors, read_documents

    registry = default_registry()
    try:
        cluster = ClusterInput.from_documents(read_documents(args.cluster))
        configs, source = cluster.configs, Path(args.cluster).name
        if args.profile:
            # The profile file may be a whole manifest (Deployment, RBAC, ConfigMap): only its
            # scheduler configuration is read, and it takes the place of an inline one.
            configs, source = _config_documents(args.profile), Path(args.profile).name
        config = _load_config(configs, registry, source)
        result = asyncio.run(
            simulate(cluster, config, registry, seed=args.seed, explain=args.explain)
        )
    except InputErrors as exc:
        return _report(exc.lines)
    sys.stdout.write(render(result, args.output, args.explain))
    return 0


def _config_documents(path: str) -> list[tuple[str, dict[str, Any]]]:
    """The scheduler configurations of a file: the config kinds and ConfigMaps embedding one."""
    from multisched.config.loader import embedded_configs
    from multisched.validation import CONFIG_KINDS, InputErrors, expand_lists, read_documents

    configs: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    for doc in expand_lists(read_documents(path)):
        if not isinstance(doc.obj, dict):
            problems.append(doc.problem("expected a Kubernetes object (a mapping)"))
        elif doc.kind in CONFIG_KINDS:
            configs.append((doc.label, doc.obj))
        elif doc.kind == "ConfigMap":
            configs += [
                (f"{doc.label} data[{key}]", dict(inner))
                for key, inner in embedded_configs(doc.obj)
            ]
    if problems:
        raise InputErrors(problems)
    return configs


def cmd_validate(args: argparse.Namespace) -> int:
    from multisched.scheduler import default_registry
    from multisched.validation import InputErrors

    registry = default_registry()
    try:
        config = _load_config(_config_documents(args.file), registry, Path(args.file).name)
    except InputErrors as exc:
        return _report(exc.lines)
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
    sim.add_argument("cluster", help="multi-document YAML: Nodes, Pods, PriorityClasses, ...")
    sim.add_argument(
        "--profile",
        help="a SchedulerProfile or KubeSchedulerConfiguration file (or a manifest with a "
        "ConfigMap holding one); used instead of one in the cluster file",
    )
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return cmd_run(argv[1:])
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
