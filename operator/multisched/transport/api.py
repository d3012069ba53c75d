"""``Api``: the writes that must be fast and guarded (a binding and an event per pod, status
patches, leases), as raw JSON requests on the ApiClient's own aiohttp session.

``call_api``'s per-request body sanitising, header tuples and regex cost a fifth of a
request's CPU, and a pod costs two requests; the ApiClient still does auth, TLS and token
refresh. A request may carry a ``guard`` (the leader elector's "may I write"): it is asked
before the request and again when the connection is in hand, right before the request goes
on the wire, so a replica frozen past its lease does not send what it prepared before.
Failures to get an answer become ``Unreachable``; ``Reachability`` logs an outage once.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from .errors import ApiError, NotSent, Unreachable
from .internals import request_options, session_of, wrap_connect
from .kubeconfig import ApiClient
from .reachability import Reachability
from .send_order import SendOrder

#: What ``NotSent`` says: the guard is the leader elector's.
NOT_SENT = "not the leader any more; request not sent"

#: Answers that say the request was not processed at all: 503 (the API server is shutting
#: down, or not ready) and 429 (API Priority and Fairness turned it away).
_NOT_PROCESSED = frozenset({429, 503})

#: The write guard of the request being made in this task (read by the wire hook).
_WIRE_GUARD: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "multisched_wire_guard", default=None
)
#: The request's place in its kind's send order, if it keeps one (read by the wire hook).
_WIRE_TURN: contextvars.ContextVar[tuple[SendOrder, int] | None] = contextvars.ContextVar(
    "multisched_wire_turn", default=None
)


class _WireGuardedConnect:
    """A connector's ``connect``, followed by the write guard: it runs when the connection
    is in hand, after every await that precedes the send. (A TraceConfig hook would see the
    same moment, through ten signal dispatches per request: a fifth of a request's CPU.)"""

    def __init__(self, connect: Callable[..., Awaitable[Any]]) -> None:
        self._connect = connect

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        conn = await self._connect(*args, **kwargs)
        turn = _WIRE_TURN.get()
        if turn is not None:
            order, ticket = turn
            try:
                await order.turn(ticket)
            except BaseException:
                conn.release()
                raise
        guard = _WIRE_GUARD.get()
        if guard is not None and not guard():
            conn.release()  # back to the pool, unused
            raise NotSent(NOT_SENT)
        return conn


def _unreachable(exc: BaseException) -> Unreachable:
    """A connect failure sent nothing; anything later may have reached the server."""
    sent = not isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)
    text = str(exc) or type(exc).__name__
    return Unreachable(f"API server unreachable: {text}", maybe_sent=sent)


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
    """Raw JSON requests with the ApiClient's session, TLS and authentication."""

    def __init__(
        self,
        api_client: ApiClient,
        timeout: float = 30.0,
        reachability: Reachability | None = None,
    ) -> None:
        self.api_client = api_client
        self.reachability = reachability or Reachability()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session_of(api_client)
        self._extra = request_options(api_client)
        wrap_connect(self._session, _WireGuardedConnect)
        self._orders: dict[str, SendOrder] = {}

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
        in_order: bool = False,
        rank: int | None = None,
    ) -> dict[str, Any]:
        """``guard``: the request is sent only while it holds (checked now and on the wire;
        ``NotSent`` when it does not). ``kind`` names the request in the outage summary
        ("bindings", "events", ...); ``in_order``: it reaches the wire after the requests
        of its kind made before it, and, given a ``rank``, after the answers to those of a
        higher rank (``SendOrder``). No answer: ``Unreachable``; not 2xx: ``ApiError``."""
        if guard is not None and not guard():
            raise NotSent(NOT_SENT)
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
            raise Unreachable(f"cannot authenticate: {exc}", maybe_sent=False) from None
        url = f"{self.api_client.configuration.host}{path}"
        if query:
            url = f"{url}?{urlencode(query)}"
        data = _encode(body) if body is not None else None
        token = _WIRE_GUARD.set(guard)
        turn = None
        if in_order:
            order = self._orders.get(kind) or self._orders.setdefault(kind, SendOrder())
            turn = (order, order.take(rank))
        turn_token = _WIRE_TURN.set(turn)
        sent_at = self.reachability.clock()
        try:
            if rank is not None and turn is not None:
                await turn[0].after_higher_ranks(turn[1])
            async with self._session.request(
                method, url, data=data, headers=headers, timeout=self._timeout, **self._extra
            ) as resp:
                raw = await resp.read()
                status, reason = resp.status, resp.reason
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self.reachability.unreachable(kind, exc)
            raise _unreachable(exc) from None
        finally:
            _WIRE_GUARD.reset(token)
            _WIRE_TURN.reset(turn_token)
            if turn is not None:
                turn[0].done(turn[1])
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
            raise Unreachable(f"{message or reason} ({status})", maybe_sent=False)
        self.reachability.answered(sent_at)
        if not 200 <= status < 300:
            raise ApiError(status, str(message or ""), str(reason or ""))
        return data_out if isinstance(data_out, dict) else {}
