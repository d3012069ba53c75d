"""Upstream's default plugins (``getDefaultPlugins`` and ``applyFeatureGates`` in
pkg/scheduler/apis/config/v1/default_plugins.go, v1.37 with its default feature gates) minus
the in-tree volume limits (EBSLimits, GCEPDLimits, AzureDiskLimits), which count only in-tree
volumes of nodes that have not migrated them to CSI drivers.

Defaults only populate multiPoint; every specific point starts empty and is filled by the
framework's multiPoint expansion, exactly as upstream since v1beta3.
"""

from __future__ import annotations

from collections.abc import Container

from .models import Plugin, Plugins, PluginSet

#: Upstream order and weights, with DynamicResources (the DynamicResourceAllocation gate,
#: GA) before DefaultPreemption as ``applyDynamicResources`` puts it.
DEFAULT_MULTI_POINT: tuple[Plugin, ...] = (
    Plugin(name="SchedulingGates"),
    Plugin(name="PrioritySort"),
    Plugin(name="NodeName"),
    Plugin(name="NodeUnschedulable"),
    Plugin(name="TaintToleration", weight=3),
    Plugin(name="NodeAffinity", weight=2),
    Plugin(name="NodePorts"),
    Plugin(name="NodeResourcesFit", weight=1),
    Plugin(name="VolumeRestrictions"),
    Plugin(name="NodeVolumeLimits"),
    Plugin(name="VolumeBinding"),
    Plugin(name="VolumeZone"),
    Plugin(name="PodTopologySpread", weight=2),
    Plugin(name="InterPodAffinity", weight=2),
    Plugin(name="DynamicResources", weight=2),
    Plugin(name="DefaultPreemption"),
    Plugin(name="NodeResourcesBalancedAllocation", weight=1),
    Plugin(name="ImageLocality", weight=1),
    Plugin(name="DefaultBinder"),
)

#: Defaults upstream appends behind a gate that is on in v1.37 (NodeDeclaredFeatures, GA).
#: Here the gate is the plugin being registered: until it is, the default set runs without it
#: rather than every profile failing on a default that does not exist.
GATED_DEFAULTS: tuple[Plugin, ...] = (Plugin(name="NodeDeclaredFeatures"),)

#: Plugins KubeSchedulerConfiguration v1 refuses (upstream ``invalidPluginsByVersion``),
#: with what does their work now.
REMOVED_PLUGINS: dict[str, str] = {
    "SelectorSpread": (
        "PodTopologySpread's default constraints spread the pods of a Service or controller"
    ),
}
#: Upstream plugins multisched refuses to enable: the in-tree volume limits (CSI migration
#: made NodeVolumeLimits count those volumes) and the removed.
UNSUPPORTED_PLUGINS: frozenset[str] = frozenset(
    {"EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits"}
) | frozenset(REMOVED_PLUGINS)


def unsupported_message(name: str) -> str:
    if name in REMOVED_PLUGINS:
        return (
            f"plugin {name} was removed from KubeSchedulerConfiguration v1 (kube-scheduler "
            f"v1.28 refuses it too); {REMOVED_PLUGINS[name]} in its place"
        )
    return (
        f"plugin {name} is not supported by multisched (in-tree volume limits are counted "
        "by NodeVolumeLimits through CSI migration)"
    )


def default_plugins(registered: Container[str] = ()) -> Plugins:
    """A fresh default ``Plugins`` (only multiPoint is populated); ``registered`` decides
    which of ``GATED_DEFAULTS`` join."""
    gated = [p for p in GATED_DEFAULTS if p.name in registered]
    return Plugins(multi_point=PluginSet(enabled=[*DEFAULT_MULTI_POINT, *gated]))
