"""DynamicResources, with the cases of upstream's dynamicresources_test.go (``TestPlugin``'s
table, v1.37.2): each drives the plugin through its extension points over a real Cache
(DraStore, the structured allocator) and an in-memory API for the claim writes. Its args
are checked as upstream's TestValidateDynamicResourcesArgs with v1.37's default gates."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from dra_support import (
    CLAIM,
    CLAIM2,
    CLASS,
    DRIVER,
    FINALIZER,
    NODE,
    NODE2,
    NODE3,
    NS,
    POD,
    POD_UID,
    POD_WITH_CLAIM_NAME,
    POD_WITH_CLAIM_TEMPLATE,
    POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
    RESOURCE2,
    Harness,
    allocated,
    allocated_claim,
    allocation,
    by_name,
    claim,
    device_class,
    in_use_claim,
    node,
    other_claim,
    owned_by_pod,
    pending_claim,
    pod_with_claims,
    resource_slice,
)

from builders import pod_dict
from multisched.cache import PodInfo
from multisched.cache.dra import RESOURCE_CLAIM
from multisched.config import parse_config_object, resolve
from multisched.framework import Code, CycleState
from multisched.live.explain import explain
from multisched.plugins.dynamicresources import (
    DEALLOCATED,
    ERR_CANNOT_ALLOCATE,
    ERR_NOT_AVAILABLE,
    DynamicResources,
    DynamicResourcesArgs,
)
from multisched.scheduler import default_registry
from multisched.scheduler.simulate import ClusterInput
from volume_support import PROFILE, run

UID = f"uid-{CLAIM}"


def _results(obj: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    alloc = (obj.get("status") or {}).get("allocation") or {}
    return [
        (r["request"], r["driver"], r["pool"], r["device"])
        for r in (alloc.get("devices") or {}).get("results") or ()
    ]


def _reserved(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("status") or {}).get("reservedFor") or ())


POD_REF = {"resource": "pods", "name": POD, "uid": POD_UID}
INSTANCE_1 = [("req-1", DRIVER, NODE, "instance-1")]


# -- "empty", "DRA-disabled" ------------------------------------------------------------------


def test_empty_a_pod_without_claims_is_skipped_everywhere() -> None:
    h = Harness(pod_dict("foo"))
    assert h.plugin.pre_enqueue(h.pod) is None
    result, status = h.plugin.pre_filter(h.state, h.pod, h.nodes())
    assert result is None and status is not None and status.code == Code.SKIP
    # Score would give every node 0: skipped too, with the same totals.
    assert "DynamicResources" in h.state.skip_score_plugins
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.reasons == ()
    assert h.reserve() is None
    pre_flight = h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE)
    assert pre_flight is not None and pre_flight.code == Code.SKIP
    assert h.pre_bind() is None
    h.unreserve()
    assert h.api.writes == []


def test_post_filter_of_a_pod_whose_pre_filter_never_ran_frees_nothing() -> None:
    """TestPostFilterNoOpStatusHasNoUserVisibleReason; and where upstream errors "not
    found" (another PreFilter rejected the pod first), nothing is freed either (README)."""
    h = Harness(POD_WITH_CLAIM_NAME, claims=[in_use_claim()])
    status = h.post_filter()
    assert status is not None and status.code == Code.UNSCHEDULABLE and status.reasons == ()


# -- "claim-reference", "claim-template", "reserved-okay", "good-topology" ---------------------


@pytest.mark.parametrize("pod", [POD_WITH_CLAIM_NAME, POD_WITH_CLAIM_TEMPLATE_IN_STATUS])
def test_an_allocated_claim_is_reserved_for_the_pod_in_pre_bind(pod: dict[str, Any]) -> None:
    h = Harness(pod, claims=[allocated_claim(), other_claim()])
    assert h.plugin.pre_enqueue(h.pod) is None
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert not h.cache.dra.claim_has_pending_allocation(UID)  # nothing to allocate
    assert h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE) is None
    assert h.pre_bind() is None
    # No finalizer write: the claim has one; the status gets the reservation and the
    # allocation timestamp (DRADeviceBindingConditions).
    assert [what for what, _ in h.api.writes] == ["status"]
    stored = h.stored()
    assert _reserved(stored) == [POD_REF]
    assert stored["status"]["allocation"]["allocationTimestamp"]
    assert _results(stored) == INSTANCE_1
    # The stored claim is assumed: the next cycle reads it.
    assert h.cache.dra.claims.get(f"{NS}/{CLAIM}") is stored


