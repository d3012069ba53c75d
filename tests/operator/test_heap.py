"""The collector's policy: a large young generation, no collection while the first listing is
digested, and the start-up heap frozen once the first listing is in."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from kmock import KubernetesEmulator
from kubernetes_asyncio import client as k8s

from kmock_support import declare_kinds, namespaces_listable
from multisched import heap
from multisched.cache import Cache
from multisched.operator import runtime as runtime_module
from multisched.operator.options import Options
from multisched.operator.runtime import Runtime
from multisched.scheduler import default_registry
from multisched.scheduler.introspect import EngineView
from multisched.transport import Api


@pytest.fixture
def gc_state() -> Iterator[None]:
    threshold = gc.get_threshold()
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if enabled:
            gc.enable()


@pytest.mark.usefixtures("gc_state")
def test_tune_raises_the_young_threshold_and_keeps_the_ratios() -> None:
    gc.set_threshold(700, 10, 10)
    heap.tune()
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)
    gc.set_threshold(100_000, 5, 7)  # never lowered
    heap.tune()
    assert gc.get_threshold() == (100_000, 5, 7)


@pytest.mark.usefixtures("gc_state")
def test_tuned_gives_the_callers_thresholds_back_even_after_an_error() -> None:
    gc.set_threshold(700, 10, 10)
    with heap.tuned():
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(ValueError), heap.tuned():
        raise ValueError("a command failed")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.usefixtures("gc_state")
def test_freeze_moves_the_heap_out_of_collections() -> None:
    gc.unfreeze()
    kept = [[i] for i in range(1000)]
    heap.freeze()
    assert gc.get_freeze_count() >= len(kept)


@pytest.mark.usefixtures("gc_state")
def test_reading_collects_nothing_and_sets_what_it_read_aside() -> None:
    gc.unfreeze()
    gc.enable()
    with heap.reading():
        assert not gc.isenabled()
        read = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(read)
    gc.disable()  # a caller's choice is kept, and an error still sets the input aside
    gc.unfreeze()
    with pytest.raises(ValueError), heap.reading():
        half = [[i] for i in range(100)]
        raise ValueError("bad input")
    assert not gc.isenabled()
    assert gc.get_freeze_count() >= len(half)


@pytest.mark.usefixtures("gc_state")
def test_what_a_command_set_aside_is_collected_once_it_ends() -> None:
    """In-process commands (tests, notebooks) do not keep each one's input and garbage."""
    gc.unfreeze()
    gc.enable()
    with heap.tuned():
        with heap.reading():
            garbage = _Cycle()
        assert gc.get_freeze_count() > 0
    gone = weakref.ref(garbage)
    del garbage
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None


