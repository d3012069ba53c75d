"""The ``multisched`` command: ``simulate`` a cluster file, ``validate`` a profile, ``run``,
and against a live cluster ``explain``, ``snapshot`` and ``simulate --from-cluster``."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import errno
import gc
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from multisched import heap, lazy_packages

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


def _note(where: str, note: str) -> None:
    """One ``note:`` line on stderr, naming the file (and document) it is about."""
    print(f"note: {_printable(f'{where}: {note}')}", file=sys.stderr)


def _documents(path: Path) -> list[Any]:
    """The documents of a cluster file (``-``: standard input), safely read; a snapshot's
    JSON documents at JSON speed."""
    from multisched.validation import read_documents

    return read_documents(path)


def _load_config(
    configs: Sequence[tuple[str, dict[str, Any]]],
    registry: Any,
    source: str = "input",
    note: Callable[[str, str], None] = _note,
) -> Any:
    """The one scheduler configuration among ``configs`` ((label, object) pairs), resolved;
    ``source`` names the file(s) searched, ``note`` prints what is ignored."""
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
    for line in config_notes(obj):
        note(where, line)
    try:
        return resolve(parse_config_object(obj), registry)
    except ConfigError as exc:
        raise InputErrors(f"{where}: {problem}" for problem in exc.problems) from None


def _effective_config(
    cluster: Any, proposed: list[tuple[str, Any]], registry: Any, source: str
) -> Any:
    """The file's scheduler configuration; several SchedulerProfiles (``kubectl get sp -o
    yaml``) combine as the operator combines them; ``--profile`` applied over them.
    ``source`` names the file in "no configuration found"."""
    from multisched.live.configs import effective

    noted: set[tuple[str, str]] = set()

    def note_once(where: str, line: str) -> None:
        # ``effective`` resolves a file's configuration more than once (alone, then merged).
        if (where, line) not in noted:
            noted.add((where, line))
            _note(where, line)

    def load_one(configs: Sequence[tuple[str, dict[str, Any]]], registry: Any) -> Any:
        return _load_config(configs, registry, source, note_once)

    chosen = effective(cluster.configs, registry, load_one, proposed)
    for line in chosen.left_out:
        print(f"warning: {_printable(line)}", file=sys.stderr)
    return chosen.config


def cmd_simulate(args: argparse.Namespace) -> int:
    from multisched.report import render, settled_notes
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import ClusterInput, simulate
    from multisched.validation import InputErrors

    if args.from_cluster or args.diff:
        from multisched.live.commands import cmd_simulate_live

        return cmd_simulate_live(args, _load_config, _documents, _config_documents)
    if not args.cluster:
        return _report(["simulate needs a cluster file (or --from-cluster)"])
    registry = default_registry()
    try:
        with heap.reading():
            cluster = ClusterInput.from_documents(_documents(Path(args.cluster)))
        # The profile file may be a whole manifest (Deployment, RBAC, ConfigMap): only its
        # scheduler configuration is read, and it is applied over the file's own.
        proposed = _config_documents(args.profile) if args.profile else []
        if args.profile and not proposed:
            _load_config([], registry, Path(args.profile).name)  # says what is missing
        config = _effective_config(cluster, proposed, registry, Path(args.cluster).name)
        result = asyncio.run(
            simulate(cluster, config, registry, seed=args.seed, explain=args.explain)
        )
    except InputErrors as exc:
        return _report(exc.lines)
    except ValueError as exc:  # a combination of SchedulerProfiles with none valid
        return _report(str(exc).splitlines())
    for note in result.notes:
        _note(Path(args.cluster).name, note)
    if args.output == "table":
        for line in settled_notes(cluster.settled):
            _note(Path(args.cluster).name, line)
    sys.stdout.write(render(result, args.output, args.explain, cluster.settled))
    return 0


def _config_documents(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
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
    # SIGUSR2 asks for the cache and queue dump, which the runtime serves once it starts;
    # until then Python's default action (ending the process) would take its place.
    if hasattr(signal, "SIGUSR2"):
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    # What importing the operator builds lives as long as the process, so no collection
    # walks it meanwhile (collecting took a sixth of the imports' CPU).
    gc.disable()
    try:
        from multisched.operator.main import run
    finally:
        gc.enable()
    return run(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="multisched", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="schedule the pending pods of a YAML cluster in memory")
    sim.add_argument(
        "cluster",
        nargs="?",
        help="multi-document YAML: Nodes, Pods, PriorityClasses, ... ('-': standard input)",
    )
    sim.add_argument(
        "--profile",
        help="a SchedulerProfile or KubeSchedulerConfiguration file (or a manifest with a "
        "ConfigMap holding one); applied over the cluster's own",
    )
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
        return commands.cmd_explain(args, _load_config, _config_documents)

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
    _add_history_commands(sub)
    _add_queue_command(sub)


def _add_queue_command(sub: Any) -> None:
    """Parsed here: the command's module loads the API client, which only it needs."""
    q = sub.add_parser("queue", help="what the running scheduler's queue holds (one pod: why)")
    q.add_argument("pod", nargs="?", help="POD or NAMESPACE/POD: its attempts, failure, wake-ups")
    q.add_argument("-n", "--namespace", help="the pod's namespace (default: the context's)")
    q.add_argument(
        "--endpoint", help="the scheduler's secure address, e.g. https://127.0.0.1:10259"
    )
    q.add_argument(
        "--scheduler-namespace",
        help="the one namespace to find the scheduler's pods in (default: the context's, else "
        "default); never all, as anyone could label a pod there",
    )
    q.add_argument(
        "--selector", default=_QUEUE_SELECTOR, help=f"its pods' labels (default {_QUEUE_SELECTOR})"
    )
    q.add_argument(
        "--token",
        help="bearer token to present; it shows in ps, so prefer --token-file or "
        "$MULTISCHED_TOKEN (first of --token, --token-file, $MULTISCHED_TOKEN, the kubeconfig's)",
    )
    q.add_argument("--token-file", metavar="FILE", help="read the bearer token from FILE")
    q.add_argument(
        "--certificate-authority",
        metavar="FILE",
        help="verify the scheduler's certificate with this CA (default: the kubeconfig "
        "cluster's CA, else the system's)",
    )
    q.add_argument(
        "--tls-server-name",
        metavar="NAME",
        help="check the certificate against NAME instead of the endpoint's host, e.g. "
        "multisched-metrics.multisched.svc",
    )
    q.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the scheduler's certificate: whoever answers at the address could "
        "be anyone, so no token is sent; answered only where anonymous may get /debug/queue",
    )
    q.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    q.add_argument("-o", "--output", choices=("table", "json"), default="table")
    q.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")
    q.set_defaults(func=_queue)