def test_reserved_okay_a_claim_reserved_for_the_pod_is_not_written_again() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[in_use_claim()])
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert h.pre_bind() is None
    assert h.api.writes == []


def test_good_topology_an_allocated_claim_passes_the_nodes_its_selector_matches() -> None:
    selector = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}
                ]
            }
        ]
    }
    good = allocated(pending_claim(), {"devices": {"results": []}, "nodeSelector": selector})
    h = Harness(POD_WITH_CLAIM_NAME, claims=[good], nodes=[node(), node(NODE2)])
    filtered = h.through_filter()
    assert filtered[NODE] is None
    other = filtered[NODE2]
    assert other is not None and other.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert other.message() == ERR_NOT_AVAILABLE
    assert h.reserve() is None and h.pre_bind() is None
    assert _reserved(h.stored()) == [POD_REF]


# -- "missing-claim", "deleted-claim", "wrong-claim" (PreEnqueue) ------------------------------


def test_missing_claim_a_template_claim_not_created_yet() -> None:
    h = Harness(POD_WITH_CLAIM_TEMPLATE, claims=[allocated_claim(), other_claim()])
    status = h.plugin.pre_enqueue(h.pod)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'pod "default/my-pod": ResourceClaim not created yet'
    # PreFilter says the same for a pod that got past PreEnqueue meanwhile.
    _, again = h.plugin.pre_filter(h.state, h.pod, h.nodes())
    assert again is not None and again.message() == status.message()


def test_a_named_claim_that_does_not_exist() -> None:
    h = Harness(POD_WITH_CLAIM_NAME)
    status = h.plugin.pre_enqueue(h.pod)
    assert status is not None
    assert status.message() == 'could not find ResourceClaim "default/my-pod-my-resource"'


def test_deleted_claim() -> None:
    deleting = allocated_claim()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h = Harness(POD_WITH_CLAIM_TEMPLATE_IN_STATUS, claims=[deleting])
    status = h.plugin.pre_enqueue(h.pod)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'resourceclaim "my-pod-my-resource" is being deleted'


def test_wrong_claim_a_generated_claim_another_pod_owns() -> None:
    foreign = allocated_claim()
    foreign["metadata"]["ownerReferences"][0]["uid"] += "123"
    h = Harness(POD_WITH_CLAIM_TEMPLATE_IN_STATUS, claims=[foreign])
    status = h.plugin.pre_enqueue(h.pod)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod "
        "(Pod is not owner)"
    )


def test_a_template_entry_without_a_generated_claim_is_skipped() -> None:
    """``resourceClaimName`` unset in the status: the controller made no claim (valid)."""
    pod = copy.deepcopy(POD_WITH_CLAIM_TEMPLATE)
    pod["status"] = {"resourceClaimStatuses": [{"name": "my-resource"}]}
    h = Harness(pod)
    assert h.plugin.pre_enqueue(h.pod) is None
    _, status = h.plugin.pre_filter(h.state, h.pod, h.nodes())
    assert status is not None and status.code == Code.SKIP


# -- "no-resources", "exhausted-resources-*", "other-resources-in-flight-claim" ----------------


def test_no_resources_no_device_for_the_claim() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()])
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ERR_CANNOT_ALLOCATE
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.reasons == ()


def test_exhausted_resources_in_informer_cache() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim(), allocated(other_claim())],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_CANNOT_ALLOCATE


def test_exhausted_resources_in_flight_claim() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim(), other_claim()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    other = allocated(other_claim())
    h.cache.dra.signal_claim_pending_allocation("uid-not-my-claim", other)
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_CANNOT_ALLOCATE
    assert h.cache.dra.claim_has_pending_allocation("uid-not-my-claim")


def test_other_resources_in_flight_claim_leaves_this_device_free() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim(), other_claim()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    other = allocated(other_claim(), allocation("instance-1-other"))
    h.cache.dra.signal_claim_pending_allocation("uid-not-my-claim", other)
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert h.cache.dra.claim_has_pending_allocation(UID)
    assert h.pre_bind() is None
    assert not h.cache.dra.claim_has_pending_allocation(UID)
    assert h.cache.dra.claim_has_pending_allocation("uid-not-my-claim")


# -- "with-resources", "with-resources-has-finalizer", "add-allocation-timestamp" --------------


