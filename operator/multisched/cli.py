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


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_INPUT)


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        text = path.read_text()
    except OSError as exc:
        _fail(f"{path}: {exc.strerror}")
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        _fail(f"{path}: not valid YAML: {exc}".splitlines()[0])
    for i, doc in enumerate(docs, 1):
        yield f"{path.name}: document {i}", doc


def _load_config(configs: Sequence[tuple[str, dict[str, Any]]], registry: Any) -> Any:
    from multisched.config import ConfigError, config_notes, parse_config_object, resolve

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
    for note in config_notes(obj):
        print(f"note: {where}: {note}", file=sys.stderr)
    try:
        return resolve(parse_config_object(obj), registry)
    except ConfigError as exc:
        problems = "\n".join(f"  {line}" for line in str(exc).splitlines())
        raise ValueError(f"{where}: invalid scheduler configuration:\n{problems}") from None


def cmd_simulate(args: argparse.Namespace) -> int:
    from multisched.report import render
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import ClusterInput, InputError, simulate

    docs = list(_documents(Path(args.cluster)))
    if args.profile:
        docs += list(_documents(Path(args.profile)))
    registry = default_registry()
    try:
        cluster = ClusterInput.from_documents(docs)
        config = _load_config(cluster.configs, registry)
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
    sim.add_argument("cluster", help="multi-document YAML: Nodes, Pods, PriorityClasses, ...")
    sim.add_argument("--profile", help="a SchedulerProfile or KubeSchedulerConfiguration file")
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