class _Cycle:
    """Garbage only the collector frees (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.usefixtures("gc_state")
def test_no_collection_while_listing_and_the_listing_is_collected_once_when_idle() -> None:
    gc.unfreeze()
    gc.enable()
    heap.pause()
    assert not gc.isenabled()
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    del garbage
    kept = [[i] for i in range(1000)]
    heap.listed()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept)
    gc.collect()
    assert gone() is not None  # set aside with the listing: no collection walks it
    heap.freeze()
    assert gone() is None  # collected once, when the queue first ran dry
    assert gc.get_freeze_count() >= len(kept)


def _runtime(host: str) -> Runtime:
    return Runtime(
        Options(http_port=0, secure_port=0),
        Api(k8s.ApiClient(k8s.Configuration(host=host))),
        default_registry(load_entry_points=False),
    )


async def _called(calls: list[bool]) -> None:
    for _ in range(200):
        if calls:
            return
        await asyncio.sleep(0.01)


async def test_the_runtime_calls_on_listed_once_the_informers_have_listed(
    kmock: KubernetesEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    declare_kinds(kmock)
    namespaces_listable(monkeypatch)
    rt = _runtime(str(kmock.url).rstrip("/"))
    calls: list[bool] = []
    rt.on_listed = lambda: calls.append(rt.intake is not None and rt.intake.synced)
    await rt.start()
    try:
        await _called(calls)
        assert calls == [True]
    finally:
        await rt.stop()
    assert calls == [True]  # once


async def test_a_runtime_stopped_before_its_first_listing_calls_on_listed_at_stop() -> None:
    """An API server that never answers does not leave the collector off."""
    rt = _runtime("http://127.0.0.1:9")  # refused
    calls: list[bool] = []
    rt.on_listed = lambda: calls.append(rt.intake is not None and rt.intake.synced)
    await rt.start()
    await asyncio.sleep(0.1)
    assert calls == []
    await rt.stop()
    assert calls == [False]


async def test_the_runtime_calls_on_synced_once_when_the_first_listing_is_in(
    kmock: KubernetesEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    declare_kinds(kmock)
    namespaces_listable(monkeypatch)
    monkeypatch.setattr(runtime_module, "SYNCED_HOOK_QUIET_SECONDS", 0.05)
    rt = _runtime(str(kmock.url).rstrip("/"))
    calls: list[bool] = []
    rt.on_synced = lambda: calls.append(rt.intake is not None and rt.intake.synced)
    await rt.start()
    try:
        await _called(calls)
        assert calls == [True]
        assert rt.on_synced is None  # once: a later term as leader does not freeze again
    finally:
        await rt.stop()


class _BurstyQueue:
    """A backlog that comes in through kopf in bursts: pods are popped until ``busy_until``,
    and between bursts the active queue is empty for a moment."""

    def __init__(self, busy_for: float, binding_for: float = 0.0) -> None:
        self._clock = asyncio.get_running_loop().time
        self.busy_until = self._clock() + busy_for
        #: The last pods' bindings end this long after the last pop.
        self.bound_at = self.busy_until + binding_for
        self._popped = 0
        self._looks = 0

    @property
    def scheduling_cycle(self) -> int:
        if self._clock() < self.busy_until:
            self._popped += 1
        return self._popped

    def has_active(self) -> bool:
        self._looks += 1
        return self._clock() < self.busy_until and self._looks % 2 == 0

    def in_flight_count(self) -> int:
        return 16 if self._clock() < self.bound_at else 0


async def test_the_heap_is_frozen_only_once_the_scheduler_has_been_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not while a backlog is being scheduled, even when the queue runs dry between its
    bursts: a full collection would hold up its pods."""
    monkeypatch.setattr(runtime_module, "SYNCED_HOOK_QUIET_SECONDS", 0.1)
    queue = _BurstyQueue(busy_for=0.3)
    fake = SimpleNamespace(engine=EngineView(queue, Cache()))  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    frozen_at: list[float] = []
    await Runtime._when_idle(fake, lambda: frozen_at.append(loop.time()))  # type: ignore[arg-type]
    assert len(frozen_at) == 1  # once
    # A whole quiet span after the last pop, less the one look (a tenth) it may take to see it.
    assert frozen_at[0] >= queue.busy_until + 0.1 * 0.9


async def test_the_heap_is_not_frozen_while_a_backlogs_bindings_are_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every pod of the backlog popped, but its last bindings still going out: a full
    collection would stop them (0.3 s at 2,000 plain pods, 500 nodes)."""
    monkeypatch.setattr(runtime_module, "SYNCED_HOOK_QUIET_SECONDS", 0.1)
    queue = _BurstyQueue(busy_for=0.1, binding_for=0.3)
    fake = SimpleNamespace(engine=EngineView(queue, Cache()))  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    frozen_at: list[float] = []
    await Runtime._when_idle(fake, lambda: frozen_at.append(loop.time()))  # type: ignore[arg-type]
    assert len(frozen_at) == 1
    assert frozen_at[0] >= queue.bound_at + 0.1 * 0.9


async def test_a_queue_that_never_runs_dry_freezes_at_the_latest_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime_module, "SYNCED_HOOK_QUIET_SECONDS", 0.01)
    monkeypatch.setattr(runtime_module, "SYNCED_HOOK_MAX_DELAY_SECONDS", 0.05)
    queue = SimpleNamespace(has_active=lambda: True, scheduling_cycle=0, in_flight_count=lambda: 0)
    fake = SimpleNamespace(engine=EngineView(queue, Cache()))  # type: ignore[arg-type]
    calls: list[bool] = []
    await asyncio.wait_for(Runtime._when_idle(fake, lambda: calls.append(True)), 2)  # type: ignore[arg-type]
    assert calls == [True]
