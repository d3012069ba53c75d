"""Coscheduling: scheduler-plugins' gang scheduling of PodGroups (``pkg/coscheduling``)."""

from .args import (
    DEFAULT_PERMIT_WAITING_TIME_SECONDS,
    DEFAULT_POD_GROUP_BACKOFF_SECONDS,
    DEFAULT_POD_GROUP_REJECT_PERCENTAGE,
    CoschedulingArgs,
)
from .core import (
    PERMIT_STATE_KEY,
    SWEEP_MIN,
    PermitVerdict,
    PodGroupManager,
    check_cluster_resource,
)
from .plugin import (
    MSG_NO_POD_GROUP,
    MSG_POD_GROUP_NOT_FOUND,
    MSG_POST_FILTER_REJECTION,
    MSG_UNRESERVE_REJECTION,
    NAME,
    Coscheduling,
)

PLUGIN = Coscheduling

__all__ = [
    "DEFAULT_PERMIT_WAITING_TIME_SECONDS",
    "DEFAULT_POD_GROUP_BACKOFF_SECONDS",
    "DEFAULT_POD_GROUP_REJECT_PERCENTAGE",
    "MSG_NO_POD_GROUP",
    "MSG_POD_GROUP_NOT_FOUND",
    "MSG_POST_FILTER_REJECTION",
    "MSG_UNRESERVE_REJECTION",
    "NAME",
    "PERMIT_STATE_KEY",
    "PLUGIN",
    "SWEEP_MIN",
    "Coscheduling",
    "CoschedulingArgs",
    "PermitVerdict",
    "PodGroupManager",
    "check_cluster_resource",
]
