"""Node declared features (upstream ``k8s.io/component-helpers/nodedeclaredfeatures``).

A kubelet lists in ``status.declaredFeatures`` the features it implements; the registry
below holds, for each feature a node may declare, the rule telling whether a pod's spec
needs it. Feature sets are int bitmasks over the registry sorted by name (upstream's
``FeatureSet`` bitmap): a node's set is read once per Node update, a pod's once per pod
update, and the NodeDeclaredFeatures Filter is one ``&``.

Only the scheduling side is ported: discovery (the kubelet's) and inference for pod
updates (the API server's) are not the scheduler's job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: (major, minor, patch).
Version = tuple[int, int, int]
#: The version pods are scheduled for (upstream passes the scheduler's own ``version.Get()``).
SCHEDULER_VERSION: Version = (1, 37, 2)

PodSpec = Mapping[str, Any]
#: Whether a pod with this spec needs the feature to run.
Rule = Callable[[PodSpec], bool]


class Feature:
    """A feature a node may declare.

    ``infer_for_scheduling`` is None for a feature no pod needs at scheduling (upstream's
    rule returns false: it matters to resizes or to other plugins only). ``max_version``
    (inclusive) is where every node the skew policy allows has the feature, so a scheduler
    past it stops requiring it; None means no bound.
    """

    __slots__ = ("infer_for_scheduling", "max_version", "name")

    def __init__(
        self,
        name: str,
        infer_for_scheduling: Rule | None = None,
        max_version: Version | None = None,
    ) -> None:
        self.name = name
        self.infer_for_scheduling = infer_for_scheduling
        self.max_version = max_version

    def __repr__(self) -> str:
        return f"Feature({self.name})"


# The rules run for every pod update: plain loops, which beat nested generators by half.


def _restarts_all_containers(spec: PodSpec) -> bool:
    """A (init) container's restart rule restarts the whole pod in place."""
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or ():
            for rule in c.get("restartPolicyRules") or ():
                if rule.get("action") == "RestartAllContainers":
                    return True
    return False


def _user_namespace_on_host_network(spec: PodSpec) -> bool:
    """A user namespace (hostUsers: false) together with the host's network."""
    return bool(spec.get("hostNetwork")) and spec.get("hostUsers") is False


def _bind_mount_options(spec: PodSpec) -> bool:
    """A volume mount asks for bind mount options (noexec, nodev, nosuid)."""
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(field) or ():
            for mount in c.get("volumeMounts") or ():
                if mount.get("bindMountOptions"):
                    return True
    return False


#: Upstream ``features.AllFeatures``.
ALL_FEATURES: tuple[Feature, ...] = (
    Feature("RestartAllContainersOnContainerExits", _restarts_all_containers),
    # In-place resizes of pod-level resources, of non-sidecar init containers and of
    # memory-backed emptyDirs: needed by updates only.
    Feature("InPlacePodLevelResourcesVerticalScaling"),
    Feature("ExtendWebSocketsToKubelet"),
    Feature("InPlacePodVerticalScalingInitContainers"),
    Feature("InPlacePodVerticalScalingMemoryBackedVolumes"),
    Feature("UserNamespacesHostNetworkSupport", _user_namespace_on_host_network),
    Feature("DRANodeAllocatableResources"),
    Feature("VolumeBindMountOptions", _bind_mount_options),
    # A claim's allocation is unknown before PreBind; DynamicResources filters for it.
    Feature("DRAOptionalNodeOperations"),
)


class Framework:
    """A feature registry and its name <-> bit mapping (upstream ``Framework`` with its
    ``FeatureMapper``): bit i is the i-th feature by name."""

    __slots__ = ("_bits", "_features", "_rules", "names")

    def __init__(self, features: Iterable[Feature]) -> None:
        self._features = tuple(sorted(features, key=lambda f: f.name))
        self.names = tuple(f.name for f in self._features)
        self._bits = {name: 1 << i for i, name in enumerate(self.names)}
        #: Target version -> (bit, rule) of the features a pod may need at it.
        self._rules: dict[Version, tuple[tuple[int, Rule], ...]] = {}

    def infer_for_pod_scheduling(self, spec: PodSpec, target_version: Version) -> int:
        """The features a pod with ``spec`` needs of its node, as a set."""
        rules = self._rules.get(target_version)
        if rules is None:
            rules = self._rules[target_version] = tuple(
                (1 << i, f.infer_for_scheduling)
                for i, f in enumerate(self._features)
                if f.infer_for_scheduling is not None
                and (f.max_version is None or target_version <= f.max_version)
            )
        needed = 0
        for bit, rule in rules:
            if rule(spec):
                needed |= bit
        return needed

    def try_map(self, names: Iterable[object]) -> int:
        """The set of the registered features among ``names``; others are dropped, as a
        node may declare features this scheduler does not know (upstream ``TryMap``)."""
        bits = self._bits
        fs = 0
        for name in names:
            if isinstance(name, str):
                fs |= bits.get(name, 0)
        return fs

    def unmap(self, fs: int) -> list[str]:
        """The names in ``fs``, sorted."""
        return [name for i, name in enumerate(self.names) if fs >> i & 1]


DEFAULT_FRAMEWORK = Framework(ALL_FEATURES)


def pod_required_features(spec: PodSpec) -> int:
    """The registered features a pod needs of its node at this scheduler's version."""
    return DEFAULT_FRAMEWORK.infer_for_pod_scheduling(spec, SCHEDULER_VERSION)


def node_declared_features(status: Mapping[str, Any]) -> int:
    """The registered features among a Node status's ``declaredFeatures``."""
    declared = status.get("declaredFeatures")
    return DEFAULT_FRAMEWORK.try_map(declared) if isinstance(declared, list) else 0
