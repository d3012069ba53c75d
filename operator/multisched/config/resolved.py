"""The validated, merged result of a scheduler configuration: plain frozen values.

This is what the framework builds profiles from; no pydantic past this point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class ResolvedProfile:
    """One profile after defaults, merge and multiPoint expansion (upstream order kept)."""

    scheduler_name: str
    #: Per-profile override of the global percentage; None means "use the global one".
    percentage_of_nodes_to_score: int | None
    #: Extension point name (``EXTENSION_POINTS``) -> plugin names in run order.
    plugins: dict[str, tuple[str, ...]]
    #: Score plugin name -> weight (>= 1).
    score_weights: dict[str, int]
    #: Plugin name -> its args, validated with the plugin's args model (defaults filled in).
    plugin_args: dict[str, BaseModel] = field(default_factory=dict)

    def all_plugin_names(self) -> tuple[str, ...]:
        """Every plugin the profile instantiates, each once, in first-seen order."""
        seen: dict[str, None] = {}
        for names in self.plugins.values():
            for name in names:
                seen.setdefault(name, None)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    profiles: tuple[ResolvedProfile, ...]
    #: 0 means adaptive (``50 - nodes/125``, floored at 5), as upstream.
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0

    def profile(self, scheduler_name: str) -> ResolvedProfile | None:
        for prof in self.profiles:
            if prof.scheduler_name == scheduler_name:
                return prof
        return None


def component_config(config: ResolvedConfig) -> dict[str, Any]:
    """The configuration in force as a KubeSchedulerConfiguration v1 document, every
    profile expanded (``/configz``: what kube-scheduler shows as its componentconfig)."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": config.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "profiles": [_profile_document(p) for p in config.profiles],
    }


def _profile_document(prof: ResolvedProfile) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    for point, names in prof.plugins.items():
        if not names:
            continue
        enabled = []
        for name in names:
            entry: dict[str, Any] = {"name": name}
            if point == "score":
                entry["weight"] = prof.score_weights.get(name, 1)
            enabled.append(entry)
        plugins[point] = {"enabled": enabled}
    doc: dict[str, Any] = {"schedulerName": prof.scheduler_name, "plugins": plugins}
    if prof.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = prof.percentage_of_nodes_to_score
    doc["pluginConfig"] = [
        {"name": name, "args": args.model_dump(mode="json", by_alias=True)}
        for name, args in sorted(prof.plugin_args.items())
    ]
    return doc
