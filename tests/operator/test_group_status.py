"""PodGroup and ElasticQuota status as scheduler-plugins' controller keeps them; the cases
are its own (``pkg/controllers/podgroup_controller_test.go``, v0.28.9)."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.cache import ELASTIC_QUOTA, POD_GROUP, POD_GROUP_LABEL, Cache
from multisched.operator.group_status import (
    STATUS_PAGE_SIZE,
    GroupStatusController,
    elastic_quota_used,
    pod_group_status,
)
from multisched.transport import ApiError


def pod(name: str, phase: str, group: str = "pg", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {POD_GROUP_LABEL: group},
            "ownerReferences": [{"name": "job-1"}],
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def settle(group: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """Reconcile until nothing changes, as the controller does on its own status events."""
    for _ in range(10):
        status = pod_group_status(group, pods)
        if status == (group.get("status") or {}):
            return status
        group = {**group, "status": status}
    raise AssertionError("the status never settled")


CASES = [
    # (upstream case, minMember, pod names, pod phase, previous phase, next pod phase, want)
    ("Group running", 2, 2, "Running", "Scheduling", None, "Running"),
    ("Group running, more than min member", 2, 4, "Running", "Scheduling", None, "Running"),
    ("Group failed", 2, 2, "Failed", "Scheduling", None, "Failed"),
    ("Group finished", 2, 2, "Succeeded", "Scheduling", None, "Finished"),
    ("Group status convert from pending to prescheduling", 2, 2, "Pending", "Pending", None,
     "Scheduling"),
    ("Group status convert from scheduling to finished", 2, 2, "Pending", "Scheduling",
     "Succeeded", "Finished"),
    ("Group status keeps pending", 3, 2, "Running", "Pending", None, "Pending"),
    ("Group status convert from pending to finished", 2, 2, "Pending", "Pending", "Succeeded",
     "Finished"),
    ("Group min member more than Pod number", 3, 2, "Pending", "Pending", None, "Pending"),
    ("Group status convert from running to pending", 4, 2, "Pending", "Running", None,
     "Pending"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("min_member", "count", "phase", "previous", "next_phase", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_pod_group_phase_as_upstream(
    min_member: int, count: int, phase: str, previous: str, next_phase: str | None, want: str
) -> None:
    group = {"metadata": {"name": "pg"}, "spec": {"minMember": min_member}}
    group["status"] = {"phase": previous}
    pods = [pod(f"pod{i}", phase) for i in range(count)]
    group["status"] = settle(group, pods)
    if next_phase is not None:
        group["status"] = settle(group, [pod(f"pod{i}", next_phase) for i in range(count)])
    assert group["status"]["phase"] == want


def test_counts_occupied_by_and_schedule_start_time() -> None:
    group: dict[str, Any] = {"metadata": {"name": "pg"}, "spec": {"minMember": 3}}
    pods = [pod("a", "Running"), pod("b", "Running"), pod("c", "Failed"), pod("d", "Pending")]
    status = settle(group, pods)
    assert (status["running"], status["succeeded"], status["failed"]) == (2, 0, 1)
    assert status["phase"] == "Failed"  # a failure, and all that failed or ran reach minMember
    assert status["occupiedBy"] == "ns/job-1"
    assert status["scheduleStartTime"].endswith("Z")
    new = pod_group_status({"metadata": {}, "spec": {"minMember": 1}}, [])
    assert new == {"phase": "Pending"}  # a new group: no start time yet


def test_elastic_quota_used_counts_running_pods_over_min_and_max_names() -> None:
    quota = {"spec": {"min": {"cpu": "2"}, "max": {"cpu": "4"}}}
    pods = [
        pod(
            "runs",
            "Running",
            containers=[
                {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "250m"}}},
            ],
            initContainers=[{"resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}],
        ),
        pod("waits", "Pending", containers=[{"resources": {"requests": {"cpu": "3"}}}]),
    ]
    # Containers summed (750m), the larger init container (1) as the floor; memory is
    # named by neither min nor max, and counted all the same (upstream's quota.Add).
    assert elastic_quota_used(quota, pods) == {"cpu": "1", "memory": str(2**30)}
    assert elastic_quota_used(quota, []) == {"cpu": "0"}


class ScriptedApi:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.calls: list[tuple[str, str, Any]] = []
        self.guards: list[Any] = []
        self.refuse: int | None = None

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        self.calls.append((method, path, body if body is not None else kw.get("query")))
        if method == "PATCH":
            self.guards.append(kw.get("guard"))
        if method == "PATCH" and self.refuse:
            raise ApiError(self.refuse, "scripted")
        if method == "GET":  # paged by limit/continue, as the API server pages a list
            query = dict(kw.get("query") or ())
            start, limit = int(query.get("continue") or 0), int(query["limit"])
            more = start + limit < len(self.pods)
            meta = {"continue": str(start + limit)} if more else {}
            return {"metadata": meta, "items": self.pods[start : start + limit]}
        return {}


async def test_the_controller_patches_what_changed_guarded_by_the_lease() -> None:
    cache = Cache()
    group = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 2}}
    quota = {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"max": {"cpu": "4"}}}
    cache.groups.upsert(POD_GROUP, group)
    cache.groups.upsert(ELASTIC_QUOTA, quota)
    api = ScriptedApi([pod("a", "Running", containers=[{"resources": {"requests": {"cpu": "1"}}}])])
    ctl = GroupStatusController(api, cache.groups, lambda: True)  # type: ignore[arg-type]
    ctl.pod_changed(pod("a", "Running"))
    ctl.pod_changed({"metadata": {"name": "x", "namespace": "elsewhere", "labels": {}}})
    await ctl.reconcile()
    group_path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/pg/status"
    quota_path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/elasticquotas/q/status"
    patches = {path: body for method, path, body in api.calls if method == "PATCH"}
    assert patches == {
        group_path: {"status": {"phase": "Pending"}},
        quota_path: {"status": {"used": {"cpu": "1"}}},
    }
    # Each status write is sent only while this replica provably leads.
    assert api.guards and all(g is ctl.may_write for g in api.guards)
    lists = [q for method, _, q in api.calls if method == "GET"]
    paged = ("limit", str(STATUS_PAGE_SIZE))
    assert [("labelSelector", f"{POD_GROUP_LABEL}=pg"), paged] in lists
    assert [("fieldSelector", "status.phase=Running"), paged] in lists
    # Nothing marked, nothing sent; a status already in place is not patched again.
    api.calls.clear()
    cache.groups.upsert(POD_GROUP, {**group, "status": {"phase": "Pending"}})
    ctl.object_changed(POD_GROUP, group)
    await ctl.reconcile()
    assert [c for c in api.calls if c[0] == "PATCH"] == []
    # A refused patch is tried again (marked anew), and said once.
    api.calls.clear()
    api.refuse = 500
    ctl.object_changed(ELASTIC_QUOTA, quota)
    await ctl.reconcile()
    assert ctl._dirty_namespaces == {"ns"}


async def test_the_controller_sums_the_pods_a_page_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("multisched.operator.group_status.STATUS_PAGE_SIZE", 2)
    cache = Cache()
    group = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 4}}
    quota = {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"max": {"cpu": "9"}}}
    cache.groups.upsert(POD_GROUP, {**group, "status": {"phase": "Scheduling"}})
    cache.groups.upsert(ELASTIC_QUOTA, quota)
    one_cpu = [{"resources": {"requests": {"cpu": "1"}}}]
    phases = ["Running", "Running", "Succeeded", "Failed", "Running"]
    api = ScriptedApi([pod(f"p{i}", phase, containers=one_cpu) for i, phase in enumerate(phases)])
    ctl = GroupStatusController(api, cache.groups, lambda: True)  # type: ignore[arg-type]
    ctl.mark_all()
    await ctl.reconcile()
    gets = [q for method, _, q in api.calls if method == "GET"]
    assert [dict(q).get("continue") for q in gets] == [None, "2", "4"] * 2
    patches = [body for method, _, body in api.calls if method == "PATCH"]
    assert patches[0]["status"]["phase"] == "Failed"  # a member failed, the rest ran
    assert (patches[0]["status"]["running"], patches[0]["status"]["succeeded"]) == (3, 1)
    assert patches[1] == {"status": {"used": {"cpu": "3"}}}  # the Running pods of all pages
