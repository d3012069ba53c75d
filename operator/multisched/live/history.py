"""``kubectl multisched history sp NAME`` and ``rollback sp NAME [--to-revision N]``.

The running operator keeps each SchedulerProfile spec it put in force as a
ControllerRevision (operator/revisions.py). ``history`` lists them; ``rollback`` writes an
old spec back as an edit of the profile, so it passes the same checks as any edit: the API
server's schema first, then the operator's, whose verdict (``Ready``) it waits for and
reports. Nothing is recomputed here.

A revision is read only from the operator's namespace (``--scheduler-namespace``, default
the context's) and only when the profile owns it: anyone who may create ControllerRevisions
in some namespace could otherwise plant a spec for the next rollback to put in force.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

import yaml

from multisched.transport import (
    ApiClient,
    ApiError,
    ConnectionFailed,
    TransportError,
    request_json,
)

from .reading import LiveError, connect, context_namespace

EXIT_INPUT = 2
#: Exit code when the operator refused the rolled-back spec.
EXIT_REFUSED = 1
PROFILE_KINDS = frozenset({"sp", "schedulerprofile", "schedulerprofiles"})
PROFILES = "/apis/multisched.dev/v1alpha1/schedulerprofiles"
UID_LABEL = "multisched.dev/schedulerprofile-uid"
PROFILE_KIND = "SchedulerProfile"
GENERATION_ANNOTATION = "multisched.dev/generation"
CHANGE_CAUSE = "kubernetes.io/change-cause"


def profile_name(kind: str, name: str | None) -> str:
    """``sp NAME``, ``schedulerprofile/NAME``: the profile's name, or LiveError."""
    if name is None and "/" in kind:
        kind, name = kind.split("/", 1)
    if kind.lower() not in PROFILE_KINDS:
        raise LiveError(f'unknown resource "{kind}": history is kept for SchedulerProfiles (sp)')
    if not name:
        raise LiveError("a SchedulerProfile name is required")
    return name


def _number(rev: dict[str, Any]) -> int:
    value = rev.get("revision")
    return value if isinstance(value, int) else 0


