"""DynamicResources: the rest of upstream dynamicresources_test.go (v1.37.2) that applies to
v1.37's default gates: ``TestPlugin`` cases not in test_dynamic_resources.py (the
"podgroup-*-feature-disabled-*" ones among them: DRAWorkloadResourceClaims is off by
default, so they are v1.37's behaviour for a pod in a PodGroup), and the small
standalone tests (TestPostFilterNoOpStatusHasNoUserVisibleReason's "no claims",
TestNormalizeScore's "large-spread-lost-precision", TestGatherAllocatedState,
Test_allocationResultRequiresDRAOptionalNodeOperations, TestAllocatorSelection's "default").

Each case checks what upstream's ``verify`` checks per phase: the status, the claims as
stored (uid, resourceVersion, device names and the allocation timestamp's value ignored, as
upstream's comparison ignores them), the assumed claim and what is in flight. Upstream's
``prepare`` (a concurrent writer changing a claim before a phase) is a store update with a
new resourceVersion, as the informer would bring it; the API here refuses a write of an
older resourceVersion with a 409, as upstream's fake client's reactor does.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from dra_support import (
    CLAIM,
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
    POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
    ClaimApi,
    Harness,
    allocated,
    allocation,
    claim,
    device_class,
    node,
    node_selector,
    other_claim,
    owned_by_pod,
    pending_claim,
    reserved_for,
    resource_slice,
)

from builders import pod_dict
from multisched.cache import Cache
from multisched.cache.dra import RESOURCE_CLAIM, DraStore
from multisched.dra.structured import Features
from multisched.framework import Code, CycleState, Status
from multisched.meta import object_key
from multisched.plugins.dynamicresources import (
    STATE_KEY,
    DynamicResources,
    DynamicResourcesArgs,
    binding_conditions,
)
from multisched.plugins.dynamicresources.claims import ClaimStore
from multisched.plugins.dynamicresources.plugin import (
    _requires_optional_node_operations,
    _State,
)
from volume_support import run

Obj = dict[str, Any]
UID = f"uid-{CLAIM}"
POD_REF = {"resource": "pods", "name": POD, "uid": POD_UID}
TIMESTAMP_SET = "<set>"


class Conflict(Exception):
    status = 409


class StrictClaimApi(ClaimApi):
    """The harness's API with optimistic concurrency: an update of a resourceVersion other
    than the stored one is refused (upstream's ``createReactor``)."""

    def __init__(self, cache: Cache) -> None:
        super().__init__(cache)
        #: The kinds of the writes refused with a conflict, in order.
        self.refused: list[str] = []

    def _write(self, what: str, obj: Obj) -> Obj:
        stored = self.cache.dra.claims.get_api_obj(object_key(obj))
        sent = (obj.get("metadata") or {}).get("resourceVersion")
        if stored is not None and sent != stored["metadata"].get("resourceVersion"):
            self.writes.append((what, copy.deepcopy(obj)))
            self.refused.append(what)
            raise Conflict("ResourceVersion must match the object that gets updated")
        return super()._write(what, obj)


def strict(h: Harness) -> StrictClaimApi:
    """Puts a StrictClaimApi in the harness."""
    api = StrictClaimApi(h.cache)
    h.api = api
    h.handle.client = api
    return api


def prepare(h: Harness, change: Callable[[Obj], None], name: str = CLAIM) -> None:
    """Upstream ``prepare``: someone else updates the stored claim before the next phase."""
    stored = copy.deepcopy(h.cache.dra.claims.get_api_obj(f"{NS}/{name}"))
    assert stored is not None
    change(stored)
    stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
    h.cache.dra.upsert(RESOURCE_CLAIM, stored)


def normalized(obj: Obj | None) -> Obj | None:
    """What upstream compares: no uid or resourceVersion, no device names, a timestamp only
    as set or not."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    for key in ("uid", "resourceVersion"):
        out["metadata"].pop(key, None)
    alloc = (out.get("status") or {}).get("allocation")
    if alloc:
        if alloc.get("allocationTimestamp"):
            alloc["allocationTimestamp"] = TIMESTAMP_SET
        for result in alloc["devices"]["results"]:
            result.pop("device", None)
    return out


def stamped(obj: Obj) -> Obj:
    """``addAllocationTimestamp``."""
    out = copy.deepcopy(obj)
    out["status"]["allocation"]["allocationTimestamp"] = TIMESTAMP_SET
    return out


def assumed(h: Harness, name: str = CLAIM) -> Obj | None:
    return h.cache.dra.claims.get(f"{NS}/{name}")


def in_flight(h: Harness, uid: str = UID) -> Obj | None:
    """The in-flight allocation, device names dropped."""
    found = copy.deepcopy(h.cache.dra.get_pending_allocation(uid))
    for result in (found or {}).get("devices", {}).get("results", []):
        result.pop("device", None)
    return found


def without_devices(result: Obj) -> Obj:
    out = copy.deepcopy(result)
    for r in out["devices"]["results"]:
        r.pop("device", None)
    return out


def slices() -> list[Obj]:
    return [resource_slice()]


# -- "with-resources-finalizer-gets-removed", "…-gets-added" ------------------------------------


def with_finalizer(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["finalizers"] = [FINALIZER]
    return out


def in_use() -> Obj:
    """``inUseClaim`` after PreBind: finalizer, allocation with a timestamp, the pod."""
    return stamped(reserved_for(allocated(pending_claim())))


def test_with_resources_finalizer_gets_removed() -> None:
    """The finalizer is there in PreFilter and gone before PreBind: PreBind's status write
    conflicts, and the retry with the latest claim adds the finalizer again."""
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[with_finalizer(pending_claim())],
        classes=[device_class()],
        slices=slices(),
    )
    api = strict(h)
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert in_flight(h) == without_devices(allocation())
    prepare(h, lambda c: c["metadata"].pop("finalizers"))
    assert h.pre_bind() is None
    assert [what for what, _ in h.api.writes] == ["status", "update", "status"]
    assert api.refused == ["status"]
    assert normalized(h.stored()) == normalized(in_use())
    assert normalized(assumed(h)) == normalized(in_use())
    assert in_flight(h) is None


def test_with_resources_finalizer_gets_added() -> None:
    """No finalizer in PreFilter, added before PreBind: PreBind's finalizer update
    conflicts, and the retry finds the finalizer and writes only the status. (Upstream's
    case starts with the finalizer already set: "with-resources-has-finalizer" sets it on
    the shared ``pendingClaim`` object; the case as meant is ported.)"""
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()], slices=slices()
    )
    api = strict(h)
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert in_flight(h) == without_devices(allocation())
    prepare(h, lambda c: c["metadata"].update(finalizers=[FINALIZER]))
    assert h.pre_bind() is None
    assert [what for what, _ in h.api.writes] == ["update", "status"]
    assert api.refused == ["update"]
    stored = h.stored()
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    assert normalized(stored) == normalized(in_use())
    assert normalized(assumed(h)) == normalized(in_use())


# -- "CEL-runtime-error-for-one-of-two-nodes", "…-three-nodes" ---------------------------------


def broken_cel(obj: Obj) -> Obj:
    """``breakCELInClaim``: a selector on an attribute only the other nodes' devices have."""
    out = copy.deepcopy(obj)
    for request in out["spec"]["devices"]["requests"]:
        request["exactly"]["selectors"] = [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}
        ]
    return out


