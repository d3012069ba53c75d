"""Resource pools reachable from a node: ports incubating/pools_incubating.go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .slices import CompiledNodeSelector, Slice, SliceIndex, compile_node_selector
from .types import AllocationError, Features


class Pool:
    """``Pool``: one driver's pool as seen from the node (maybe incomplete or invalid)."""

    __slots__ = (
        "counter_sets",
        "driver",
        "invalid_reason",
        "is_incomplete",
        "is_invalid",
        "pool",
        "slices_not_targeting_node",
        "slices_targeting_node",
    )

    def __init__(
        self,
        pool_id: tuple[str, str],
        *,
        is_incomplete: bool = False,
        invalid_reason: str = "",
        slices_targeting_node: Sequence[Slice] = (),
        slices_not_targeting_node: Sequence[Slice] = (),
        counter_sets: dict[str, dict[str, Decimal]] | None = None,
    ) -> None:
        self.driver, self.pool = pool_id
        self.is_incomplete = is_incomplete
        self.is_invalid = bool(invalid_reason)
        self.invalid_reason = invalid_reason
        self.slices_targeting_node = slices_targeting_node
        self.slices_not_targeting_node = slices_not_targeting_node
        self.counter_sets = counter_sets or {}

    @property
    def id(self) -> tuple[str, str]:
        return (self.driver, self.pool)

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


class NodeView:
    """The node as selectors read it."""

    __slots__ = ("labels", "name")

    def __init__(self, node: Mapping[str, Any] | None) -> None:
        meta = (node or {}).get("metadata") or {}
        self.name: str | None = meta.get("name") if node is not None else None
        self.labels: Mapping[str, str] = meta.get("labels") or {}


def node_matches(
    node: Mapping[str, Any],
    node_name: str,
    all_nodes: bool,
    node_selector: Mapping[str, Any] | None,
) -> bool:
    """``NodeMatches``; raises AllocationError on a selector that does not parse."""
    return matches(NodeView(node), node_name, all_nodes, compile_node_selector(node_selector))


def matches(
    node: NodeView, node_name: str | None, all_nodes: bool, selector: CompiledNodeSelector | None
) -> bool:
    if node_name:
        return node.name is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        if selector.selector is None:
            raise AllocationError(
                f"failed to parse node selector {go_node_selector(selector.raw)}: {selector.error}"
            )
        return node.name is not None and selector.selector.matches(node.labels, node.name)
    return False


def go_node_selector(raw: Mapping[str, Any]) -> str:
    """``(*v1.NodeSelector).String()``, the generated protobuf text."""

    def requirements(items: Any) -> str:
        out = "[]NodeSelectorRequirement{"
        for r in items or ():
            values = " ".join(str(v) for v in r.get("values") or ())
            out += f"NodeSelectorRequirement{{Key:{r.get('key', '')},"
            out += f"Operator:{r.get('operator', '')},Values:[{values}],}},"
        return out + "}"

    terms = "".join(
        f"NodeSelectorTerm{{MatchExpressions:{requirements(t.get('matchExpressions'))},"
        f"MatchFields:{requirements(t.get('matchFields'))},}},"
        for t in raw.get("nodeSelectorTerms") or ()
    )
    return f"&NodeSelector{{NodeSelectorTerms:[]NodeSelectorTerm{{{terms}}},}}"


