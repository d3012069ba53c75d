"""The extension points, listed once: every other list of them derives from ``POINTS``.

The config room reads the names (``catalog``, ``models``); the framework keys its
Protocols by them (``framework.interfaces``, which fails at import if a point has no
Protocol or a Protocol no point) and the registry reads a plugin's points from their
methods. This module sits in the lowest room that all of them may import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    #: As KubeSchedulerConfiguration v1 spells it under ``plugins`` ("preFilter").
    name: str
    #: As upstream names it in Go ("PreFilter"): its interface is ``<go_name>Plugin``.
    go_name: str
    #: The methods of the point's Protocol. The first marks a plugin as implementing the
    #: point; a plugin enabled there must have the others too (checked at profile build).
    methods: tuple[str, ...] = ()
    #: A point of v1.37's pod group (workload) scheduling cycle, added to ``plugins`` after
    #: v1.28. multisched has no such cycle: the point is read so that written
    #: configurations load, must stay empty (``checks.check_plugins``) and has no Protocol.
    pod_group: bool = False

    @property
    def field(self) -> str:
        """The ``config.models.Plugins`` attribute ("pre_filter"); its alias is ``name``."""
        return re.sub(r"(?=[A-Z])", "_", self.name).lower()


#: In upstream's order, the order plugins lists are shown in (``validate``, ``/configz``).
POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("preEnqueue", "PreEnqueue", ("pre_enqueue",)),
    ExtensionPoint("queueSort", "QueueSort", ("less",)),
    ExtensionPoint("preFilter", "PreFilter", ("pre_filter", "pre_filter_extensions")),
    ExtensionPoint("filter", "Filter", ("filter",)),
    ExtensionPoint("postFilter", "PostFilter", ("post_filter",)),
    ExtensionPoint("preScore", "PreScore", ("pre_score",)),
    ExtensionPoint("score", "Score", ("score",)),
    ExtensionPoint("reserve", "Reserve", ("reserve", "unreserve")),
    ExtensionPoint("permit", "Permit", ("permit",)),
    ExtensionPoint("preBind", "PreBind", ("pre_bind",)),
    ExtensionPoint("bind", "Bind", ("bind",)),
    ExtensionPoint("postBind", "PostBind", ("post_bind",)),
    ExtensionPoint("placementGenerate", "PlacementGenerate", pod_group=True),
    ExtensionPoint("placementScore", "PlacementScore", pod_group=True),
    ExtensionPoint("podGroupPostFilter", "PodGroupPostFilter", pod_group=True),
)

#: The points multisched runs, by name.
EXTENSION_POINTS: tuple[str, ...] = tuple(p.name for p in POINTS if not p.pod_group)
#: The pod group points: read, must stay empty.
POD_GROUP_EXTENSION_POINTS: tuple[str, ...] = tuple(p.name for p in POINTS if p.pod_group)
#: Every point by name.
BY_NAME: Mapping[str, ExtensionPoint] = {p.name: p for p in POINTS}