#: cel-go's advice on a missing key, part of upstream's message.
CEL_HINT = (
    "consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)


def healthy_slice(node_name: str) -> Obj:
    return resource_slice(
        node_name, {"name": "instance-1", "attributes": {"healthy": {"bool": True}}}
    )


@pytest.mark.parametrize("others", [[NODE2], [NODE2, NODE3]], ids=["two-nodes", "three-nodes"])
def test_cel_runtime_error_for_one_of_several_nodes(others: list[str]) -> None:
    """A CEL runtime error on one node is an Error, which aborts the cycle: the pod is not
    scheduled on the nodes where the expression works (upstream's Filter loop stops, so
    PreScore, whose expectation upstream also lists for three nodes, never runs)."""
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[broken_cel(pending_claim())],
        classes=[device_class()],
        slices=[resource_slice(), *(healthy_slice(n) for n in others)],
        nodes=[node(), *(node(n) for n in others)],
    )
    assert h.pre_filter() is None
    verdicts: dict[str, Status | None] = {}
    for info in h.nodes():  # in order, until an Error, as upstream's loop
        verdicts[info.name] = status = h.plugin.filter(h.state, h.pod, info)
        if status is not None and status.code == Code.ERROR:
            break
    assert list(verdicts) == [NODE]
    status = verdicts[NODE]
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: "
        f"CEL runtime error: no such key: healthy. {CEL_HINT}"
    )
    assert h.api.writes == []
    assert not h.cache.dra.claim_has_pending_allocation(UID)
    # Only the abort keeps the pod off them: each other node, asked alone, would do.
    for name in others:
        assert h.plugin.filter(h.state, h.pod, h.node(name)) is None


