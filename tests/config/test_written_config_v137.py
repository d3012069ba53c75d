"""Configuration as kube-scheduler v1.37.2 writes it (``--write-config-to``): it loads with
the same defaults, the pod group extension points are read but must stay empty, and
``validate``/``simulate --profile`` take the file as it is."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node_dict, pod_dict
from config_fakes import catalog, plugin, resolve_spec
from multisched.cli import main
from multisched.config import (
    POD_GROUP_EXTENSION_POINTS,
    ConfigError,
    ResolvedConfig,
    default_plugins,
    parse_config_object,
    resolve,
)
from multisched.scheduler import default_registry

FIXTURES = Path(__file__).parent / "fixtures"
WRITTEN = FIXTURES / "kube-scheduler-v1.37.2-write-config.yaml"
#: Written from a config that sets filter and score: "weight: 0" on filter and disabled.
EXPLICIT = FIXTURES / "kube-scheduler-v1.37.2-write-config-explicit-points.yaml"
EMPTY = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def written() -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(WRITTEN.read_text())
    return obj


def resolve_builtin(obj: dict[str, Any]) -> ResolvedConfig:
    return resolve(parse_config_object(obj), default_registry(load_entry_points=False))


def problems(obj: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        resolve_builtin(obj)
    return [str(p) for p in info.value.problems]


# -- the defaults are v1.37.2's ------------------------------------------------------------


def test_the_written_file_is_what_the_defaults_give() -> None:
    """kube-scheduler writes its defaults out in full: reading them back changes nothing."""
    (ours,) = resolve_builtin(EMPTY).profiles
    (theirs,) = resolve_builtin(written()).profiles
    assert theirs.plugins == ours.plugins
    assert theirs.score_weights == ours.score_weights
    assert theirs.plugin_args == ours.plugin_args


def test_the_default_multipoint_is_v137s() -> None:
    profile = written()["profiles"][0]
    upstream = [
        (p["name"], p["weight"] or None) for p in profile["plugins"]["multiPoint"]["enabled"]
    ]
    defaults = default_plugins(default_registry(load_entry_points=False)).multi_point.enabled
    assert [(p.name, p.weight) for p in defaults] == upstream
    merged = resolve_builtin(EMPTY).profiles[0]
    # The order upstream expands multiPoint in, and its weights (0 is "unset": 1).
    assert [n for n, _ in upstream if n in merged.plugins["preFilter"]] == list(
        merged.plugins["preFilter"]
    )
    assert [n for n, _ in upstream if n in merged.plugins["filter"]] == list(
        merged.plugins["filter"]
    )
    assert merged.score_weights == {n: w or 1 for n, w in upstream if n in merged.score_weights}
    assert merged.plugins["score"] == (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    )
    assert merged.score_weights["VolumeBinding"] == 1


def _omitempty(value: Any) -> Any:
    """Drop what Go's ``omitempty`` drops when writing (nil, empty lists and maps)."""
    if isinstance(value, dict):
        kept = {k: _omitempty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v not in ([], {})}
    if isinstance(value, list):
        return [_omitempty(v) for v in value]
    return value


def test_every_default_plugin_args_is_as_upstream_writes_it() -> None:
    (ours,) = resolve_builtin(EMPTY).profiles
    entries = written()["profiles"][0]["pluginConfig"]
    assert {e["name"] for e in entries} == set(ours.plugin_args)
    for entry in entries:
        args = {k: v for k, v in entry["args"].items() if k not in ("apiVersion", "kind")}
        dumped = ours.plugin_args[entry["name"]].model_dump(mode="json", by_alias=True)
        assert _omitempty(dumped) == args, entry["name"]


