"""``multisched run``: the operator with kopf, cluster-wide, without kopf's peering."""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import sys
from dataclasses import replace
from typing import NoReturn
from urllib.parse import urlsplit

import kopf

from multisched.config import parse_duration

from .options import Options


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _duration(value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, exit 2 (no usage block): the message names the flag."""
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="multisched run",
        description="Run the scheduler against the cluster of the current kubeconfig "
        "(or in-cluster service account). Profiles come from SchedulerProfile objects.",
    )
    parser.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="watch pods in all namespaces (always the case: a scheduler needs every pod)",
    )
    parser.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="elect a leader through a Lease so that only one replica schedules (default false)",
    )
    parser.add_argument("--lease-namespace", help="namespace of the Lease (default kube-system)")
    parser.add_argument("--lease-name", help="name of the Lease (default multisched)")
    parser.add_argument(
        "--reserved-scheduler-names",
        metavar="NAMES",
        help="comma-separated schedulerNames multisched must never serve, such as other "
        "schedulers' (default default-scheduler; the list replaces the default)",
    )
    parser.add_argument(
        "--revision-namespace",
        help="namespace of the SchedulerProfiles' revisions (default $POD_NAMESPACE, else default)",
    )
    for flag, what in (
        ("lease-duration", "how long a lease is valid without renewal (default 15s)"),
        ("renew-deadline", "how long the leader tries to renew before it steps down (10s)"),
        ("retry-period", "pause between acquire/renew attempts (2s)"),
    ):
        parser.add_argument(f"--leader-elect-{flag}", type=_duration, metavar="DURATION", help=what)
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="port of /healthz, /livez and /readyz (default 8080; 0 turns the server off)",
    )
    parser.add_argument(
        "--metrics-address", default=None, help="address to listen on (default 0.0.0.0)"
    )
    parser.add_argument(
        "--group-status",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="keep PodGroup and ElasticQuota status as scheduler-plugins' controller does "
        "(default true; false while that controller still runs)",
    )
    parser.add_argument(
        "--secure-port",
        type=int,
        default=None,
        help="HTTPS port of /metrics, /configz and /debug/*, for callers the API server "
        "authenticates and authorizes (default 10259; 0 turns it off)",
    )
    parser.add_argument(
        "--bind-address", default=None, help="address of the secure port (default 0.0.0.0)"
    )
    parser.add_argument(
        "--tls-cert-file", metavar="FILE", help="serving certificate (default: self-signed)"
    )
    parser.add_argument("--tls-private-key-file", metavar="FILE", help="its private key")
    parser.add_argument(
        "--advertise-address",
        metavar="IP",
        help="the address the self-signed certificate names besides localhost (default $POD_IP)",
    )
    parser.add_argument(
        "--liveness",
        metavar="URL",
        help="kopf-style liveness URL such as http://0.0.0.0:8080/healthz; sets the address "
        "and port of the health server",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default $KUBECONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    parser.add_argument("--debug", action="store_true", help="log everything, kopf included")
    parser.add_argument(
        "--standalone", action="store_true", help="accepted for kopf compatibility (always on)"
    )
    return parser


def options_from_args(args: argparse.Namespace, base: Options | None = None) -> Options:
    options = base if base is not None else Options.from_env()
    if args.leader_elect is not None:
        options = replace(options, leader_elect=args.leader_elect)
    if args.lease_namespace is not None:
        options = replace(options, lease_namespace=args.lease_namespace)
    if args.lease_name is not None:
        options = replace(options, lease_name=args.lease_name)
    if args.reserved_scheduler_names is not None:
        names = frozenset(n.strip() for n in args.reserved_scheduler_names.split(",") if n.strip())
        options = replace(options, reserved_scheduler_names=names)
    if args.revision_namespace is not None:
        options = replace(options, revision_namespace=args.revision_namespace)
    if args.leader_elect_lease_duration is not None:
        options = replace(options, lease_duration=args.leader_elect_lease_duration)
    if args.leader_elect_renew_deadline is not None:
        options = replace(options, renew_deadline=args.leader_elect_renew_deadline)
    if args.leader_elect_retry_period is not None:
        options = replace(options, retry_period=args.leader_elect_retry_period)
    if args.liveness:
        url = urlsplit(args.liveness)
        options = replace(
            options,
            http_host=url.hostname or options.http_host,
            http_port=url.port or options.http_port,
        )
    if args.metrics_address:
        options = replace(options, http_host=args.metrics_address)
    if args.metrics_port is not None:
        options = replace(options, http_port=args.metrics_port)
    if args.group_status is not None:
        options = replace(options, group_status=args.group_status)
    if args.secure_port is not None:
        options = replace(options, secure_port=args.secure_port)
    if args.bind_address:
        options = replace(options, bind_address=args.bind_address)
    if args.tls_cert_file:
        options = replace(options, tls_cert_file=os.path.expanduser(args.tls_cert_file))
    if args.tls_private_key_file:
        path = os.path.expanduser(args.tls_private_key_file)
        options = replace(options, tls_private_key_file=path)
    if args.advertise_address:
        options = replace(options, advertise_address=args.advertise_address)
    if args.kubeconfig:
        options = replace(options, kubeconfig=os.path.expanduser(args.kubeconfig))
    return options


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        options = options_from_args(args)
        options.check()
    except ValueError as exc:  # a bad flag or MULTISCHED_* variable: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kopf.configure(debug=args.debug, verbose=args.verbose or args.debug)
    # A crash below Python (a C extension's abort, a segfault) leaves the Python stack of
    # every thread in the log, where the pod's last words are read.
    faulthandler.enable()
    if not (args.verbose or args.debug):
        # kopf logs every handler call per object; our own logs say what matters.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    from . import handlers  # noqa: F401 - registers the handlers
    from .depth import allow_api_depth

    allow_api_depth()  # before the first watch decodes anything (see depth.py)

    memo = kopf.Memo(options=options)
    try:
        # asyncio's own loop, not uvloop: uvloop (0.23, with aiohttp) aborts the process when
        # connections are cancelled while the API server restarts (libuv's epoll_ctl abort),
        # and an API server restart is routine for a scheduler.
        with asyncio.Runner() as runner:
            runner.run(kopf.operator(clusterwide=True, standalone=True, memo=memo))
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    return run(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
