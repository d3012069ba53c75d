"""The live-cluster subcommands: ``explain``, ``snapshot``, ``simulate --from-cluster``.

Each returns an exit code; bad input and unreadable clusters are one line on stderr
with exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from multisched.framework import Registry

from . import diff as diffing
from .configs import Effective, LoadOne, Located, effective
from .reading import LiveCluster, LiveError, context_namespace, read
from .slim import documents, raw_documents

EXIT_INPUT = 2
EXIT_CHANGED = 1

#: ``cli._documents``: the documents of a cluster file (raises InputErrors).
ReadDocs = Callable[[Path], Any]
#: ``cli._config_documents``: the scheduler configurations of a file (raises InputErrors).
ReadConfigs = Callable[[str], list[Located]]


def _error(message: str) -> int:
    """One line per problem, each behind ``error:``."""
    for line in message.splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_INPUT


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def _read(kubeconfig: str | None) -> LiveCluster:
    cluster = asyncio.run(read(kubeconfig))
    _warn(cluster.warnings)
    return cluster


def without_gc(command: Callable[..., int]) -> Callable[..., int]:
    """Run a command with the cyclic GC off: reading a cluster builds millions of small
    dicts, lists and PodInfos that all stay alive, and the GC rescanned them again and again
    (most of the time at 50,000 pods) to free nothing.

    Afterwards what is left (the scheduler's object graph is cyclic) is frozen rather than
    collected: the process is about to exit, and the collection at exit took 2 s at 50,000
    pods. A long-lived caller (the tests) keeps that garbage, a few kB for a test cluster.
    """

    @functools.wraps(command)
    def run(*args: Any) -> int:
        was = gc.isenabled()
        gc.disable()
        try:
            return command(*args)
        finally:
            gc.freeze()
            if was:
                gc.enable()

    return run


def _proposal(path: str | None, read_configs: ReadConfigs) -> list[Located]:
    """The scheduler configurations of a ``--profile`` file (Lists and ConfigMaps included)."""
    return read_configs(path) if path else []


def cluster_input(docs: Sequence[dict[str, Any]], origin: str = "cluster") -> Any:
    """Objects as the API server stored them: it validated them already, so they are read
    as they are (checking 50,000 pods again against the OpenAPI schemas would take minutes)."""
    from multisched.scheduler.simulate import ClusterInput

    return ClusterInput.from_documents(
        ((f"{origin}: {d['kind']} {_key(d)}", d) for d in docs), trusted=True
    )


def _key(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


# -- snapshot --------------------------------------------------------------------------


def dump_documents(docs: Sequence[dict[str, Any]]) -> str:
    """Multi-document YAML, each document in JSON style (JSON is a subset of YAML), keys
    sorted and one field per line so snapshots diff cleanly. PyYAML's representer and
    ``json`` with indentation are pure Python (a minute at 50,000 pods); orjson is C."""
    options = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    return "".join(f"---\n{orjson.dumps(doc, option=options).decode()}\n" for doc in docs)


@without_gc
def cmd_snapshot(args: argparse.Namespace) -> int:
    try:
        cluster = _read(args.kubeconfig)
    except LiveError as exc:
        return _error(str(exc))
    text = dump_documents(documents(cluster))
    if args.output_file and args.output_file != "-":
        try:
            Path(args.output_file).write_text(text)
        except OSError as exc:
            return _error(f"{args.output_file}: {exc.strerror}")
    else:
        sys.stdout.write(text)
    return 0


# -- explain ---------------------------------------------------------------------------


@without_gc
def cmd_explain(args: argparse.Namespace, load_one: LoadOne, read_configs: ReadConfigs) -> int:
    from multisched.report import as_records, render, settled_notes
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import InputError

    from .explain import PodNotFound, explain

    namespace, _, name = args.pod.rpartition("/")
    namespace = namespace or args.namespace or context_namespace(args.kubeconfig) or "default"
    registry = default_registry()
    try:
        proposed = _proposal(args.profile, read_configs)
        # The objects as listed: slimming (for files) would only cost time here.
        cluster = cluster_input(raw_documents(_read(args.kubeconfig)))
        chosen = effective(cluster.configs, registry, load_one, proposed, live=True)
        _warn(chosen.left_out)
        found = asyncio.run(
            explain(cluster, chosen.config, registry, namespace, name, seed=args.seed)
        )
    except (LiveError, PodNotFound, InputError, ValueError) as exc:
        return _error(str(exc))
    placement = found.result.placements[0]
    if args.output == "table":
        owner = chosen.owners.get(placement.pod.scheduler_name)
        sys.stdout.write(
            _explain_header(
                placement.pod.key,
                placement.pod.scheduler_name,
                owner,
                found.current_node,
                args.profile,
            )
        )
        for line in settled_notes(cluster.settled):
            print(f"note: {line}", file=sys.stderr)
        sys.stdout.write(render(found.result, "table", True))
        if not found.evaluated_all:
            print(
                "(nodes not listed were not evaluated: enough feasible nodes were found, "
                "see percentageOfNodesToScore)"
            )
        return 0
    owner = chosen.owners.get(placement.pod.scheduler_name)
    data = {
        "pods": as_records(found.result, True),
        "preempted": found.result.preempted,
        "currentNode": found.current_node or None,
        "profile": args.profile or (f"SchedulerProfile/{owner}" if owner else None),
        "evaluatedAllNodes": found.evaluated_all,
    }
    if cluster.settled:
        data["settled"] = [c.as_record() for c in cluster.settled]
    if args.output == "json":
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, width=1000))
    return 0


def _explain_header(
    key: str, scheduler: str, owner: str | None, current: str, profile: str | None
) -> str:
    source = (
        f"--profile {profile}"
        if profile
        else (f"SchedulerProfile {owner}" if owner else "no live SchedulerProfile")
    )
    lines = [f"pod {key}: schedulerName {scheduler}, profile from {source}"]
    if current:
        lines.append(f"bound to {current} now; where it would go if it were scheduled now:")
    return "\n".join(lines) + "\n"


# -- simulate --from-cluster -----------------------------------------------------------


def simulate_cluster(
    cluster: Any,
    configs: Sequence[Located],
    proposed: Sequence[Located],
    registry: Registry,
    load_one: LoadOne,
    seed: int | None,
    explain: bool,
    live: bool = False,
) -> tuple[Any, Effective]:
    from multisched.scheduler.simulate import simulate

    chosen = effective(configs, registry, load_one, proposed, live=live)
    _warn(chosen.left_out)
    result = asyncio.run(simulate(cluster, chosen.config, registry, seed=seed, explain=explain))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return result, chosen


@without_gc
def cmd_simulate_live(
    args: argparse.Namespace, load_one: LoadOne, read_docs: ReadDocs, read_configs: ReadConfigs
) -> int:
    """``simulate --from-cluster`` and ``simulate --diff`` (live or from a cluster file)."""
    from multisched.report import render, settled_notes
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import InputError

    if args.from_cluster and args.cluster:
        return _error("give a cluster file or --from-cluster, not both")
    if not args.from_cluster and not args.cluster:
        return _error("simulate needs a cluster file (or --from-cluster)")

    registry = default_registry()
    try:
        proposed = _proposal(args.profile, read_configs)
        if args.from_cluster:
            cluster = cluster_input(documents(_read(args.kubeconfig)))
        else:
            from multisched.scheduler.simulate import ClusterInput

            cluster = ClusterInput.from_documents(read_docs(Path(args.cluster)))
        if not args.diff:
            result, _ = simulate_cluster(
                cluster,
                cluster.configs,
                proposed,
                registry,
                load_one,
                args.seed,
                args.explain,
                args.from_cluster,
            )
            if args.output == "table":
                for line in settled_notes(cluster.settled):
                    print(f"note: {line}", file=sys.stderr)
            sys.stdout.write(render(result, args.output, args.explain, cluster.settled))
            return 0
        if not proposed:
            return _error("--diff needs --profile (the proposed SchedulerProfile)")
        # One seed for both runs, so only the profile differs (ties break alike).
        seed = 0 if args.seed is None else args.seed
        before, _ = simulate_cluster(
            cluster, cluster.configs, (), registry, load_one, seed, False, args.from_cluster
        )
        after, _ = simulate_cluster(
            cluster, cluster.configs, proposed, registry, load_one, seed, False, args.from_cluster
        )
    except (LiveError, InputError, ValueError) as exc:
        return _error(str(exc))
    found = diffing.changes(before, after)
    if args.output == "table":
        sys.stdout.write(diffing.render(found))
    else:
        data = {"changes": [_change(c) for c in found]}
        text = (
            json.dumps(data, indent=2) + "\n"
            if args.output == "json"
            else yaml.safe_dump(data, sort_keys=False, width=1000)
        )
        sys.stdout.write(text)
    return EXIT_CHANGED if found else 0


def _change(c: diffing.Change) -> dict[str, Any]:
    return {"pod": c.pod, "before": c.before, "after": c.after, "message": c.message or None}