def test_node_declared_features_is_a_default_once_registered() -> None:
    """Upstream appends it behind a gate on in v1.37; here being registered is the gate."""
    without = resolve_spec({"profiles": [{}]}).profiles[0]
    assert "NodeDeclaredFeatures" not in without.all_plugin_names()
    ndf = plugin("NodeDeclaredFeatures", "preFilter", "filter")
    with_it = resolve_spec({"profiles": [{}]}, catalog(ndf)).profiles[0]
    assert with_it.plugins["filter"][-1] == "NodeDeclaredFeatures"
    assert with_it.plugins["preFilter"][-1] == "NodeDeclaredFeatures"


def test_explicit_points_as_kube_scheduler_writes_them() -> None:
    obj = yaml.safe_load(EXPLICIT.read_text())
    (prof,) = resolve_builtin(obj).profiles
    assert prof.plugins["filter"][0] == "NodeName"
    assert "ImageLocality" not in prof.plugins["score"]
    assert prof.score_weights["NodeAffinity"] == 5
    assert prof.score_weights["VolumeBinding"] == 1


# -- the pod group points ------------------------------------------------------------------


@pytest.mark.parametrize("point", POD_GROUP_EXTENSION_POINTS)
def test_a_pod_group_point_is_accepted_empty(point: str) -> None:
    empty = resolve_spec({"profiles": [{"schedulerName": "p", "plugins": {point: {}}}]})
    disabled = resolve_spec(
        {"profiles": [{"schedulerName": "p", "plugins": {point: {"disabled": [{"name": "*"}]}}}]}
    )
    assert empty.profiles[0].plugins == disabled.profiles[0].plugins
    assert point not in empty.profiles[0].plugins  # nothing runs there


@pytest.mark.parametrize("point", POD_GROUP_EXTENSION_POINTS)
@pytest.mark.parametrize("name", ["CustomScore", "GangScheduling"])
def test_a_plugin_at_a_pod_group_point_is_refused_naming_the_point(point: str, name: str) -> None:
    obj = copy.deepcopy(written())
    obj["profiles"][0]["plugins"][point] = {"enabled": [{"name": name, "weight": 0}]}
    assert problems(obj) == [
        f"profiles[0](default-scheduler).plugins.{point}.enabled[0]({name}): no built-in "
        f"plugin implements {point} yet"
    ]


def test_an_unknown_extension_point_is_still_refused() -> None:
    obj = copy.deepcopy(written())
    obj["profiles"][0]["plugins"]["placementFilter"] = {}
    with pytest.raises(ConfigError) as info:
        parse_config_object(obj)
    (problem,) = info.value.problems
    assert problem.path == "profiles[0](default-scheduler).plugins.placementFilter"
    assert problem.message.startswith("unknown field")


# -- the commands ----------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", [WRITTEN, EXPLICIT], ids=["defaults", "explicit-points"])
def test_validate_reads_the_written_file(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, err = run(capsys, "validate", str(path))
    assert code == 0, err
    assert "  score: " in out and "VolumeBinding(1)" in out
    assert "  preFilter: " in out and "DynamicResources" in out
    assert "error" not in err


def test_validate_refuses_a_plugin_at_a_pod_group_point_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obj = written()
    obj["profiles"][0]["plugins"]["placementScore"] = {"enabled": [{"name": "ImageLocality"}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, err = run(capsys, "validate", str(path))
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: config.yaml: document 1 (KubeSchedulerConfiguration): profiles[0]"
        "(default-scheduler).plugins.placementScore.enabled[0](ImageLocality): no built-in "
        "plugin implements placementScore yet"
    ]


def test_simulate_takes_the_written_file_as_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.yaml"
    docs = [
        node_dict("n1", cpu="4"),
        node_dict("n2", cpu="8"),
        pod_dict("web", requests={"cpu": "1"}),
    ]
    cluster.write_text(yaml.safe_dump_all(docs))
    code, out, err = run(
        capsys, "simulate", str(cluster), "--profile", str(WRITTEN), "-o", "json", "--seed", "1"
    )
    assert code == 0, err
    assert '"default/web"' in out and '"Scheduled"' in out
