"""What kube-controller-manager's PV controller makes of PVs and claims before any pod is
scheduled: upstream's ``pkg/controller/volume/persistentvolume`` (``syncVolume``,
``syncClaim``, ``syncUnboundClaim``, ``syncBoundClaim``, ``bind`` and
``findBestMatchForClaim``), played to a fixed point on the input's objects.

Written bound (``spec.volumeName`` and a ``claimRef``), a pair gets the marks the
controller sets (bind-completed, bound-by-controller, the claimRef's uid, the phases); an
unbound Immediate claim is bound to the best matching Available PV, or provisioned by the
ideal provisioner ``sim_volumes`` plays. What the controller only reports (events,
metrics) and what it deletes or recycles (reclaim) is left out: nothing here deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from multisched.meta import object_key
from multisched.plugins.volumebinding.matching import SelectorUnusable, claim_selector
from multisched.plugins.volumebinding.pv_helpers import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    annotations_of,
    bind_volume_to_claim,
    claim_class,
    claim_request,
    is_volume_bound_to_claim,
    meta,
    pv_capacity,
    pv_class,
    spec,
    volume_mode_mismatch,
)

from .sim_volumes import SimVolumeController

Obj = dict[str, Any]

ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
#: Rounds of "sync every volume, then every claim": a binding needs two (a provisioned PV,
#: then its claim), a fixed point is reached well before this.
MAX_ROUNDS = 5


def _vac(obj: Mapping[str, Any]) -> str:
    return str(spec(obj).get("volumeAttributesClassName") or "")


def check_volume_satisfy_claim(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """``checkVolumeSatisfyClaim``: "" when ``pv`` may serve ``claim``, else why not."""
    if meta(pv).get("deletionTimestamp") is not None:
        return f'the volume is marked for deletion "{meta(pv).get("name")}"'
    if pv_capacity(pv) < claim_request(claim):
        return "requested PV is too small"
    if pv_class(pv) != claim_class(claim):
        return "storageClassName does not match"
    if _vac(pv) != _vac(claim):
        return "volumeAttributesClassName does not match"
    if volume_mode_mismatch(claim, pv):
        return "incompatible volumeMode"
    offered = set(spec(pv).get("accessModes") or ())
    if not all(m in offered for m in spec(claim).get("accessModes") or ()):
        return "incompatible accessMode"
    return ""


class PVController:
    """The input's PVs, claims and classes, changed as the controller changes them.

    ``volumes`` and ``claims`` keep input order (upstream's informer order differs, but its
    choices do not depend on it but for ties, which input order settles reproducibly).
    """

    def __init__(
        self,
        storage: Iterable[tuple[str, Obj]],
        may_provision: Callable[[Mapping[str, Any]], bool] = lambda claim: True,
    ) -> None:
        #: Which claims the ideal provisioner serves: not a live cluster's (its own
        #: provisioners act there, and a claim still waiting for one waits here too).
        self.may_provision = may_provision
        self.volumes: dict[str, Obj] = {}
        self.claims: dict[str, Obj] = {}
        self.classes: dict[str, Obj] = {}
        for kind, obj in storage:
            if kind == PERSISTENT_VOLUME:
                self.volumes[str(meta(obj).get("name"))] = obj
            elif kind == PERSISTENT_VOLUME_CLAIM:
                self.claims[object_key(obj)] = obj
            elif kind == STORAGE_CLASS:
                self.classes[str(meta(obj).get("name"))] = obj
        #: The access-mode index (a PV's modes never change here): modes -> PV names, and
        #: how many PVs it holds.
        self._by_modes: dict[frozenset[str], list[str]] = {}
        self._names = -1
        #: Claim key -> names of the PVs whose claimRef named it (checked when read).
        self._claimed: dict[str, set[str]] = {}
        self._sizes: dict[str, int] = {}
        #: PV name -> claim key, for the PVs the ideal provisioner made.
        self.provisioned: dict[str, str] = {}
        #: Object ("Kind key") -> why it changed, in the order of the first change.
        self.why: dict[str, list[str]] = {}

    def settle(self) -> None:
        """Both workers' syncs until nothing changes (``MAX_ROUNDS`` at most)."""
        for _ in range(MAX_ROUNDS):
            before = (dict(self.volumes), dict(self.claims))
            for name in list(self.volumes):
                self.sync_volume(self.volumes[name])
            for key in list(self.claims):
                self.sync_claim(self.claims[key])
            if (
                before[0].keys() == self.volumes.keys()
                and all(before[0][n] is v for n, v in self.volumes.items())
                and all(before[1][k] is c for k, c in self.claims.items())
            ):
                return

    # -- bookkeeping ----------------------------------------------------------------------

    def _note(self, kind: str, key: str, why: str) -> None:
        if not why:
            return  # a step on the way (a status derived again), not a reason
        reasons = self.why.setdefault(f"{kind} {key}", [])
        if why not in reasons:
            reasons.append(why)

    def _store_volume(self, pv: Obj, why: str) -> Obj:
        name = str(meta(pv).get("name"))
        self.volumes[name] = pv
        self._index_claim_ref(name, pv)
        self._note(PERSISTENT_VOLUME, name, why)
        return pv

    def _store_claim(self, claim: Obj, why: str) -> Obj:
        key = object_key(claim)
        self.claims[key] = claim
        self._note(PERSISTENT_VOLUME_CLAIM, key, why)
        return claim

    # -- syncClaim --------------------------------------------------------------------------

    def sync_claim(self, claim: Obj) -> None:
        if ANN_BIND_COMPLETED not in annotations_of(claim):
            self.sync_unbound_claim(claim)
        else:
            self.sync_bound_claim(claim)

    def _delay_binding(self, claim: Mapping[str, Any]) -> bool:
        """``IsDelayBindingMode``: no class, or a missing one, binds at once."""
        klass = self.classes.get(claim_class(claim)) if claim_class(claim) else None
        return klass is not None and klass.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    def sync_unbound_claim(self, claim: Obj) -> None:
        volume_name = str(spec(claim).get("volumeName") or "")
        if not volume_name:
            delay = self._delay_binding(claim)
            try:
                pv = self.find_best_match_for_claim(claim, delay)
            except SelectorUnusable:
                return  # upstream: an error, retried; the claim stays as it is
            if pv is not None:
                self.bind(pv, claim, "the PV controller binds an unbound claim to its best match")
                return
            selected = ANN_SELECTED_NODE in annotations_of(claim)
            if (not delay or selected) and claim_class(claim) and self.may_provision(claim):
                self.provision(claim)
                return
            self.update_claim_status(claim, "Pending", None, "")
            return
        pv = self.volumes.get(volume_name)
        if pv is None:
            self.update_claim_status(claim, "Pending", None, "")
            return
        if not spec(pv).get("claimRef"):
            if check_volume_satisfy_claim(pv, claim):
                self.update_claim_status(claim, "Pending", None, "")
            else:
                self.bind(pv, claim, "the claim names the PV: the PV controller binds them")
            return
        if is_volume_bound_to_claim(pv, claim):
            self.bind(pv, claim, "the claim and the PV name each other: the PV controller binds")
            return
        # The PV is claimed by another claim: the claim waits (upstream also reports an
        # invalid binding when the controller had bound it; nothing to change either way).
        if ANN_BOUND_BY_CONTROLLER not in annotations_of(claim):
            self.update_claim_status(claim, "Pending", None, "")

    def sync_bound_claim(self, claim: Obj) -> None:
        volume_name = str(spec(claim).get("volumeName") or "")
        pv = self.volumes.get(volume_name) if volume_name else None
        if pv is None:
            self.update_claim_status(claim, "Lost", None, "the claim's PV is missing: Lost")
            return
        ref = spec(pv).get("claimRef")
        if not ref or ref.get("uid") == meta(claim).get("uid"):
            self.bind(pv, claim, "the PV controller completes the claim's binding")
            return
        self.update_claim_status(claim, "Lost", None, "another claim is bound to the PV: Lost")

    # -- syncVolume -------------------------------------------------------------------------

    def sync_volume(self, pv: Obj) -> None:
        ref = spec(pv).get("claimRef")
        if not ref or not ref.get("uid"):
            # Unused, or reserved for a claim that has not bound it yet (syncClaim will).
            self.update_volume_phase(pv, "Available")
            return
        claim = self.claims.get(f"{ref.get('namespace') or ''}/{ref.get('name') or ''}")
        if claim is not None and meta(claim).get("uid") != ref.get("uid"):
            claim = None
        if claim is None:
            if (pv.get("status") or {}).get("phase") not in ("Released", "Failed"):
                self.update_volume_phase(pv, "Released", "its claim is gone: Released")
            return
        claim_volume = spec(claim).get("volumeName")
        if not claim_volume:
            return  # the claim's sync binds it
        if claim_volume == meta(pv).get("name"):
            self.update_volume_phase(pv, "Bound", "bound to its claim")
            return
        # The claim is bound elsewhere. A provisioned PV with reclaim policy Delete would
        # be deleted; it is only marked Released here (simulate deletes nothing).
        notes = annotations_of(pv)
        if (
            ANN_DYNAMICALLY_PROVISIONED in notes
            and spec(pv).get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            if (pv.get("status") or {}).get("phase") not in ("Released", "Failed"):
                self.update_volume_phase(pv, "Released", "its claim is bound to another PV")
            return
        self.unbind_volume(pv)

    def unbind_volume(self, pv: Obj) -> None:
        """``unbindVolume``: a controller-made claimRef goes, a user's keeps its name only."""
        out = {**pv, "metadata": dict(meta(pv)), "spec": dict(spec(pv))}
        if ANN_BOUND_BY_CONTROLLER in annotations_of(pv):
            del out["spec"]["claimRef"]
            notes = {k: v for k, v in annotations_of(pv).items() if k != ANN_BOUND_BY_CONTROLLER}
            if notes:
                out["metadata"]["annotations"] = notes
            else:
                out["metadata"].pop("annotations", None)
        else:
            out["spec"]["claimRef"] = {k: v for k, v in spec(pv)["claimRef"].items() if k != "uid"}
        why = "its claim is bound to another PV: the PV controller unbinds it"
        self.update_volume_phase(self._store_volume(out, why), "Available", why)

    # -- findBestMatchForClaim -------------------------------------------------------------

    def find_best_match_for_claim(self, claim: Mapping[str, Any], delay: bool) -> Obj | None:
        """Upstream's access-mode index: the sets of modes PVs offer that hold every mode
        the claim asks for, fewest first; in each, ``FindMatchingVolume`` without a node.
        Waiting for its first consumer, a claim takes only a PV pre-bound to it: only
        those are walked (the answer is the same, without walking every PV per claim)."""
        if self._names != len(self.volumes):  # a PV was provisioned: index again
            self._by_modes.clear()
            for name, pv in self.volumes.items():
                modes = frozenset(spec(pv).get("accessModes") or ())
                self._by_modes.setdefault(modes, []).append(name)
                self._index_claim_ref(name, pv)
            self._names = len(self.volumes)
        wanted = set(spec(claim).get("accessModes") or ())
        sets = [modes for modes in self._by_modes if modes and wanted <= modes]
        named = self._claimed.get(object_key(claim), set()) if delay else None
        for modes in sorted(sets, key=len):  # stable: ties keep first-listed order
            names = self._by_modes[modes]
            if named is not None:
                names = [n for n in names if n in named]
            found = self._find_matching_volume(claim, [self.volumes[n] for n in names], delay)
            if found is not None:
                return found
        return None

    def _index_claim_ref(self, name: str, pv: Mapping[str, Any]) -> None:
        ref = spec(pv).get("claimRef") or {}
        if ref:
            key = f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"
            self._claimed.setdefault(key, set()).add(name)

    def _capacity(self, pv: Mapping[str, Any]) -> int:
        """A PV's size, read once (no sync changes it)."""
        name = str(meta(pv).get("name"))
        size = self._sizes.get(name)
        if size is None:
            size = self._sizes[name] = pv_capacity(pv)
        return size

    def _find_matching_volume(
        self, claim: Mapping[str, Any], volumes: list[Obj], delay: bool
    ) -> Obj | None:
        """``FindMatchingVolume`` with no node: a PV pre-bound to the claim first, else the
        smallest Available one of the claim's class that its selector picks (none when
        binding waits for the first consumer). Upstream's checks, the cheap ones first."""
        selector = claim_selector(claim)
        requested = claim_request(claim)
        wanted_class = claim_class(claim)
        best: Obj | None = None
        best_size = 0
        for pv in volumes:
            prebound = bool(spec(pv).get("claimRef"))
            if prebound and not is_volume_bound_to_claim(pv, claim):
                continue
            if not prebound and (
                delay
                or (pv.get("status") or {}).get("phase") != "Available"
                or pv_class(pv) != wanted_class
            ):
                continue
            size = self._capacity(pv)
            if size < requested or volume_mode_mismatch(claim, pv) or _vac(pv) != _vac(claim):
                continue
            if meta(pv).get("deletionTimestamp") is not None:
                continue
            if prebound:
                return pv
            if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
                continue
            if best is None or best_size > size:
                best, best_size = pv, size
        return best

    # -- bind -------------------------------------------------------------------------------

    def bind(self, pv: Obj, claim: Obj, why: str) -> None:
        """``bind``: the PV's claimRef and phase, then the claim's volumeName, marks, phase."""
        bound, dirty = bind_volume_to_claim(pv, claim)
        if dirty:
            pv = self._store_volume(bound, why)
        pv = self.update_volume_phase(pv, "Bound", why)
        out = {**claim, "metadata": dict(meta(claim)), "spec": dict(spec(claim))}
        notes = dict(annotations_of(claim))
        changed = False
        if spec(claim).get("volumeName") != meta(pv).get("name"):
            out["spec"]["volumeName"] = meta(pv).get("name")
            notes.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            changed = True
        if ANN_BIND_COMPLETED not in notes:
            notes[ANN_BIND_COMPLETED] = "yes"
            changed = True
        if changed:
            out["metadata"]["annotations"] = notes
            claim = self._store_claim(out, why)
        self.update_claim_status(claim, "Bound", pv, why)

    def update_claim_status(
        self, claim: Obj, phase: str, pv: Mapping[str, Any] | None, why: str
    ) -> Obj:
        """``updateClaimStatus``: the phase; with a PV, its access modes, and its capacity
        when the claim becomes Bound; without one, neither."""
        status = dict(claim.get("status") or {})
        new = dict(status)
        new["phase"] = phase
        if pv is None:
            for field in ("accessModes", "capacity", "currentVolumeAttributesClassName"):
                new.pop(field, None)
        else:
            if spec(pv).get("accessModes") is not None:
                new["accessModes"] = list(spec(pv)["accessModes"])
            if status.get("phase") != phase:
                new["capacity"] = dict(spec(pv).get("capacity") or {})
                if status.get("phase") == "Pending" and _vac(pv):
                    new["currentVolumeAttributesClassName"] = _vac(pv)
        if new == status:
            return claim
        return self._store_claim({**claim, "status": new}, why)

    def update_volume_phase(self, pv: Obj, phase: str, why: str = "") -> Obj:
        status = pv.get("status") or {}
        if status.get("phase") == phase:
            return pv
        new = {k: v for k, v in status.items() if k != "message"}
        new["phase"] = phase
        return self._store_volume({**pv, "status": new}, why)

    # -- provisioning -----------------------------------------------------------------------

    def provision(self, claim: Obj) -> None:
        """``provisionClaim`` with an external provisioner that never fails: the claim is
        marked with its provisioner, and the PV it makes for the claim is bound at the
        next sync. ``kubernetes.io/no-provisioner`` or a missing class: nothing comes."""
        klass = self.classes.get(claim_class(claim))
        provisioner = str((klass or {}).get("provisioner") or "")
        if klass is None or provisioner == NOT_SUPPORTED_PROVISIONER:
            self.update_claim_status(claim, "Pending", None, "")
            return
        why = f"the ideal provisioner provisions a PV for the claim ({provisioner})"
        notes = dict(annotations_of(claim))
        if notes.get(ANN_STORAGE_PROVISIONER) != provisioner:
            notes[ANN_STORAGE_PROVISIONER] = provisioner
            notes[ANN_BETA_STORAGE_PROVISIONER] = provisioner
            claim = self._store_claim(
                {**claim, "metadata": {**meta(claim), "annotations": notes}}, why
            )
        node = str(notes.get(ANN_SELECTED_NODE) or "")
        pv = SimVolumeController.new_volume(claim, provisioner, node)
        name = str(meta(pv)["name"])
        if name not in self.volumes:
            self.provisioned[name] = object_key(claim)
            self._store_volume(pv, why)
