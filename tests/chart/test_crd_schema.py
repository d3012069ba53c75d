"""The SchedulerProfile CRD: well-formed, copied into the chart, and strict about bad specs."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes_validate
import pytest
from kubernetes_validate.utils import latest_version

from chart_support import CHART_CRD_PATH, CRD_PATH, ROOT, Manifest, load_docs

KUBE_VERSIONS = ("1.28.0", latest_version())
EXTENSION_POINTS = (
    "multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
    "score", "reserve", "permit", "preBind", "bind", "postBind",
)  # fmt: skip


def test_chart_carries_an_identical_copy_of_the_crd() -> None:
    assert CHART_CRD_PATH.read_bytes() == CRD_PATH.read_bytes()


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_crd_is_a_valid_customresourcedefinition(crd: Manifest, kube_version: str) -> None:
    kubernetes_validate.validate(crd, kube_version, strict=True)


def test_crd_names_scope_and_columns(crd: Manifest) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "schedulerprofiles.multisched.dev"
    assert spec["group"] == "multisched.dev"
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "kind": "SchedulerProfile",
        "listKind": "SchedulerProfileList",
        "plural": "schedulerprofiles",
        "singular": "schedulerprofile",
        "shortNames": ["sp"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert list(columns) == ["Schedulers", "Ready", "Reason", "Age"]
    assert columns["Schedulers"]["jsonPath"] == ".status.profiles[*].schedulerName"
    assert columns["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["Reason"]["priority"] == 1
    assert columns["Age"]["type"] == "date"


def _walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if "items" in node:
        yield from _walk(node["items"], f"{path}[]")


def _root_schema(crd: Manifest) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_schema_is_structural_and_bounded_for_cel_cost(crd: Manifest) -> None:
    """Every node typed; every array and free string under spec/status bounded."""
    root = _root_schema(crd)
    for path, node in _walk(root):
        assert "type" in node, f"{path}: structural schemas need a type"
        if not path.startswith((".spec", ".status")):
            continue
        if node["type"] == "array":
            assert "maxItems" in node, f"{path}: unbounded array"
        if node["type"] == "string" and "enum" not in node and "format" not in node:
            assert "maxLength" in node, f"{path}: unbounded string"


def test_weight_is_only_accepted_where_upstream_scores(crd: Manifest) -> None:
    plugins = _root_schema(crd)["properties"]["spec"]["properties"]["profiles"]["items"][
        "properties"
    ]["plugins"]
    assert tuple(plugins["properties"]) == EXTENSION_POINTS
    for point, plugin_set in plugins["properties"].items():
        enabled = plugin_set["properties"]["enabled"]["items"]["properties"]
        disabled = plugin_set["properties"]["disabled"]["items"]["properties"]
        assert ("weight" in enabled) == (point in ("multiPoint", "score")), point
        assert "weight" not in disabled


def test_cel_rules_are_declared(crd: Manifest) -> None:
    spec = _root_schema(crd)["properties"]["spec"]
    rules = [v["rule"] for v in spec["x-kubernetes-validations"]]
    assert any("podMaxBackoffSeconds >= self.podInitialBackoffSeconds" in r for r in rules)
    profiles = spec["properties"]["profiles"]
    assert profiles["x-kubernetes-list-type"] == "map"
    assert profiles["x-kubernetes-list-map-keys"] == ["schedulerName"]
    plugin_config = profiles["items"]["properties"]["pluginConfig"]
    assert plugin_config["x-kubernetes-list-map-keys"] == ["name"]


def _example_profiles() -> list[tuple[str, Manifest]]:
    found = []
    for path in sorted((ROOT / "examples").rglob("*.y*ml")):
        for i, doc in enumerate(load_docs(path), 1):
            if doc.get("kind") == "SchedulerProfile":
                found.append((f"{path.relative_to(ROOT)}#{i}", doc))
    return found


EXAMPLES = _example_profiles()


def test_the_shipped_examples_exist() -> None:
    names = {where.split("#")[0] for where, _ in EXAMPLES}
    assert {"examples/profiles/my-scheduler.yaml", "examples/profiles/multi-profile.yaml"} <= names


@pytest.mark.parametrize(("where", "obj"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_example_profiles_are_valid(
    profile_errors: Callable[[Manifest], list[str]], where: str, obj: Manifest
) -> None:
    assert profile_errors(obj) == [], where


FULL: Manifest = {
    "apiVersion": "multisched.dev/v1alpha1",
    "kind": "SchedulerProfile",
    "metadata": {"name": "full"},
    "spec": {
        "percentageOfNodesToScore": 0,
        "podInitialBackoffSeconds": 2,
        "podMaxBackoffSeconds": 20,
        "leaderElection": {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceNamespace": "kube-system",
            "resourceName": "multisched",
            "leaseDuration": "15s",
            "renewDeadline": "10s",
            "retryPeriod": "1m2.5s",
        },
        "profiles": [
            {
                "schedulerName": "a.example",
                "percentageOfNodesToScore": 100,
                "plugins": {
                    point: {"enabled": [{"name": "P"}], "disabled": [{"name": "*"}]}
                    for point in EXTENSION_POINTS
                },
                "pluginConfig": [{"name": "P", "args": {"anything": [1, {"goes": True}]}}],
            },
            {"schedulerName": "b"},
        ],
    },
    "status": {
        "observedGeneration": 3,
        "profiles": [{"schedulerName": "a.example", "plugins": {"filter": ["P"]}}],
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Applied",
                "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
                "observedGeneration": 3,
            }
        ],
    },
}


def test_a_spec_using_every_field_is_valid(
    profile_errors: Callable[[Manifest], list[str]],
) -> None:
    obj = copy.deepcopy(FULL)
    obj["spec"]["profiles"][0]["plugins"]["score"]["enabled"][0]["weight"] = 100
    obj["spec"]["profiles"][0]["plugins"]["multiPoint"]["enabled"][0]["weight"] = 1
    assert profile_errors(obj) == []


def _profile0(obj: Manifest) -> dict[str, Any]:
    profile: dict[str, Any] = obj["spec"]["profiles"][0]
    return profile


BAD_EDITS: dict[str, tuple[Callable[[Manifest], Any], str]] = {
    "weight on a filter plugin": (
        lambda o: _profile0(o)["plugins"]["filter"]["enabled"][0].update(weight=1),
        "'weight' was unexpected",
    ),
    "weight 0": (
        lambda o: _profile0(o)["plugins"]["score"]["enabled"][0].update(weight=0),
        "less than the minimum of 1",
    ),
    "weight 101": (
        lambda o: _profile0(o)["plugins"]["score"]["enabled"][0].update(weight=101),
        "greater than the maximum of 100",
    ),
    "unknown extension point": (
        lambda o: _profile0(o)["plugins"].update(normalize={"enabled": [{"name": "P"}]}),
        "'normalize' was unexpected",
    ),
    "missing schedulerName": (
        lambda o: _profile0(o).pop("schedulerName"),
        "'schedulerName' is a required property",
    ),
    "schedulerName not a DNS subdomain": (
        lambda o: _profile0(o).update(schedulerName="My_Scheduler"),
        "does not match",
    ),
    "duplicate schedulerName": (
        lambda o: o["spec"]["profiles"][1].update(schedulerName="a.example"),
        "Duplicate value",
    ),
    "no profiles": (lambda o: o["spec"].update(profiles=[]), "should be non-empty"),
    "missing profiles": (lambda o: o["spec"].pop("profiles"), "'profiles' is a required"),
    "duplicate pluginConfig": (
        lambda o: _profile0(o)["pluginConfig"].append({"name": "P"}),
        "Duplicate value",
    ),
    "pluginConfig without name": (
        lambda o: _profile0(o)["pluginConfig"].append({"args": {}}),
        "'name' is a required property",
    ),
    "plugin without name": (
        lambda o: _profile0(o)["plugins"]["bind"]["enabled"].append({}),
        "'name' is a required property",
    ),
    "percentage over 100": (
        lambda o: o["spec"].update(percentageOfNodesToScore=101),
        "greater than the maximum of 100",
    ),
    "zero backoff": (
        lambda o: o["spec"].update(podInitialBackoffSeconds=0),
        "less than the minimum of 1",
    ),
    "duration not Go syntax": (
        lambda o: o["spec"]["leaderElection"].update(leaseDuration="15 seconds"),
        "does not match",
    ),
    "resource lock other than leases": (
        lambda o: o["spec"]["leaderElection"].update(resourceLock="endpoints"),
        "is not one of ['leases']",
    ),
    "unknown top-level field": (
        lambda o: o["spec"].update(extenders=[]),
        "'extenders' was unexpected",
    ),
    "condition status not True/False/Unknown": (
        lambda o: o["status"]["conditions"][0].update(status="Yes"),
        "is not one of",
    ),
    "duplicate condition type": (
        lambda o: o["status"]["conditions"].append(dict(o["status"]["conditions"][0])),
        "Duplicate value",
    ),
}


@pytest.mark.parametrize("case", list(BAD_EDITS))
def test_the_schema_refuses(profile_errors: Callable[[Manifest], list[str]], case: str) -> None:
    edit, expected = BAD_EDITS[case]
    obj = copy.deepcopy(FULL)
    edit(obj)
    errors = profile_errors(obj)
    assert any(expected in e for e in errors), errors
