"""What the config room needs to know about plugins, without importing them.

The registry (in ``multisched.framework``) implements this protocol; the config room only
reads it, so imports keep flowing downward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel

# The point names come from the one table (``extension_points``); the config room reads them
# here, beside the plugins' view.
from .extension_points import EXTENSION_POINTS, POD_GROUP_EXTENSION_POINTS

__all__ = ["EXTENSION_POINTS", "POD_GROUP_EXTENSION_POINTS", "PluginCatalog", "PluginSpec"]


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
