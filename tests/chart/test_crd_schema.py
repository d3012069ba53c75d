"""The SchedulerProfile CRD: well-formed, copied into the chart, and strict about bad specs."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes_validate
import pytest
from kubernetes_validate.utils import latest_version

from chart_support import CHART_CRD_PATH, CRD_PATH, ROOT, Manifest, load_docs

KUBE_VERSIONS = ("1.35.0", latest_version())
EXTENSION_POINTS = (
    "multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
    "score", "reserve", "permit", "preBind", "bind", "postBind",
    "placementGenerate", "placementScore", "podGroupPostFilter",
)  # fmt: skip
#: What kube-scheduler v1.37.2 --write-config-to writes (tests/config/fixtures).
WRITTEN_CONFIG = ROOT / "tests" / "config" / "fixtures" / "kube-scheduler-v1.37.2-write-config.yaml"


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
    assert list(columns) == ["Schedulers", "Ready", "Reason", "Revision", "Age"]
    assert columns["Revision"] == {
        "name": "Revision", "type": "integer", "priority": 1, "jsonPath": ".status.revision"
    }  # fmt: skip
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
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


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
        if node["type"] == "object" and (
            node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node
        ):
            assert "maxProperties" in node or path.startswith(".status"), f"{path}: unbounded map"


def test_free_form_fields_are_only_where_needed(crd: Manifest) -> None:
    """Unknown fields are kept only for other plugins' args (and kopf's status stanza), plus
    the two fields declared only so that CEL can refuse them for every client."""
    free = {
        path
        for path, node in _walk(_root_schema(crd))
        if node.get("x-kubernetes-preserve-unknown-fields")
    }
    assert free == {
        ".spec.leaderElection",
        ".spec.profiles[].pluginConfig[].args",
        ".spec.profiles[].pluginConfig[].args.defaultConstraints[].labelSelector",
        ".status.profiles[].plugins",
        ".status.kopf",
    }


def _profile_schema(crd: Manifest) -> dict[str, Any]:
    schema: dict[str, Any] = _root_schema(crd)["properties"]["spec"]["properties"]["profiles"][
        "items"
    ]
    return schema


def _rules(node: dict[str, Any]) -> list[str]:
    return [v["rule"] for v in node.get("x-kubernetes-validations", [])]


def test_plugins_are_a_map_of_extension_points_checked_for_every_client(crd: Manifest) -> None:
    """Pruning would drop ``plugins.preFilterX`` or a filter plugin's weight silently for
    clients that do not ask for strict validation: CEL refuses them instead."""
    plugins = _profile_schema(crd)["properties"]["plugins"]
    assert plugins["maxProperties"] == len(EXTENSION_POINTS)
    keys_rule, weight_rule = _rules(plugins)
    for point in EXTENSION_POINTS:
        assert f"'{point}': true" in keys_rule
        assert point in plugins["description"]
    assert "point == 'score' || point == 'multiPoint'" in weight_rule
    # kube-scheduler writes "weight: 0" on every entry it has no weight for.
    assert "!has(p.weight) || p.weight == 0" in weight_rule
    enabled = plugins["additionalProperties"]["properties"]["enabled"]["items"]["properties"]
    disabled = plugins["additionalProperties"]["properties"]["disabled"]["items"]["properties"]
    assert set(enabled) == {"name", "weight"} and set(disabled) == {"name", "weight"}
    assert enabled["weight"]["minimum"] == 0
    assert (disabled["weight"]["minimum"], disabled["weight"]["maximum"]) == (0, 0)


def test_misplaced_fields_are_refused_for_every_client(crd: Manifest) -> None:
    spec = _root_schema(crd)["properties"]["spec"]
    assert "!has(self.leaderElection)" in _rules(spec)
    assert "!has(self.weight)" in _rules(_profile_schema(crd))


def _model_shape(schema: dict[str, Any], defs: dict[str, Any], path: str = "") -> dict[str, str]:
    """JSON path -> type of a pydantic JSON schema ($refs resolved, Optional unwrapped)."""
    if "$ref" in schema:
        return _model_shape(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
    if "anyOf" in schema:
        (real,) = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _model_shape(real, defs, path)
    out = {path: schema["type"]}
    for name, child in schema.get("properties", {}).items():
        out.update(_model_shape(child, defs, f"{path}.{name}"))
    if "items" in schema:
        out.update(_model_shape(schema["items"], defs, f"{path}[]"))
    return out


def _crd_shape(node: dict[str, Any], path: str = "") -> dict[str, str]:
    out = {path: node["type"]}
    for name, child in node.get("properties", {}).items():
        out.update(_crd_shape(child, f"{path}.{name}"))
    if "items" in node:
        out.update(_crd_shape(node["items"], f"{path}[]"))
    return out


def test_args_schemas_match_the_plugins_args_models(crd: Manifest) -> None:
    """Every built-in plugin's args are typed in the CRD exactly as its pydantic model reads
    them, and a field of one plugin's args is refused (CEL) in another plugin's entry."""
    from multisched.scheduler import default_registry

    item = _profile_schema(crd)["properties"]["pluginConfig"]["items"]
    args = item["properties"]["args"]
    rules = _rules(item)
    crd_fields = set(args["properties"])
    model_fields: set[str] = set()
    registry = default_registry(load_entry_points=False)
    for name, plugin in sorted(registry.items()):
        if plugin.args_model is None:
            continue
        schema = plugin.args_model.model_json_schema(by_alias=True)
        fields = list(schema["properties"])
        model_fields.update(fields)
        for field in fields:
            expected = _model_shape(schema["properties"][field], schema.get("$defs", {}))
            assert _crd_shape(args["properties"][field]) == expected, (name, field)
        (rule,) = [r for r in rules if r.startswith(f"self.name == '{name}' ")]
        assert {f for f in crd_fields if f"has(self.args.{f})" in rule} == set(fields)
    assert crd_fields == model_fields


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
        "profiles": [
            {
                "schedulerName": "a.example",
                "percentageOfNodesToScore": 100,
                "plugins": {
                    point: {"enabled": [{"name": "P"}], "disabled": [{"name": "*"}]}
                    for point in EXTENSION_POINTS
                },
                "pluginConfig": [
                    {"name": "P", "args": {"anything": [1, {"goes": True}]}},
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "ignoredResources": ["example.com/gpu"],
                            "scoringStrategy": {
                                "type": "RequestedToCapacityRatio",
                                "resources": [{"name": "cpu", "weight": 2}],
                                "requestedToCapacityRatio": {
                                    "shape": [{"utilization": 0, "score": 10}]
                                },
                            },
                        },
                    },
                ],
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
    "weight -1": (
        lambda o: _profile0(o)["plugins"]["score"]["enabled"][0].update(weight=-1),
        "less than the minimum of 0",
    ),
    "a weight under disabled": (
        lambda o: _profile0(o)["plugins"]["score"]["disabled"][0].update(weight=2),
        "greater than the maximum of 0",
    ),
    "weight 101": (
        lambda o: _profile0(o)["plugins"]["score"]["enabled"][0].update(weight=101),
        "greater than the maximum of 100",
    ),
    "too many extension points": (
        lambda o: _profile0(o)["plugins"].update(normalize={"enabled": [{"name": "P"}]}),
        "has too many properties",
    ),
    "a typed arg of the wrong type": (
        lambda o: _profile0(o)["pluginConfig"][1]["args"]["scoringStrategy"].update(type=1),
        "1 is not of type 'string'",
    ),
    "an unknown field inside typed args": (
        lambda o: _profile0(o)["pluginConfig"][1]["args"]["scoringStrategy"].update(typ="x"),
        "'typ' was unexpected",
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


def test_the_profiles_kube_scheduler_v137_writes_are_a_valid_spec(
    profile_errors: Callable[[Manifest], list[str]],
) -> None:
    """The written file's profiles pasted into a SchedulerProfile (renamed: default-scheduler
    is kube-scheduler's): every point, weight 0 and every default plugin's args fit."""
    (written,) = load_docs(WRITTEN_CONFIG)
    profiles = copy.deepcopy(written["profiles"])
    profiles[0]["schedulerName"] = "written"
    assert set(profiles[0]["plugins"]) == set(EXTENSION_POINTS)
    obj: Manifest = {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "written"},
        "spec": {
            "percentageOfNodesToScore": written["percentageOfNodesToScore"],
            "podInitialBackoffSeconds": written["podInitialBackoffSeconds"],
            "podMaxBackoffSeconds": written["podMaxBackoffSeconds"],
            "profiles": profiles,
        },
    }
    assert profile_errors(obj) == []


@pytest.mark.parametrize("case", list(BAD_EDITS))
def test_the_schema_refuses(profile_errors: Callable[[Manifest], list[str]], case: str) -> None:
    edit, expected = BAD_EDITS[case]
    obj = copy.deepcopy(FULL)
    edit(obj)
    errors = profile_errors(obj)
    assert any(expected in e for e in errors), errors
