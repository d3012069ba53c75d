"""PodTopologySpread: upstream's ``podtopologyspread`` package (plugin, common, filtering,
scoring, and the plugin's args)."""

from .args import (
    DO_NOT_SCHEDULE,
    LIST_DEFAULTING,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
    TopologySpreadConstraint,
)
from .plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
)

PLUGIN = PodTopologySpread

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LIST_DEFAULTING",
    "NAME",
    "PLUGIN",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "TopologySpreadConstraint",
]
