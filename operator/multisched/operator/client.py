"""The scheduler's writes to the API server: bindings, preemption, events, status patches.

Requests go through kubernetes_asyncio's ``ApiClient`` (auth, TLS, token refresh) but bodies
are plain JSON both ways: the generated models cannot read a Binding response ("Invalid
value for `target`, must not be `None`"), and MicroTime round-trips are lossy, so no
model decoding happens here.

Writes happen only while ``may_write()`` holds (the leader elector owns that truth). It is
asked before a write and again when the connection is in hand, right before the request
goes on the wire: a replica frozen past its lease must not send what it prepared before.
Transport failures become ``ApiUnreachable``; ``Reachability`` logs an outage once.
Scheduling events and PodScheduled patches go through the ``Recorder`` (off the hot path).
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s

from multisched.cache import PodInfo
from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM
from multisched.framework import ApiUnavailable, BindingConflict, NotLeading
from multisched.meta import now_time
from multisched.transport import ApiError
from multisched.transport.internals import request_options, session_of, wrap_connect

from .options import COMPONENT
from .recorder import Reachability, Recorder

logger = logging.getLogger(__name__)

#: Upstream truncates event notes to 1 kB (events.k8s.io validation).
EVENT_MESSAGE_LIMIT = 1024
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class NotLeader(NotLeading):
    """This replica lost the lease; it must not write bindings any more."""


class ApiUnreachable(ApiError, ApiUnavailable):
    """No answer from the API server (status 0). An ``ApiError`` for callers that handle
    those, an ``ApiUnavailable`` for the scheduler (``maybe_sent``: outcome unknown)."""

    def __init__(self, message: str, maybe_sent: bool) -> None:
        Exception.__init__(self, message)
        self.status = 0
        self.message = message
        self.maybe_sent = maybe_sent


#: Answers that say the request was not processed at all: 503 (the API server is shutting
#: down, or not ready) and 429 (API Priority and Fairness turned it away).
_NOT_PROCESSED = frozenset({429, 503})

#: 409 text of pods/binding when the pod already has a node (registry/core/pod/storage).
_ASSIGNED = re.compile(r'already assigned to node "([^"]*)"')

#: The write guard of the request being made in this task (read by the wire hook).
_WIRE_GUARD: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "multisched_wire_guard", default=None
)


class _WireGuardedConnect:
    """A connector's ``connect``, followed by the write guard: it runs when the connection
    is in hand, after every await that precedes the send. (A TraceConfig hook would see the
    same moment, through ten signal dispatches per request: a fifth of a request's CPU.)"""

    def __init__(self, connect: Callable[..., Awaitable[Any]]) -> None:
        self._connect = connect

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        conn = await self._connect(*args, **kwargs)
        guard = _WIRE_GUARD.get()
        if guard is not None and not guard():
            conn.release()  # back to the pool, unused
            raise NotLeader("not the leader any more; request not sent")
        return conn


def _transport_error(exc: BaseException) -> ApiUnreachable:
    """A connect failure sent nothing; anything later may have reached the server."""
    sent = not isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)
    text = str(exc) or type(exc).__name__
    return ApiUnreachable(f"API server unreachable: {text}", maybe_sent=sent)


def _encode(body: Mapping[str, Any]) -> bytes:
    """JSON for the wire: orjson, or the standard library for what orjson refuses
    (integers beyond 64 bits a user may put in plugin args, for one)."""
    try:
        return orjson.dumps(dict(body))
    except TypeError:
        return json.dumps(dict(body)).encode()


