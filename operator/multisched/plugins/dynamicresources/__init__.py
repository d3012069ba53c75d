"""DynamicResources: upstream's ``dynamicresources`` package (plugin, claims, binding)."""

from .args import DEFAULT_BINDING_TIMEOUT, DEFAULT_FILTER_TIMEOUT, DynamicResourcesArgs
from .plugin import (
    DEALLOCATED,
    ERR_CANNOT_ALLOCATE,
    ERR_NOT_AVAILABLE,
    NAME,
    STATE_KEY,
    DynamicResources,
)

PLUGIN = DynamicResources

__all__ = [
    "DEALLOCATED",
    "DEFAULT_BINDING_TIMEOUT",
    "DEFAULT_FILTER_TIMEOUT",
    "ERR_CANNOT_ALLOCATE",
    "ERR_NOT_AVAILABLE",
    "NAME",
    "PLUGIN",
    "STATE_KEY",
    "DynamicResources",
    "DynamicResourcesArgs",
]
