"""The PV controller's syncs, as simulate plays them before scheduling: the cases of
upstream's ``pkg/controller/volume/persistentvolume/binder_test.go`` (named by their
numbers there), each as the controller leaves the objects."""

from __future__ import annotations

from typing import Any

from multisched.scheduler.settle_volumes import PVController

Obj = dict[str, Any]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
UID = "uid1-1"


def volume(
    name: str,
    size: str = "1Gi",
    claim: str = "",
    uid: str = "",
    phase: str = "Pending",
    klass: str = "",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    pv: Obj = {
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": klass,
            **spec,
        },
        "status": {"phase": phase},
    }
    if claim:
        pv["spec"]["claimRef"] = {"namespace": "default", "name": claim, "uid": uid}
    return pv


def claim(
    name: str,
    size: str = "1Gi",
    volume_name: str = "",
    uid: str = UID,
    phase: str = "Pending",
    klass: str = "",
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    out: Obj = {
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid,
            "annotations": dict(annotations or {}),
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": klass,
            **spec,
        },
        "status": {"phase": phase},
    }
    if volume_name:
        out["spec"]["volumeName"] = volume_name
    return out


def storage_class(name: str, mode: str = "Immediate", provisioner: str = "example.com/p") -> Obj:
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def settled(*objects: Obj) -> PVController:
    controller = PVController((o["kind"], o) for o in objects)
    controller.settle()
    return controller


def bound_pair(c: PVController, claim_name: str, pv_name: str) -> bool:
    pvc = c.claims[f"default/{claim_name}"]
    pv = c.volumes[pv_name]
    ref = pv["spec"].get("claimRef") or {}
    return (
        pvc["spec"].get("volumeName") == pv_name
        and BIND_COMPLETED in pvc["metadata"]["annotations"]
        and pvc["status"]["phase"] == "Bound"
        and pv["status"]["phase"] == "Bound"
        and ref.get("name") == claim_name
        and ref.get("uid") == pvc["metadata"]["uid"]
    )