def test_with_resources_allocated_in_reserve_written_in_pre_bind() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    # Reserve: in flight, with the finalizer, not written yet.
    assert h.cache.dra.claim_has_pending_allocation(UID)
    pending = h.cache.dra.get_pending_allocation(UID)
    assert pending is not None and pending["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"]
    assert h.api.writes == []
    assert (DRIVER, NODE, "instance-1") in h.cache.dra.allocated_devices()[0]
    assert h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE) is None
    assert h.pre_bind() is None
    # The finalizer in a plain update first, then allocation and reservation.
    kinds = [what for what, _ in h.api.writes]
    assert kinds == ["update", "status"]
    assert FINALIZER in h.api.writes[0][1]["metadata"]["finalizers"]
    stored = h.stored()
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    assert _results(stored) == INSTANCE_1
    assert stored["status"]["allocation"]["allocationTimestamp"]
    assert _reserved(stored) == [POD_REF]
    # Written: no longer in flight, the devices taken through the claim itself.
    assert not h.cache.dra.claim_has_pending_allocation(UID)
    assert (DRIVER, NODE, "instance-1") in h.cache.dra.allocated_devices()[0]


def test_with_resources_has_finalizer_only_the_status_is_written() -> None:
    with_finalizer = pending_claim()
    with_finalizer["metadata"]["finalizers"] = [FINALIZER]
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[with_finalizer],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert [what for what, _ in h.api.writes] == ["status"]
    assert _reserved(h.stored()) == [POD_REF]


def test_the_next_pod_finds_the_device_taken_between_reserve_and_the_write() -> None:
    """Why Reserve puts the allocation in flight: a second pod's cycle in between."""
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim(), owned_by_pod(claim("second"), "uid-second")],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    second = PodInfo.parse(
        pod_dict("second", metadata={"uid": "uid-second"},
                 resourceClaims=[{"name": "r", "resourceClaimName": "second"}])
    )  # fmt: skip
    state = CycleState()
    _, status = h.plugin.pre_filter(state, second, h.nodes())
    assert status is None
    verdict = h.plugin.filter(state, second, h.node())
    assert verdict is not None and verdict.message() == ERR_CANNOT_ALLOCATE


# -- "skip-bind", "bind-failure", "bind-failure-preserves-inflight-until-unreserve" ------------


def test_skip_bind_unreserve_before_pre_bind_gives_the_devices_back() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert h.cache.dra.claim_has_pending_allocation(UID)
    h.unreserve()
    assert not h.cache.dra.claim_has_pending_allocation(UID)
    assert h.cache.dra.allocated_devices()[0] == set()
    assert h.api.writes == []


def test_bind_failure_unreserve_takes_the_pod_out_of_reserved_for() -> None:
    good = allocated(pending_claim())
    h = Harness(POD_WITH_CLAIM_NAME, claims=[good])
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert _reserved(h.stored()) == [POD_REF]
    # Binding failed after PreBind: Unreserve undoes the reservation.
    h.unreserve()
    stored = h.stored()
    assert _reserved(stored) == []
    assert _results(stored) == INSTANCE_1  # the allocation stays


def test_bind_failure_preserves_in_flight_until_unreserve() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    h.api.fail = RuntimeError("claim bind error")
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "add finalizer to claim default/my-pod-my-resource: claim bind error"
    assert h.cache.dra.claim_has_pending_allocation(UID)
    h.unreserve()
    assert not h.cache.dra.claim_has_pending_allocation(UID)
    assert h.cache.dra.allocated_devices()[0] == set()


def test_a_failed_status_write_says_allocation_and_reservation() -> None:
    with_finalizer = pending_claim()
    with_finalizer["metadata"]["finalizers"] = [FINALIZER]
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[with_finalizer], classes=[device_class()],
        slices=[resource_slice()],
    )  # fmt: skip
    h.through_filter()
    h.reserve()
    h.api.fail = RuntimeError("refused")
    status = h.pre_bind()
    assert status is not None
    assert status.message() == (
        "add allocation and reservation to claim default/my-pod-my-resource: refused"
    )


