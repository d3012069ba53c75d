"""Upstream's default plugins (``getDefaultPlugins`` in pkg/scheduler/apis/config/v1/
default_plugins.go) minus the volume plugins, which multisched does not implement.

Defaults only populate multiPoint; every specific point starts empty and is filled by the
framework's multiPoint expansion, exactly as upstream since v1beta3.
"""

from __future__ import annotations

from .models import Plugin, Plugins, PluginSet

#: Upstream order and weights; the volume plugins upstream lists between NodeResourcesFit
#: and PodTopologySpread (and DynamicResources before DefaultPreemption) are left out.
DEFAULT_MULTI_POINT: tuple[Plugin, ...] = (
    Plugin(name="SchedulingGates"),
    Plugin(name="PrioritySort"),
    Plugin(name="NodeUnschedulable"),
    Plugin(name="NodeName"),
    Plugin(name="TaintToleration", weight=3),
    Plugin(name="NodeAffinity", weight=2),
    Plugin(name="NodePorts"),
    Plugin(name="NodeResourcesFit", weight=1),
    Plugin(name="PodTopologySpread", weight=2),
    Plugin(name="InterPodAffinity", weight=2),
    Plugin(name="DefaultPreemption"),
    Plugin(name="NodeResourcesBalancedAllocation", weight=1),
    Plugin(name="ImageLocality", weight=1),
    Plugin(name="DefaultBinder"),
)

#: Upstream plugins multisched refuses to enable: they need PV/PVC/CSI/DRA state we don't track.
UNSUPPORTED_PLUGINS: frozenset[str] = frozenset(
    {
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
        "NodeVolumeLimits",
        "EBSLimits",
        "GCEPDLimits",
        "AzureDiskLimits",
        "CinderLimits",
        "DynamicResources",
    }
)


def unsupported_message(name: str) -> str:
    scope = (
        "dynamic resource allocation is out of scope"
        if name == "DynamicResources"
        else "volume plugins are out of scope"
    )
    return f"plugin {name} is not supported by multisched ({scope})"


def default_plugins() -> Plugins:
    """A fresh default ``Plugins`` (only multiPoint is populated)."""
    return Plugins(multi_point=PluginSet(enabled=list(DEFAULT_MULTI_POINT)))
