"""The in-memory API server's side of DynamicResources' claim writes (simulate, explain): a
status PUT changes only the status, a plain PUT all but it, each stored under the next
resourceVersion; an unknown claim is the API's 404."""

from __future__ import annotations

import pytest

from multisched.cache.dra import RESOURCE_CLAIM, DraStore
from multisched.scheduler.sim_claims import ClaimNotFound, write_claim

STORED = {
    "metadata": {"namespace": "default", "name": "gpu", "uid": "u1", "resourceVersion": "3"},
    "spec": {"devices": {"requests": []}},
    "status": {},
}


def _store() -> DraStore:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, STORED)
    return store


def test_a_status_put_keeps_the_metadata_a_plain_put_keeps_the_status() -> None:
    store = _store()
    sent = {
        **STORED,
        "metadata": {**STORED["metadata"], "finalizers": ["f"]},
        "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "p1"}]},
    }
    status_put = write_claim(store, sent, status_only=True)
    assert status_put["status"] == sent["status"]
    assert "finalizers" not in status_put["metadata"]
    assert status_put["metadata"]["resourceVersion"] == "4"
    plain_put = write_claim(store, sent, status_only=False)
    assert plain_put["metadata"]["finalizers"] == ["f"]
    assert plain_put["status"] == {}


def test_an_unknown_claim_is_not_found() -> None:
    with pytest.raises(ClaimNotFound) as err:
        write_claim(DraStore(), STORED, status_only=True)
    assert err.value.status == 404
    assert str(err.value) == 'resourceclaims.resource.k8s.io "gpu" not found'
