"""Lease election against an in-memory Lease API with a fake clock (client-go semantics)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from multisched.operator.leader import LeaderElector, LeaseConflict
from multisched.operator.options import LeaderElection

SETTINGS = LeaderElection(
    leader_elect=True,
    resource_namespace="kube-system",
    resource_name="multisched",
    lease_duration_seconds=15,
    renew_deadline_seconds=10,
    retry_period_seconds=2,
)


class FakeLeases:
    """Leases by (namespace, name) with resourceVersion compare-and-swap, as the API does."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        #: Fake time of the last successful write.
        self.written_at = 0.0
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.failing = False
        #: Run between a read and the next write (another replica sneaking in).
        self.interleave: Any = None

    def _check(self) -> None:
        if self.failing:
            raise ConnectionError("API server unreachable")

    def _stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.written_at = self.clock() if self.clock is not None else 0.0
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.version)
        return body

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._check()
        lease = self.leases.get((namespace, name))
        if self.interleave is not None:
            hook, self.interleave = self.interleave, None
            hook()
        return copy.deepcopy(lease) if lease is not None else None

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise LeaseConflict("exists")
        self.leases[key] = self._stamp(body)
        return copy.deepcopy(self.leases[key])

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        current = self.leases[(namespace, name)]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise LeaseConflict("the object has been modified")
        self.leases[(namespace, name)] = self._stamp(body)
        return copy.deepcopy(self.leases[(namespace, name)])

    def spec(self) -> dict[str, Any]:
        return dict(self.leases[("kube-system", "multisched")]["spec"])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class Replica:
    def __init__(self, api: FakeLeases, clock: Clock, identity: str) -> None:
        self.transitions: list[bool] = []
        self.times: list[float] = []

        def changed(leading: bool) -> None:
            self.transitions.append(leading)
            self.times.append(clock.now)

        self.elector = LeaderElector(
            api,
            SETTINGS,
            identity,
            on_started_leading=lambda: changed(True),
            on_stopped_leading=lambda: changed(False),
            clock=clock,
            sleep=clock.sleep,
        )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def api(clock: Clock) -> FakeLeases:
    return FakeLeases(clock)


async def test_creates_a_missing_lease(api: FakeLeases, clock: Clock) -> None:
    a = Replica(api, clock, "a").elector
    assert await a.try_acquire_or_renew()
    spec = api.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"].endswith("Z") and len(spec["renewTime"]) == 27  # MicroTime


async def test_a_held_lease_is_taken_only_after_it_expired_on_our_clock(
    api: FakeLeases, clock: Clock
) -> None:
    a, b = Replica(api, clock, "a").elector, Replica(api, clock, "b").elector
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # first observation at t0
    clock.now += 14.9
    assert not await b.try_acquire_or_renew()
    clock.now += 0.1
    acquired_before = api.spec()["acquireTime"]
    assert await b.try_acquire_or_renew()
    spec = api.spec()
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] >= acquired_before


async def test_a_renewing_holder_keeps_the_lease(api: FakeLeases, clock: Clock) -> None:
    a, b = Replica(api, clock, "a").elector, Replica(api, clock, "b").elector
    assert await a.try_acquire_or_renew()
    acquired = api.spec()["acquireTime"]
    assert not await b.try_acquire_or_renew()
    for _ in range(5):
        clock.now += 10
        assert await a.try_acquire_or_renew()  # the record changes: b's observation restarts
        assert not await b.try_acquire_or_renew()
    spec = api.spec()
    assert (spec["holderIdentity"], spec["acquireTime"], spec["leaseTransitions"]) == (
        "a",
        acquired,
        0,
    )


async def test_a_write_conflict_means_the_race_is_lost(api: FakeLeases, clock: Clock) -> None:
    a, b = Replica(api, clock, "a").elector, Replica(api, clock, "b").elector
    assert await a.try_acquire_or_renew()
    clock.now += 20
    assert not await b.try_acquire_or_renew()  # observed now; expires 15 s later
    clock.now += 15

    def a_renews_meanwhile() -> None:
        lease = api.leases[("kube-system", "multisched")]
        lease["spec"]["renewTime"] = "later"
        lease["metadata"]["resourceVersion"] = "changed"

    api.interleave = a_renews_meanwhile
    assert not await b.try_acquire_or_renew()
    assert api.spec()["holderIdentity"] == "a"


async def test_unreachable_api_is_no_lease(api: FakeLeases, clock: Clock) -> None:
    api.failing = True
    assert not await Replica(api, clock, "a").elector.try_acquire_or_renew()


async def _until(condition: Any) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


