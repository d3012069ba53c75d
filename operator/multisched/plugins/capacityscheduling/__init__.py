"""CapacityScheduling: scheduler-plugins' elastic quota plugin (``pkg/capacityscheduling``)."""

from .elastic_quota import (
    LOWER_BOUND_OF_MIN,
    UPPER_BOUND_OF_MAX,
    ElasticQuotaInfo,
    ElasticQuotaInfos,
)
from .plugin import CapacityScheduling, msg_over_max, msg_over_min
from .preemption import MSG_QUOTA_EXCEEDED, QuotaPreemption, msg_no_victims
from .state import (
    ELASTIC_QUOTA_SNAPSHOT_KEY,
    NAME,
    PRE_FILTER_STATE_KEY,
    ElasticQuotaSnapshotState,
    PreFilterState,
)

PLUGIN = CapacityScheduling

__all__ = [
    "ELASTIC_QUOTA_SNAPSHOT_KEY",
    "LOWER_BOUND_OF_MIN",
    "MSG_QUOTA_EXCEEDED",
    "NAME",
    "PLUGIN",
    "PRE_FILTER_STATE_KEY",
    "UPPER_BOUND_OF_MAX",
    "CapacityScheduling",
    "ElasticQuotaInfo",
    "ElasticQuotaInfos",
    "ElasticQuotaSnapshotState",
    "PreFilterState",
    "QuotaPreemption",
    "msg_no_victims",
    "msg_over_max",
    "msg_over_min",
]
