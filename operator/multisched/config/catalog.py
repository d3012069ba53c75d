"""What the config room needs to know about plugins, without importing them.

The registry (in ``multisched.framework``) implements this protocol; the config room only
reads it, so imports keep flowing downward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel

#: Extension point names exactly as spelled in KubeSchedulerConfiguration v1 ``plugins``.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

#: The points of v1.37's pod group (workload) scheduling cycle, added to ``plugins`` after
#: v1.28. multisched has no such cycle: they are read so that written configurations load,
#: and must stay empty (``checks.check_plugins`` names the point when one lists a plugin).
POD_GROUP_EXTENSION_POINTS: tuple[str, ...] = (
    "placementGenerate",
    "placementScore",
    "podGroupPostFilter",
)


class PluginSpec(Protocol):
    """A registered plugin as the config room sees it."""

    @property
    def name(self) -> str: ...

    @property
    def extension_points(self) -> frozenset[str]:
        """The extension points (names from ``EXTENSION_POINTS``) the plugin implements."""
        ...

    @property
    def args_model(self) -> type[BaseModel] | None:
        """The pydantic model of the plugin's ``pluginConfig`` args, or None if it takes none."""
        ...


PluginCatalog = Mapping[str, PluginSpec]
