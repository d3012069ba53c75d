"""NodeVolumeLimits: upstream's ``nodevolumelimits`` package (the CSI plugin, and the
in-tree plugins' translation to CSI drivers)."""

from .csi import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NAME, NodeVolumeLimits, driver_not_installed

PLUGIN = NodeVolumeLimits

__all__ = [
    "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "NAME",
    "PLUGIN",
    "NodeVolumeLimits",
    "driver_not_installed",
]
