"""The operator's event handlers reach the engine through ``EngineFeed`` alone, and the
Scheduler's feed implements every call of it."""

from __future__ import annotations

import inspect
import tracemalloc
from collections.abc import AsyncGenerator
from typing import Any, cast

from builders import node_dict, pod_dict
from multisched.operator.event_handlers import ClusterEventHandlers
from multisched.scheduler.event_handlers import EventHandlers
from multisched.scheduler.feed import EngineFeed

SERVED = "mine"
PODS = 5000
FEED_CALLS = sorted(
    name for name, _ in inspect.getmembers(EngineFeed, inspect.isfunction) if name[0] != "_"
)


class RecordingFeed:
    """Serves one schedulerName and records every other call it gets, by name."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name == SERVED

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, *args, *kwargs.values()))

        return record


def test_the_scheduler_implements_every_feed_call() -> None:
    assert "on_pod" in FEED_CALLS and "on_group_object" in FEED_CALLS
    for name in FEED_CALLS:
        expected = inspect.signature(getattr(EngineFeed, name))
        assert inspect.signature(getattr(EventHandlers, name)) == expected, name


async def test_watch_events_become_feed_calls_and_nothing_else() -> None:
    feed = RecordingFeed()
    handlers = ClusterEventHandlers(cast(EngineFeed, feed), cast(Any, None), lambda: False)
    pending = pod_dict("p", scheduler_name=SERVED)
    await handlers.on_pod(pending)
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    await handlers.on_pod({**pending, "status": {"conditions": [condition]}})
    handlers.on_pending_pod_gone(pending)
    await handlers.on_pod(pod_dict("bad", scheduler_name=SERVED, requests={"cpu": "lots"}))
    handlers.on_node(node_dict("n1"))
    handlers.on_node_deleted(node_dict("n1"))
    namespace = {"metadata": {"name": "team", "labels": {"tier": "gold"}}}
    handlers.on_namespace(namespace)
    handlers.on_namespace_deleted(namespace)
    pdb = {"metadata": {"name": "pdb", "namespace": "team"}, "spec": {"minAvailable": 1}}
    handlers.on_pdb(pdb)
    handlers.on_pdb_deleted(pdb)
    assert [call[0] for call in feed.calls] == [
        "on_pod",
        "on_pod_status",
        "forget_pending",
        "untrack_group_member",
        "on_unreadable_pod",
        "on_node",
        "on_node_deleted",
        "on_namespace",
        "on_namespace_deleted",
        "on_pdb",
        "on_pdb_deleted",
    ]
    assert {call[0] for call in feed.calls} <= set(FEED_CALLS)
    assert feed.calls[7][1:] == ("team", {"tier": "gold"})
    assert feed.calls[9][1:] == ("team/pdb", pdb)
    assert feed.calls[10][1:] == ("team/pdb",)


class ServesSome:
    """Serves the names in ``served``; counts the pods it is given and keeps nothing else."""

    def __init__(self) -> None:
        self.served: set[str] = set()
        self.queued = 0

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name in self.served

    def on_pod(self, pod: Any) -> None:
        self.queued += 1

    def forget_pending(self, uid: str, deleted: bool = False) -> None:
        pass


def tenant_pod(i: int) -> dict[str, Any]:
    """A pending pod of a scheduler nobody serves, 8 kB as a tenant may make it (the API
    server takes up to 1.5 MB)."""
    notes = {f"note-{k}": f"{i}-{k}-" + "x" * 2000 for k in range(4)}
    meta = {"uid": f"uid-t{i}", "annotations": notes}
    return pod_dict(f"t{i}", scheduler_name="theirs", metadata=meta)


async def test_pods_of_other_schedulers_cost_their_identity_and_are_listed_when_claimed() -> None:
    feed = ServesSome()
    listed: list[str] = []

    async def list_pending(name: str) -> AsyncGenerator[list[dict[str, Any]], None]:
        listed.append(name)
        for start in range(0, PODS, 500):  # pages, as the API server sends them
            yield [tenant_pod(i) for i in range(start, start + 500)]

    handlers = ClusterEventHandlers(
        cast(EngineFeed, feed), cast(Any, None), lambda: False, list_pending
    )
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(PODS):
            await handlers.on_pod(tenant_pod(i))  # kopf's body, gone after the handler
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(handlers.others) == PODS and feed.queued == 0
    assert held < 20 * 2**20, f"{held / 2**20:.1f} MB held for {PODS} pods of another scheduler"
    (other,) = [o for o in handlers.others.values() if o.key == "default/t7"]
    assert (other.scheduler_name, other.uid) == ("theirs", "uid-t7")

    await handlers.names_changed({"mine"}, set())
    assert listed == []  # no pod waits for that name: nothing to list
    feed.served.add("theirs")
    await handlers.names_changed({"theirs"}, set())
    assert listed == ["theirs"]
    assert feed.queued == PODS and not handlers.others and len(handlers.unbound) == PODS
