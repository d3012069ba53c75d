"""What CapacityScheduling's PreFilter leaves in the cycle state for PostFilter and the
PreFilter extensions (upstream ``PreFilterState`` and ``ElasticQuotaSnapshotState``)."""

from __future__ import annotations

from multisched.cache import Resource
from multisched.framework import CycleState

from .elastic_quota import ElasticQuotaInfos

NAME = "CapacityScheduling"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ELASTIC_QUOTA_SNAPSHOT_KEY = "ElasticQuotaSnapshot"


class PreFilterState:
    """The pod's request, alone and with the nominated pods that come before it.

    ``nominated_pods_req_in_eq_with_pod_req`` adds the pods nominated in the pod's own
    namespace with at least its priority; ``nominated_pods_req_with_pod_req`` adds those and
    the pods nominated in other quotas not over their min. Never changed once written.
    """

    __slots__ = (
        "nominated_pods_req_in_eq_with_pod_req",
        "nominated_pods_req_with_pod_req",
        "pod_req",
    )

    def __init__(
        self,
        pod_req: Resource,
        nominated_pods_req_in_eq_with_pod_req: Resource | None = None,
        nominated_pods_req_with_pod_req: Resource | None = None,
    ) -> None:
        self.pod_req = pod_req
        in_eq, in_all = nominated_pods_req_in_eq_with_pod_req, nominated_pods_req_with_pod_req
        self.nominated_pods_req_in_eq_with_pod_req = Resource() if in_eq is None else in_eq
        self.nominated_pods_req_with_pod_req = Resource() if in_all is None else in_all

    def clone(self) -> PreFilterState:
        return self


class ElasticQuotaSnapshotState:
    """The cycle's copy of every quota, which preemption's dry runs change."""

    __slots__ = ("elastic_quota_infos",)

    def __init__(self, elastic_quota_infos: ElasticQuotaInfos) -> None:
        self.elastic_quota_infos = elastic_quota_infos

    def clone(self) -> ElasticQuotaSnapshotState:
        return ElasticQuotaSnapshotState(self.elastic_quota_infos.clone())


def read_error(key: str) -> str:
    """Upstream's error for state PreFilter did not write (``framework.ErrNotFound``)."""
    return f'error reading "{key}" from cycleState: not found'


def pre_filter_state(state: CycleState) -> PreFilterState | None:
    value = state.get(PRE_FILTER_STATE_KEY)
    return value if isinstance(value, PreFilterState) else None


def elastic_quota_snapshot(state: CycleState) -> ElasticQuotaSnapshotState | None:
    value = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
    return value if isinstance(value, ElasticQuotaSnapshotState) else None
