"""Reading objects for the engine: nulls dropped as Go's zero values, shapes memoized only
where the strict schemas provably judge alike."""

import pytest

from multisched.validation import Document, without_nulls
from multisched.validation import schema as schema_mod
from multisched.validation.schema import structure_errors


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"a": None, "b": {"c": None, "d": [1, None, {"e": None}]}}, {"b": {"d": [1, {}]}}),
        ({"s": "null", "t": ["null"]}, {"s": "null", "t": ["null"]}),  # a string, not a null
        ({1: None, 2: "x"}, {2: "x"}),  # beyond JSON: the walk decides
        ({"big": 2**70, "n": None}, {"big": 2**70}),
        ({"x": {"y": 1}}, {"x": {"y": 1}}),
    ],
)
def test_without_nulls_drops_every_null_and_nothing_else(obj: object, expected: object) -> None:
    assert without_nulls(obj) == expected


def test_an_object_without_nulls_is_kept_as_is() -> None:
    obj = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k"}]}}
    assert without_nulls(obj) is obj


def test_document_kind_is_read_once_and_only_from_a_string() -> None:
    assert Document("f", "document 1", {"kind": "Pod"}).kind == "Pod"
    assert Document("f", "document 1", {"kind": 3}).kind == ""
    assert Document("f", "document 1", ["Pod"]).kind == ""


def _pod(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def test_the_schemas_judge_only_by_what_the_shape_key_keeps() -> None:
    # Only apiVersion/kind carry enums in the strict schemas; a new keyword would turn
    # the memo off (None) rather than make it unsound.
    for kind, version in [("Pod", "v1"), ("Node", "v1"), ("PodDisruptionBudget", "policy/v1")]:
        assert schema_mod._enum_keys_for(kind, version) == frozenset({"apiVersion", "kind"})


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"priority": 2**31}, "spec.priority: Invalid value: 2147483648: must fit in int32"),
        ({"priority": 1.5}, "spec.priority: Invalid value"),
        ({"priority": True}, "spec.priority: Invalid value"),
        ({"nodeName": 3}, "spec.nodeName: Invalid value"),
        ({"bogus": 1}, 'spec.bogus: unknown field "bogus"'),
    ],
)
def test_a_memoized_valid_shape_never_hides_a_problem(
    spec: dict[str, object], problem: str
) -> None:
    assert structure_errors(_pod(priority=5, nodeName="n")) == []
    assert structure_errors(_pod(priority=5, nodeName="n")) == []  # from the memo
    errors = structure_errors(_pod(**{"priority": 5, "nodeName": "n", **spec}))
    assert errors and any(line.startswith(problem) for line in errors), errors


def test_a_schema_beyond_the_shape_key_turns_the_memo_off() -> None:
    keys: set[str] = set()
    assert schema_mod._fields_with_enums({"properties": {"a": {"enum": ["x"]}}}, keys)
    assert keys == {"a"}
    assert not schema_mod._fields_with_enums({"properties": {"a": {"pattern": "^x$"}}}, set())
    assert not schema_mod._fields_with_enums({"additionalProperties": {"enum": ["x"]}}, set())
    assert not schema_mod._fields_with_enums({"$ref": "#/$defs/nowhere"}, set())
