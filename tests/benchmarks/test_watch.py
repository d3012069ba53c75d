"""bench-e2e's watch of a run's pods: a pod counts as bound at its first event with a node, and
as reported unschedulable at its first event with PodScheduled=False; a wait ends at a count."""

from __future__ import annotations

import asyncio
from typing import Any

from bench.e2e.watch import BindingWatch


def _pod(name: str, node: str = "", scheduled: str | None = None) -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": scheduled}] if scheduled else []
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": conditions},
    }


async def test_reports_and_bindings_are_timed_at_first_sight_and_end_a_wait() -> None:
    watch = BindingWatch(None, "bench", "run=x")  # type: ignore[arg-type]
    watch._see("ADDED", _pod("a"), 1.0)
    watch._see("MODIFIED", _pod("a", scheduled="False"), 2.0)
    watch._see("MODIFIED", _pod("a", scheduled="False"), 3.0)  # a later report: same pod
    watch._see("ADDED", _pod("b", scheduled="True"), 4.0)
    assert watch.unschedulable == {"a": 2.0}
    waiting = asyncio.create_task(watch.wait_for(watch.unschedulable, 2, 5))
    await asyncio.sleep(0)
    assert not waiting.done()
    watch._see("MODIFIED", _pod("c", scheduled="False"), 5.0)
    assert await waiting
    # Bound after a report: counted as bound, its report kept.
    watch._see("MODIFIED", _pod("a", node="n1", scheduled="True"), 6.0)
    assert watch.bound == {"a": 6.0}
    assert watch.unschedulable == {"a": 2.0, "c": 5.0}
    assert not await watch.wait_bound(2, 0.01)