def test_a_conflict_is_retried_with_the_stored_claim() -> None:
    class Conflict(Exception):
        status = 409

    h = Harness(POD_WITH_CLAIM_NAME, claims=[allocated(pending_claim())])
    h.through_filter()
    h.reserve()
    real = h.api._write
    calls = []

    def once_conflicting(what: str, obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(what)
        if len(calls) == 1:
            raise Conflict("the object has been modified")
        return real(what, obj)

    h.api._write = once_conflicting  # type: ignore[method-assign]
    assert h.pre_bind() is None
    assert calls == ["status", "status"]
    assert _reserved(h.stored()) == [POD_REF]


def test_a_claim_allocated_elsewhere_meanwhile_fails_pre_bind() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()],
        slices=[resource_slice()],
    )  # fmt: skip
    h.through_filter()
    h.reserve()
    # The plugin's own copy is stale; a conflict makes it read the stored one.
    stored = h.cache.dra.claims.get_api_obj(f"{NS}/{CLAIM}")
    assert stored is not None
    h.cache.dra.upsert(
        RESOURCE_CLAIM,
        {**allocated(stored, allocation("elsewhere")), "metadata": {**stored["metadata"],
         "resourceVersion": "7", "finalizers": [FINALIZER]}},
    )  # fmt: skip

    class Conflict(Exception):
        status = 409

    h.api.fail = Conflict("the object has been modified")
    status = h.pre_bind()
    h.api.fail = None
    assert status is not None and status.code == Code.ERROR
    assert (
        status.message()
        == "claim default/my-pod-my-resource got allocated elsewhere in the meantime"
    )


# -- "missing-class", "claim-with-request-with-unknown-device-class", prioritized lists -------


def test_missing_class() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[pending_claim()])
    status = h.pre_filter()
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == f"request req-1: device class {CLASS} does not exist"
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.reasons == ()


def test_claim_with_request_with_unknown_device_class() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[owned_by_pod(claim(CLAIM, "does-not-exist"))])
    status = h.pre_filter()
    assert status is not None
    assert status.message() == "request req-1: device class does-not-exist does not exist"


def _prioritized(*subrequests: tuple[str, str, int], name: str = CLAIM) -> dict[str, Any]:
    obj = owned_by_pod(claim(name))
    obj["spec"]["devices"]["requests"] = [
        {
            "name": "req-1",
            "firstAvailable": [
                {"name": n, "deviceClassName": c, "allocationMode": "ExactCount", "count": k}
                for n, c, k in subrequests
            ],
        }
    ]
    return obj


def test_claim_with_prioritized_list_unknown_device_class() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[_prioritized(("subreq-1", "does-not-exist", 1))])
    status = h.pre_filter()
    assert status is not None
    assert status.message() == "request req-1/subreq-1: device class does-not-exist does not exist"


def test_a_request_of_no_known_type() -> None:
    obj = pending_claim()
    obj["spec"]["devices"]["requests"] = [{"name": "req-1"}]
    status = Harness(POD_WITH_CLAIM_NAME, claims=[obj], classes=[device_class()]).pre_filter()
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "resource claim default/my-pod-my-resource, request req-1: unknown request type"
    )


def test_claim_with_prioritized_list_and_its_score() -> None:
    """ "claim-with-prioritized-list", "single-claim-prioritized-list-scoring": the node
    that can give the first subrequest scores 8, the one that gives the second 7."""
    healthy = {"name": "instance-1", "attributes": {"healthy": {"bool": True}}}
    obj = _prioritized(("subreq-1", CLASS, 1), ("subreq-2", CLASS, 1))
    obj["spec"]["devices"]["requests"][0]["firstAvailable"][0]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
    ]
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[obj],
        classes=[device_class()],
        slices=[resource_slice(NODE, healthy), resource_slice(NODE2, {"name": "instance-1",
                "attributes": {"healthy": {"bool": False}}})],
        nodes=[node(), node(NODE2)],
    )  # fmt: skip
    assert h.through_filter() == {NODE: None, NODE2: None}
    assert "DynamicResources" not in h.state.skip_score_plugins
    scores = [h.plugin.score(h.state, h.pod, n) for n in h.nodes()]
    assert scores == [8, 7]
    h.plugin.normalize_score(h.state, h.pod, h.nodes(), scores)
    assert scores == [100, 87]
    assert h.reserve() is None and h.pre_bind() is None
    assert _results(h.stored()) == [("req-1/subreq-1", DRIVER, NODE, "instance-1")]


# -- "wrong-topology" (PostFilter), binding conditions -----------------------------------------


