"""Parsing objects and files into a SchedulerProfileSpec, including the seeds' configs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from config_fakes import CATALOG
from multisched.config import (
    ConfigError,
    KubeSchedulerConfiguration,
    SchedulerProfileSpec,
    config_notes,
    load_config_file,
    parse_config_object,
    parse_kube_scheduler_configuration,
    parse_scheduler_profile_spec,
    resolve,
)

SEED_SECOND_SCHEDULER = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: my-scheduler
leaderElection:
  leaderElect: true
  resourceNamespace: kube-system
  resourceName: lock-object-my-scheduler
"""

SEED_CONFIGMAP = """
apiVersion: v1
kind: ServiceAccount
metadata:
  name: my-scheduler
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: my-scheduler-config
  namespace: kube-system
data:
  my-scheduler-config.yaml: |
    apiVersion: kubescheduler.config.k8s.io/v1beta2
    kind: KubeSchedulerConfiguration
    profiles:
      - schedulerName: my-scheduler
    leaderElection:
      leaderElect: false
"""

SEED_MULTI_PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: my-scheduler
  plugins:
    score:
      disabled:
      - name: TaintToleration
      enabled:
      - name: MyCustomPluginA
      - name: MyCustomPluginB
- schedulerName: my-scheduler2
  plugins:
    preScore:
      disabled:
      - name: '*'
- schedulerName: my-scheduler3
leaderElection:
  leaderElect: true