def test_cel_runtime_error_keeps_the_pod_pending() -> None:
    """The e2e test the cases match: scheduled end to end, the pod stays unscheduled
    although the other node's device satisfies the selector."""
    pod = pod_dict("web", requests={"cpu": "100m"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "web-gpu"}]
    placed = run(
        node(), node(NODE2), device_class(), resource_slice(), healthy_slice(NODE2),
        broken_cel(claim("web-gpu")), pod,
    )  # fmt: skip
    web = placed["web"]
    assert (web.status, web.node) == ("Error", "")
    assert web.message == (
        'running "DynamicResources" filter plugin: claim default/web-gpu: selector #0 on device '
        f"some-driver/worker/instance-1: CEL runtime error: no such key: healthy. {CEL_HINT}"
    )


# -- "add-allocation-timestamp", "add-allocation-timestamp-failure" -----------------------------


def test_add_allocation_timestamp() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[pending_claim()], classes=[device_class()], slices=slices()
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    # In flight without a timestamp: PreBind sets it.
    pending = h.cache.dra.get_pending_allocation(UID)
    assert pending is not None and "allocationTimestamp" not in pending
    assert h.pre_bind() is None
    stored = h.stored()
    assert normalized(stored) == normalized(in_use())
    stamp = stored["status"]["allocation"]["allocationTimestamp"]
    written = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    now = datetime.datetime.now(datetime.UTC)
    assert now - datetime.timedelta(minutes=1) <= written <= now
    assert normalized(assumed(h)) == normalized(in_use())


def test_add_allocation_timestamp_failure() -> None:
    """The claim is deallocated before PreBind: the write of the stale copy conflicts, and
    the latest claim has no allocation to stamp."""
    h = Harness(POD_WITH_CLAIM_NAME, claims=[allocated(pending_claim())])
    api = strict(h)
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    prepare(h, lambda c: c["status"].pop("allocation"))
    before = copy.deepcopy(h.stored())
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert (
        status.message()
        == "claim default/my-pod-my-resource got deallocated elsewhere in the meantime"
    )
    assert h.stored() == before  # nothing written
    assert api.refused == ["status"]
    assert in_flight(h) is None


# -- "bind-failure-concurrent-deallocation", "prebind-fail-with-binding-timeout" ----------------


def fabric_slice() -> Obj:
    """``fabricSlice``: a device that binds to the node once its conditions hold."""
    out = resource_slice(
        NODE,
        {
            "name": "instance-1",
            "bindsToNode": True,
            "bindingConditions": ["condition"],
            "bindingFailureConditions": ["failed"],
        },
    )
    out["spec"]["nodeSelector"] = node_selector()
    return out


