"""InterPodAffinity: upstream's ``interpodaffinity`` package (plugin, filtering, scoring)."""

from .plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    MAX_HARD_POD_AFFINITY_WEIGHT,
    MIN_HARD_POD_AFFINITY_WEIGHT,
    NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)

PLUGIN = InterPodAffinity

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "MAX_HARD_POD_AFFINITY_WEIGHT",
    "MIN_HARD_POD_AFFINITY_WEIGHT",
    "NAME",
    "PLUGIN",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]
