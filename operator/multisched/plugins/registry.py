"""The in-tree plugins, listed as upstream's ``plugins/registry.go`` lists them.

A new built-in plugin is added here by hand, to ``in_tree_plugins`` and to the tables of
the extension points it implements; ``tests/plugins/test_registry.py`` fails for a module
that defines ``PLUGIN`` but is missing, and for a table that disagrees with the methods.
Out-of-tree plugins come from the ``multisched.plugins`` entry-point group instead
(``framework.registry``).
"""

from __future__ import annotations

from multisched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)

from .capacityscheduling import CapacityScheduling
from .coscheduling import Coscheduling
from .default_binder import DefaultBinder
from .default_preemption import DefaultPreemption
from .dynamicresources import DynamicResources
from .image_locality import ImageLocality
from .interpodaffinity import InterPodAffinity
from .node_affinity import NodeAffinity
from .node_declared_features import NodeDeclaredFeatures
from .node_name import NodeName
from .node_ports import NodePorts
from .node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from .node_resources_fit import NodeResourcesFit
from .node_unschedulable import NodeUnschedulable
from .nodevolumelimits import NodeVolumeLimits
from .podtopologyspread import PodTopologySpread
from .priority_sort import PrioritySort
from .scheduling_gates import SchedulingGates
from .taint_toleration import TaintToleration
from .volumebinding import VolumeBinding
from .volumerestrictions import VolumeRestrictions
from .volumezone import VolumeZone


def in_tree_plugins() -> list[type[Plugin]]:
    """Every built-in plugin class (upstream ``NewInTreeRegistry``), by module name."""
    return [
        CapacityScheduling,
        Coscheduling,
        DefaultBinder,
        DefaultPreemption,
        DynamicResources,
        ImageLocality,
        InterPodAffinity,
        NodeAffinity,
        NodeDeclaredFeatures,
        NodeName,
        NodePorts,
        NodeResourcesBalancedAllocation,
        NodeResourcesFit,
        NodeUnschedulable,
        NodeVolumeLimits,
        PodTopologySpread,
        PrioritySort,
        SchedulingGates,
        TaintToleration,
        VolumeBinding,
        VolumeRestrictions,
        VolumeZone,
    ]


# -- By extension point --------------------------------------------------------------------
#
# Each in-tree plugin under the Protocol of every point it implements (framework/interfaces):
# the runtime checks that a plugin has its points' methods when it builds a profile; these
# tables are where mypy checks their signatures. Nothing at run time reads them but the
# tests, which hold them to the registry: a table per point's Protocol, each plugin in the
# tables of the points the registry reads from its methods and in no other.

PRE_ENQUEUE: tuple[type[PreEnqueuePlugin], ...] = (
    DefaultPreemption,
    DynamicResources,
    SchedulingGates,
)
QUEUE_SORT: tuple[type[QueueSortPlugin], ...] = (Coscheduling, PrioritySort)
PRE_FILTER: tuple[type[PreFilterPlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DynamicResources,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodePorts,
    NodeResourcesFit,
    NodeVolumeLimits,
    PodTopologySpread,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
FILTER: tuple[type[FilterPlugin], ...] = (
    DynamicResources,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodePorts,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
POST_FILTER: tuple[type[PostFilterPlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DefaultPreemption,
    DynamicResources,
)
PRE_SCORE: tuple[type[PreScorePlugin], ...] = (
    InterPodAffinity,
    NodeAffinity,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
)
SCORE: tuple[type[ScorePlugin], ...] = (
    DynamicResources,
    ImageLocality,
    InterPodAffinity,
    NodeAffinity,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
)
RESERVE: tuple[type[ReservePlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DynamicResources,
    VolumeBinding,
)
PERMIT: tuple[type[PermitPlugin], ...] = (Coscheduling,)
PRE_BIND: tuple[type[PreBindPlugin], ...] = (DynamicResources, VolumeBinding)
BIND: tuple[type[BindPlugin], ...] = (DefaultBinder,)
POST_BIND: tuple[type[PostBindPlugin], ...] = ()

#: A point's Protocol (``framework.interfaces.POINT_PROTOCOLS``) -> its in-tree plugins.
BY_PROTOCOL: dict[type, tuple[type[Plugin], ...]] = {
    PreEnqueuePlugin: PRE_ENQUEUE,
    QueueSortPlugin: QUEUE_SORT,
    PreFilterPlugin: PRE_FILTER,
    FilterPlugin: FILTER,
    PostFilterPlugin: POST_FILTER,
    PreScorePlugin: PRE_SCORE,
    ScorePlugin: SCORE,
    ReservePlugin: RESERVE,
    PermitPlugin: PERMIT,
    PreBindPlugin: PRE_BIND,
    BindPlugin: BIND,
    PostBindPlugin: POST_BIND,
}

# The optional extensions the runtime looks up by name.
BATCH_FILTER: tuple[type[BatchFilterPlugin], ...] = (
    InterPodAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodeResourcesFit,
    NodeUnschedulable,
    PodTopologySpread,
    TaintToleration,
)
BATCH_SCORE: tuple[type[BatchScorePlugin], ...] = (
    ImageLocality,
    InterPodAffinity,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    PodTopologySpread,
    TaintToleration,
)
NORMALIZE_SCORE: tuple[type[NormalizeScorePlugin], ...] = (
    DynamicResources,
    InterPodAffinity,
    NodeAffinity,
    PodTopologySpread,
    TaintToleration,
)
ENQUEUE_EXTENSIONS: tuple[type[EnqueueExtensions], ...] = (
    CapacityScheduling,
    Coscheduling,
    DefaultPreemption,
    DynamicResources,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodePorts,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    SchedulingGates,
    TaintToleration,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