def binding_allocation(stamp: str | None = None) -> Obj:
    """``allocationResultWithBindingConditions``."""
    out = allocation()
    out["devices"]["results"][0].update(
        bindingConditions=["condition"], bindingFailureConditions=["failed"]
    )
    if stamp is not None:
        out["allocationTimestamp"] = stamp
    return out


def test_bind_failure_concurrent_deallocation() -> None:
    """Upstream's case is, objects and expectations alike, "bind-claim-with-binding-
    conditions" (no deallocation is injected): written in PreBind, no controller sets the
    conditions, PreBind times out; the allocation stays in flight until Unreserve."""
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[pending_claim()],
        classes=[device_class()],
        slices=[fabric_slice()],
        args=DynamicResourcesArgs(binding_timeout="1s"),
    )
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    h.plugin.sleep = sleep
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert in_flight(h) == without_devices(binding_allocation())
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert "device binding timeout" in status.message()
    assert len(slept) == 1 and slept[0] <= 1.0  # the deadline comes before the next look
    bound = reserved_for(allocated(pending_claim(), binding_allocation(TIMESTAMP_SET)))
    assert normalized(h.stored()) == normalized(bound)
    assert normalized(assumed(h)) == normalized(bound)
    # Upstream's in-flight copy shows the timestamp too (its allocation is the pointer
    # PreBind stamps); here it is the allocation Reserve made.
    assert in_flight(h) == without_devices(binding_allocation())


def frozen_clock(
    monkeypatch: pytest.MonkeyPatch, start: datetime.datetime
) -> list[datetime.datetime]:
    """The wall clock binding timeouts are measured with, moved only by the test."""
    clock = [start]

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Any:
            return clock[0]

    fake = SimpleNamespace(datetime=Frozen, timedelta=datetime.timedelta, UTC=datetime.UTC)
    monkeypatch.setattr(binding_conditions, "datetime", fake)
    return clock