def notes(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def test_1_1_binds_to_a_matching_unbound_volume() -> None:
    c = settled(volume("volume1-1", phase="Available"), claim("claim1-1"))
    assert bound_pair(c, "claim1-1", "volume1-1")
    # The controller chose both: its marks on both.
    assert notes(c.volumes["volume1-1"])[BOUND_BY_CONTROLLER] == "yes"
    assert notes(c.claims["default/claim1-1"])[BOUND_BY_CONTROLLER] == "yes"
    status = c.claims["default/claim1-1"]["status"]
    assert status["capacity"] == {"storage": "1Gi"} and status["accessModes"] == ["ReadWriteOnce"]


def test_1_2_no_matching_volume_leaves_the_claim_pending() -> None:
    c = settled(volume("volume1-2", size="1Mi"), claim("claim1-2", size="1Gi"))
    assert c.claims["default/claim1-2"]["status"]["phase"] == "Pending"
    assert "volumeName" not in c.claims["default/claim1-2"]["spec"]
    assert c.volumes["volume1-2"]["status"]["phase"] == "Available"


def test_1_3_a_bound_status_without_a_volume_is_reset_to_pending() -> None:
    c = settled(claim("claim1-3", phase="Bound"))
    assert c.claims["default/claim1-3"]["status"] == {"phase": "Pending"}


def test_1_4_binds_to_the_smallest_matching_volume() -> None:
    c = settled(
        volume("volume1-4-big", size="10Gi"),
        volume("volume1-4", size="1Gi"),
        claim("claim1-4"),
    )
    assert bound_pair(c, "claim1-4", "volume1-4")
    assert "claimRef" not in c.volumes["volume1-4-big"]["spec"]


def test_1_5_binds_only_to_the_volume_prebound_by_name() -> None:
    c = settled(
        volume("volume1-5-small", size="1Gi"),
        volume("volume1-5", size="10Gi", claim="claim1-5"),
        claim("claim1-5"),
    )
    assert bound_pair(c, "claim1-5", "volume1-5")
    # Pre-bound by the user: the PV gets no bound-by-controller, the claim does.
    assert BOUND_BY_CONTROLLER not in notes(c.volumes["volume1-5"])
    assert notes(c.claims["default/claim1-5"])[BOUND_BY_CONTROLLER] == "yes"


def test_1_7_a_volume_prebound_to_another_claim_is_not_taken() -> None:
    c = settled(volume("volume1-7", claim="claim1-7-other"), claim("claim1-7"))
    assert c.claims["default/claim1-7"]["status"]["phase"] == "Pending"
    assert c.volumes["volume1-7"]["spec"]["claimRef"]["name"] == "claim1-7-other"


def test_1_8_completes_a_binding_after_a_crash() -> None:
    c = settled(volume("volume1-8", claim="claim1-8", uid=UID, phase="Bound"), claim("claim1-8"))
    assert bound_pair(c, "claim1-8", "volume1-8")


def test_1_11_and_1_12_the_claims_selector_picks_the_volume() -> None:
    labeled = volume("volume1-11", phase="Available")
    labeled["metadata"]["labels"] = {"foo": "true"}
    selector = {"matchLabels": {"foo": "true"}}
    c = settled(labeled, claim("claim1-11", selector=selector))
    assert bound_pair(c, "claim1-11", "volume1-11")
    c = settled(volume("volume1-12"), claim("claim1-12", selector=selector))
    assert c.claims["default/claim1-12"]["status"]["phase"] == "Pending"


def test_1_13_delayed_binding_waits_for_the_scheduler() -> None:
    c = settled(
        storage_class("wait", "WaitForFirstConsumer"),
        volume("volume1-13", klass="wait"),
        claim("claim1-13", klass="wait"),
    )
    assert c.claims["default/claim1-13"]["status"]["phase"] == "Pending"
    assert "claimRef" not in c.volumes["volume1-13"]["spec"]
    assert not c.provisioned  # no selected node yet: nothing to provision


def test_1_14_delayed_binding_still_binds_a_prebound_volume() -> None:
    c = settled(
        storage_class("wait", "WaitForFirstConsumer"),
        volume("volume1-14", klass="wait", claim="claim1-14"),
        claim("claim1-14", klass="wait"),
    )
    assert bound_pair(c, "claim1-14", "volume1-14")


def test_1_15_and_1_16_a_prebound_claim_binds_only_its_volume_when_it_fits() -> None:
    c = settled(volume("volume1-15"), claim("claim1-15", volume_name="volume1-15"))
    assert bound_pair(c, "claim1-15", "volume1-15")
    # Named by the user: the claim gets no bound-by-controller; the PV, bound by the
    # controller, does.
    assert BOUND_BY_CONTROLLER not in notes(c.claims["default/claim1-15"])
    assert notes(c.volumes["volume1-15"])[BOUND_BY_CONTROLLER] == "yes"
    c = settled(
        volume("volume1-16", modes=("ReadOnlyMany",)),
        claim("claim1-16", volume_name="volume1-16"),
    )
    assert c.claims["default/claim1-16"]["status"]["phase"] == "Pending"
    assert "claimRef" not in c.volumes["volume1-16"]["spec"]


def test_1_17_a_volume_not_available_is_skipped_unless_prebound() -> None:
    released = volume("volume1-17", phase="Released")
    controller = PVController(
        [("PersistentVolume", released), ("PersistentVolumeClaim", claim("c"))]
    )
    # Matching sees the phase before syncVolume makes the volume Available again.
    assert controller.find_best_match_for_claim(claim("c"), False) is None


def test_2_1_a_claim_prebound_to_a_missing_volume_stays_pending() -> None:
    c = settled(claim("claim2-1", volume_name="volume2-1"))
    assert c.claims["default/claim2-1"]["status"]["phase"] == "Pending"


def test_2_6_a_claim_prebound_to_a_volume_bound_elsewhere_stays_pending() -> None:
    c = settled(
        volume("volume2-6", claim="claim2-6-other", uid="uid2-6-other"),
        claim("claim2-6-other", uid="uid2-6-other", volume_name="volume2-6"),
        claim("claim2-6", volume_name="volume2-6"),
    )
    assert bound_pair(c, "claim2-6-other", "volume2-6")
    assert c.claims["default/claim2-6"]["status"]["phase"] == "Pending"


def test_2_9_and_2_10_a_prebound_claim_does_not_take_a_volume_that_does_not_satisfy_it() -> None:
    c = settled(volume("volume2-9", size="1Mi"), claim("claim2-9", volume_name="volume2-9"))
    assert c.claims["default/claim2-9"]["status"]["phase"] == "Pending"
    c = settled(
        volume("volume2-10", klass="gold"),
        claim("claim2-10", klass="silver", volume_name="volume2-10"),
    )
    assert c.claims["default/claim2-10"]["status"]["phase"] == "Pending"


def test_3_1_and_3_2_a_bound_claim_without_its_volume_is_lost() -> None:
    done = {BIND_COMPLETED: "yes"}
    c = settled(claim("claim3-1", annotations=done, phase="Bound"))
    assert c.claims["default/claim3-1"]["status"]["phase"] == "Lost"
    c = settled(claim("claim3-2", volume_name="volume3-2", annotations=done, phase="Bound"))
    assert c.claims["default/claim3-2"]["status"]["phase"] == "Lost"


def test_3_3_a_bound_claim_binds_its_unbound_volume_again() -> None:
    done = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
    c = settled(volume("volume3-3"), claim("claim3-3", volume_name="volume3-3", annotations=done))
    assert bound_pair(c, "claim3-3", "volume3-3")


def test_3_6_a_bound_claim_whose_volume_has_another_claimant_is_lost() -> None:
    done = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
    c = settled(
        volume("volume3-6", claim="claim3-6-x", uid="uid3-6-x"),
        claim("claim3-6", volume_name="volume3-6", annotations=done, phase="Bound"),
    )
    assert c.claims["default/claim3-6"]["status"]["phase"] == "Lost"


def test_4_1_and_4_2_pending_volumes_become_available() -> None:
    c = settled(volume("volume4-1"), volume("volume4-2", claim="claim4-2"))
    assert c.volumes["volume4-1"]["status"]["phase"] == "Available"
    # Pre-bound without a uid: reserved for a claim that does not exist (yet).
    assert c.volumes["volume4-2"]["status"]["phase"] == "Available"


def test_4_3_and_4_4_a_volume_bound_to_a_missing_claim_is_released() -> None:
    c = settled(volume("volume4-3", claim="claim4-3", uid="uid4-3", phase="Bound"))
    assert c.volumes["volume4-3"]["status"]["phase"] == "Released"
    c = settled(
        volume("volume4-4", claim="claim4-4", uid="uid4-4-old", phase="Bound"),
        claim("claim4-4", uid="uid4-4-new", phase="Pending", klass="none"),
    )
    assert c.volumes["volume4-4"]["status"]["phase"] == "Released"


def test_4_7_a_volume_the_controller_bound_to_a_claim_bound_elsewhere_is_unbound() -> None:
    done = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
    c = settled(
        volume("volume4-7", claim="claim4-7", uid=UID, annotations={BOUND_BY_CONTROLLER: "yes"}),
        volume("volume4-7-other", claim="claim4-7", uid=UID),
        claim("claim4-7", volume_name="volume4-7-other", annotations=done),
    )
    pv = c.volumes["volume4-7"]
    assert "claimRef" not in pv["spec"] and pv["status"]["phase"] == "Available"
    assert BOUND_BY_CONTROLLER not in notes(pv)
    assert bound_pair(c, "claim4-7", "volume4-7-other")


def test_4_8_a_volume_the_user_bound_to_a_claim_bound_elsewhere_keeps_its_claims_name() -> None:
    done = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
    c = settled(
        volume("volume4-8", claim="claim4-8", uid=UID),
        volume("volume4-8-other", claim="claim4-8", uid=UID),
        claim("claim4-8", volume_name="volume4-8-other", annotations=done),
    )
    ref = c.volumes["volume4-8"]["spec"]["claimRef"]
    assert ref["name"] == "claim4-8" and "uid" not in ref
    assert c.volumes["volume4-8"]["status"]["phase"] == "Available"


def test_13_claims_bind_only_to_volumes_of_their_class() -> None:
    c = settled(
        volume("volume13-1-1", klass="gold"),
        volume("volume13-1-2", klass=""),
        claim("claim13-1", klass="gold", uid="u1"),
        claim("claim13-4", klass="", uid="u4"),
    )
    assert bound_pair(c, "claim13-1", "volume13-1-1")
    assert bound_pair(c, "claim13-4", "volume13-1-2")


def test_14_volume_modes_must_match() -> None:
    c = settled(volume("volume14-3"), claim("claim14-3", volumeMode="Block"))
    assert c.claims["default/claim14-3"]["status"]["phase"] == "Pending"
    c = settled(volume("volume14-1", volumeMode="Block"), claim("claim14-1", volumeMode="Block"))
    assert bound_pair(c, "claim14-1", "volume14-1")


def test_the_fewest_access_modes_that_hold_the_claims_are_tried_first() -> None:
    # index_test.go: a RWO claim takes the RWO volume before a larger-set one, even a
    # smaller one offering RWO and ROX.
    c = settled(
        volume("rwo-rox", size="1Gi", modes=("ReadWriteOnce", "ReadOnlyMany")),
        volume("rwo", size="5Gi"),
        claim("claim"),
    )
    assert bound_pair(c, "claim", "rwo")


def test_an_immediate_claim_without_a_volume_is_provisioned_and_bound() -> None:
    c = settled(storage_class("fast"), claim("data", klass="fast", uid="u-data"))
    assert c.provisioned == {"pvc-u-data": "default/data"}
    assert bound_pair(c, "data", "pvc-u-data")
    marks = notes(c.claims["default/data"])
    assert marks["volume.kubernetes.io/storage-provisioner"] == "example.com/p"


def test_no_provisioner_and_missing_classes_provision_nothing() -> None:
    c = settled(
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        claim("a", klass="local", uid="ua"),
        claim("b", klass="missing", uid="ub"),
    )
    assert not c.provisioned
    assert {k: v["status"]["phase"] for k, v in c.claims.items()} == {
        "default/a": "Pending",
        "default/b": "Pending",
    }


def test_a_waiting_claim_with_a_selected_node_is_provisioned() -> None:
    c = settled(
        storage_class("wait", "WaitForFirstConsumer"),
        claim(
            "data", klass="wait", uid="u1", annotations={"volume.kubernetes.io/selected-node": "n1"}
        ),
    )
    assert bound_pair(c, "data", "pvc-u1")


def test_a_settled_pair_is_left_alone() -> None:
    c = settled(volume("pv", claim="data", uid=UID), claim("data", volume_name="pv"))
    again = PVController(
        [("PersistentVolume", c.volumes["pv"]), ("PersistentVolumeClaim", c.claims["default/data"])]
    )
    again.settle()
    assert again.volumes["pv"] is c.volumes["pv"]
    assert again.claims["default/data"] is c.claims["default/data"]
    assert not again.why
