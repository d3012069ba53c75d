"""The storage objects the volume plugins read, with an assume cache for PVs and claims.

kube-scheduler's volume binder decides, in Reserve, which PersistentVolume each unbound
claim of a pod gets (or that the claim is to be provisioned on the chosen node), and writes
that decision only in PreBind. Meanwhile the next pods must see it: a PV promised to one
pod is not free for the next. Upstream keeps an *assume cache* over the PV and PVC
informers for that (``volumebinding/assume_cache.go``):

- ``assume(obj)`` makes an in-memory version of an object the one readers see, as long as
  its resourceVersion is not older than what is stored;
- ``restore(key)`` drops the assumed version again (binding failed or was undone);
- an informer event replaces the stored object only when it is *newer* than the assumed
  one, so the API's echo of our own write confirms it, and an older event cannot undo it.

Objects are kept as the API's JSON dicts: the plugins write them back through the API. A
missing or non-numeric resourceVersion (simulate input) counts as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from multisched.meta import object_key

Obj = dict[str, Any]

#: Kinds, as their ClusterEvent resources and informer feeds name them.
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
VOLUME_ATTACHMENT = "VolumeAttachment"
VOLUME_KINDS = (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    VOLUME_ATTACHMENT,
)
#: Kinds whose objects live in a namespace (keyed ``namespace/name``).
NAMESPACED_VOLUME_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM, CSI_STORAGE_CAPACITY})


class AssumeError(Exception):
    """An assumption the cache cannot take: unknown object, or older than the stored one."""


def resource_version(obj: Mapping[str, Any]) -> int:
    raw = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(raw) if raw not in (None, "") else 0
    except (TypeError, ValueError):
        return 0


class _Entry:
    __slots__ = ("api", "latest")

    def __init__(self, obj: Obj) -> None:
        self.api = obj
        self.latest = obj


class AssumeCache:
    """Objects of one kind by key, the scheduler's assumptions over the API's versions.

    ``index`` maps an object to the value ``list`` filters on (a PV's storage class).
    """

    def __init__(
        self,
        kind: str,
        index: Callable[[Mapping[str, Any]], str] | None = None,
        on_change: Callable[[Obj | None, Obj | None], None] | None = None,
    ):
        self.kind = kind
        self._index = index
        self._entries: dict[str, _Entry] = {}
        #: Told ``(old, new)`` whenever the version readers see changes (None: added or
        #: deleted), assumptions and restores included: upstream's assume-cache event
        #: handlers, which DRA's allocated-devices index listens to.
        self._on_change = on_change

    # -- informer side ------------------------------------------------------------------

    def on_upsert(self, obj: Obj) -> bool:
        """An object from the API; False when it is not newer than the stored version
        (it would undo an assumption, or it is an old event)."""
        key = object_key(obj)
        entry = self._entries.get(key)
        if entry is not None and resource_version(obj) <= resource_version(entry.latest):
            if resource_version(obj) == 0 and entry.latest is entry.api:
                old = entry.latest
                entry.api = entry.latest = obj  # unversioned input (simulate): last wins
                if self._on_change is not None:
                    self._on_change(old, obj)
                return True
            return False
        self._entries[key] = _Entry(obj)
        if self._on_change is not None:
            self._on_change(entry.latest if entry is not None else None, obj)
        return True

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        entry = self._entries.pop(object_key(obj), None)
        if entry is not None and self._on_change is not None:
            self._on_change(entry.latest, None)

    # -- readers ------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The latest version: assumed if there is an assumption, else the API's."""
        entry = self._entries.get(key)
        return entry.latest if entry is not None else None

    def get_api_obj(self, key: str) -> Obj | None:
        entry = self._entries.get(key)
        return entry.api if entry is not None else None

    def list(self, index_value: str | None = None) -> list[Obj]:
        """Latest versions; with ``index_value``, only those the index maps to it."""
        if index_value is None or self._index is None:
            return [e.latest for e in self._entries.values()]
        index = self._index
        return [e.latest for e in self._entries.values() if index(e.latest) == index_value]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    # -- the scheduler's own writes -----------------------------------------------------

    def assume(self, obj: Obj) -> None:
        key = object_key(obj)
        entry = self._entries.get(key)
        if entry is None:
            raise AssumeError(f'could not find {self.kind} "{key}"')
        stored = resource_version(entry.latest)
        new = resource_version(obj)
        if new < stored:
            raise AssumeError(
                f'{self.kind} "{key}" is out of sync (stored: {stored}, assume: {new})'
            )
        old, entry.latest = entry.latest, obj
        if self._on_change is not None:
            self._on_change(old, obj)

    def restore(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry.latest is not entry.api:
            old, entry.latest = entry.latest, entry.api
            if self._on_change is not None:
                self._on_change(old, entry.api)

    def is_assumed(self, key: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.latest is not entry.api


def pv_storage_class(pv: Mapping[str, Any]) -> str:
    """``storagehelpers.GetPersistentVolumeClass``: the field, else the beta annotation."""
    annotations = (pv.get("metadata") or {}).get("annotations") or {}
    beta = annotations.get("volume.beta.kubernetes.io/storage-class")
    if beta is not None:
        return str(beta)
    return str((pv.get("spec") or {}).get("storageClassName") or "")


class VolumeStore:
    """Every storage object the volume plugins read (upstream: their listers and the
    binder's assume caches). PVs and claims go through assume caches; the other kinds
    are only ever read, so a plain dict by key holds them."""

    def __init__(self) -> None:
        self.pvs = AssumeCache(PERSISTENT_VOLUME, pv_storage_class)
        self.pvcs = AssumeCache(PERSISTENT_VOLUME_CLAIM)
        self.storage_classes: dict[str, Obj] = {}
        self.csi_nodes: dict[str, Obj] = {}
        self.csi_drivers: dict[str, Obj] = {}
        self.csi_storage_capacities: dict[str, Obj] = {}
        self.volume_attachments: dict[str, Obj] = {}
        #: VolumeAttachment names by ``spec.nodeName`` (upstream's ``va.spec.nodename``
        #: index): NodeVolumeLimits reads one node's.
        self._attachments_by_node: dict[str, set[str]] = {}

    def _plain(self, kind: str) -> dict[str, Obj]:
        if kind == STORAGE_CLASS:
            return self.storage_classes
        if kind == CSI_NODE:
            return self.csi_nodes
        if kind == CSI_DRIVER:
            return self.csi_drivers
        if kind == CSI_STORAGE_CAPACITY:
            return self.csi_storage_capacities
        if kind == VOLUME_ATTACHMENT:
            return self.volume_attachments
        raise KeyError(f"not a storage kind: {kind}")

    def upsert(self, kind: str, obj: Obj) -> bool:
        """An object of ``kind`` from the API (or a simulate file); False when the assume
        cache kept a newer version."""
        if kind == PERSISTENT_VOLUME:
            return self.pvs.on_upsert(obj)
        if kind == PERSISTENT_VOLUME_CLAIM:
            return self.pvcs.on_upsert(obj)
        key = object_key(obj)
        if kind == VOLUME_ATTACHMENT:
            self._unindex_attachment(key)
            self._attachments_by_node.setdefault(_attachment_node(obj), set()).add(key)
        self._plain(kind)[key] = obj
        return True

    def delete(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind == PERSISTENT_VOLUME:
            self.pvs.on_delete(obj)
        elif kind == PERSISTENT_VOLUME_CLAIM:
            self.pvcs.on_delete(obj)
        else:
            if kind == VOLUME_ATTACHMENT:
                self._unindex_attachment(object_key(obj))
            self._plain(kind).pop(object_key(obj), None)

    def _unindex_attachment(self, key: str) -> None:
        old = self.volume_attachments.get(key)
        if old is None:
            return
        names = self._attachments_by_node.get(_attachment_node(old))
        if names is not None:
            names.discard(key)
            if not names:
                del self._attachments_by_node[_attachment_node(old)]

    def get(self, kind: str, key: str) -> Obj | None:
        """The API's version of an object (a claim's or volume's, not an assumption)."""
        if kind == PERSISTENT_VOLUME:
            return self.pvs.get_api_obj(key)
        if kind == PERSISTENT_VOLUME_CLAIM:
            return self.pvcs.get_api_obj(key)
        return self._plain(kind).get(key)

    def has(self, kind: str, key: str) -> bool:
        if kind == PERSISTENT_VOLUME:
            return key in self.pvs
        if kind == PERSISTENT_VOLUME_CLAIM:
            return key in self.pvcs
        return key in self._plain(kind)

    def load(self, kind: str, objects: Iterable[Obj]) -> None:
        for obj in objects:
            self.upsert(kind, obj)

    def objects(self, kind: str) -> list[Obj]:
        """Every object of ``kind`` as readers see it (assumed versions included)."""
        if kind == PERSISTENT_VOLUME:
            return self.pvs.list()
        if kind == PERSISTENT_VOLUME_CLAIM:
            return self.pvcs.list()
        return list(self._plain(kind).values())

    def get_pvc(self, namespace: str, name: str) -> Obj | None:
        return self.pvcs.get(f"{namespace}/{name}")

    def get_pv(self, name: str) -> Obj | None:
        return self.pvs.get(name)

    def get_storage_class(self, name: str) -> Obj | None:
        return self.storage_classes.get(name)

    def get_csi_node(self, name: str) -> Obj | None:
        return self.csi_nodes.get(name)

    def get_csi_driver(self, name: str) -> Obj | None:
        return self.csi_drivers.get(name)

    def volume_attachments_on(self, node_name: str) -> list[Obj]:
        """The VolumeAttachments whose ``spec.nodeName`` is ``node_name``."""
        names = self._attachments_by_node.get(node_name)
        if not names:
            return []
        return [self.volume_attachments[name] for name in names]


def _attachment_node(va: Mapping[str, Any]) -> str:
    return str((va.get("spec") or {}).get("nodeName") or "")
