"""The node declared features library (upstream component-helpers ``nodedeclaredfeatures``):
the feature mapper's cases (featureset_test.go), ``InferForPodScheduling``'s version gating
(framework_test.go), the rules of the features a pod needs at scheduling (each feature's
feature_test.go), and where PodInfo and NodeInfo read them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from builders import make_node, node_dict, pod_dict
from multisched.cache import NodeInfo, PodError, PodInfo
from multisched.cache.declared_features import (
    ALL_FEATURES,
    DEFAULT_FRAMEWORK,
    SCHEDULER_VERSION,
    Feature,
    Framework,
    node_declared_features,
    pod_required_features,
)

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def needs(spec: dict[str, Any]) -> list[str]:
    return DEFAULT_FRAMEWORK.unmap(pod_required_features(spec))


# -- FeatureMapper (TestFeatureMapper) ------------------------------------------------------

MAPPER = Framework(Feature(n) for n in ("d", "b", "a", "c"))


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ([], []),
        (["a"], ["a"]),
        (["a", "c"], ["a", "c"]),
        (["a", "b", "c", "d"], ["a", "b", "c", "d"]),
        # Unknown features (at the start, middle, end) are dropped, the rest kept.
        (["0", "a"], ["a"]),
        (["a", "ab", "b"], ["a", "b"]),
        (["d", "e"], ["d"]),
    ],
)
def test_try_map_keeps_the_registered_features(names: list[str], expected: list[str]) -> None:
    fs = MAPPER.try_map(names)
    assert MAPPER.unmap(fs) == expected
    assert fs.bit_count() == len(expected)


def test_bits_follow_the_sorted_names() -> None:
    assert MAPPER.names == ("a", "b", "c", "d")
    assert MAPPER.try_map(["c"]) == 0b100
    assert MAPPER.try_map(["d", "a"]) == 0b1001  # order of the input does not matter here


def test_registry_holds_upstreams_features_sorted() -> None:
    assert DEFAULT_FRAMEWORK.names == tuple(sorted(f.name for f in ALL_FEATURES))
    assert len(ALL_FEATURES) == 9
    assert {RESTART_ALL, USERNS_HOST_NETWORK, BIND_MOUNT_OPTIONS} < set(DEFAULT_FRAMEWORK.names)
    # Only these three are inferred at scheduling; the others matter to updates only.
    scheduling = {f.name for f in ALL_FEATURES if f.infer_for_scheduling is not None}
    assert scheduling == {RESTART_ALL, USERNS_HOST_NETWORK, BIND_MOUNT_OPTIONS}


# -- InferForPodScheduling (TestInferForPodScheduling) ------------------------------------


def with_resources(spec: Mapping[str, Any]) -> bool:
    return spec.get("resources") is not None


POD_WITH = {"resources": {"requests": {"cpu": "500m"}}}


@pytest.mark.parametrize(
    ("max_version", "target", "spec", "expected"),
    [
        (None, (1, 30, 0), POD_WITH, ["PodLevelResources"]),
        (None, (1, 30, 0), {}, []),
        # Past its max version every node has the feature: no pod requires it.
        ((1, 30, 0), (1, 31, 0), POD_WITH, []),
        ((1, 30, 0), (1, 40, 0), POD_WITH, []),
        # The max version is inclusive.
        ((1, 30, 0), (1, 30, 0), POD_WITH, ["PodLevelResources"]),
        ((1, 38, 0), (1, 37, 2), POD_WITH, ["PodLevelResources"]),
    ],
)
def test_infer_for_pod_scheduling_gates_on_max_version(
    max_version: tuple[int, int, int] | None,
    target: tuple[int, int, int],
    spec: dict[str, Any],
    expected: list[str],
) -> None:
    fw = Framework([Feature("PodLevelResources", with_resources, max_version)])
    assert fw.unmap(fw.infer_for_pod_scheduling(spec, target)) == expected


def test_infer_for_pod_scheduling_sets_every_needed_feature() -> None:
    fw = Framework(
        [
            Feature("TestFeature2", lambda spec: True, (1, 38, 0)),
            Feature("TestFeature1", lambda spec: True, (1, 38, 0)),
            Feature("Never"),  # a feature no pod needs at scheduling
        ]
    )
    assert fw.unmap(fw.infer_for_pod_scheduling({}, (1, 35, 0))) == [
        "TestFeature1",
        "TestFeature2",
    ]
    # Per target version: a later one drops both.
    assert fw.infer_for_pod_scheduling({}, (1, 39, 0)) == 0


def test_the_scheduler_targets_its_own_version() -> None:
    assert SCHEDULER_VERSION == (1, 37, 2)


# -- The features a pod needs (each feature's TestInferForScheduling) ---------------------


def restarting_container(name: str = "container") -> dict[str, Any]:
    return {
        "name": name,
        "image": "image",
        "restartPolicy": "Never",
        "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
        ],
    }


PLAIN = {"name": "name", "image": "image"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"initContainers": [restarting_container()], "containers": [PLAIN]}, True),
        ({"initContainers": [PLAIN], "containers": [restarting_container()]}, True),
        ({"initContainers": [PLAIN], "containers": [{"name": "name2", "image": "image"}]}, False),
        # A rule that only restarts its own container needs nothing of the node.
        (
            {
                "containers": [
                    {
                        **PLAIN,
                        "restartPolicy": "Never",
                        "restartPolicyRules": [
                            {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}
                        ],
                    }
                ]
            },
            False,
        ),
    ],
)
def test_restart_all_containers(spec: dict[str, Any], expected: bool) -> None:
    assert (RESTART_ALL in needs(spec)) is expected


@pytest.mark.parametrize(
    ("host_network", "host_users", "expected"),
    [
        (True, False, True),
        (True, None, False),
        (True, True, False),
        (False, False, False),
    ],
)
def test_user_namespaces_on_the_host_network(
    host_network: bool, host_users: bool | None, expected: bool
) -> None:
    spec: dict[str, Any] = {"containers": [PLAIN], "hostNetwork": host_network}
    if host_users is not None:
        spec["hostUsers"] = host_users
    assert needs(spec) == ([USERNS_HOST_NETWORK] if expected else [])


def mounting(options: list[str] | None) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": "data", "mountPath": "/data"}
    if options is not None:
        mount["bindMountOptions"] = options
    return {**PLAIN, "volumeMounts": [{"name": "other", "mountPath": "/o"}, mount]}


@pytest.mark.parametrize("field", ["containers", "initContainers", "ephemeralContainers"])
def test_bind_mount_options_in_any_kind_of_container(field: str) -> None:
    spec: dict[str, Any] = {"containers": [PLAIN], field: [mounting(["noexec"])]}
    assert needs(spec) == [BIND_MOUNT_OPTIONS]


@pytest.mark.parametrize("options", [None, []])
def test_mounts_without_bind_mount_options_need_nothing(options: list[str] | None) -> None:
    assert needs({"containers": [mounting(options)]}) == []


def test_a_pod_may_need_several_features() -> None:
    spec = {
        "hostNetwork": True,
        "hostUsers": False,
        "containers": [restarting_container(), mounting(["nosuid"])],
    }
    assert needs(spec) == [RESTART_ALL, USERNS_HOST_NETWORK, BIND_MOUNT_OPTIONS]


# -- Where the cache reads them ----------------------------------------------------------


def test_pod_info_holds_what_the_pod_needs_once_parsed() -> None:
    plain = PodInfo.parse(pod_dict("plain"))
    assert plain.required_node_features == 0
    raw = pod_dict("restarter")
    raw["spec"]["containers"] = [restarting_container()]
    pod = PodInfo.parse(raw)
    assert DEFAULT_FRAMEWORK.unmap(pod.required_node_features) == [RESTART_ALL]


def test_a_malformed_container_is_a_pod_error() -> None:
    raw = pod_dict("bad")
    raw["spec"]["containers"] = [{"name": "c", "image": "i", "restartPolicyRules": ["x"]}]
    with pytest.raises(PodError, match="pod default/bad: malformed spec"):
        PodInfo.parse(raw)


def declaring(name: str, features: list[Any]) -> dict[str, Any]:
    raw = node_dict(name)
    raw["status"]["declaredFeatures"] = features
    return raw


def test_node_info_reads_declared_features_dropping_unknown_ones() -> None:
    node = NodeInfo.from_node(declaring("n", ["FutureFeature", RESTART_ALL]))
    assert DEFAULT_FRAMEWORK.unmap(node.declared_features) == [RESTART_ALL]
    assert make_node("plain").declared_features == 0
    assert node.clone().declared_features == node.declared_features


def test_node_info_rereads_declared_features_on_update() -> None:
    raw = declaring("n", [RESTART_ALL])
    node = NodeInfo.from_node(raw)
    updated = copy.deepcopy(raw)
    updated["status"]["declaredFeatures"] = [RESTART_ALL, BIND_MOUNT_OPTIONS]
    node.set_node(updated)
    assert DEFAULT_FRAMEWORK.unmap(node.declared_features) == [RESTART_ALL, BIND_MOUNT_OPTIONS]
    del updated["status"]["declaredFeatures"]
    node.set_node(updated)
    assert node.declared_features == 0


@pytest.mark.parametrize("garbage", ["RestartAllContainersOnContainerExits", 5, {"a": 1}])
def test_a_declared_features_field_of_the_wrong_type_declares_nothing(garbage: Any) -> None:
    assert node_declared_features({"declaredFeatures": garbage}) == 0
    assert node_declared_features({"declaredFeatures": [garbage, RESTART_ALL]}) == (
        DEFAULT_FRAMEWORK.try_map([RESTART_ALL])
    )
