"""``kubectl multisched queue [POD]``: what the running leader's scheduling queue holds.

The answer comes from the leader itself (``/debug/queue`` on its secure port), not from a
recomputation. The caller is the kubeconfig's user: the scheduler checks its bearer token
with a TokenReview and its right to ``get`` the path with a SubjectAccessReview (the
chart's ``-debug-reader`` ClusterRole grants it).

Where the scheduler runs: ``--endpoint`` (after ``kubectl port-forward``, or a local
``kopf run``), else the operator pods found by label in one namespace
(``--scheduler-namespace``, default the context's), asking each and keeping the leader.

Whom the token goes to: anyone who may create a pod can label it as the scheduler's, so
the token is sent only to an endpoint whose certificate verifies (``--certificate-authority``,
else the kubeconfig cluster's CA, else the system's). ``--insecure-skip-tls-verify`` asks
without verifying, and so without a token.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
from typing import Any

from multisched.queue import QueueName
from multisched.transport import (
    ApiClient,
    ApiError,
    CertificateRejected,
    TransportError,
    request_json,
)
from multisched.transport.endpoints import EndpointClient
from multisched.transport.kubeconfig import bearer_token, cluster_ca_file

from .reading import LiveError, connect, context_namespace

EXIT_INPUT = 2
EXIT_FAILED = 1

SECURE_PORT = 10259
PATH = "/debug/queue"
QUEUES = tuple(QueueName)  # the columns, in the scheduler's order

#: A token kept out of the command line (and so out of ``ps``).
TOKEN_ENV = "MULTISCHED_TOKEN"

#: OpenSSL's verify codes for a certificate that does not name the host asked.
_NAME_MISMATCH = frozenset({62, 64})  # X509_V_ERR_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH


class UsageError(Exception):
    """Flags that contradict each other or a file that cannot be read: one line, exit 2."""


def _token_source(args: argparse.Namespace) -> str | None:
    """The flag or variable the user named a token with, in order of precedence."""
    if args.token:
        return "--token"
    if args.token_file:
        return "--token-file"
    if os.environ.get(TOKEN_ENV):
        return f"${TOKEN_ENV}"
    return None


def explicit_token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``--token-file``'s content, else ``$MULTISCHED_TOKEN`` (None: none
    was named, so the kubeconfig's is used)."""
    token = _named_token(args)
    # One header value: a line break would be refused by the HTTP client with a traceback.
    if token is not None and not (token.isprintable() and " " not in token):
        raise UsageError(f"{_token_source(args)} holds no single token (a space or line break)")
    return token