def test_wrong_topology_post_filter_deallocates_the_claim() -> None:
    wrong = allocated(
        pending_claim(),
        {
            "devices": {"results": []},
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "no-such-label", "operator": "In",
                                           "values": ["no-such-value"]}]}
                ]
            },
        },
    )  # fmt: skip
    h = Harness(POD_WITH_CLAIM_NAME, claims=[wrong])
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE
    assert post.message() == DEALLOCATED
    stored = h.stored()
    assert "allocation" not in stored["status"] and "reservedFor" not in stored["status"]


def test_a_claim_another_pod_uses_is_not_deallocated() -> None:
    wrong = allocated(pending_claim(), {"devices": {"results": []}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["elsewhere"]}]}]}})  # fmt: skip
    wrong["status"]["reservedFor"] = [{"resource": "pods", "name": "other", "uid": "other"}]
    h = Harness(POD_WITH_CLAIM_NAME, claims=[wrong])
    h.through_filter()
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.reasons == ()
    assert h.api.writes == []


def _with_binding_conditions(conditions: list[dict[str, Any]] | None, stamp: str) -> dict[str, Any]:
    result = {
        "driver": DRIVER, "pool": NODE, "device": "instance-1", "request": "req-1",
        "bindingConditions": ["condition"], "bindingFailureConditions": ["failed"],
    }  # fmt: skip
    obj = allocated(
        pending_claim(),
        {"devices": {"results": [result]}, "nodeSelector": allocation()["nodeSelector"],
         "allocationTimestamp": stamp},
    )  # fmt: skip
    if conditions is not None:
        obj["status"]["devices"] = [
            {"driver": DRIVER, "pool": NODE, "device": "instance-1", "conditions": conditions}
        ]
    return obj


NOW = "2099-01-01T00:00:00Z"  # not timed out whatever the clock says


def test_bound_claim_with_succeeded_binding_conditions() -> None:
    bound = _with_binding_conditions(
        [{"type": "condition", "status": "True"}, {"type": "failed", "status": "False"}], NOW
    )
    h = Harness(POD_WITH_CLAIM_NAME, claims=[bound])
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert _reserved(h.stored()) == [POD_REF]


def test_bound_claim_with_failed_binding_is_deallocated() -> None:
    failed = _with_binding_conditions(
        [{"type": "condition", "status": "False"}, {"type": "failed", "status": "True"}], NOW
    )
    h = Harness(POD_WITH_CLAIM_NAME, claims=[failed], slices=[resource_slice()])
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.message() == DEALLOCATED
    stored = h.stored()
    for gone in ("allocation", "reservedFor", "devices"):
        assert gone not in stored["status"]


def test_bound_claim_with_timed_out_binding_is_deallocated() -> None:
    timed_out = _with_binding_conditions([], "2020-01-01T00:00:00Z")
    h = Harness(POD_WITH_CLAIM_NAME, claims=[timed_out])
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.message() == DEALLOCATED


def test_bind_claim_with_binding_conditions_times_out_in_pre_bind() -> None:
    fabric = resource_slice(NODE, {"name": "instance-1", "bindsToNode": True,
                                   "bindingConditions": ["condition"],
                                   "bindingFailureConditions": ["failed"]})  # fmt: skip
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()], slices=[fabric],
        args=DynamicResourcesArgs(binding_timeout="1s"),
    )  # fmt: skip
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    h.plugin.sleep = sleep
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "device binding timeout: context deadline exceeded"
    assert slept and slept[0] <= 1.0
    # Written before the wait; the allocation stays in flight until Unreserve.
    stored = h.stored()
    assert _reserved(stored) == [POD_REF]
    assert stored["status"]["allocation"]["devices"]["results"][0]["bindingConditions"] == [
        "condition"
    ]


def test_pre_bind_waits_for_binding_conditions_and_fails_on_a_failure_condition() -> None:
    waiting = _with_binding_conditions([{"type": "condition", "status": "False"}], NOW)
    h = Harness(POD_WITH_CLAIM_NAME, claims=[waiting], slices=[resource_slice()])
    assert h.through_filter() == {NODE: None}
    looks = []

    async def sleep(seconds: float) -> None:
        looks.append(seconds)
        stored = h.stored()
        failed = {"type": "failed", "status": "True", "reason": "Broken", "message": "gone"}
        device = {"driver": DRIVER, "pool": NODE, "device": "instance-1"}
        device["conditions"] = [{"type": "condition", "status": "False"}, failed]
        meta = {**stored["metadata"], "resourceVersion": "99"}
        status = {**stored["status"], "devices": [device]}
        h.cache.dra.upsert(RESOURCE_CLAIM, {**stored, "metadata": meta, "status": status})

    h.plugin.sleep = sleep
    assert h.reserve() is None
    status = h.pre_bind()
    assert looks == [5.0]
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        'device binding failed: claim=my-pod-my-resource, reason=Broken, message="gone"'
    )


