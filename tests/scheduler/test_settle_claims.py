"""The resourceclaim controller's pass over a pod (upstream
``pkg/controller/resourceclaim/controller_test.go`` TestSyncHandler, the pod cases)."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.scheduler.settle import settle
from multisched.scheduler.settle_claims import (
    ANN_POD_CLAIM_NAME,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    ClaimController,
    generate_name,
)

SPEC = {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class"}}]}}


def template(name: str = "my-template", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": RESOURCE_CLAIM_TEMPLATE,
        "metadata": {"name": name, "namespace": "my-namespace"},
        "spec": {"metadata": meta, "spec": SPEC},
    }


def pod(*claims: dict[str, Any], statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "my-pod", "namespace": "my-namespace", "uid": "uidpod1"},
        "spec": {"resourceClaims": list(claims), "containers": [{"name": "c", "image": "x"}]},
    }
    if statuses is not None:
        out["status"] = {"resourceClaimStatuses": statuses}
    return out


FROM_TEMPLATE = {"name": "acme-resource", "resourceClaimTemplateName": "my-template"}


def owned_claim(name: str, claim_name: str = "acme-resource", uid: str = "uidpod1") -> Any:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": RESOURCE_CLAIM,
        "metadata": {
            "name": name,
            "namespace": "my-namespace",
            "annotations": {ANN_POD_CLAIM_NAME: claim_name},
            "ownerReferences": [{"kind": "Pod", "name": "my-pod", "uid": uid, "controller": True}],
        },
        "spec": SPEC,
    }


def test_create() -> None:
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, template())])
    out = controller.sync_pod(pod(FROM_TEMPLATE))
    (claim,) = controller.created
    meta = claim["metadata"]
    assert meta["generateName"] == "my-pod-acme-resource-"
    assert meta["name"].startswith("my-pod-acme-resource-") and len(meta["name"]) == 26
    assert meta["annotations"] == {ANN_POD_CLAIM_NAME: "acme-resource"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": "uidpod1", "controller": True}
    ]
    assert claim["spec"] == SPEC
    assert out["status"]["resourceClaimStatuses"] == [
        {"name": "acme-resource", "resourceClaimName": meta["name"]}
    ]


def test_create_copies_the_templates_labels_and_annotations_without_changing_it() -> None:
    tmpl = template(labels={"team": "ml"}, annotations={"note": "x"})
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, tmpl)])
    controller.sync_pod(pod(FROM_TEMPLATE))
    meta = controller.created[0]["metadata"]
    assert meta["labels"] == {"team": "ml"}
    assert meta["annotations"] == {"note": "x", ANN_POD_CLAIM_NAME: "acme-resource"}
    assert tmpl["spec"]["metadata"]["annotations"] == {"note": "x"}  # TestCreateClaimDoesNot…


def test_nop_when_the_status_records_the_claim() -> None:
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, template())])
    recorded = pod(
        FROM_TEMPLATE, statuses=[{"name": "acme-resource", "resourceClaimName": "my-pod-claim"}]
    )
    assert controller.sync_pod(recorded) is recorded
    assert controller.created == []


def test_missing_template_leaves_the_pod_as_it_is() -> None:
    controller = ClaimController([])
    raw = pod(FROM_TEMPLATE)
    assert controller.sync_pod(raw) is raw and controller.created == []


@pytest.mark.parametrize(
    ("name", "uid", "reused"),
    [
        pytest.param("my-pod-acme-resource-abcde", "uidpod1", True, id="find-existing-claim"),
        pytest.param("my-pod-acme-resource-abcde", "other", False, id="wrong-claim-owner"),
    ],
)
def test_an_owned_claim_is_found_before_creating_one(name: str, uid: str, reused: bool) -> None:
    controller = ClaimController(
        [(RESOURCE_CLAIM_TEMPLATE, template()), (RESOURCE_CLAIM, owned_claim(name, uid=uid))]
    )
    out = controller.sync_pod(pod(FROM_TEMPLATE))
    recorded = out["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert (recorded == name) is reused
    assert len(controller.created) == (0 if reused else 1)


def test_no_volumes_and_direct_claims_need_nothing() -> None:
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, template())])
    for raw in (pod(), pod({"name": "c", "resourceClaimName": "shared"})):
        assert controller.sync_pod(raw) is raw


def test_pod_deleted() -> None:
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, template())])
    raw = pod(FROM_TEMPLATE)
    raw["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    assert controller.sync_pod(raw) is raw


def test_create_with_other_claim_merges_the_statuses_sorted_by_name() -> None:
    controller = ClaimController([(RESOURCE_CLAIM_TEMPLATE, template())])
    other = {"name": "a-other", "resourceClaimTemplateName": "my-template"}
    out = controller.sync_pod(
        pod(
            FROM_TEMPLATE,
            other,
            statuses=[{"name": "a-other", "resourceClaimName": "recorded"}],
        )
    )
    assert [s["name"] for s in out["status"]["resourceClaimStatuses"]] == [
        "a-other",
        "acme-resource",
    ]
    assert out["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == "recorded"
    assert len(controller.created) == 1


def test_long_names_are_cut_in_proportion() -> None:
    base = generate_name("p" * 60, "c" * 30)
    assert base == "p" * (60 * 57 // 92) + "-" + "c" * (30 * 57 // 92)


def test_settling_reports_the_created_claims_and_the_pods_status() -> None:
    labelled = ("file.yaml document 3", pod(FROM_TEMPLATE))
    settled = settle([], [labelled], False, [(RESOURCE_CLAIM_TEMPLATE, template())])
    kinds = [(c.kind, c.object.split(" ")[0]) for c in settled.changes]
    assert kinds == [("claim-created", "ResourceClaim"), ("claim-status", "Pod")]
    assert [k for k, _ in settled.claims] == [RESOURCE_CLAIM_TEMPLATE, RESOURCE_CLAIM]
    # A cluster's own pod (trusted) whose claim is recorded is left alone.
    done = settle([], [("live", settled.pods[0][1])], True, settled.claims)
    assert done.changes == []
