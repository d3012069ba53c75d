"""Upstream's default plugins (``getDefaultPlugins`` in pkg/scheduler/apis/config/v1/
default_plugins.go) minus the in-tree volume limits (EBSLimits, GCEPDLimits, AzureDiskLimits),
which count only in-tree volumes of nodes that have not migrated them to CSI drivers.

Defaults only populate multiPoint; every specific point starts empty and is filled by the
framework's multiPoint expansion, exactly as upstream since v1beta3.
"""

from __future__ import annotations

from .models import Plugin, Plugins, PluginSet

#: Upstream order and weights; the in-tree volume limits upstream lists beside
#: NodeVolumeLimits (and DynamicResources, alpha, before DefaultPreemption) are left out.
DEFAULT_MULTI_POINT: tuple[Plugin, ...] = (
    Plugin(name="SchedulingGates"),
    Plugin(name="PrioritySort"),
    Plugin(name="NodeUnschedulable"),
    Plugin(name="NodeName"),
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
    Plugin(name="DefaultPreemption"),
    Plugin(name="NodeResourcesBalancedAllocation", weight=1),
    Plugin(name="ImageLocality", weight=1),
    Plugin(name="DefaultBinder"),
)

#: Plugins KubeSchedulerConfiguration v1 refuses (upstream ``invalidPluginsByVersion``),
#: with what does their work now.
REMOVED_PLUGINS: dict[str, str] = {
    "SelectorSpread": (
        "PodTopologySpread's default constraints spread the pods of a Service or controller"
    ),
}
#: Upstream plugins multisched refuses to enable: the in-tree volume limits (CSI migration
#: made NodeVolumeLimits count those volumes), dynamic resource allocation, and the removed.
UNSUPPORTED_PLUGINS: frozenset[str] = frozenset(
    {"EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits", "DynamicResources"}
) | frozenset(REMOVED_PLUGINS)


def unsupported_message(name: str) -> str:
    if name in REMOVED_PLUGINS:
        return (
            f"plugin {name} was removed from KubeSchedulerConfiguration v1 (kube-scheduler "
            f"v1.28 refuses it too); {REMOVED_PLUGINS[name]} in its place"
        )
    scope = (
        "dynamic resource allocation is out of scope"
        if name == "DynamicResources"
        else "in-tree volume limits are counted by NodeVolumeLimits through CSI migration"
    )
    return f"plugin {name} is not supported by multisched ({scope})"


def default_plugins() -> Plugins:
    """A fresh default ``Plugins`` (only multiPoint is populated)."""
    return Plugins(multi_point=PluginSet(enabled=list(DEFAULT_MULTI_POINT)))