# -- filterTimeout ("timeout", "timeout_zero") --------------------------------------------------


def test_timeout_zero_turns_the_deadline_off() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()],
        slices=[resource_slice()], args=DynamicResourcesArgs(filter_timeout="0s"),
    )  # fmt: skip
    assert h.plugin.filter_timeout == 0
    assert h.through_filter() == {NODE: None}


def test_timeout_a_passed_deadline_is_an_error_naming_the_node() -> None:
    many = [f"instance-{i}" for i in range(1, 5)]
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[owned_by_pod(claim(CLAIM, *[CLASS] * 5))],
        classes=[device_class()],
        slices=[resource_slice(NODE, *many)],
    )
    h.plugin.filter_timeout = 1e-9
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.ERROR
    assert status.message() == f"node {NODE}: timed out trying to allocate devices"


# -- DynamicResourcesArgs --------------------------------------------------------------------


def test_default_args_are_v137s() -> None:
    args = DynamicResourcesArgs()
    assert (args.filter_timeout, args.binding_timeout) == ("10s", "10m0s")
    assert DynamicResourcesArgs.model_validate({"filterTimeout": None}) == args
    assert args.model_dump(by_alias=True) == {"filterTimeout": "10s", "bindingTimeout": "10m0s"}
    plugin = DynamicResources(args, None)
    assert (plugin.filter_timeout, plugin.binding_timeout) == (10.0, 600.0)


@pytest.mark.parametrize(
    "args",
    [
        {"filterTimeout": "10s", "bindingTimeout": "10m0s"},  # valid args (default)
        {},
        {"bindingTimeout": "30s"},  # valid BindingTimeout
        {"filterTimeout": "0s"},  # zero disables the timeout
        {"bindingTimeout": "1s"},
    ],
)
def test_valid_args(args: dict[str, Any]) -> None:
    DynamicResourcesArgs.model_validate(args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"filterTimeout": "-1s"}, "filterTimeout: Invalid value: -1s: must be zero or positive"),
        ({"bindingTimeout": "0s"}, "bindingTimeout: Invalid value: 0s: must be at least 1 second"),
        (
            {"bindingTimeout": "-1s"},
            "bindingTimeout: Invalid value: -1s: must be at least 1 second",
        ),
        ({"bindingTimeout": "999ms"}, "must be at least 1 second"),
        ({"filterTimeout": "ten seconds"}, "invalid duration 'ten seconds'"),
        ({"filterTimeout": 10}, "Input should be a valid string"),
        ({"timeout": "10s"}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        DynamicResourcesArgs.model_validate(args)
    assert message in str(info.value)


# -- scheduled end to end (simulate, default profile) ------------------------------------------


def _claiming(name: str) -> dict[str, Any]:
    raw = pod_dict(name, requests={"cpu": "100m"})
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
    return raw


def test_the_default_profile_allocates_and_leaves_the_pod_without_a_device_pending() -> None:
    one_device = resource_slice(NODE2)
    placed = run(
        node(),
        node(NODE2),
        device_class(),
        one_device,
        claim("first-gpu"),
        claim("second-gpu"),
        _claiming("first"),
        _claiming("second"),
        pod_dict("web", requests={"cpu": "100m"}),
    )
    assert placed["web"].status == "Scheduled"
    assert (placed["first"].status, placed["first"].node) == ("Scheduled", NODE2)
    second = placed["second"]
    assert (second.status, second.node) == ("Unschedulable", "")
    assert second.message.startswith(
        f"0/2 nodes are available: 2 {ERR_CANNOT_ALLOCATE}. preemption: "
    ), second.message


# -- admin access, taints, CEL errors, optional node operations --------------------------------


def _admin_access(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for request in out["spec"]["devices"]["requests"]:
        request["exactly"]["adminAccess"] = True
    alloc = (out.get("status") or {}).get("allocation")
    for result in (alloc or {}).get("devices", {}).get("results", []):
        result["adminAccess"] = True
    return out


def test_request_admin_access_gets_a_device_another_claim_holds() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[_admin_access(pending_claim()), allocated(other_claim())],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    (result,) = h.stored()["status"]["allocation"]["devices"]["results"]
    assert result["device"] == "instance-1" and result["adminAccess"] is True


def test_structured_ignore_allocated_admin_access() -> None:
    """The allocated claim uses admin access: a second claim may use the same device."""
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim(), _admin_access(allocated(other_claim()))],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert _results(h.stored()) == INSTANCE_1


def test_tainted_device_is_not_allocated() -> None:
    tainted = resource_slice(
        NODE,
        {
            "name": "instance-1",
            "taints": [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}],
        },
    )
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()], slices=[tainted]
    )
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ERR_CANNOT_ALLOCATE


