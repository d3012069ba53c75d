"""DynamicResources' events and queueing hints: upstream's TestIsSchedulableAfterClaimChange
and TestIsSchedulableAfterTargetPodUpdate (v1.37.2), over a DraStore the feed has already
updated (as the event handlers do before they move pods), and the pods they move when
scheduled end to end."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from dra_support import (
    CLAIM,
    POD_UID,
    POD_WITH_CLAIM_NAME,
    POD_WITH_CLAIM_TEMPLATE,
    POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
    RESOURCE,
    RESOURCE2,
    Harness,
    allocated,
    allocated_claim,
    by_name,
    by_template,
    claim,
    device_class,
    node,
    other_claim,
    pending_claim,
    pod_with_claims,
    resource_slice,
)

from multisched.cache import Cache, PodInfo
from multisched.cache.dra import RESOURCE_CLAIM
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_NODE_LABEL,
    UPDATE_POD_GENERATED_RESOURCE_CLAIM,
    QueueingHint,
)
from multisched.scheduler import Scheduler, default_registry

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_events_to_register_are_upstreams() -> None:
    h = Harness(POD_WITH_CLAIM_NAME)
    registered = {(e.event.resource, e.event.action): e.hint for e in h.plugin.events_to_register()}
    assert set(registered) == {
        (NODE, ADD | UPDATE_NODE_LABEL | UPDATE_NODE_ALLOCATABLE),
        (RESOURCE_CLAIM, ADD | UPDATE | DELETE),
        (POD, UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        ("DeviceClass", ADD | UPDATE),
        ("ResourceSlice", ADD | UPDATE),
    }
    hinted = {key for key, hint in registered.items() if hint is not None}
    assert hinted == {
        (RESOURCE_CLAIM, ADD | UPDATE | DELETE),
        (POD, UPDATE_POD_GENERATED_RESOURCE_CLAIM),
    }
    labels = {e.event.label for e in h.plugin.events_to_register()}
    assert "resource.k8s.io/ResourceSliceAdd,Update" in labels


def _hint(pod: dict[str, Any], claims: list[dict[str, Any]], old: Any, new: Any) -> QueueingHint:
    h = Harness(pod, claims=claims)
    if new is not None:
        # The feed stores the claim before it raises the event.
        meta = {**new["metadata"], "resourceVersion": "5"}
        h.cache.dra.upsert(RESOURCE_CLAIM, {**new, "metadata": meta})
    return h.plugin.is_schedulable_after_claim_change(h.pod, old, new)


def _with(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for path, value in changes.items():
        section, _, field = path.partition("__")
        out.setdefault(section, {})[field] = value
    return out


@pytest.mark.parametrize(
    ("pod", "claims", "old", "new", "want"),
    [
        pytest.param(POD_WITH_CLAIM_TEMPLATE, [], pending_claim(), None, SKIP, id="skip-deletes"),
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE, [], allocated_claim(), None, QUEUE,
            id="queue-on-delete-with-allocation",
        ),
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE, [], None, None, QUEUE,
            id="queue-on-delete-final-state-unknown",
        ),
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE, [], None,
            _with(allocated_claim(), metadata__ownerReferences=[{"uid": "9", "controller": True}]),
            SKIP, id="skip-wrong-claim",
        ),
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE_IN_STATUS, [allocated_claim()], None,
            _with(allocated_claim(), metadata__name=f"{CLAIM}-foo", metadata__uid="other-uid"),
            SKIP, id="skip-unrelated-claim",
        ),
        pytest.param(POD_WITH_CLAIM_NAME, [], None, pending_claim(), QUEUE, id="queue-on-add"),
        pytest.param(
            POD_WITH_CLAIM_NAME, [pending_claim()], pending_claim(),
            _with(pending_claim(), metadata__finalizers=["foo"]), SKIP,
            id="skip-adding-finalizer",
        ),
        pytest.param(
            POD_WITH_CLAIM_NAME, [pending_claim()], pending_claim(),
            _with(pending_claim(), status__allocation={}), QUEUE, id="queue-on-status-change",
        ),
        pytest.param(
            POD_WITH_CLAIM_NAME, [pending_claim(), allocated(other_claim())],
            allocated(other_claim()), other_claim(), QUEUE, id="claim-deallocate",
        ),
    ],
)  # fmt: skip
def test_is_schedulable_after_claim_change(
    pod: dict[str, Any],
    claims: list[dict[str, Any]],
    old: Any,
    new: Any,
    want: QueueingHint,
) -> None:
    assert _hint(pod, claims, old, new) == want


POD_WITH_TWO_CLAIM_TEMPLATES = pod_with_claims(by_template(RESOURCE), by_template(RESOURCE2))


@pytest.mark.parametrize(
    ("pod", "claims", "updated", "want"),
    [
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE, [pending_claim()], POD_WITH_CLAIM_TEMPLATE_IN_STATUS, QUEUE,
            id="complete",
        ),
        pytest.param(
            POD_WITH_CLAIM_TEMPLATE, [], POD_WITH_CLAIM_TEMPLATE_IN_STATUS, SKIP,
            id="missing-claim",
        ),
        pytest.param(
            POD_WITH_TWO_CLAIM_TEMPLATES, [pending_claim()],
            {**POD_WITH_TWO_CLAIM_TEMPLATES, "status": {"resourceClaimStatuses": [
                {"name": RESOURCE, "resourceClaimName": CLAIM}]}},
            SKIP, id="incomplete",
        ),
    ],
)  # fmt: skip
def test_is_schedulable_after_target_pod_update(
    pod: dict[str, Any], claims: list[dict[str, Any]], updated: dict[str, Any], want: QueueingHint
) -> None:
    h = Harness(pod, claims=claims)
    new = PodInfo.parse(updated)
    assert h.plugin.is_schedulable_after_target_pod_update(h.pod, h.pod, new) == want


def test_another_pods_update_is_not_the_target_pods() -> None:
    h = Harness(POD_WITH_CLAIM_TEMPLATE, claims=[pending_claim()])
    other = PodInfo.parse({**POD_WITH_CLAIM_TEMPLATE_IN_STATUS, "metadata": {
        **POD_WITH_CLAIM_TEMPLATE_IN_STATUS["metadata"], "uid": "another"}})  # fmt: skip
    assert h.plugin.is_schedulable_after_target_pod_update(h.pod, other, other) == SKIP


# -- through the scheduler's queue --------------------------------------------------------------


def _scheduler() -> Scheduler:
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    sched = Scheduler(config, registry, cache=Cache())
    sched.feed.on_node(node())
    return sched


def test_a_pod_waits_for_its_generated_claim_then_for_the_status_naming_it() -> None:
    sched = _scheduler()
    raw = pod_with_claims(by_template())
    raw["spec"]["schedulerName"] = "s"
    sched.feed.on_pod(PodInfo.parse(raw))
    assert sched.queue.where(POD_UID) == "unschedulable"  # PreEnqueue: not created yet
    # The controller creates the claim first: the pod's status does not name it yet.
    sched.feed.on_dra_object(RESOURCE_CLAIM, pending_claim())
    assert sched.queue.where(POD_UID) == "unschedulable"
    # ... then records it in the pod's status (an update, test_generated_claim_updates):
    # the pod goes on.
    raw["status"] = {"resourceClaimStatuses": [{"name": RESOURCE, "resourceClaimName": CLAIM}]}
    sched.feed.on_pod(PodInfo.parse(raw))
    assert sched.queue.where(POD_UID) in ("active", "backoff")


async def test_a_deallocated_claim_requeues_the_pod_that_found_no_device() -> None:
    sched = _scheduler()
    for kind, obj in (
        ("DeviceClass", device_class()),
        ("ResourceSlice", resource_slice()),
        (RESOURCE_CLAIM, allocated(other_claim())),
        (RESOURCE_CLAIM, pending_claim()),
    ):
        sched.feed.on_dra_object(kind, obj)
    raw = pod_with_claims(by_name())
    raw["spec"]["schedulerName"] = "s"
    sched.feed.on_pod(PodInfo.parse(raw))
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    outcome = await sched.schedule_one(qpi)
    assert outcome.result == "unschedulable"
    assert "cannot allocate all claims" in outcome.message
    assert sched.queue.where(POD_UID) == "unschedulable"
    # An unrelated claim: nothing for the pod.
    sched.feed.on_dra_object(RESOURCE_CLAIM, claim("x"))
    assert sched.queue.where(POD_UID) == "unschedulable"
    freed = other_claim()
    freed["metadata"]["resourceVersion"] = "2"
    sched.feed.on_dra_object(RESOURCE_CLAIM, freed)
    assert sched.queue.where(POD_UID) in ("active", "backoff")
