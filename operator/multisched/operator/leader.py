"""Lease-based leader election (coordination.k8s.io/v1), as client-go's ``leaderelection``.

Expiry is judged by local observation, not by the Lease's timestamps: a lease whose record
has not changed for ``leaseDuration`` (on our clock) is free to take, so clock skew between
replicas does not matter. Writes carry the last seen ``resourceVersion``; a 409 means another
replica won the race. The leader that cannot renew within ``renewDeadline`` steps down at once.
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

from multisched.config.resolved import LeaderElection

from .client import Api, ApiError, now_micro_time

logger = logging.getLogger(__name__)

#: client-go's ``JitterFactor`` for the acquire loop.
JITTER_FACTOR = 1.2


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

    # -- one attempt ----------------------------------------------------------------------

    def _spec(self, acquire_time: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.settings.lease_duration_seconds)),
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
        try:
            lease = await self.api.get(self.namespace, self.name)
        except Exception as exc:
            logger.warning("could not read lease %s/%s: %s", self.namespace, self.name, exc)
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
            except Exception as exc:  # LeaseConflict: another replica created it first
                logger.debug("could not create lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            self._observe(created if created.get("spec") else body)
            return True

        self._observe(lease)
        holder = self._observed_holder
        expired = self._observed_time + self.settings.lease_duration_seconds <= self.clock()
        if holder and holder != self.identity and not expired:
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
        except Exception as exc:  # LeaseConflict: lost the race
            logger.debug("could not update lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        self._observe(updated if updated.get("spec") else body)
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
        """Returns when the lease could not be renewed within ``renewDeadline``."""
        retry = self.settings.retry_period_seconds
        while True:
            deadline = self.clock() + self.settings.renew_deadline_seconds
            while True:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    logger.error(
                        "failed to renew lease %s/%s within %.1fs: stepping down",
                        self.namespace,
                        self.name,
                        self.settings.renew_deadline_seconds,
                    )
                    return
                renewed = False
                # Not wait_for: on 3.11 it can swallow a cancellation that races completion.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        renewed = await self.try_acquire_or_renew()
                if renewed:
                    break
                await self.sleep(min(retry, max(0.0, deadline - self.clock())))
            await self.sleep(retry)

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
