"""``ElasticQuotaInfo``: one namespace's quota (min, max) and what its pods use.

scheduler-plugins' ``elasticquota.go`` (v0.34.7, as v0.28): ``used`` counts the requests of the
namespace's pods on nodes; preemption's dry runs add and remove pods from a per-cycle copy.
The comparisons keep upstream's quirks: cpu, memory, ephemeral storage and pods not listed
in a bound count as 0 there, while an extended resource a bound does not list is compared
with ``bound`` itself (unlimited for max, 0 for min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import PodInfo, Resource

#: Upstream ``UpperBoundOfMax`` (math.MaxInt64) and ``LowerBoundOfMin``.
UPPER_BOUND_OF_MAX = 2**63 - 1
LOWER_BOUND_OF_MIN = 0


def bound_resource(bound: int) -> Resource:
    """Upstream ``makeResourceListForBound``: cpu, memory and ephemeral storage at ``bound``."""
    return Resource(milli_cpu=bound, memory=bound, ephemeral_storage=bound)


def over(x1: Resource, x2: Resource, y: Resource, bound: int) -> bool:
    """Upstream ``cmp2``: whether ``x1 + x2`` exceeds ``y`` in any resource.

    Only the extended resources of ``x1`` are compared; one ``y`` lacks counts as ``bound``.
    """
    if (
        x1.milli_cpu + x2.milli_cpu > y.milli_cpu
        or x1.memory + x2.memory > y.memory
        or x1.ephemeral_storage + x2.ephemeral_storage > y.ephemeral_storage
        or x1.allowed_pod_number + x2.allowed_pod_number > y.allowed_pod_number
    ):
        return True
    return any(
        quantity + x2.scalar.get(name, 0) > y.scalar.get(name, bound)
        for name, quantity in x1.scalar.items()
    )


_ZERO = Resource()


class ElasticQuotaInfo:
    """A namespace's ElasticQuota; ``min``/``max`` of None mean "not set" (upstream nil).

    ``used`` starts as the namespace's charge in the cache, which counts exactly the pods
    with a node (bound or assumed); ``_counted`` records the pods a dry run added or removed
    since, so each is charged at most once (upstream keeps a set of pod keys instead).
    """

    __slots__ = ("_counted", "max", "min", "namespace", "used")

    def __init__(
        self,
        namespace: str,
        min_res: Resource | None,
        max_res: Resource | None,
        used: Resource,
    ) -> None:
        self.namespace = namespace
        self.min = min_res
        self.max = max_res
        self.used = used
        self._counted: dict[str, bool] = {}

    def clone(self) -> ElasticQuotaInfo:
        # min and max are never changed after parsing: shared, as the quota object is.
        twin = ElasticQuotaInfo(self.namespace, self.min, self.max, self.used.clone())
        twin._counted = dict(self._counted)
        return twin

    # -- charging -------------------------------------------------------------------------

    def reserve_resource(self, request: Resource) -> None:
        self.used.add(request)

    def unreserve_resource(self, request: Resource) -> None:
        self.used.add(request, -1)

    def is_counted(self, pod: PodInfo) -> bool:
        return self._counted.get(pod.uid, bool(pod.node_name))

    def add_pod_if_not_present(self, pod: PodInfo) -> None:
        if self.is_counted(pod):
            return
        self._counted[pod.uid] = True
        self.reserve_resource(pod.requests)

    def delete_pod_if_present(self, pod: PodInfo) -> None:
        if not self.is_counted(pod):
            return
        self._counted[pod.uid] = False
        self.unreserve_resource(pod.requests)

    # -- comparisons ----------------------------------------------------------------------

    def used_over_min_with(self, request: Resource) -> bool:
        # No min: anything used is over it.
        return self.min is None or over(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Resource) -> bool:
        # No max: no limit.
        return self.max is not None and over(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        return self.min is None or over(self.used, _ZERO, self.min, LOWER_BOUND_OF_MIN)

    def __repr__(self) -> str:
        return (
            f"ElasticQuotaInfo({self.namespace}, min={self.min}, max={self.max}, used={self.used})"
        )


class ElasticQuotaInfos(dict[str, ElasticQuotaInfo]):
    """The quotas by namespace (one per namespace, as upstream)."""

    def clone(self) -> ElasticQuotaInfos:
        return ElasticQuotaInfos({ns: info.clone() for ns, info in self.items()})

    def aggregated_used_over_min_with(self, request: Resource) -> bool:
        """Whether the quotas together would use more than their mins add up to: a quota
        may borrow only what the others leave unused of their guarantees."""
        used, total_min = request.clone(), Resource()
        for info in self.values():
            used.add(info.used)
            if info.min is not None:
                total_min.add(info.min)
        return over(used, _ZERO, total_min, LOWER_BOUND_OF_MIN)


def parse_bounds(raw: Mapping[str, Any]) -> tuple[Resource, Resource]:
    """``spec.min`` and ``spec.max`` as upstream ``newElasticQuotaInfo`` reads them: an
    absent min is 0 and an absent max unlimited (for cpu, memory and ephemeral storage);
    a present but empty list is all zeros. Raises QuantityError."""
    spec = raw.get("spec") or {}
    min_list, max_list = spec.get("min"), spec.get("max")
    min_res = (
        bound_resource(LOWER_BOUND_OF_MIN) if min_list is None else Resource.from_list(min_list)
    )
    max_res = (
        bound_resource(UPPER_BOUND_OF_MAX) if max_list is None else Resource.from_list(max_list)
    )
    return min_res, max_res
