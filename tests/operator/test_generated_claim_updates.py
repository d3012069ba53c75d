"""A pending pod's status naming the claims generated for it is a scheduling change (upstream
``PodSchedulingPropertiesChange``, UpdatePodGeneratedResourceClaim): DynamicResources' pods
wait for it, so the operator hands it to the engine as an update, not as a status-only
change (which keeps the pod where it waits)."""

from __future__ import annotations

from typing import Any, cast

from builders import pod_dict
from multisched.operator.event_handlers import ClusterEventHandlers
from multisched.scheduler.feed import EngineFeed

SERVED = "mine"


class RecordingFeed:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name == SERVED

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append(name)

        return record


async def test_generated_claims_in_the_status_are_an_update() -> None:
    feed = RecordingFeed()
    handlers = ClusterEventHandlers(cast(EngineFeed, feed), cast(Any, None), lambda: False)
    pending = pod_dict("p", scheduler_name=SERVED)
    pending["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    await handlers.on_pod(pending)
    statuses = [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2p"}]
    named = {**pending, "status": {"resourceClaimStatuses": statuses}}
    await handlers.on_pod(named)
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    await handlers.on_pod({**named, "status": {**named["status"], "conditions": [condition]}})
    assert feed.calls == ["on_pod", "on_pod", "on_pod_status"]
