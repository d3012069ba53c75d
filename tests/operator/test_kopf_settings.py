"""What ``handlers.configure`` sets in kopf: no diff-base and no progress kept on objects
(our handlers are event handlers), unscheduled pods selected server-side, and workers let go
of soon after an object's last event."""

from __future__ import annotations

import kopf

from multisched.operator.depth import NoDiffBase, NoProgress
from multisched.operator.handlers import WORKER_IDLE_SECONDS, configure
from multisched.operator.intake import UNASSIGNED_PODS


def test_configure_keeps_nothing_on_objects_and_selects_unscheduled_pods() -> None:
    settings = kopf.OperatorSettings()
    configure(settings)
    assert isinstance(settings.persistence.diffbase_storage, NoDiffBase)
    assert isinstance(settings.persistence.progress_storage, NoProgress)
    assert settings.watching.field_selectors["", "v1", "pods"] == UNASSIGNED_PODS
    assert settings.peering.standalone
    assert settings.queueing.idle_timeout == WORKER_IDLE_SECONDS
    # kopf's own default keeps each worker 5 s; 0 would never let a worker take its event.
    assert 0 < WORKER_IDLE_SECONDS < kopf.OperatorSettings().queueing.idle_timeout


def test_no_progress_stores_nothing_and_copies_nothing() -> None:
    storage = NoProgress()
    body = kopf.Body({"metadata": {"name": "p", "annotations": {"a": "b"}}})
    patch = kopf.Patch()
    key = kopf.HandlerId("pending_pod_event")
    storage.store(key=key, record={"success": True}, body=body, patch=patch)
    assert storage.fetch(key=key, body=body) is None
    storage.purge(key=key, body=body, patch=patch)
    storage.touch(body=body, patch=patch, value="x")
    assert not patch
    essence = kopf.BodyEssence()
    assert storage.clear(essence=essence) is essence
