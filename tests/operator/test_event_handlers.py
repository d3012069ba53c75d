"""The operator's event handlers reach the engine through ``EngineFeed`` alone, and the
Scheduler implements every call of it."""

from __future__ import annotations

import inspect
from typing import Any, cast

from builders import node_dict, pod_dict
from multisched.operator.event_handlers import ClusterEventHandlers
from multisched.scheduler import Scheduler
from multisched.scheduler.feed import EngineFeed

SERVED = "mine"
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
        assert inspect.signature(getattr(Scheduler, name)) == expected, name


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
