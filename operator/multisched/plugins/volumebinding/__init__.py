"""VolumeBinding: upstream's ``volumebinding`` package (plugin, binder, PV matching)."""

from .binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from .plugin import ERR_UNBOUND_IMMEDIATE, NAME, VolumeBinding, VolumeBindingArgs

PLUGIN = VolumeBinding

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "NAME",
    "PLUGIN",
    "VolumeBinding",
    "VolumeBindingArgs",
]