#: The chart's selector label of the operator pods.
_QUEUE_SELECTOR = "app.kubernetes.io/name=multisched"


def _queue(args: argparse.Namespace) -> int:
    from multisched.live.queue import cmd_queue

    return cmd_queue(args)


def _history(command: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from multisched.live import history

        return history.cmd_history(args) if command == "history" else history.cmd_rollback(args)

    return run


_REVISION_NAMESPACE_HELP = (
    "the operator's namespace, where it keeps the revisions (default: the context's, else "
    "default); only revisions there that the profile owns are read"
)


def _add_history_commands(sub: Any) -> None:
    hist = sub.add_parser("history", help="the specs a SchedulerProfile had in force")
    hist.add_argument("kind", help="sp (SchedulerProfile), or sp/NAME")
    hist.add_argument("name", nargs="?", help="the SchedulerProfile's name")
    hist.add_argument("--revision", type=int, help="print the spec of this revision")
    hist.add_argument("--scheduler-namespace", help=_REVISION_NAMESPACE_HELP)
    hist.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")
    hist.set_defaults(func=_history("history"))
    back = sub.add_parser("rollback", help="put an earlier spec of a SchedulerProfile back")
    back.add_argument("kind", help="sp (SchedulerProfile), or sp/NAME")
    back.add_argument("name", nargs="?", help="the SchedulerProfile's name")
    back.add_argument(
        "--to-revision", type=int, help="the revision to go back to (default: the previous one)"
    )
    back.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for the scheduler's verdict on the rolled-back spec",
    )
    back.add_argument("--scheduler-namespace", help=_REVISION_NAMESPACE_HELP)
    back.add_argument("--kubeconfig", help="path to the kubeconfig (default: $KUBECONFIG)")
    back.set_defaults(func=_history("rollback"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # kubernetes_asyncio's client would import ~850 modules; the commands need a handful.
    lazy_packages.install()
    if argv and argv[0] == "run":
        return cmd_run(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        # A command keeps what it reads until it ends: collect young objects rarely meanwhile.
        with heap.tuned():
            return int(args.func(args))
    except ImportError as exc:
        # The schema checks' libraries are the ``cli`` extra: say so in one line.
        if exc.name not in _CLI_EXTRA and "cli extra" not in str(exc):
            raise
        return _report([f"{args.command} needs the cli extra: pip install 'multisched[cli]'"])


def entry() -> NoReturn:
    """The console scripts and ``python -m multisched``: ``main``, then out of the process
    without tearing its heap down.

    A one-shot command keeps what it read to its end, and freeing that object by object at
    interpreter exit cost 0.15-0.2 s of CPU after simulating 2,000 pods on 1,000 nodes (a
    tenth of the command). The exit handlers still run and the standard streams are
    flushed; only the teardown of modules and objects is skipped. ``run`` exits as Python
    does (its shutdown is kopf's)."""
    try:
        code = main()
    except BrokenPipeError:
        code = _output_lost(None)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        code = _output_lost(exc)
    if sys.argv[1:2] == ["run"]:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError as exc:
        code = _output_lost(exc)
    os._exit(code)


def _output_lost(exc: OSError | None) -> int:
    """Exit code 1 when the output could not be written: quietly when its reader left
    (``| head`` has what it wanted, as with any filter), in one line otherwise (a full
    disk), never a traceback."""
    if exc is not None and not isinstance(exc, BrokenPipeError):
        try:
            print(f"error: writing the output: {exc.strerror or exc}", file=sys.stderr)
            sys.stderr.flush()
        except OSError:
            pass
    return 1


#: What ``pip install 'multisched[cli]'`` adds (simulate's schema checks).
_CLI_EXTRA = frozenset({"kubernetes_validate", "jsonschema", "referencing"})


if __name__ == "__main__":
    raise SystemExit(main())