def gather_pools(
    slices_for_node: Sequence[Slice], node: NodeView, features: Features, index: SliceIndex
) -> list[Pool]:
    """``GatherPools``: the pools with devices the node can reach, sorted by id, those with
    binding conditions last. Outdated slices are ignored."""
    pools: dict[tuple[str, str], list[Slice]] = {}
    for s in slices_for_node:
        if not features.partitionable_devices and (
            s.per_device_node_selection is not None or s.shared_counters
        ):
            continue
        # Without the gate, grouped slices are ignored, which leaves their pool incomplete.
        if not features.compatibility_groups and s.uses_compatibility_groups:
            continue
        if s.node_name or s.all_nodes or s.node_selector is not None:
            try:
                relevant = matches(node, s.node_name, s.all_nodes, s.node_selector)
            except AllocationError as err:
                raise AllocationError(
                    f"failed to perform node selection for slice {s.name}: {err}"
                ) from None
        elif s.per_device_node_selection:
            relevant = False
            for d in s.devices:
                try:
                    relevant = matches(node, d.node_name, d.all_nodes, d.node_selector)
                except AllocationError as err:
                    raise AllocationError(
                        f"failed to perform node selection for device {d.name} in slice "
                        f"{s.name}: {err}"
                    ) from None
                if relevant:
                    break
        else:
            continue  # some future way of node selection: other pools may still do
        if relevant:
            _add_slice(pools, s)

    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, slices in pools.items():
        count = slices[0].slice_count
        all_slices: list[Slice] | None = None
        if len(slices) != count:
            # Slices of the pool may have been left out as irrelevant for this node: look at
            # all of them (an incomplete pool must fail allocationMode All).
            obsolete, all_slices = _slices_in_pool(index, pool_id, slices[0].generation)
            if obsolete:
                continue  # the driver is replacing this generation
            if not features.compatibility_groups:
                all_slices = [s for s in all_slices if not s.uses_compatibility_groups]
            if len(all_slices) != count:
                result.append(Pool(pool_id, is_incomplete=True))
                continue
        pool = _build_pool(pool_id, slices, features, all_slices)
        if _has_binding_conditions(pool):
            with_binding_conditions.append(pool)
        else:
            result.append(pool)
    result.sort(key=lambda p: p.id)
    with_binding_conditions.sort(key=lambda p: p.id)
    return result + with_binding_conditions


def _add_slice(pools: dict[tuple[str, str], list[Slice]], s: Slice) -> None:
    """Keep only the newest generation of each pool."""
    pool_id = (s.driver, s.pool)
    slices = pools.get(pool_id)
    if slices is None or s.generation > slices[0].generation:
        pools[pool_id] = [s]
    elif s.generation == slices[0].generation:
        slices.append(s)


def _slices_in_pool(
    index: SliceIndex, pool_id: tuple[str, str], generation: int
) -> tuple[bool, list[Slice]]:
    """``checkSlicesInPool``: (obsolete, the pool's slices of this generation)."""
    out = []
    for s in index.by_pool.get(pool_id, ()):
        if s.generation == generation:
            out.append(s)
        elif s.generation > generation:
            return True, []
    return False, out


def _build_pool(
    pool_id: tuple[str, str],
    slices: list[Slice],
    features: Features,
    all_slices: list[Slice] | None,
) -> Pool:
    slices.sort(key=lambda s: s.name)
    partitionable = features.partitionable_devices
    device_slices: list[Slice] = []
    counter_slices: list[Slice] = []
    not_targeting: list[Slice] = []
    for s in slices:
        (counter_slices if partitionable and s.shared_counters else device_slices).append(s)
    if all_slices is not None and len(slices) < len(all_slices):
        targeting = {s.name for s in slices}
        for s in all_slices:
            if s.name in targeting:
                continue
            (counter_slices if partitionable and s.shared_counters else not_targeting).append(s)

    reason = _duplicate_device_name(device_slices)
    if reason:
        return Pool(pool_id, invalid_reason=reason)
    if not partitionable:
        return Pool(pool_id, slices_targeting_node=device_slices)
    counter_sets: dict[str, dict[str, Decimal]] = {}
    for s in counter_slices:
        for name, counters in s.shared_counters:
            if name in counter_sets:
                return Pool(pool_id, invalid_reason=f"duplicate counter set name {name}")
            counter_sets[name] = counters
    reason = _bad_counter_consumption(counter_sets, device_slices) or _bad_counter_consumption(
        counter_sets, not_targeting
    )
    if reason:
        return Pool(pool_id, invalid_reason=reason)
    return Pool(
        pool_id,
        slices_targeting_node=device_slices,
        slices_not_targeting_node=not_targeting,
        counter_sets=counter_sets,
    )


def _duplicate_device_name(slices: list[Slice]) -> str:
    names: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in names:
                return f"duplicate device name {d.name}"
            names.add(d.name)
    return ""


def _bad_counter_consumption(
    counter_sets: dict[str, dict[str, Decimal]], slices: list[Slice]
) -> str:
    for s in slices:
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for name in counters:
                    if name not in counter_set:
                        return f"counter {name} not found in counter set {set_name}"
    return ""


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices_targeting_node for d in s.devices)
