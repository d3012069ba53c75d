"""The PV/PVC assume cache, after upstream's ``assume_cache_test.go``, and PVC ref counts."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.cache import AssumeError, NodeInfo, PodInfo, VolumeStore
from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS


def pv(name: str, version: str, storage_class: str = "") -> dict[str, Any]:
    spec = {"storageClassName": storage_class} if storage_class else {}
    return {"metadata": {"name": name, "resourceVersion": version}, "spec": spec}


def test_assume_newer_or_same_version_is_seen_until_restored() -> None:
    store = VolumeStore()
    store.upsert(PERSISTENT_VOLUME, pv("pv1", "5"))
    for version in ("5", "6"):
        promised = pv("pv1", version)
        promised["spec"]["claimRef"] = {"namespace": "ns", "name": "c"}
        store.pvs.assume(promised)
        assert store.get_pv("pv1") is promised
        assert store.pvs.get_api_obj("pv1") is not promised
        assert store.pvs.is_assumed("pv1")
        store.pvs.restore("pv1")
        assert store.get_pv("pv1") == pv("pv1", "5")
        assert not store.pvs.is_assumed("pv1")


def test_assume_older_version_or_unknown_object_is_refused() -> None:
    store = VolumeStore()
    store.upsert(PERSISTENT_VOLUME, pv("pv1", "5"))
    with pytest.raises(AssumeError, match="out of sync"):
        store.pvs.assume(pv("pv1", "4"))
    with pytest.raises(AssumeError, match='could not find PersistentVolume "pv2"'):
        store.pvs.assume(pv("pv2", "1"))


def test_informer_event_replaces_an_assumption_only_when_newer() -> None:
    store = VolumeStore()
    store.upsert(PERSISTENT_VOLUME, pv("pv1", "5"))
    promised = pv("pv1", "5", "fast")
    store.pvs.assume(promised)
    # An event at the assumed version (or older) would undo our own decision: ignored.
    assert not store.upsert(PERSISTENT_VOLUME, pv("pv1", "5"))
    assert store.get_pv("pv1") is promised
    # The API's echo of the write is newer: it becomes both the latest and the API object.
    echo = pv("pv1", "6", "fast")
    assert store.upsert(PERSISTENT_VOLUME, echo)
    assert store.get_pv("pv1") is echo
    assert store.pvs.get_api_obj("pv1") is echo


def test_list_by_storage_class_sees_assumed_versions() -> None:
    store = VolumeStore()
    store.load(PERSISTENT_VOLUME, [pv("a", "1", "fast"), pv("b", "1", "slow"), pv("c", "1")])
    assert [p["metadata"]["name"] for p in store.pvs.list("fast")] == ["a"]
    assert [p["metadata"]["name"] for p in store.pvs.list("")] == ["c"]
    beta = pv("d", "1")
    beta["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "fast"}
    store.upsert(PERSISTENT_VOLUME, beta)
    assert sorted(p["metadata"]["name"] for p in store.pvs.list("fast")) == ["a", "d"]


def test_claims_are_keyed_by_namespace_and_deleted() -> None:
    store = VolumeStore()
    claim = {"metadata": {"name": "data", "namespace": "ns", "resourceVersion": "3"}}
    store.upsert(PERSISTENT_VOLUME_CLAIM, claim)
    assert store.get_pvc("ns", "data") is claim
    assert store.get_pvc("default", "data") is None
    assert store.has(PERSISTENT_VOLUME_CLAIM, "ns/data")
    store.delete(PERSISTENT_VOLUME_CLAIM, claim)
    assert store.get_pvc("ns", "data") is None
    store.upsert(STORAGE_CLASS, {"metadata": {"name": "fast"}})
    assert store.get_storage_class("fast") == {"metadata": {"name": "fast"}}


def test_unversioned_objects_replace_each_other() -> None:
    """simulate input has no resourceVersion: a later document is the current one."""
    store = VolumeStore()
    store.upsert(PERSISTENT_VOLUME, {"metadata": {"name": "pv1"}, "spec": {"a": 1}})
    store.upsert(PERSISTENT_VOLUME, {"metadata": {"name": "pv1"}, "spec": {"a": 2}})
    assert store.get_pv("pv1") == {"metadata": {"name": "pv1"}, "spec": {"a": 2}}


def _pod(name: str, claims: list[str], namespace: str = "ns") -> PodInfo:
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    volumes.append({"name": "scratch", "emptyDir": {}})
    return PodInfo.parse(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": name},
            "spec": {"containers": [{"name": "c"}], "volumes": volumes},
        }
    )


def test_node_counts_pods_per_claim_as_upstream_pvc_ref_counts() -> None:
    node = NodeInfo("n1")
    a, b = _pod("a", ["data", "logs"]), _pod("b", ["data"])
    node.add_pod(a)
    node.add_pod(b)
    assert node.pvc_ref_counts == {"ns/data": 2, "ns/logs": 1}
    twin = node.clone()
    node.remove_pod(a)
    assert node.pvc_ref_counts == {"ns/data": 1}
    assert twin.pvc_ref_counts == {"ns/data": 2, "ns/logs": 1}
    node.remove_pod(b)
    assert node.pvc_ref_counts == {}


def _va(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"attacher": "d", "nodeName": node, "source": {"persistentVolumeName": name}},
    }


def test_volume_attachments_are_indexed_by_node() -> None:
    """Upstream's ``va.spec.nodename`` index: NodeVolumeLimits reads one node's."""
    store = VolumeStore()
    store.upsert("VolumeAttachment", _va("a", "n1"))
    store.upsert("VolumeAttachment", _va("b", "n1"))
    store.upsert("VolumeAttachment", _va("c", "n2"))
    assert sorted(o["metadata"]["name"] for o in store.volume_attachments_on("n1")) == ["a", "b"]
    store.upsert("VolumeAttachment", _va("b", "n2"))  # an update moves it between nodes
    assert [o["metadata"]["name"] for o in store.volume_attachments_on("n1")] == ["a"]
    assert sorted(o["metadata"]["name"] for o in store.volume_attachments_on("n2")) == ["b", "c"]
    store.delete("VolumeAttachment", _va("a", "n1"))
    assert store.volume_attachments_on("n1") == []
    assert store.volume_attachments_on("nowhere") == []
    assert store.has("VolumeAttachment", "b") and not store.has("VolumeAttachment", "a")
