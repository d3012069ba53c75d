"""What a cluster's PV controller and provisioner do with the volume binder's writes, done at
once, for ``simulate`` and ``explain`` (no controller runs there).

- A PV given a claimRef (a static binding) is bound to that claim: the claim gets
  ``spec.volumeName``, ``pv.kubernetes.io/bind-completed`` and ``Bound``, the PV ``Bound``.
- A claim given ``volume.kubernetes.io/selected-node`` (dynamic provisioning) gets a PV
  provisioned for it on that node, bound the same way: an ideal provisioner, which never
  fails, so the simulation says where pods and volumes would go, not whether a storage
  backend has room (CSIStorageCapacity already says that to the binder).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache.volumes import (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    VolumeStore,
    resource_version,
)
from multisched.meta import object_key

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"

Obj = dict[str, Any]


def _newer(obj: Mapping[str, Any], version: int) -> Obj:
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(version)
    return {**obj, "metadata": meta}


class SimVolumeController:
    """Applies one write of the binder and what the controllers would do after it; returns
    the objects to feed the scheduler, in the order the API server would show them."""

    def __init__(self, store: VolumeStore) -> None:
        self.store = store
        self._version = 0
        #: Claim key -> PV name provisioned for it (for the simulate report).
        self.provisioned: dict[str, str] = {}

    def _next(self, obj: Mapping[str, Any]) -> int:
        self._version = max(self._version, resource_version(obj)) + 1
        return self._version

    def write(self, kind: str, obj: Mapping[str, Any]) -> list[tuple[str, Obj]]:
        stored = _newer(obj, self._next(obj))
        out = [(kind, stored)]
        if kind == PERSISTENT_VOLUME:
            ref = (stored.get("spec") or {}).get("claimRef") or {}
            claim = self.store.get_pvc(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
            if claim is not None:
                out += self._bind(stored, claim)
        elif kind == PERSISTENT_VOLUME_CLAIM:
            node = ((stored.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if node and not (stored.get("spec") or {}).get("volumeName"):
                out += self._provision(stored, str(node))
        return out

    def _bind(self, pv: Obj, claim: Mapping[str, Any]) -> list[tuple[str, Obj]]:
        pv_name = str((pv.get("metadata") or {}).get("name") or "")
        bound_pv = _newer({**pv, "status": {"phase": "Bound"}}, self._next(pv))
        meta = dict(claim.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_BIND_COMPLETED: "yes"}
        bound_claim = {
            **claim,
            "metadata": meta,
            "spec": {**(claim.get("spec") or {}), "volumeName": pv_name},
            "status": {**(claim.get("status") or {}), "phase": "Bound"},
        }
        return [
            (PERSISTENT_VOLUME, bound_pv),
            (PERSISTENT_VOLUME_CLAIM, _newer(bound_claim, self._next(claim))),
        ]

    def _provision(self, claim: Obj, node: str) -> list[tuple[str, Obj]]:
        """An ideal provisioner's PV for ``claim`` (``node``: where it was asked for)."""
        klass = str((claim.get("spec") or {}).get("storageClassName") or "")
        provisioner = str((self.store.get_storage_class(klass) or {}).get("provisioner") or "")
        pv = self.new_volume(claim, provisioner, node)
        pv["metadata"]["resourceVersion"] = str(self._next(claim))
        self.provisioned[object_key(claim)] = pv["metadata"]["name"]
        return [(PERSISTENT_VOLUME, pv), *self._bind(pv, claim)]

    @staticmethod
    def new_volume(claim: Mapping[str, Any], provisioner: str, node: str = "") -> Obj:
        """The PV an ideal ``provisioner`` makes for ``claim``: upstream's name for it
        (``pvc-<claim uid>``), pre-bound to the claim. The provisioner's topology is not
        modelled (``node`` is where it was asked for): the volume serves any node."""
        meta = claim.get("metadata") or {}
        spec = claim.get("spec") or {}
        key = object_key(claim)
        ref = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
        }
        if meta.get("uid"):
            ref["uid"] = meta["uid"]
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"pvc-{meta.get('uid') or key.replace('/', '-')}",
                "annotations": {ANN_PROVISIONED_BY: provisioner},
            },
            "spec": {
                "capacity": {
                    "storage": ((spec.get("resources") or {}).get("requests") or {}).get(
                        "storage", "0"
                    )
                },
                "accessModes": list(spec.get("accessModes") or ()),
                "storageClassName": str(spec.get("storageClassName") or ""),
                "claimRef": ref,
            },
            "status": {"phase": "Available"},
        }