@pytest.mark.parametrize(
    "device",
    [
        "instance-1",
        {"name": "instance-1", "attributes": {"model": {"string": "a"}}},
    ],
)
def test_claim_parameters_cel_runtime_error_is_an_error(device: str | dict[str, Any]) -> None:
    broken = pending_claim()
    broken["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
    ]
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[broken],
        classes=[device_class()],
        slices=[resource_slice(NODE, device)],
    )
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.ERROR
    assert status.message().startswith(
        "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: "
        "CEL runtime error: no such key: healthy"
    ), status.message()


def _skip_node_operations() -> dict[str, Any]:
    alloc = allocation()
    alloc["devices"]["results"][0]["skipNodeOperations"] = ["All"]
    return allocated(pending_claim(), alloc)


def test_allocated_skip_node_operations_missing_feature() -> None:
    h = Harness(POD_WITH_CLAIM_NAME, claims=[_skip_node_operations()])
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.message() == DEALLOCATED


def test_allocated_skip_node_operations_with_feature() -> None:
    declaring = node()
    declaring.setdefault("status", {})["declaredFeatures"] = ["DRAOptionalNodeOperations"]
    h = Harness(POD_WITH_CLAIM_NAME, claims=[_skip_node_operations()], nodes=[declaring])
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert _reserved(h.stored()) == [POD_REF]


# -- more binding conditions: mixed, several claims ---------------------------------------------


def test_bound_claim_with_mixed_binding_conditions_timed_out() -> None:
    mixed = _with_binding_conditions(
        [{"type": "condition1", "status": "True"}, {"type": "condition2", "status": "False"}],
        "2020-01-01T00:00:00Z",
    )
    h = Harness(POD_WITH_CLAIM_NAME, claims=[mixed])
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.message() == DEALLOCATED
    assert "devices" not in h.stored()["status"]


def _second(obj: dict[str, Any]) -> dict[str, Any]:
    """The same claim as ``CLAIM2`` on device instance-2 of another driver."""
    out = copy.deepcopy(obj)
    out["metadata"].update(name=CLAIM2, uid=f"uid-{CLAIM2}")
    for result in out["status"]["allocation"]["devices"]["results"]:
        result.update(driver="some-driver-2", device="instance-2", request="req-2")
    for device in out["status"].get("devices", []):
        device.update(driver="some-driver-2", device="instance-2")
    return out


POD_WITH_TWO_CLAIM_NAMES = pod_with_claims(by_name(), by_name(RESOURCE2, CLAIM2))
GOOD = [{"type": "condition", "status": "True"}, {"type": "failed", "status": "False"}]
FAILED = [{"type": "condition", "status": "False"}, {"type": "failed", "status": "True"}]


def test_multi_claims_binding_conditions_all_success() -> None:
    claims = [_with_binding_conditions(GOOD, NOW), _second(_with_binding_conditions(GOOD, NOW))]
    h = Harness(POD_WITH_TWO_CLAIM_NAMES, claims=claims)
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    assert _reserved(h.stored()) == [POD_REF] and _reserved(h.stored(CLAIM2)) == [POD_REF]


def test_multi_claims_binding_conditions_one_fail_deallocates_that_one() -> None:
    claims = [_with_binding_conditions(GOOD, NOW), _second(_with_binding_conditions(FAILED, NOW))]
    h = Harness(POD_WITH_TWO_CLAIM_NAMES, claims=claims)
    status = h.through_filter()[NODE]
    assert status is not None and status.message() == ERR_NOT_AVAILABLE
    post = h.post_filter()
    assert post is not None and post.message() == DEALLOCATED
    assert "allocation" not in h.stored(CLAIM2)["status"]
    assert "allocation" in h.stored()["status"]