def _named_token(args: argparse.Namespace) -> str | None:
    if args.token:
        return str(args.token)
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise UsageError(
                f"cannot read the token file {args.token_file}: {exc.strerror or exc}"
            ) from None
        except UnicodeDecodeError:
            raise UsageError(f"the token file {args.token_file} is not text") from None
        if not token:
            raise UsageError(f"the token file {args.token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def check_usage(args: argparse.Namespace) -> None:
    """Refuse, before anything is asked, what would send a token unverified."""
    if args.endpoint and not str(args.endpoint).lower().startswith("https://"):
        raise UsageError(
            f"--endpoint {args.endpoint}: the secure port speaks https only "
            "(https://HOST:PORT); a token is never sent in the clear"
        )
    if not args.insecure_skip_tls_verify:
        return
    source = _token_source(args)
    if source:
        raise UsageError(
            f"--insecure-skip-tls-verify sends no token, as whoever answers is not verified: "
            f"drop {source}, or verify the scheduler with --certificate-authority instead"
        )
    if args.certificate_authority:
        raise UsageError("--certificate-authority and --insecure-skip-tls-verify contradict")


async def discover(api: ApiClient, namespace: str, selector: str) -> list[str]:
    """The secure endpoints of the running operator pods of ``namespace`` (their ``https``
    port). One namespace only: a pod labelled so elsewhere is anyone's."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    pods = await request_json(api, "GET", path, query=[("labelSelector", selector)])
    out = []
    for pod in pods.get("items") or ():
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        port = SECURE_PORT
        for container in (pod.get("spec") or {}).get("containers") or ():
            for p in container.get("ports") or ():
                if p.get("name") == "https" and p.get("containerPort"):
                    port = int(p["containerPort"])
        host = f"[{ip}]" if ":" in ip else ip
        out.append(f"https://{host}:{port}")
    return out


def _tls(ca_file: str | None, insecure: bool = False) -> ssl.SSLContext | bool:
    """False (nothing checked) only when asked for; else a context that verifies the
    certificate and its name against ``ca_file``, or the system's trust without one."""
    if insecure:
        return False
    return ssl.create_default_context(cafile=ca_file or None)


def _unloadable(exc: OSError) -> str:
    """Why a CA file did not load: the OS's reason, or that it holds no PEM certificate
    (OpenSSL's parse errors are ssl.SSLError, an OSError too)."""
    if isinstance(exc, ssl.SSLError):
        return "no PEM certificate in it"
    return str(exc.strerror or exc)


def _untrusted(endpoint: str, error: BaseException) -> str:
    """One line: why the certificate failed, and what to pass."""
    reason = getattr(error, "verify_message", None) or str(error) or type(error).__name__
    if getattr(error, "verify_code", None) in _NAME_MISMATCH:
        fix = "pass --tls-server-name with a name the certificate holds"
    else:
        fix = "pass --certificate-authority with the CA that signed it (the chart's tls.secretName)"
    return (
        f"{endpoint}: the scheduler's certificate is not trusted ({reason}): {fix}, "
        "or --insecure-skip-tls-verify to ask without a token"
    )


async def ask(
    client: EndpointClient,
    endpoint: str,
    token: str | None,
    pod: str | None,
    tls: ssl.SSLContext | bool,
    server_name: str | None = None,
) -> dict[str, Any]:
    if token and tls is False:
        raise AssertionError("a token is never sent unverified")
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    params = {"pod": pod} if pod else {}
    url = endpoint.rstrip("/") + PATH
    # No redirects (EndpointClient follows none): the token is for this endpoint alone.
    status, reason, text = await client.get(
        url, headers=headers, params=params, tls=tls, server_name=server_name
    )
    if status != 200:
        try:
            message = json.loads(text).get("message") or text
        except (ValueError, AttributeError):
            message = text.strip() or reason
        hint = ""
        if status in (401, 403) and not token:
            hint = (
                " (--insecure-skip-tls-verify asks without a token, as anonymous: verify "
                "the scheduler with --certificate-authority to present one)"
                if tls is False
                else " (the kubeconfig's user has no bearer token, so it came as anonymous: "
                "pass --token-file or $MULTISCHED_TOKEN, e.g. from kubectl create token)"
            )
        raise LiveError(f"{endpoint}: {status} {message}{hint}")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise LiveError(f"{endpoint}: not a queue listing")
    return data


async def leader_view(args: argparse.Namespace, pod: str | None) -> dict[str, Any]:
    check_usage(args)
    insecure = bool(args.insecure_skip_tls_verify)
    token = None if insecure else explicit_token(args)
    tls: ssl.SSLContext | bool | None = None
    if insecure or args.certificate_authority:
        try:
            tls = _tls(args.certificate_authority, insecure)
        except OSError as exc:
            raise UsageError(
                f"cannot load the certificate authority {args.certificate_authority}: "
                f"{_unloadable(exc)}"
            ) from None
    api = await connect(args.kubeconfig)
    try:
        if not insecure:
            token = token or await bearer_token(api)
        if tls is None:
            # The file the kubeconfig's certificate-authority-data was written to (None: the
            # kubeconfig trusts the system's CAs, and so do we).
            cluster_ca = cluster_ca_file(api)
            try:
                tls = _tls(cluster_ca)
            except OSError as exc:
                raise LiveError(
                    f"cannot load the kubeconfig cluster's CA {cluster_ca}: {_unloadable(exc)}"
                ) from None
        if args.endpoint:
            endpoints = [args.endpoint]
        else:
            namespace = args.scheduler_namespace or context_namespace(args.kubeconfig) or "default"
            endpoints = await discover(api, namespace, args.selector)
            if not endpoints:
                raise LiveError(
                    f"no running multisched pod found ({args.selector} in namespace "
                    f"{namespace}): pass --scheduler-namespace, or --endpoint, e.g. after "
                    "kubectl port-forward"
                )
    finally:
        await api.close()
    views: list[dict[str, Any]] = []
    errors: list[str] = []
    async with EndpointClient(args.timeout) as client:
        for endpoint in endpoints:
            try:
                view = await ask(client, endpoint, token, pod, tls, args.tls_server_name)
            except LiveError as exc:
                errors.append(str(exc))
                continue
            except (CertificateRejected, ssl.SSLCertVerificationError) as exc:
                cause = getattr(exc, "certificate_error", exc)
                errors.append(_untrusted(endpoint, cause))
                continue
            except (TransportError, OSError, TimeoutError) as exc:
                errors.append(f"{endpoint}: cannot connect: {exc or type(exc).__name__}")
                continue
            view["endpoint"] = endpoint
            if view.get("leading"):
                return view
            views.append(view)
    if views:
        return views[0]
    # One line per endpoint.
    raise LiveError("\n".join(errors))


def _pod_key(name: str, namespace: str) -> str:
    return name if "/" in name else f"{namespace or 'default'}/{name}"


def render(view: dict[str, Any], pod: str | None) -> list[str]:
    lines: list[str] = []
    if not view.get("leading"):
        lines.append(
            f"note: {view.get('endpoint')} is not leading: its queue is kept warm, but the "
            "leader's is the one that schedules"
        )
    if pod is not None:
        if not view.get("pods"):
            lines.append(str(view.get("notQueued") or f"pod {pod} is not in the queue"))
            return lines
        return lines + _pod_lines(view["pods"][0])
    profiles: dict[str, dict[str, int]] = view.get("profiles") or {}
    if not profiles:
        return [*lines, "the queue is empty"]
    rows = [["PROFILE", "ACTIVE", "BACKOFF", "UNSCHEDULABLE", "GATED", "IN-FLIGHT"]]
    for name in sorted(profiles):
        counts = profiles[name]
        rows.append([name, *(str(counts.get(q, 0)) for q in QUEUES)])
    lines += _table(rows)
    pods = view.get("pods") or []
    if pods:
        lines.append("")
        rows = [["POD", "PROFILE", "QUEUE", "ATTEMPTS", "REJECTED BY", "WAITING FOR"]]
        for entry in pods:
            rows.append(
                [
                    entry["pod"],
                    entry["schedulerName"],
                    entry["queue"],
                    str(entry["attempts"]),
                    ",".join(entry.get("unschedulablePlugins") or ()) or "-",
                    ",".join(entry.get("waitingFor") or ()) or "-",
                ]
            )
        lines += _table(rows)
    if view.get("truncated"):
        lines.append(f"... and {view['truncated']} more pods")
    return lines


def _pod_lines(entry: dict[str, Any]) -> list[str]:
    lines = [
        f"pod:            {entry['pod']}",
        f"profile:        {entry['schedulerName']}",
        f"queue:          {entry['queue']}",
        f"priority:       {entry.get('priority')}",
        f"attempts:       {entry['attempts']}",
        f"first seen:     {entry.get('firstSeen')}",
    ]
    plugins = entry.get("unschedulablePlugins") or []
    if plugins:
        lines.append(f"rejected by:    {', '.join(plugins)}")
    if entry.get("message"):
        lines.append(f"last failure:   {entry['message']}")
    if entry.get("wokenBy"):
        lines.append(f"last woken by:  {entry['wokenBy']} at {entry.get('wokenAt')}")
    if entry.get("waitingFor"):
        events = entry["waitingFor"]
        lines.append(
            "waiting for:    " + ("any cluster event" if events == ["*"] else ", ".join(events))
        )
    if "backoffRemainingSeconds" in entry:
        lines.append(f"backoff left:   {entry['backoffRemainingSeconds']}s")
    if entry.get("nominatedNodeName"):
        lines.append(f"nominated node: {entry['nominatedNodeName']}")
    permit = entry.get("permit")
    if permit:
        lines.append(
            f"at Permit:      assumed on {permit['node']}, waiting for "
            f"{', '.join(permit['waitingFor'])}, {permit['secondsLeft']:.0f} s left"
        )
    for key in ("gang", "quota"):
        if entry.get(key):
            lines.append(f"{key + ':':<16}{entry[key]}")
    return lines


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def cmd_queue(args: argparse.Namespace) -> int:
    pod = None
    if args.pod:
        namespace = args.namespace or context_namespace(args.kubeconfig)
        pod = _pod_key(args.pod, namespace)
    try:
        view = asyncio.run(leader_view(args, pod))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except LiveError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_FAILED
    except ApiError as exc:
        print(
            f"error: cannot find the scheduler's pods: {exc.message or exc.reason}", file=sys.stderr
        )
        return EXIT_FAILED
    except (TransportError, OSError, TimeoutError) as exc:
        print(f"error: cannot reach the API server: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.output == "json":
        print(json.dumps(view, indent=2))
    else:
        print("\n".join(render(view, pod)))
    return 0