def revisions_path(namespace: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions"


def owned(rev: dict[str, Any], uid: str, namespace: str) -> bool:
    """In the operator's namespace, labelled with the profile's uid and owned by it (as
    operator/revisions.py ``owned_by`` counts a revision)."""
    meta = rev.get("metadata") or {}
    if meta.get("namespace") != namespace or (meta.get("labels") or {}).get(UID_LABEL) != uid:
        return False
    return any(
        isinstance(ref, dict) and ref.get("kind") == PROFILE_KIND and ref.get("uid") == uid
        for ref in meta.get("ownerReferences") or ()
    )


async def _history(
    api: ApiClient, name: str, namespace: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    profile = await _get_profile(api, name)
    uid = str(profile["metadata"].get("uid") or "")
    page = await request_json(
        api, "GET", revisions_path(namespace), query=[("labelSelector", f"{UID_LABEL}={uid}")]
    )
    revisions = [r for r in page.get("items") or [] if owned(r, uid, namespace)]
    return profile, sorted(revisions, key=_number)


async def _get_profile(api: ApiClient, name: str) -> dict[str, Any]:
    try:
        return await request_json(api, "GET", f"{PROFILES}/{name}")
    except ApiError as exc:
        if exc.status == 404:
            raise LiveError(f'SchedulerProfile "{name}" not found') from None
        raise


def history_table(profile: dict[str, Any], revisions: list[dict[str, Any]]) -> str:
    current = (profile.get("status") or {}).get("currentRevision")
    rows = [("REVISION", "IN FORCE", "GENERATION", "CREATED", "CHANGE-CAUSE")]
    for rev in revisions:
        meta = rev.get("metadata") or {}
        notes = meta.get("annotations") or {}
        rows.append(
            (
                str(_number(rev)),
                "*" if meta.get("name") == current else "",
                str(notes.get(GENERATION_ANNOTATION, "")),
                str(meta.get("creationTimestamp") or ""),
                str(notes.get(CHANGE_CAUSE, "")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def pick(revisions: list[dict[str, Any]], current: str, to: int | None) -> dict[str, Any]:
    """The revision to go back to: ``to``, else the newest one before the one in force."""
    if to is not None:
        for rev in revisions:
            if _number(rev) == to:
                return rev
        known = ", ".join(str(_number(r)) for r in revisions) or "none"
        raise LiveError(f"revision {to} not found (revisions: {known})")
    older = [r for r in revisions if (r.get("metadata") or {}).get("name") != current]
    in_force = next((r for r in revisions if r["metadata"].get("name") == current), None)
    if in_force is not None:
        older = [r for r in older if _number(r) < _number(in_force)]
    if not older:
        raise LiveError("no earlier revision to roll back to")
    return older[-1]


async def _rollback(
    api: ApiClient,
    name: str,
    namespace: str,
    to: int | None,
    timeout: float,
    say: Callable[[str], None],
) -> int:
    profile, revisions = await _history(api, name, namespace)
    status = profile.get("status") or {}
    target = pick(revisions, str(status.get("currentRevision") or ""), to)
    spec = (target.get("data") or {}).get("spec")
    if not isinstance(spec, dict):
        raise LiveError(f"revision {_number(target)} holds no spec")
    number = _number(target)
    if spec == profile.get("spec"):
        say(f"schedulerprofile/{name} is already at the spec of revision {number}")
        return 0
    updated = {**profile, "spec": spec}
    updated.pop("status", None)
    try:
        stored = await request_json(api, "PUT", f"{PROFILES}/{name}", updated)
    except ApiError as exc:
        if exc.status == 409:
            raise LiveError(
                f"schedulerprofile/{name} changed while rolling back; run the command again"
            ) from None
        raise LiveError(f"the API server refused revision {number}: {exc.message}") from None
    generation = int((stored.get("metadata") or {}).get("generation") or 0)
    ready = await _verdict(api, name, generation, timeout)
    if ready is None:
        say(
            f"schedulerprofile/{name} rolled back to revision {number}; the scheduler has not "
            f"judged generation {generation} within {timeout:g}s (is it running?)"
        )
        return EXIT_REFUSED
    if ready.get("status") != "True":
        print(
            f"error: the scheduler refused revision {number} of schedulerprofile/{name} "
            f"({ready.get('reason')}): {ready.get('message')}",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    say(f"schedulerprofile/{name} rolled back to revision {number}")
    return 0


async def _verdict(
    api: ApiClient, name: str, generation: int, timeout: float
) -> dict[str, Any] | None:
    """The operator's Ready condition for ``generation``, once it shows one."""
    deadline = time.monotonic() + timeout
    while True:
        profile = await _get_profile(api, name)
        for cond in (profile.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "Ready" and cond.get("observedGeneration") == generation:
                return dict(cond)
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(0.5)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ApiError):
        if exc.status == 403:
            return f"forbidden: {exc.message}"
        return f"{exc.message or exc.reason} ({exc.status})"
    if isinstance(exc, ConnectionFailed | OSError):
        return f"cannot reach the API server: {exc}"
    return str(exc) or type(exc).__name__


async def _session(args: argparse.Namespace, work: Any) -> int:
    api = await connect(args.kubeconfig)
    try:
        return int(await work(api))
    finally:
        await api.close()


def _run(args: argparse.Namespace, work: Any) -> int:
    try:
        return asyncio.run(_session(args, work))
    except LiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except (ApiError, TimeoutError, TransportError, OSError) as exc:
        print(f"error: {_describe(exc)}", file=sys.stderr)
    return EXIT_INPUT


def _namespace(args: argparse.Namespace) -> str:
    return str(args.scheduler_namespace or context_namespace(args.kubeconfig) or "default")


def _name(args: argparse.Namespace) -> str | None:
    try:
        return profile_name(args.kind, args.name)
    except LiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def cmd_history(args: argparse.Namespace) -> int:
    name = _name(args)
    if name is None:
        return EXIT_INPUT

    namespace = _namespace(args)

    async def work(api: ApiClient) -> int:
        profile, revisions = await _history(api, name, namespace)
        if args.revision is not None:
            target = pick(revisions, "", args.revision)
            print(yaml.safe_dump((target.get("data") or {}).get("spec"), sort_keys=False), end="")
            return 0
        if not revisions:
            print(
                f"schedulerprofile/{name} has no revisions in namespace {namespace} yet (none "
                "applied, no operator, or it runs elsewhere: --scheduler-namespace)"
            )
            return 0
        print(f"schedulerprofile/{name}")
        print(history_table(profile, revisions))
        return 0

    return _run(args, work)


def cmd_rollback(args: argparse.Namespace) -> int:
    name = _name(args)
    if name is None:
        return EXIT_INPUT

    namespace = _namespace(args)

    async def work(api: ApiClient) -> int:
        return await _rollback(api, name, namespace, args.to_revision, args.timeout, print)

    return _run(args, work)