def test_simulate_and_explain_say_why_pre_enqueue_holds_a_pod() -> None:
    placed = run(node(), _claiming("lonely"))
    lonely = placed["lonely"]
    assert (lonely.status, lonely.node) == ("Pending", "")
    assert lonely.message == (
        'could not find ResourceClaim "default/lonely-gpu" (PreEnqueue of DynamicResources)'
    )
    cluster = ClusterInput.from_documents(
        [("doc 0", node()), ("doc 1", _claiming("lonely"))], trusted=True
    )
    config = resolve(parse_config_object(PROFILE), default_registry(load_entry_points=False))
    explained = asyncio.run(
        explain(cluster, config, default_registry(load_entry_points=False), NS, "lonely")
    )
    (placement,) = explained.result.placements
    assert (placement.status, placement.message) == ("Pending", lonely.message)


def test_explain_plays_the_claim_writes_out_in_memory() -> None:
    docs = [node(), device_class(), resource_slice(), claim("web-gpu"), _claiming("web")]
    cluster = ClusterInput.from_documents(
        [(f"doc {i}", d) for i, d in enumerate(docs)], trusted=True
    )
    config = resolve(parse_config_object(PROFILE), default_registry(load_entry_points=False))
    explained = asyncio.run(
        explain(cluster, config, default_registry(load_entry_points=False), NS, "web")
    )
    (placement,) = explained.result.placements
    assert (placement.status, placement.node) == ("Scheduled", NODE)
    assert [d["device"] for d in placement.devices] == ["instance-1"]


def test_multiple_claims_prioritized_list_scoring() -> None:
    devices = [f"instance-{i}" for i in range(1, 5)]
    second = _prioritized(
        *[(f"subreq-{i}", CLASS, 5 - i) for i in range(1, 5)], name=CLAIM2
    )  # 4, 3, 2 or 1 device(s)
    h = Harness(
        POD_WITH_TWO_CLAIM_NAMES,
        claims=[_prioritized(("subreq-1", CLASS, 1)), second],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, *devices),
            resource_slice(NODE2, *devices[:2]),
            resource_slice(NODE3, *devices[:1]),
        ],
        nodes=[node(), node(NODE2), node(NODE3)],
    )
    filtered = h.through_filter()
    assert filtered[NODE] is None and filtered[NODE2] is None
    third = filtered[NODE3]
    assert third is not None and third.message() == ERR_CANNOT_ALLOCATE
    fitting = [h.node(), h.node(NODE2)]
    scores = [h.plugin.score(h.state, h.pod, n) for n in fitting]
    assert scores == [15, 13]
    h.plugin.normalize_score(h.state, h.pod, fitting, scores)
    assert scores == [100, 86]
    assert h.reserve() is None and h.pre_bind() is None
    assert [r[0] for r in _results(h.stored(CLAIM2))] == ["req-1/subreq-2"] * 3


def test_class_parameters_cel_runtime_error_is_an_error() -> None:
    broken = device_class()
    broken["spec"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
    ]
    with_model = {"name": "instance-1", "attributes": {"model": {"string": "a"}}}
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim()],
        classes=[broken],
        slices=[resource_slice(NODE, with_model)],
    )
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.ERROR
    assert status.message().startswith(
        f"class {CLASS}: selector #0 on device some-driver/worker/instance-1: "
        "CEL runtime error: no such key: healthy"
    ), status.message()


def test_a_shared_claim_gains_the_pod_beside_the_one_using_it() -> None:
    """``CanBeReserved`` is always true: a claim in use by another pod is shared, the pod
    goes where its devices are and is added to ``reservedFor``."""
    shared = allocated(claim())
    shared["status"]["reservedFor"] = [{"resource": "pods", "name": "other", "uid": "other"}]
    h = Harness(POD_WITH_CLAIM_NAME, claims=[shared], nodes=[node(), node(NODE2)])
    filtered = h.through_filter()
    assert filtered[NODE] is None
    other_node = filtered[NODE2]
    assert other_node is not None and other_node.message() == ERR_NOT_AVAILABLE
    assert h.reserve() is None and h.pre_bind() is None
    assert [r["uid"] for r in _reserved(h.stored())] == ["other", POD_UID]
    h.unreserve()
    assert [r["uid"] for r in _reserved(h.stored())] == ["other"]