def test_prebind_fail_with_binding_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allocated with binding conditions 590 s ago, timeout 600 s: available in Filter,
    then PreBind's wait sees the claim time out."""
    start = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
    clock = frozen_clock(monkeypatch, start)
    allocated_at = (start - datetime.timedelta(seconds=600 - 10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    waiting = allocated(pending_claim(), binding_allocation(allocated_at))
    waiting["status"]["devices"] = [{"driver": DRIVER, "pool": NODE, "device": "instance-1"}]
    h = Harness(
        POD_WITH_CLAIM_NAME, claims=[waiting], args=DynamicResourcesArgs(binding_timeout="600s")
    )
    looks: list[float] = []

    async def sleep(seconds: float) -> None:
        looks.append(seconds)
        clock[0] += datetime.timedelta(seconds=seconds)

    h.plugin.sleep = sleep
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "device binding timeout: claim=my-pod-my-resource"
    # Timed out strictly after 10 s (upstream's ``Before``): at the fourth look, 15 s in.
    assert looks == [5.0, 5.0, 5.0]
    want = reserved_for(waiting)
    assert normalized(h.stored()) == normalized(want)
    assert normalized(assumed(h)) == normalized(want)


# -- "bound-claim-without-binding-conditions" ---------------------------------------------------


def test_bound_claim_without_binding_conditions() -> None:
    """No binding conditions: PreBind reserves and stamps as for any claim, no waiting."""
    h = Harness(
        POD_WITH_CLAIM_TEMPLATE_IN_STATUS, claims=[allocated(pending_claim()), other_claim()]
    )

    async def sleep(seconds: float) -> None:
        raise AssertionError("PreBind waited")

    h.plugin.sleep = sleep
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert h.pre_bind() is None
    assert [what for what, _ in h.api.writes] == ["status"]
    assert normalized(h.stored()) == normalized(in_use())
    assert normalized(assumed(h)) == normalized(in_use())
    assert normalized(h.stored("not-my-claim")) == normalized(other_claim())


# -- "claim-with-prioritized-list", "multiple-requests-prioritized-list-scoring" ----------------


def prioritized(*requests: list[tuple[str, int]], name: str = CLAIM) -> Obj:
    """``RequestWithPrioritizedList`` per request (``req-1``, ``req-2``…), subrequests
    (name, count) of ``CLASS``."""
    obj = owned_by_pod(claim(name))
    obj["spec"]["devices"]["requests"] = [
        {
            "name": f"req-{i}",
            "firstAvailable": [
                {"name": n, "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": k}
                for n, k in subrequests
            ],
        }
        for i, subrequests in enumerate(requests, 1)
    ]
    return obj


def results_of(obj: Obj | None) -> list[tuple[str, str, str]]:
    """(request, driver, pool) of a claim's allocation, or of an allocation."""
    assert obj is not None
    alloc = (obj.get("status") or {}).get("allocation") or obj
    return [(r["request"], r["driver"], r["pool"]) for r in alloc["devices"]["results"]]


def test_claim_with_prioritized_list() -> None:
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[prioritized([("subreq-1", 1)])],
        classes=[device_class()],
        slices=slices(),
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert in_flight(h) == without_devices(allocation(request="req-1/subreq-1"))
    assert h.pre_bind() is None
    want = stamped(
        reserved_for(
            allocated(prioritized([("subreq-1", 1)]), allocation(request="req-1/subreq-1"))
        )
    )
    assert normalized(h.stored()) == normalized(want)
    assert normalized(assumed(h)) == normalized(want)


def test_multiple_requests_prioritized_list_scoring() -> None:
    """Two requests of (2 devices, else 1): 4 devices give both their first choice (8+8),
    3 one first and one second (8+7), 2 both second (7+7)."""
    subrequests = [("subreq-1", 2), ("subreq-2", 1)]
    devices = [f"instance-{i}" for i in range(1, 5)]
    h = Harness(
        POD_WITH_CLAIM_NAME,
        claims=[prioritized(subrequests, subrequests)],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, *devices),
            resource_slice(NODE2, *devices[:3]),
            resource_slice(NODE3, *devices[:2]),
        ],
        nodes=[node(), node(NODE2), node(NODE3)],
    )
    assert h.through_filter() == {NODE: None, NODE2: None, NODE3: None}
    scores = [h.plugin.score(h.state, h.pod, n) for n in h.nodes()]
    assert scores == [16, 15, 14]
    assert h.plugin.normalize_score(h.state, h.pod, h.nodes(), scores) is None
    assert scores == [100, 93, 87]
    assert h.reserve(NODE) is None
    want = [("req-1/subreq-1", DRIVER, NODE)] * 2 + [("req-2/subreq-1", DRIVER, NODE)] * 2
    assert results_of(h.cache.dra.get_pending_allocation(UID)) == want
    assert h.pre_bind() is None
    stored = h.stored()
    assert results_of(stored) == want
    assert len({r["device"] for r in stored["status"]["allocation"]["devices"]["results"]}) == 4
    assert stored["status"]["reservedFor"] == [POD_REF]
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    assert normalized(assumed(h)) == normalized(stored)


# -- "podgroup-*-feature-disabled-*": DRAWorkloadResourceClaims off, as by default ----------------

POD_GROUP = "my-podgroup"
POD_GROUP_UID = "5678"
POD_GROUP_REF = {
    "apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": POD_GROUP,
    "uid": POD_GROUP_UID,
}  # fmt: skip


def grouped_pod() -> Obj:
    """``groupedPodWithClaimName``: in a PodGroup, the claim by name."""
    pod = copy.deepcopy(POD_WITH_CLAIM_NAME)
    pod["spec"]["schedulingGroup"] = {"podGroupName": POD_GROUP}
    return pod


def pod_group_claim() -> Obj:
    """``pendingPodGroupClaim``: owned by the PodGroup."""
    obj = claim()
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": POD_GROUP,
        "uid": POD_GROUP_UID, "controller": True,
    }]  # fmt: skip
    return obj


