"""NodeVolumeLimits: upstream's ``nodevolumelimits`` package (the CSI plugin, and the
in-tree plugins' migration to CSI drivers)."""

from .csi import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NAME, NodeVolumeLimits, csi_attach_limit_key

PLUGIN = NodeVolumeLimits

__all__ = [
    "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "NAME",
    "PLUGIN",
    "NodeVolumeLimits",
    "csi_attach_limit_key",
]