async def test_the_leader_steps_down_when_it_cannot_renew_within_the_deadline(
    api: FakeLeases, clock: Clock
) -> None:
    replica = Replica(api, clock, "a")
    task = asyncio.create_task(replica.elector.run())
    try:
        await _until(lambda: replica.transitions == [True])
        api.failing = True
        await _until(lambda: replica.transitions == [True, False])
        # Not before the deadline, and at the latest one retry period after it.
        assert 10 <= replica.times[1] - api.written_at <= 10 + 2 + 2
        assert not replica.elector.leading
        # It keeps trying and leads again once the API answers (its own lease, not expired).
        api.failing = False
        await _until(lambda: replica.transitions == [True, False, True])
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_cancelling_the_leader_releases_the_lease(api: FakeLeases, clock: Clock) -> None:
    leader, standby = Replica(api, clock, "a"), Replica(api, clock, "b")
    task = asyncio.create_task(leader.elector.run())
    await _until(lambda: leader.transitions == [True])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leader.transitions == [True, False]
    assert api.spec()["holderIdentity"] == ""
    # A released lease is free at once, without waiting for it to expire.
    assert await standby.elector.try_acquire_or_renew()
    assert api.spec()["leaseTransitions"] == 1


async def test_is_leader_needs_a_renewal_younger_than_the_deadline(
    api: FakeLeases, clock: Clock
) -> None:
    a = Replica(api, clock, "a").elector
    assert not a.is_leader()
    assert await a.try_acquire_or_renew()
    assert a.is_leader()
    clock.now += 9.9
    assert a.is_leader()
    clock.now += 0.1  # renewDeadline (10 s) after the last successful write was sent
    assert not a.is_leader()
    assert await a.try_acquire_or_renew()
    assert a.is_leader()


async def test_the_deadline_runs_from_the_request_not_the_answer(clock: Clock) -> None:
    class SlowLeases(FakeLeases):
        async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
            clock.now += 4  # a slow API server: the standby may have seen the write early
            return await super().replace(namespace, name, body)

    api = SlowLeases(clock)
    a = Replica(api, clock, "a").elector
    assert await a.try_acquire_or_renew()
    sent = clock.now
    assert await a.try_acquire_or_renew()
    assert clock.now == sent + 4
    clock.now = sent + 10
    assert not a.is_leader()


async def test_seeing_another_holder_ends_leadership_at_once(api: FakeLeases, clock: Clock) -> None:
    a, b = Replica(api, clock, "a").elector, Replica(api, clock, "b").elector
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.now += 15  # a is silent past the lease on b's clock: b takes it
    assert await b.try_acquire_or_renew()
    clock.now -= 10  # on a's clock its last renewal is still fresh (it was frozen)...
    assert a.is_leader()
    assert not await a.try_acquire_or_renew()  # ...but the Lease says b
    assert not a.is_leader()
    assert api.spec()["holderIdentity"] == "b"


async def test_a_lost_write_race_ends_leadership(api: FakeLeases, clock: Clock) -> None:
    a = Replica(api, clock, "a").elector
    assert await a.try_acquire_or_renew()

    def b_takes_it() -> None:
        lease = api.leases[("kube-system", "multisched")]
        lease["spec"]["holderIdentity"] = "b"
        lease["metadata"]["resourceVersion"] = "changed"

    api.interleave = b_takes_it
    assert not await a.try_acquire_or_renew()
    assert not a.is_leader()


async def test_a_leader_frozen_past_its_deadline_steps_down_on_waking(
    api: FakeLeases, clock: Clock
) -> None:
    """The issue's SIGSTOP: the renew loop sleeps, the process is frozen for 20 s, a standby
    takes over. On waking the old leader must not get a fresh deadline from the thaw."""
    leader = Replica(api, clock, "a")
    task = asyncio.create_task(leader.elector.run())
    try:
        await _until(lambda: leader.transitions == [True])
        renewed = api.written_at
        clock.now += 20  # frozen: nothing ran, and no other coroutine may write now
        assert not leader.elector.is_leader()
        standby = Replica(api, clock, "b").elector
        assert not await standby.try_acquire_or_renew()
        clock.now += 15
        assert await standby.try_acquire_or_renew()
        woke, version = clock.now, api.version
        await _until(lambda: leader.transitions == [True, False])
        # At once on waking: not after another renew deadline of retries from the thaw.
        assert leader.times[1] == woke
        assert leader.times[1] - renewed >= 10
        assert not leader.elector.is_leader()
        assert (api.version, api.spec()["holderIdentity"]) == (version, "b")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_the_renewing_leader_stays_leader(api: FakeLeases, clock: Clock) -> None:
    leader = Replica(api, clock, "a")
    task = asyncio.create_task(leader.elector.run())
    try:
        await _until(lambda: leader.transitions == [True])
        for _ in range(50):
            await asyncio.sleep(0)
            assert leader.elector.is_leader()
        assert clock.now - 1000 >= 20  # many retry periods passed
        assert leader.transitions == [True]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_lease_that_cannot_be_written_is_logged_at_error(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    class NoNamespace(FakeLeases):
        async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError('namespaces "nope" not found (404)')

    a = Replica(NoNamespace(clock), clock, "a").elector
    for _ in range(3):
        assert not await a.try_acquire_or_renew()
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1  # once, then at most once a minute
    assert 'could not create lease kube-system/multisched: namespaces "nope" not found' in (
        errors[0].getMessage()
    )
    clock.now += 60
    assert not await a.try_acquire_or_renew()
    assert len([r for r in caplog.records if r.levelname == "ERROR"]) == 2