"""


def load(text: str) -> Any:
    return yaml.safe_load(text)


def problems_of(fn: Any, obj: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        fn(obj)
    return [str(p) for p in info.value.problems]


def test_seed_second_scheduler() -> None:
    spec = parse_config_object(load(SEED_SECOND_SCHEDULER))
    cfg = resolve(spec, CATALOG)
    assert [p.scheduler_name for p in cfg.profiles] == ["my-scheduler"]
    # Read and checked, but leader election is the process's: simulate/validate say so.
    (note,) = config_notes(load(SEED_SECOND_SCHEDULER))
    assert note.startswith("leaderElection is ignored") and "--leader-elect" in note


def test_seed_configmap_file_v1beta2(tmp_path: Path) -> None:
    path = tmp_path / "my-scheduler.yaml"
    path.write_text(SEED_CONFIGMAP)
    cfg = resolve(load_config_file(path), CATALOG)
    assert cfg.profiles[0].scheduler_name == "my-scheduler"


def test_seed_multi_profile_reports_unknown_custom_plugins() -> None:
    spec = parse_config_object(load(SEED_MULTI_PROFILE))
    with pytest.raises(ConfigError) as info:
        resolve(spec, CATALOG)
    assert [str(p) for p in info.value.problems] == [
        "profiles[0](my-scheduler).plugins.score.enabled[0](MyCustomPluginA): unknown plugin "
        '"MyCustomPluginA"',
        "profiles[0](my-scheduler).plugins.score.enabled[1](MyCustomPluginB): unknown plugin "
        '"MyCustomPluginB"',
    ]


def test_seed_multi_profile_with_registered_plugins() -> None:
    obj = load(SEED_MULTI_PROFILE)
    obj["profiles"][0]["plugins"]["score"]["enabled"] = [{"name": "CustomScore"}]
    cfg = resolve(parse_config_object(obj), CATALOG)
    first, second, third = cfg.profiles
    assert first.plugins["score"] == (
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "CustomScore",
    )
    assert "TaintToleration" in first.plugins["preScore"]
    assert second.plugins["preScore"] == ()
    assert second.plugins["score"] == third.plugins["score"]


def test_seed_typo_api_version() -> None:
    obj = {
        "apiVersion": "kube-scheduler.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    assert problems_of(parse_config_object, obj) == [
        "apiVersion: unsupported apiVersion 'kube-scheduler.k8s.io/v1' for "
        "KubeSchedulerConfiguration; expected 'kubescheduler.config.k8s.io/v1'"
    ]


def test_seed_leader_election_inside_a_profile() -> None:
    obj = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "custom-scheduler", "leaderElection": {"leaderElect": True}}
        ],
    }
    assert problems_of(parse_config_object, obj) == [
        "profiles[0](custom-scheduler).leaderElection: unknown field (leader election is a "
        "process setting, not part of a SchedulerProfile: use `multisched run --leader-elect` "
        "flags or the Helm chart's leaderElection values)"
    ]


def test_a_scheduler_profile_has_no_leader_election() -> None:
    obj = {"leaderElection": {"leaderElect": True}, "profiles": [{"schedulerName": "a"}]}
    (problem,) = problems_of(parse_scheduler_profile_spec, obj)
    assert problem.startswith("leaderElection: unknown field (leader election is a process")
    assert config_notes({"kind": "SchedulerProfile", "spec": obj}) == []


def test_seed_bare_string_plugins_are_refused_with_a_fix() -> None:
    obj = {
        "apiVersion": "kubescheduler.config.k8s.io/v1beta2",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"filter": {"enabled": ["NodeResourcesFit"]}},
            }
        ],
    }
    assert problems_of(parse_config_object, obj) == [
        "profiles[0](default-scheduler).plugins.filter.enabled[0]: expected a plugin entry like "
        "{name: NodeResourcesFit}, got the bare string 'NodeResourcesFit'; write "
        "`- name: NodeResourcesFit`"
    ]


def test_file_without_profiles_gets_default_scheduler() -> None:
    spec = parse_kube_scheduler_configuration(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    assert [p.scheduler_name for p in spec.profiles] == ["default-scheduler"]


def test_file_ignores_process_settings() -> None:
    spec = parse_kube_scheduler_configuration(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf", "qps": 50},
            "parallelism": 16,
            "enableProfiling": True,
            "enableContentionProfiling": False,
            "healthzBindAddress": "0.0.0.0:10251",
            "metricsBindAddress": "0.0.0.0:10251",
            "delayCacheUntilActive": True,
            "extenders": [],
            "percentageOfNodesToScore": 40,
        }
    )
    assert spec.percentage_of_nodes_to_score == 40


def test_file_extenders_not_supported() -> None:
    obj = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [{"urlPrefix": "http://127.0.0.1:8888", "filterVerb": "filter"}],
    }
    assert problems_of(parse_kube_scheduler_configuration, obj) == [
        "extenders: scheduler extenders are not supported by multisched"
    ]


def test_scheduler_profile_object() -> None:
    obj = {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "x"},
        "spec": {"profiles": [{"schedulerName": "a"}]},
    }
    spec = parse_config_object(obj)
    assert isinstance(spec, SchedulerProfileSpec)


def test_scheduler_profile_wrong_api_version() -> None:
    obj = {"apiVersion": "multisched.dev/v1", "kind": "SchedulerProfile", "spec": {}}
    assert problems_of(parse_config_object, obj) == [
        "apiVersion: unsupported apiVersion 'multisched.dev/v1' for SchedulerProfile; expected "
        "'multisched.dev/v1alpha1'"
    ]


def test_unknown_kind() -> None:
    assert problems_of(parse_config_object, {"apiVersion": "v1", "kind": "Pod"}) == [
        "kind: expected SchedulerProfile (multisched.dev/v1alpha1) or KubeSchedulerConfiguration "
        "(kubescheduler.config.k8s.io/v1), got 'Pod'"
    ]


def test_spec_needs_a_profile() -> None:
    assert problems_of(parse_scheduler_profile_spec, {"profiles": []}) == [
        "profiles: must have at least 1 item"
    ]


def test_typo_field_with_suggestion() -> None:
    obj = {"profiles": [{"schedulerName": "a", "plugins": {"scroe": {}}}]}
    assert problems_of(parse_scheduler_profile_spec, obj) == [
        'profiles[0](a).plugins.scroe: unknown field (did you mean "score"?)'
    ]


def test_types_are_strict() -> None:
    obj = {
        "podInitialBackoffSeconds": "1",
        "profiles": [
            {
                "schedulerName": "a",
                "plugins": {"score": {"enabled": [{"name": "X", "weight": "5"}]}},
            }
        ],
    }
    assert problems_of(parse_scheduler_profile_spec, obj) == [
        "podInitialBackoffSeconds: must be an integer, got '1'",
        "profiles[0](a).plugins.score.enabled[0](X).weight: must be an integer, got '5'",
    ]


def test_null_means_absent() -> None:
    spec = parse_scheduler_profile_spec(
        {
            "percentageOfNodesToScore": None,
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {"score": {"enabled": None}},
                    "pluginConfig": None,
                }
            ],
        }
    )
    assert spec.profiles[0].plugins is not None
    assert spec.profiles[0].plugins.score.enabled == []


def test_range_and_backoff_checks() -> None:
    obj = {
        "percentageOfNodesToScore": 101,
        "podInitialBackoffSeconds": 0,
        "podMaxBackoffSeconds": 5,
        "profiles": [{"schedulerName": "a", "percentageOfNodesToScore": -1}],
    }
    assert problems_of(parse_scheduler_profile_spec, obj) == [
        "percentageOfNodesToScore: 101 is not in valid range [0-100]",
        "podInitialBackoffSeconds: 0 must be greater than 0",
        "profiles[0](a).percentageOfNodesToScore: -1 is not in valid range [0-100]",
    ]
    assert problems_of(
        parse_scheduler_profile_spec,
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2, "profiles": [{}]},
    ) == ["podMaxBackoffSeconds: 2 must be greater than or equal to podInitialBackoffSeconds (5)"]


def test_file_leader_election_is_still_checked() -> None:
    def problems(le: dict[str, Any]) -> list[str]:
        obj = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": le,
        }
        try:
            parse_kube_scheduler_configuration(obj)
        except ConfigError as exc:
            return [str(p) for p in exc.problems]
        return []

    # leaderElect defaults to true in files (upstream), so the timings are checked.
    assert problems({"leaseDuration": "10s"}) == [
        "leaderElection.renewDeadline: renewDeadline '10s' must be less than leaseDuration '10s'"
    ]
    # Not checked while election is off, as upstream.
    assert problems({"leaderElect": False, "leaseDuration": "10s"}) == []
    assert problems({"leaseDuration": "15", "retryPeriod": "0s", "resourceLock": "endpoints"}) == [
        "leaderElection.leaseDuration: invalid duration '15'; use a Go duration such as '15s' or "
        "'1m30s'",
        "leaderElection.retryPeriod: '0s' must be greater than zero",
        "leaderElection.resourceLock: resourceLock 'endpoints' is not supported; multisched uses "
        "'leases'",
    ]
    assert problems({"renewDeadline": "2s"}) == [
        "leaderElection.retryPeriod: retryPeriod '2s' is too long for renewDeadline '2s' "
        "(renewDeadline must exceed 1.2 x retryPeriod)"
    ]


def test_model_round_trip_uses_yaml_names() -> None:
    obj = load(SEED_MULTI_PROFILE)
    cfg = KubeSchedulerConfiguration.model_validate(obj)
    dumped = cfg.model_dump(exclude_unset=True)
    assert dumped["apiVersion"] == "kubescheduler.config.k8s.io/v1beta2"
    assert dumped["profiles"][1]["plugins"]["preScore"] == {"disabled": [{"name": "*"}]}


def test_load_config_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config_file(bad)
    two = tmp_path / "two.yaml"
    two.write_text(SEED_SECOND_SCHEDULER + "---\n" + SEED_SECOND_SCHEDULER)
    with pytest.raises(ConfigError, match="2 SchedulerProfile/KubeSchedulerConfiguration found"):
        load_config_file(two)
    with pytest.raises(ConfigError, match="No such file"):
        load_config_file(tmp_path / "missing.yaml")
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\n")
    with pytest.raises(ConfigError, match="kind: expected SchedulerProfile"):
        load_config_file(pod)


def test_non_mapping_input() -> None:
    assert problems_of(parse_config_object, ["a"]) == [
        "a scheduler configuration must be a mapping, got list"
    ]


def test_read_only_mapping_views_are_accepted() -> None:
    from types import MappingProxyType

    spec = parse_scheduler_profile_spec(
        MappingProxyType({"profiles": ({"schedulerName": "a", "pluginConfig": ()},)})
    )
    assert spec.profiles[0].scheduler_name == "a"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b"kind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: \xe9}]\n",
            "not UTF-8 text",
        ),
        (
            b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + b"".join(
                f"a{i}: &a{i} [{', '.join(['*a' if i == 1 else f'*a{i - 1}'] * 10)}]\n".encode()
                for i in range(1, 9)
            ),
            "aliases expand to more than",
        ),
    ],
)
def test_config_files_are_read_with_the_same_bounds(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    path = tmp_path / "sched.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    [problem] = info.value.problems
    assert str(problem).startswith(f"{path}: ") and expected in str(problem)


def test_configmap_value_is_read_with_the_same_bounds(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\\n" + "".join(
        f"a{i}: &a{i} [{', '.join(['*a' if i == 1 else f'*a{i - 1}'] * 10)}]\\n"
        for i in range(1, 9)
    )
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": bomb}}
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(cm))
    # The value is refused unexpanded, so the ConfigMap holds no configuration.
    with pytest.raises(ConfigError, match="got 'ConfigMap'"):
        load_config_file(path)


@pytest.mark.parametrize("value", [0, -1])
def test_parallelism_must_be_positive_as_upstream_validates_it(value: int) -> None:
    obj = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": value,
    }
    assert problems_of(parse_kube_scheduler_configuration, obj) == [
        f"parallelism: {value} should be an integer value greater than zero"
    ]


def test_parallelism_absent_or_positive_is_accepted() -> None:
    base = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    for extra in ({}, {"parallelism": 1}, {"parallelism": 16.0}):
        spec = parse_kube_scheduler_configuration({**base, **extra})
        assert [p.scheduler_name for p in spec.profiles] == ["default-scheduler"]