def test_podgroup_claim_reference_feature_disabled_reserves_for_pod() -> None:
    h = Harness(grouped_pod(), claims=[allocated(pod_group_claim()), other_claim()])
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None and h.pre_bind() is None
    want = stamped(reserved_for(allocated(pod_group_claim())))
    assert normalized(h.stored()) == normalized(want)
    assert normalized(assumed(h)) == normalized(want)


def test_podgroup_with_resources_feature_disabled_reserves_for_pod() -> None:
    h = Harness(
        grouped_pod(), claims=[pod_group_claim()], classes=[device_class()], slices=slices()
    )
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None
    assert in_flight(h) == without_devices(allocation())
    assert h.pre_bind() is None
    want = stamped(reserved_for(allocated(pod_group_claim())))
    assert normalized(h.stored()) == normalized(want)
    assert normalized(assumed(h)) == normalized(want)
    assert in_flight(h) is None


def test_postfilter_skip_deallocate_reserved_podgroup_feature_disabled() -> None:
    """A claim the PodGroup holds is not the pod's to deallocate."""
    nowhere = {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}
    selector = {"nodeSelectorTerms": [{"matchExpressions": [nowhere]}]}
    wrong = allocated(pod_group_claim(), {"devices": {"results": []}, "nodeSelector": selector})
    wrong["status"]["reservedFor"] = [POD_GROUP_REF]
    h = Harness(grouped_pod(), claims=[wrong], classes=[device_class()])
    status = h.through_filter()[NODE]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "resourceclaim not available on the node"
    post = h.post_filter()
    assert post is not None and post.code == Code.UNSCHEDULABLE and post.reasons == ()
    assert h.api.writes == []


# -- TestPostFilterNoOpStatusHasNoUserVisibleReason ("no claims") --------------------------------


def test_post_filter_with_no_claims_in_the_state_has_no_reason() -> None:
    h = Harness(POD_WITH_CLAIM_NAME)
    h.state.write(STATE_KEY, _State(ClaimStore([])))
    status = h.post_filter()
    assert status is not None and status.code == Code.UNSCHEDULABLE and status.reasons == ()


# -- TestNormalizeScore ("large-spread-lost-precision") -------------------------------------------


def test_normalize_score_large_spread_lost_precision() -> None:
    scores = [2**31 - 1, 2**31 - 2, 1, 0]
    assert DynamicResources(None, None).normalize_score(CycleState(), None, [], scores) is None  # type: ignore[arg-type]
    assert scores == [100, 99, 0, 0]


# -- Test_allocationResultRequiresDRAOptionalNodeOperations ---------------------------------------


def _results(*results: Obj) -> Obj:
    return {"devices": {"results": list(results)}}


ONE = {"driver": DRIVER, "pool": NODE, "device": "instance-1", "request": "req-1"}
SKIPPING = {**ONE, "device": "instance-2", "request": "req-2", "skipNodeOperations": ["All"]}


@pytest.mark.parametrize(
    ("alloc", "want"),
    [
        pytest.param(None, False, id="nil"),
        pytest.param({"devices": {"results": None}}, False, id="empty-results"),
        pytest.param(_results(ONE), False, id="no-skip-node-operations"),
        pytest.param(_results({**ONE, "skipNodeOperations": ["All"]}), True,
                     id="with-skip-node-operations"),
        pytest.param(_results({**ONE, "skipNodeOperations": []}), False,
                     id="empty-skip-node-operations"),
        pytest.param(_results(ONE, SKIPPING), True, id="mixed-skip-node-operations"),
    ],
)  # fmt: skip
def test_allocation_result_requires_optional_node_operations(alloc: Obj | None, want: bool) -> None:
    assert _requires_optional_node_operations(alloc) is want


# -- TestAllocatorSelection ("default") -----------------------------------------------------------


