"""Which scheduler configuration a cluster runs, and what a proposed one changes.

Several SchedulerProfile objects (``kubectl get sp -o yaml``, a snapshot, the live cluster)
combine as the operator combines them (``ProfileBook``: oldest first, a contested
schedulerName stays with the older object, an invalid object is left out). A proposed
SchedulerProfile replaces the object of the same name, as ``kubectl apply`` would; a proposed
KubeSchedulerConfiguration replaces them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from multisched.config import ResolvedConfig
from multisched.framework import Registry
from multisched.scheduler import Scheduler

#: (where, object) as ``ClusterInput.configs`` holds them.
Located = tuple[str, dict[str, Any]]
#: The strict single-configuration loader (``validate``'s messages); raises ValueError.
LoadOne = Callable[[Sequence[Located], Registry], ResolvedConfig]


def _name(obj: Mapping[str, Any]) -> str:
    # Configurations come unchecked from files (the config room words their problems):
    # ``metadata: true`` must not stop us before it does.
    meta = obj.get("metadata")
    return str((meta.get("name") if isinstance(meta, Mapping) else None) or "")


def _is_named_profile(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "SchedulerProfile" and bool(_name(obj))


def overlay(current: Sequence[Located], proposed: Sequence[Located]) -> list[Located]:
    """``current`` after applying ``proposed``: same-named SchedulerProfiles are replaced
    (keeping the live object's age, so it keeps its place in the combination order)."""
    if not proposed:
        return list(current)
    if not current or not all(_is_named_profile(o) for _, o in (*current, *proposed)):
        return list(proposed)
    out = list(current)
    for where, obj in proposed:
        index = next((i for i, (_, o) in enumerate(out) if _name(o) == _name(obj)), None)
        if index is None:
            out.append((where, obj))
            continue
        old_meta = out[index][1].get("metadata") or {}
        meta = {**(obj.get("metadata") or {})}
        for key in ("uid", "creationTimestamp"):
            if old_meta.get(key) is not None:
                meta[key] = old_meta[key]
        meta["generation"] = int(old_meta.get("generation") or 0) + 1
        out[index] = (where, {**obj, "metadata": meta})
    return out


class Effective:
    """The combined configuration, who serves each schedulerName, and what was left out."""

    def __init__(self, config: ResolvedConfig, owners: dict[str, str], left_out: list[str]) -> None:
        self.config = config
        self.owners = owners
        self.left_out = left_out


def effective(
    configs: Sequence[Located],
    registry: Registry,
    load_one: LoadOne,
    proposed: Sequence[Located] = (),
    live: bool = False,
) -> Effective:
    """Raises ValueError (with ``validate``'s messages) for a bad proposal or a lone bad config.

    ``live``: the configurations are a cluster's SchedulerProfiles, where none at all is a
    state like any other (the operator then serves no schedulerName), not a mistake.
    """
    for where, obj in proposed:
        load_one([(where, obj)], registry)  # a proposal must validate on its own
    configs = overlay(configs, proposed)
    if live and not configs:
        return Effective(ResolvedConfig(profiles=()), {}, [])
    if len(configs) <= 1 or not all(_is_named_profile(o) for _, o in configs):
        config = load_one(configs, registry)
        owners = {p.scheduler_name: _name(configs[0][1]) for p in config.profiles}
        return Effective(config, owners, [])
    return _combine(configs, registry)


def _combine(configs: Sequence[Located], registry: Registry) -> Effective:
    from multisched.operator.profiles import ProfileBook

    def build(config: ResolvedConfig) -> dict[str, Any]:
        return dict(Scheduler(config, registry).profiles)

    book = ProfileBook(registry, build)
    for _, obj in configs:
        book.observe(obj)
    combined = book.combine()
    left_out = [
        f"SchedulerProfile {name} left out ({v.reason}): {v.message.splitlines()[0]}"
        for name, v in sorted(combined.verdicts.items())
        if not v.ready
    ]
    if not combined.config.profiles:
        raise ValueError("no valid SchedulerProfile: " + "; ".join(left_out))
    return Effective(combined.config, dict(combined.owners), left_out)