def _decode_slowly(raw: bytes) -> Any:
    """What orjson refuses but JSON allows (nesting beyond 1,024 levels, which a
    SchedulerProfile may hold), or a body that is no JSON at all (its text, as a message)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return {"message": raw.decode(errors="replace")[:200]}


class Api:
    """Raw JSON requests with the ApiClient's session, TLS and authentication.

    The hot writes (a binding and an event per pod) go straight to the ApiClient's aiohttp
    session: ``call_api``'s per-request body sanitising, header tuples and regex cost a
    fifth of a request's CPU, and its rate of two requests per pod matters.
    """

    def __init__(
        self,
        api_client: k8s.ApiClient,
        timeout: float = 30.0,
        reachability: Reachability | None = None,
    ) -> None:
        self.api_client = api_client
        self.reachability = reachability or Reachability()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session_of(api_client)
        self._extra = request_options(api_client)
        wrap_connect(self._session, _WireGuardedConnect)

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
        guard: Callable[[], bool] | None = None,
        kind: str = "other requests",
    ) -> dict[str, Any]:
        """``guard``: the request is sent only while it holds (checked now and on the wire).
        ``kind`` names the request in the outage summary ("bindings", "events", ...)."""
        if guard is not None and not guard():
            raise NotLeader("not the leader any more; request not sent")
        headers = {
            **self.api_client.default_headers,
            "Accept": "application/json",
            "Content-Type": content_type,
        }
        # The ApiClient's own auth step (an exec plugin's or OIDC token is refreshed here).
        try:
            await self.api_client.update_params_for_auth(headers, [], ["BearerToken"])
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self.reachability.unreachable(kind, exc)
            raise ApiUnreachable(f"cannot authenticate: {exc}", maybe_sent=False) from None
        url = f"{self.api_client.configuration.host}{path}"
        if query:
            url = f"{url}?{urlencode(query)}"
        data = _encode(body) if body is not None else None
        token = _WIRE_GUARD.set(guard)
        sent_at = self.reachability.clock()
        try:
            async with self._session.request(
                method, url, data=data, headers=headers, timeout=self._timeout, **self._extra
            ) as resp:
                raw = await resp.read()
                status, reason = resp.status, resp.reason
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self.reachability.unreachable(kind, exc)
            raise _transport_error(exc) from None
        finally:
            _WIRE_GUARD.reset(token)
        data_out: Any = {}
        if raw:
            try:
                data_out = orjson.loads(raw)
            except orjson.JSONDecodeError:
                data_out = _decode_slowly(raw)
        message = data_out.get("message", "") if isinstance(data_out, dict) else ""
        if status in _NOT_PROCESSED:
            # "apiserver is shutting down", or throttled: nothing was stored, and the same
            # request may be sent again; not a refusal of this request (client-go retries).
            # The server did answer, so this is no outage of its own: a graceful shutdown
            # answers some requests and turns others away, and logging each flip would be
            # noise; the lost connections that follow are logged once, as an outage.
            raise ApiUnreachable(f"{message or reason} ({status})", maybe_sent=False)
        self.reachability.answered(sent_at)
        if not 200 <= status < 300:
            raise ApiError(status, str(message or ""), str(reason or ""))
        return data_out if isinstance(data_out, dict) else {}


def _ref(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": api_version, "kind": kind, "name": meta.get("name", "")}
    for key in ("namespace", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def _pod_path(pod: PodInfo, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
    return f"{path}/{sub}" if sub else path


def _real_uid(pod: PodInfo) -> str | None:
    """PodInfo falls back to ``ns/name`` without a uid; never send that as a precondition."""
    uid = (pod.raw.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


class KubeClient:
    """``framework.handle.ClusterClient`` and ``scheduler.events.SchedulingEvents``."""

    def __init__(
        self,
        api: Api,
        instance: str | None = None,
        is_pending: Callable[[str], bool] | None = None,
        may_write: Callable[[], bool] | None = None,
    ) -> None:
        self.api = api
        #: ``reportingInstance`` of our events.
        self.instance = instance or socket.gethostname()
        #: Whether a pod is still unbound and alive; failures of others are not reported.
        self.is_pending = is_pending
        #: Whether this replica may write now (it leads, or election is off).
        self.may_write: Callable[[], bool] = may_write or (lambda: True)
        self.recorder = Recorder(self, self._guard, reachable=lambda: api.reachability.reachable)
        #: What each pod's queued status patch writes (by uid): its PodScheduled=False and
        #: its nomination go out together, through one recorder key, in the order set.
        self._statuses: dict[str, _PendingStatus] = {}
        self.recorder.on_patches_dropped.append(self._statuses.clear)
        api.reachability.reporters.append(self.recorder.take_dropped)
        api.reachability.on_unreachable.append(self.recorder.release)

    def _guard(self) -> bool:
        return self.may_write()

    async def close(self) -> None:
        """Stop the recorder (what is still queued is not sent)."""
        await self.recorder.close()

    # -- ClusterClient --------------------------------------------------------------------

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST the binding; a 409 naming the same node means an earlier attempt (whose
        answer was lost) already bound it: success. Another node: ``BindingConflict``
        with ``bound_to``."""
        meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
        uid = _real_uid(pod)
        if uid:
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            await self.api.request(
                "POST", _pod_path(pod, "binding"), body, guard=self._guard, kind="bindings"
            )
        except ApiUnreachable:
            raise
        except ApiError as exc:
            if exc.status in (404, 409):
                match = _ASSIGNED.search(exc.message) if exc.status == 409 else None
                bound_to = match.group(1) if match else ""
                if bound_to == node_name:
                    logger.info("pod %s was already bound to %s", pod.key, node_name)
                    return
                raise BindingConflict(exc.status, exc.message or str(exc), bound_to) from None
            raise

    async def delete_pod(self, pod: PodInfo, reason: str) -> None:
        """Mark the victim (DisruptionTarget, as upstream), delete it, record ``Preempted``."""
        if not self.may_write():
            raise NotLeader("not the leader any more; preemption skipped")
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{COMPONENT}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": now_time(),
        }
        try:
            await self._patch_condition(pod, condition)
        except ApiError as exc:
            if exc.status == 404:
                return
            logger.warning("could not mark preemption victim %s: %s", pod.key, exc)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        uid = _real_uid(pod)
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.api.request(
                "DELETE", _pod_path(pod), body, guard=self._guard, kind="preemptions"
            )
        except ApiError as exc:
            if exc.status in (404, 409):  # gone, or a new pod took the name
                return
            raise
        self._pod_event(pod, "Normal", "Preempted", reason, COMPONENT, "Preempting")

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """Queued behind (or merged into) the pod's pending status patch, never beside it:
        a direct patch could land before a queued one it is newer than."""
        if not self.may_write():
            raise NotLeader("not the leader any more; nomination skipped")
        self._queue_status(pod, None, node_name)

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT a PV or claim (the volume binder's PreBind writes); a 409 means it changed
        since the binder read it: the binding is undone and the pod tried again."""
        meta = obj.get("metadata") or {}
        if kind == PERSISTENT_VOLUME:
            path = f"/api/v1/persistentvolumes/{meta.get('name')}"
        elif kind == PERSISTENT_VOLUME_CLAIM:
            path = (
                f"/api/v1/namespaces/{meta.get('namespace')}/persistentvolumeclaims/"
                f"{meta.get('name')}"
            )
        else:
            raise ValueError(f"the scheduler writes no {kind}")
        return await self.api.request("PUT", path, obj, guard=self._guard, kind="volume bindings")

    # -- SchedulingEvents (queued: these never wait for the API server) --------------------

    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        message = f"Successfully assigned {pod.key} to {node_name}"
        self._pod_event(pod, "Normal", "Scheduled", message, profile, "Binding")

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        """Queued: a nomination set just before (preemption's) goes out in the same patch
        as the PodScheduled=False (upstream ``updatePod`` writes both at once)."""
        if not self.may_write():
            return  # stepped down mid-cycle: the new leader reports for itself
        if self.is_pending is not None and not self.is_pending(pod.uid):
            return  # bound (maybe by someone else) or deleted meanwhile
        self._pod_event(pod, "Warning", "FailedScheduling", message, profile, "Scheduling")
        self._queue_status(pod, (reason, message), None)
        await self.recorder.room()  # the scheduling loop keeps pace with its reports

    def _queue_status(
        self, pod: PodInfo, condition: tuple[str, str] | None, nominated: str | None
    ) -> None:
        """Merges into the pod's pending status patch (newer parts win) and queues it."""
        pending = self._statuses.get(pod.uid)
        if pending is None:
            pending = self._statuses[pod.uid] = _PendingStatus(pod)
        pending.pod = pod
        if condition is not None:
            pending.condition = condition
        if nominated is not None:
            pending.nominated = nominated
        uid = pod.uid
        self.recorder.record_patch(("PodScheduled", uid), lambda: self._write_status(uid))

    async def _write_status(self, uid: str) -> None:
        """The pod's pending PodScheduled=False and nomination in one patch (upstream
        ``updatePod``); the condition is skipped when the pod already has it."""
        pending = self._statuses.pop(uid, None)
        if pending is None:
            return  # written by an earlier job of the same key
        pod = pending.pod
        if self.is_pending is not None and not self.is_pending(uid):
            return  # bound or deleted while this waited in the recorder
        status = pod.raw.get("status") or {}
        patch: dict[str, Any] = {}
        # Written whatever ``pod`` says: it may predate this scheduler's own last write.
        if pending.nominated is not None:
            patch["nominatedNodeName"] = pending.nominated or None
        if pending.condition is not None:
            generation = int((pod.raw.get("metadata") or {}).get("generation") or 0)
            condition = _pod_scheduled_false(status, *pending.condition, generation)
            if condition is not None:
                patch["conditions"] = [condition]
        if not patch:
            return
        try:
            await self._patch_status(pod, patch)
        except ApiUnavailable:
            # The recorder sends this key again (or a newer job of it): keep what is not
            # newer meanwhile.
            newer = self._statuses.setdefault(uid, pending)
            if newer is not pending:
                newer.condition = newer.condition or pending.condition
                if newer.nominated is None:
                    newer.nominated = pending.nominated
            raise
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def _patch_condition(self, pod: PodInfo, condition: dict[str, Any]) -> None:
        """Strategic-merge one condition into the pod's status (merged by ``type``)."""
        await self._patch_status(pod, {"conditions": [condition]})

    async def _patch_status(self, pod: PodInfo, status: dict[str, Any]) -> None:
        await self.api.request(
            "PATCH",
            _pod_path(pod, "status"),
            {"status": status},
            content_type=STRATEGIC_MERGE_PATCH,
            guard=self._guard,
            kind="status patches",
        )

    def _pod_event(
        self, pod: PodInfo, type_: str, reason: str, message: str, component: str, action: str
    ) -> None:
        ref = _ref(pod.raw, "v1", "Pod")
        ref.update(name=pod.name, namespace=pod.namespace)
        self.recorder.record_event(
            self._event_body(ref, pod.namespace, type_, reason, message, component, action)
        )

    # -- generic --------------------------------------------------------------------------

    async def post_event(
        self,
        involved: Mapping[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        component: str,
        action: str = "",
    ) -> None:
        """Post a core/v1 Event now (rare, already deduplicated reports such as a profile's
        problems); cluster-scoped objects' events go to ``default`` as kubectl expects."""
        body = self._event_body(involved, namespace, type_, reason, message, component, action)
        stamp = now_time()
        body.update(firstTimestamp=stamp, lastTimestamp=stamp, count=1)
        await self.create_event(body)

    def _event_body(
        self,
        involved: Mapping[str, Any],
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        component: str,
        action: str,
    ) -> dict[str, Any]:
        if len(message) > EVENT_MESSAGE_LIMIT:
            message = message[: EVENT_MESSAGE_LIMIT - 3] + "..."
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": namespace},
            "involvedObject": dict(involved),
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": f"{component}-{self.instance}"[:128],
        }
        if action:
            body["action"] = action
        return body

    # -- recorder.EventSink ---------------------------------------------------------------

    async def create_event(self, body: dict[str, Any]) -> str:
        meta = body["metadata"]
        name = (
            meta.get("name") or f"{body['involvedObject'].get('name', 'object')}.{time.time_ns():x}"
        )
        body = {**body, "metadata": {**meta, "name": name}}
        try:
            await self.api.request(
                "POST",
                f"/api/v1/namespaces/{meta['namespace']}/events",
                body,
                guard=self._guard,
                kind="events",
            )
        except ApiError as exc:
            if exc.status != 409:
                raise
            # AlreadyExists: the POST of a retry whose first answer was lost; stored once.
        return name

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        await self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/events/{name}",
            patch,
            content_type=MERGE_PATCH,
            guard=self._guard,
            kind="events",
        )

    async def patch_cluster_status(
        self, group: str, version: str, plural: str, name: str, status: Mapping[str, Any]
    ) -> None:
        """JSON merge patch of a cluster-scoped custom object's status subresource."""
        await self.api.request(
            "PATCH",
            f"/apis/{group}/{version}/{plural}/{name}/status",
            {"status": dict(status)},
            content_type=MERGE_PATCH,
            guard=self._guard,
            kind="status patches",
        )


class _PendingStatus:
    """A pod's status patch waiting in the recorder: the latest pod object, and the
    PodScheduled=False (reason, message) and nomination ("" clears) to write, if any."""

    __slots__ = ("condition", "nominated", "pod")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.condition: tuple[str, str] | None = None
        self.nominated: str | None = None


def _pod_scheduled_false(
    status: Mapping[str, Any], reason: str, message: str, generation: int = 0
) -> dict[str, Any] | None:
    """The PodScheduled=False condition to write, or None when the pod already has it.

    ``observedGeneration`` is the pod's generation (PodObservedGenerationTracking, GA in
    v1.35); as upstream's ``UpdatePodCondition``, a change of it alone writes nothing."""
    current = next(
        (c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"),
        None,
    )
    if current is not None and (
        current.get("status"),
        current.get("reason"),
        current.get("message"),
    ) == ("False", reason, message):
        return None
    since = (
        current.get("lastTransitionTime")
        if current is not None and current.get("status") == "False"
        else None
    )
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": since or now_time(),
        **({"observedGeneration": generation} if generation else {}),
    }