def test_allocator_selection_default_is_v137s_gates() -> None:
    """``AllocatorFeatures`` of v1.37.2's default gates (upstream picks the incubating
    allocator for them): GA and on-by-default beta gates on, the alpha ones off. The other
    cases set gates away from their defaults."""
    want = Features(
        admin_access=True,  # DRAAdminAccess, GA
        prioritized_list=True,  # DRAPrioritizedList, GA
        partitionable_devices=True,  # DRAPartitionableDevices, beta
        device_taints=True,  # DRADeviceTaints, GA
        device_binding_and_status=True,  # DRADeviceBindingConditions (beta) and …DeviceStatus
        consumable_capacity=True,  # DRAConsumableCapacity, beta
        fractional_capacity_range=True,  # DRAFractionalCapacityRange, beta
    )
    assert DynamicResources(None, None).features == want
    assert Features.v1_37_defaults() == want


# -- TestGatherAllocatedState ---------------------------------------------------------------------

SHARED = "shared-instance"
CAPACITY = "my-cap"


def shared_claim(name: str, share: str, capacity: str | None = None) -> Obj:
    result: Obj = {
        "driver": DRIVER, "pool": NODE, "device": SHARED, "request": "req-1", "shareID": share,
    }  # fmt: skip
    if capacity is not None:
        result["consumedCapacity"] = {CAPACITY: capacity}
    return allocated(
        owned_by_pod(claim(name)),
        {"devices": {"results": [result]}, "nodeSelector": node_selector()},
    )


PLAIN = allocated(pending_claim())
WITH_SHARE = shared_claim("with-share", "share-123")
WITH_CAPACITY = shared_claim("with-capacity", "share-123", "1")
WITH_CAPACITY_2 = shared_claim("with-capacity-2", "share-456", "1")


@pytest.mark.parametrize(
    ("consumable", "claims", "in_flight_claims", "dedicated", "shared", "consumed"),
    [
        pytest.param(True, [], [], 0, 0, None, id="no-claims"),
        pytest.param(True, [PLAIN], [], 1, 0, None, id="single-allocated-claim"),
        pytest.param(True, [WITH_SHARE], [], 0, 1, None,
                     id="single-allocated-claim-with-shared-device"),
        pytest.param(True, [WITH_CAPACITY], [], 0, 1, 1,
                     id="single-allocated-claim-with-capacity"),
        pytest.param(False, [WITH_CAPACITY], [], 1, 0, None,
                     id="disabled-single-allocated-claim-with-capacity"),
        pytest.param(True, [PLAIN, WITH_CAPACITY], [], 1, 1, 1, id="mixed-allocated-claim"),
        pytest.param(True, [PLAIN, WITH_CAPACITY], [WITH_CAPACITY_2], 1, 2, 2,
                     id="add-inflight-allocated-claim-with-capacity"),
        pytest.param(False, [PLAIN, WITH_CAPACITY], [WITH_CAPACITY_2], 2, 0, None,
                     id="disabled-inflight-allocated-claim-with-capacity"),
    ],
)  # fmt: skip
def test_gather_allocated_state(
    consumable: bool,
    claims: list[Obj],
    in_flight_claims: list[Obj],
    dedicated: int,
    shared: int,
    consumed: int | None,
) -> None:
    """``consumable``: DRAConsumableCapacity (on in v1.37; off is what a caller asks
    ``allocated_devices`` for). Upstream's claims share one name, which two stored claims
    cannot: each has its own here."""
    store: DraStore = Cache().dra
    for obj in claims:
        store.upsert(RESOURCE_CLAIM, copy.deepcopy(obj))
    for obj in in_flight_claims:
        store.signal_claim_pending_allocation("claim-2-uid", copy.deepcopy(obj))
    devices, shares, capacity = store.allocated_devices(consumable)
    assert (len(devices), len(shares)) == (dedicated, shared)
    if consumed is None:
        assert capacity == {}
    else:
        assert capacity == {(DRIVER, NODE, SHARED): {CAPACITY: Decimal(consumed)}}
