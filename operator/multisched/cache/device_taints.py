"""DeviceTaintRules applied to ResourceSlices (DRADeviceTaintRules, GA in v1.37): upstream
``resourceslice/tracker``'s ``ListPatchedResourceSlices``, as data.

A rule's taint is added, as written (effect ``None`` and ``timeAdded`` included), after a
device's own taints to every device its ``deviceSelector`` matches: each of driver, pool
and device name that is set must equal the slice's; an empty selector matches every
device, a missing one none. Rules apply in name order (upstream's follow its informer's
map, in no fixed order; only the set of taints matters to the allocator).

Only slices a rule touches are copied, and a copy is kept until its slice or a rule
touching it changes, so the allocator's per-slice caches (keyed by object identity) hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]


class TaintRule:
    """One DeviceTaintRule's selector and taint, read once."""

    __slots__ = ("device", "driver", "matches_none", "pool", "taint")

    def __init__(self, rule: Mapping[str, Any]) -> None:
        spec = rule.get("spec") or {}
        selector = spec.get("deviceSelector")
        #: No selector selects no device (an empty one selects all).
        self.matches_none = not isinstance(selector, Mapping)
        selector = selector if isinstance(selector, Mapping) else {}
        self.driver: str | None = selector.get("driver")
        self.pool: str | None = selector.get("pool")
        self.device: str | None = selector.get("device")
        self.taint: Obj = dict(spec.get("taint") or {})

    def _key(self) -> tuple[Any, ...]:
        return (self.matches_none, self.driver, self.pool, self.device, self.taint)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaintRule) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def matches_pool(self, spec: Mapping[str, Any]) -> bool:
        if self.matches_none:
            return False
        if self.driver is not None and self.driver != spec.get("driver", ""):
            return False
        pool = (spec.get("pool") or {}).get("name", "")
        return self.pool is None or self.pool == pool

    def matches_device(self, device: Mapping[str, Any]) -> bool:
        return self.device is None or self.device == device.get("name", "")

    def touches(self, slice_: Mapping[str, Any]) -> bool:
        """Whether the rule taints any device of the slice."""
        spec = slice_.get("spec") or {}
        if not self.matches_pool(spec):
            return False
        return any(self.matches_device(d) for d in spec.get("devices") or ())


def apply_rules(slice_: Obj, rules: Sequence[TaintRule]) -> Obj:
    """The slice with the rules' taints added (upstream ``applyPatches``); the slice itself
    when no rule matches a device of it. Copies only what changes: the input is never
    modified, and unchanged devices are shared with it."""
    spec = slice_.get("spec") or {}
    devices = spec.get("devices") or ()
    added: dict[int, list[Obj]] = {}
    for rule in rules:
        if not rule.matches_pool(spec):
            continue
        for i, device in enumerate(devices):
            if rule.matches_device(device):
                added.setdefault(i, []).append(rule.taint)
    if not added:
        return slice_
    patched = list(devices)
    for i, taints in added.items():
        device = devices[i]
        patched[i] = {**device, "taints": [*(device.get("taints") or ()), *taints]}
    return {**slice_, "spec": {**spec, "devices": patched}}


def _device_taints(slice_: Mapping[str, Any]) -> list[Any]:
    return [d.get("taints") or [] for d in (slice_.get("spec") or {}).get("devices") or ()]


class PatchedSlices:
    """The rules, and the patched copies of the slices they touch (by slice key)."""

    __slots__ = ("_ordered", "patched", "rules")

    def __init__(self) -> None:
        self.rules: dict[str, TaintRule] = {}
        self._ordered: tuple[TaintRule, ...] = ()
        #: Slice key -> the slice as patched; a slice no rule touches has no entry.
        self.patched: dict[str, Obj] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def visible(self, key: str, raw: Obj) -> Obj:
        """The slice as readers see it."""
        return self.patched.get(key, raw)

    def slice_changed(self, key: str, raw: Obj | None) -> None:
        """A slice was added or changed (``raw``) or deleted (None): patch it again."""
        patched = apply_rules(raw, self._ordered) if raw is not None and self._ordered else raw
        if patched is None or patched is raw:
            self.patched.pop(key, None)
        else:
            self.patched[key] = patched

    def rule_changed(
        self, name: str, rule: Mapping[str, Any] | None, slices: Mapping[str, Obj]
    ) -> list[tuple[Obj, Obj]]:
        """Rule ``name`` was added or changed (``rule``) or deleted (None). Returns the
        slices whose devices' taints changed, as (old, new) of what readers see: upstream's
        tracker sends exactly those as ResourceSlice updates. A change that leaves the
        taints as they were (a status update, say) keeps the patched copies."""
        old = self.rules.pop(name, None)
        new = TaintRule(rule) if rule is not None else None
        if new is not None:
            self.rules[name] = new
        if old == new:
            return []
        self._ordered = tuple(self.rules[n] for n in sorted(self.rules))
        changed: list[tuple[Obj, Obj]] = []
        for key, raw in slices.items():
            if not (
                (old is not None and old.touches(raw)) or (new is not None and new.touches(raw))
            ):
                continue
            before = self.patched.get(key, raw)
            self.slice_changed(key, raw)
            after = self.patched.get(key, raw)
            if _device_taints(before) != _device_taints(after):
                changed.append((before, after))
            elif before is raw:
                self.patched.pop(key, None)
            else:
                self.patched[key] = before
        return changed
