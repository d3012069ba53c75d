"""Lease-based leader election (coordination.k8s.io/v1), as client-go's ``leaderelection``.

Expiry is judged by local observation, not by the Lease's timestamps: a lease whose record
has not changed for ``leaseDuration`` (on our clock) is free to take, so clock skew between
replicas does not matter. Writes carry the last seen ``resourceVersion``; a 409 means another
replica won the race.

Leadership is a proof with an expiry: ``is_leader()`` holds only while the last successful
write of the Lease (timed from before its request was sent, on the monotonic clock) is less
than ``renewDeadline`` old. A standby takes over no earlier than ``leaseDuration`` after it
saw that write, so a replica frozen past its deadline (SIGSTOP, a long GC pause) knows on
waking, before any other coroutine writes, that it may no longer. Seeing another holder, or
losing a write race, while leading ends leadership at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from multisched.meta import now_micro_time
from multisched.transport import Api, ApiError

from .options import LeaderElection

logger = logging.getLogger(__name__)

#: client-go's ``JitterFactor`` for the acquire loop.
JITTER_FACTOR = 1.2
#: A failure that repeats is logged again at most this often (seconds).
REPEAT_LOG_SECONDS = 60.0


class LeaseConflict(Exception):
    """The Lease changed (or appeared) since we read it."""


class LeaseApi(Protocol):
    async def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...


class KubeLeaseApi:
    def __init__(self, api: Api) -> None:
        self.api = api

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return f"{path}/{name}" if name else path

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.api.request("GET", self._path(namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.api.request("POST", self._path(namespace), body)
        except ApiError as exc:
            if exc.status == 409:
                raise LeaseConflict(str(exc)) from None
            raise

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.api.request("PUT", self._path(namespace, name), body)
        except ApiError as exc:
            if exc.status == 409:
                raise LeaseConflict(str(exc)) from None
            raise


def new_identity() -> str:
    """Unique per process, recognisable per pod (client-go: ``hostname_uuid``)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _record(spec: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two observations of a Lease "the same" (client-go compares raw records)."""
    return (
        spec.get("holderIdentity") or "",
        spec.get("leaseDurationSeconds"),
        spec.get("acquireTime"),
        spec.get("renewTime"),
        spec.get("leaseTransitions"),
    )


class LeaderElector:
    def __init__(
        self,
        api: LeaseApi,
        settings: LeaderElection,
        identity: str,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.settings = settings
        self.identity = identity
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.leading = False
        self._observed: tuple[Any, ...] | None = None
        self._observed_time = 0.0
        self._observed_holder = ""
        self._observed_version = ""
        self._observed_spec: dict[str, Any] = {}
        #: Monotonic time at which the last successful acquire/renew request was sent.
        self._renewed_at: float | None = None
        #: The last failure logged and when (a lease that cannot be written is loud, once).
        self._last_failure = ("", float("-inf"))

    @property
    def namespace(self) -> str:
        return self.settings.resource_namespace

    @property
    def name(self) -> str:
        return self.settings.resource_name

    @property
    def holder(self) -> str:
        """The last observed holder (for logs and tests)."""
        return self._observed_holder

    def is_leader(self) -> bool:
        """Whether this replica can prove it holds the lease right now (client-go
        ``IsLeader`` plus the renew deadline): writes are allowed only while this is true."""
        renewed = self._renewed_at
        return (
            renewed is not None
            and self._observed_holder == self.identity
            and self.clock() - renewed < self.settings.renew_deadline_seconds
        )

    def _lose(self) -> None:
        self._renewed_at = None

    def _failed(self, what: str, exc: BaseException) -> None:
        """Log a failing Lease request at ERROR: when it is new, then once a minute."""
        message = f"{what} lease {self.namespace}/{self.name}: {exc}"
        last, when = self._last_failure
        now = self.clock()
        if message != last or now - when >= REPEAT_LOG_SECONDS:
            self._last_failure = (message, now)
            logger.error("%s (this replica does not schedule until it holds the lease)", message)

    # -- one attempt ----------------------------------------------------------------------

    def _spec(self, acquire_time: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            # client-go truncates to whole seconds; options guarantee >= 1s and int32.
            "leaseDurationSeconds": max(1, int(self.settings.lease_duration_seconds)),
            "acquireTime": acquire_time,
            "renewTime": now_micro_time(),
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        record = _record(spec)
        if record != self._observed:
            self._observed = record
            self._observed_time = self.clock()
        self._observed_spec = spec
        self._observed_holder = spec.get("holderIdentity") or ""
        self._observed_version = (lease.get("metadata") or {}).get("resourceVersion") or ""

    async def try_acquire_or_renew(self) -> bool:
        """One round of client-go's ``tryAcquireOrRenew``; True when we hold the lease."""
        started = self.clock()
        try:
            lease = await self.api.get(self.namespace, self.name)
        except Exception as exc:
            self._failed("could not read", exc)
            return False
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now_micro_time(), 0),
            }
            try:
                created = await self.api.create(self.namespace, body)
            except LeaseConflict:  # another replica created it first
                self._lose()
                return False
            except Exception as exc:  # e.g. the namespace does not exist, RBAC, a bad name
                self._failed("could not create", exc)
                return False
            self._observe(created if created.get("spec") else body)
            self._renewed_at = started
            return True

        self._observe(lease)
        holder = self._observed_holder
        expired = self._observed_time + self.settings.lease_duration_seconds <= self.clock()
        if holder and holder != self.identity and not expired:
            if self._renewed_at is not None:
                logger.warning(
                    "lease %s/%s is now held by %s: stepping down",
                    self.namespace,
                    self.name,
                    holder,
                )
            self._lose()
            return False
        spec = self._observed_spec
        if holder == self.identity:
            new_spec = self._spec(
                spec.get("acquireTime") or now_micro_time(), int(spec.get("leaseTransitions") or 0)
            )
        else:
            new_spec = self._spec(now_micro_time(), int(spec.get("leaseTransitions") or 0) + 1)
        meta = dict(lease.get("metadata") or {})
        meta["resourceVersion"] = self._observed_version
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": new_spec,
        }
        try:
            updated = await self.api.replace(self.namespace, self.name, body)
        except LeaseConflict:
            # Only an expired lease is written by others: if it was ours, it is gone.
            self._lose()
            return False
        except Exception as exc:
            self._failed("could not update", exc)
            return False
        self._observe(updated if updated.get("spec") else body)
        self._renewed_at = started
        return True

    async def release(self) -> None:
        """Give the lease up (client-go ``ReleaseOnCancel``) so a standby takes over at once.

        Reads the Lease again: a renewal cut short by the cancellation may have moved its
        resourceVersion past the one we saw.
        """
        if self._observed_holder != self.identity:
            return
        try:
            lease = await self.api.get(self.namespace, self.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            spec = dict(lease.get("spec") or {})
            spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now_micro_time())
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": dict(lease.get("metadata") or {}),
                "spec": spec,
            }
            await self.api.replace(self.namespace, self.name, body)
        except Exception as exc:
            logger.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc)
            return
        self._observed_holder = ""
        self._lose()
        logger.info("released lease %s/%s", self.namespace, self.name)

    # -- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead until renewal fails, repeat; releases the lease when cancelled."""
        logger.info(
            "leader election: lease %s/%s, identity %s", self.namespace, self.name, self.identity
        )
        try:
            while True:
                await self._acquire()
                self._set_leading(True)
                await self._renew()
                self._set_leading(False)
        finally:
            if self.leading:
                self._set_leading(False)
                await asyncio.shield(self.release())

    async def _acquire(self) -> None:
        first = True
        while True:
            if await self.try_acquire_or_renew():
                return
            if first and self._observed_holder:
                logger.info("lease %s/%s is held by %s", self.namespace, self.name, self.holder)
                first = False
            period = self.settings.retry_period_seconds
            await self.sleep(period * (1 + self.rng.random() * JITTER_FACTOR))

    async def _renew(self) -> None:
        """Returns when leadership can no longer be proven: another holder, a lost write race,
        or no successful renewal within ``renewDeadline`` of the last one (client-go times
        each renew round from its start; we time it from the last success, so a replica
        that was frozen steps down on waking instead of getting a fresh deadline)."""
        retry = self.settings.retry_period_seconds
        while True:
            await self.sleep(retry)
            while True:
                renewed_at = self._renewed_at
                if renewed_at is None or self._observed_holder != self.identity:
                    return  # another holder, or our write lost a race: logged already
                remaining = renewed_at + self.settings.renew_deadline_seconds - self.clock()
                if remaining <= 0:
                    logger.error(
                        "failed to renew lease %s/%s within %gs: stepping down",
                        self.namespace,
                        self.name,
                        self.settings.renew_deadline_seconds,
                    )
                    self._lose()
                    return
                renewed = False
                # Not wait_for: on 3.11 it can swallow a cancellation that races completion.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        renewed = await self.try_acquire_or_renew()
                if renewed:
                    break
                if self._renewed_at is None:
                    continue  # lost: leave at the top of the loop
                await self.sleep(min(retry, max(0.0, remaining)))

    def _set_leading(self, leading: bool) -> None:
        if leading == self.leading:
            return
        self.leading = leading
        if leading:
            logger.info("became leader: lease %s/%s (%s)", self.namespace, self.name, self.identity)
            self.on_started_leading()
        else:
            logger.warning("stopped leading: lease %s/%s", self.namespace, self.name)
            self.on_stopped_leading()
