"""``kubectl multisched queue [POD]``: what the running leader's scheduling queue holds.

The answer comes from the leader itself (``/debug/queue`` on its secure port), not from a
recomputation. The caller is the kubeconfig's user: the scheduler checks its bearer token
with a TokenReview and its right to ``get`` the path with a SubjectAccessReview (the
chart's ``-debug-reader`` ClusterRole grants it).

Where the scheduler runs: ``--endpoint`` (after ``kubectl port-forward``, or a local
``kopf run``), else the operator pods found by label, asking each and keeping the leader.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import ssl
import sys
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s

from multisched.queue import QueueName
from multisched.transport import ApiError, request_json

from .reading import LiveError, connect, context_namespace

EXIT_INPUT = 2
EXIT_FAILED = 1

SECURE_PORT = 10259
PATH = "/debug/queue"
QUEUES = tuple(QueueName)  # the columns, in the scheduler's order


async def bearer_token(api: k8s.ApiClient) -> str | None:
    """The kubeconfig user's bearer token (None for a client certificate, as kind's admin)."""
    header: Any = api.configuration.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    if not header:
        return None
    return str(header).split(" ", 1)[-1]


async def discover(api: k8s.ApiClient, namespace: str, selector: str) -> list[str]:
    """The secure endpoints of the running operator pods (their ``https`` port)."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
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


def _tls(ca_file: str | None) -> ssl.SSLContext | bool:
    """The scheduler's certificate is self-signed unless the chart was given one: verify it
    only against ``--certificate-authority``."""
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    return False


async def ask(
    session: aiohttp.ClientSession, endpoint: str, token: str | None, pod: str | None, tls: Any
) -> dict[str, Any]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    params = {"pod": pod} if pod else {}
    url = endpoint.rstrip("/") + PATH
    async with session.get(url, headers=headers, params=params, ssl=tls) as resp:
        text = await resp.text()
        if resp.status != 200:
            try:
                message = json.loads(text).get("message") or text
            except (ValueError, AttributeError):
                message = text.strip() or resp.reason
            hint = ""
            if resp.status in (401, 403) and not token:
                hint = (
                    " (the kubeconfig's user has no bearer token, so it came as anonymous: "
                    "pass --token, e.g. from kubectl create token)"
                )
            raise LiveError(f"{endpoint}: {resp.status} {message}{hint}")
        data = json.loads(text)
        if not isinstance(data, dict):
            raise LiveError(f"{endpoint}: not a queue listing")
        return data


async def leader_view(args: argparse.Namespace, pod: str | None) -> dict[str, Any]:
    api = await connect(args.kubeconfig)
    try:
        token = args.token or await bearer_token(api)
        if args.endpoint:
            endpoints = [args.endpoint]
        else:
            endpoints = await discover(api, args.scheduler_namespace or "", args.selector)
            if not endpoints:
                where = f"namespace {args.scheduler_namespace}" if args.scheduler_namespace else ""
                raise LiveError(
                    f"no running multisched pod found ({args.selector}"
                    f"{', ' + where if where else ''}): pass --endpoint, e.g. after "
                    "kubectl port-forward"
                )
    finally:
        await api.close()
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    views: list[dict[str, Any]] = []
    errors: list[str] = []
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for endpoint in endpoints:
            try:
                view = await ask(session, endpoint, token, pod, _tls(args.certificate_authority))
            except LiveError as exc:
                errors.append(str(exc))
                continue
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                errors.append(f"{endpoint}: cannot connect: {exc or type(exc).__name__}")
                continue
            view["endpoint"] = endpoint
            if view.get("leading"):
                return view
            views.append(view)
    if views:
        return views[0]
    raise LiveError("; ".join(errors))


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
    except LiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ApiError as exc:
        print(
            f"error: cannot find the scheduler's pods: {exc.message or exc.reason}", file=sys.stderr
        )
        return EXIT_FAILED
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        print(f"error: cannot reach the API server: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.output == "json":
        print(json.dumps(view, indent=2))
    else:
        print("\n".join(render(view, pod)))
    return 0
