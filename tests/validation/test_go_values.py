"""Bad values as ``field.Error.ErrorBody`` prints them in apimachinery v0.37: a plain
``string`` quoted (%q), numbers as they are, anything else (slices, maps, structs, named
string types such as an operator or an access mode) as ``encoding/json`` writes it. The
object cases are kube-apiserver v1.37.2's lines (``kubectl create --dry-run=server``)."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.validation import Document, object_problems
from multisched.validation.names import aggregate, go_json, go_map, go_value, not_supported


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (["a", "b"], '["a","b"]'),
        (None, "null"),
        ({"b": 1, "a": "x"}, '{"b":1,"a":"x"}'),  # a struct: its fields in order
        ("<a&b>", '"\\u003ca\\u0026b\\u003e"'),  # HTML-safe, as Go escapes
        ("\x01\b\f\n\t", '"\\u0001\\b\\f\\n\\t"'),
        ("\u2028é", '"\\u2028é"'),
        ("\ud800", '"\ufffd"'),  # not UTF-8: Go's replacement character
    ],
)
def test_go_json(value: Any, shown: str) -> None:
    assert go_json(value) == shown


def test_go_map_sorts_keys_as_go_writes_a_map() -> None:
    assert go_json(go_map({"b": "1", "a": "2"})) == '{"a":"2","b":"1"}'


def test_a_plain_string_is_quoted_and_a_named_one_is_json() -> None:
    assert go_value("<x>") == '"<x>"'
    assert go_value(5) == "5" and go_value(True) == "true"
    assert (
        not_supported("p", "<x>", ("A",))
        == 'p: Unsupported value: "\\u003cx\\u003e": supported values: "A"'
    )
    assert (
        not_supported("p", "<x>", ("A",), typed=False)
        == 'p: Unsupported value: "<x>": supported values: "A"'
    )


def volume(**spec: Any) -> dict[str, Any]:
    base = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "local": {"path": "/mnt"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv"},
        "spec": {**base, **spec},
    }


def problems(obj: dict[str, Any]) -> list[str]:
    return object_problems(Document("v.yaml", "document 1", obj))


@pytest.mark.parametrize(
    ("capacity", "shown"),
    [
        ({}, "{}"),
        ({"cpu": "1"}, '{"cpu":"1"}'),
        ({"storage": "1Gi", "memory": "-0.5"}, '{"memory":"-500m","storage":"1Gi"}'),
        ({"<x>": "1", "storage": "1Gi"}, '{"\\u003cx\\u003e":"1","storage":"1Gi"}'),
    ],
)
def test_volume_capacity_prints_as_json(capacity: dict[str, Any], shown: str) -> None:
    found = problems(volume(capacity=capacity))
    assert f'spec.capacity: Unsupported value: {shown}: supported values: "storage"' in found


def test_volume_node_affinity_values_are_label_values() -> None:
    terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x y"]}]}]
    [line] = problems(volume(nodeAffinity={"required": {"nodeSelectorTerms": terms}}))
    assert line.startswith(
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid "
        'value: "x y": a valid label must be an empty string'
    )


def test_an_access_mode_is_a_named_type() -> None:
    assert problems(volume(accessModes=["<a>"])) == [
        'spec.accessModes: Unsupported value: "\\u003ca\\u003e": supported values: '
        '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
    ]


@pytest.mark.parametrize(
    ("errors", "message"),
    [
        (["a"], "a"),
        (["a", "b"], "[a, b]"),
        (["a", "a"], "a"),  # one message left: no brackets
        (["b", "a", "b"], "[b, a]"),  # first occurrences, in order
    ],
)
def test_aggregate_says_each_message_once(errors: list[str], message: str) -> None:
    """``utilerrors.NewAggregate(...).Error()`` (and ``field.ErrorList.ToAggregate``)."""
    assert aggregate(errors) == message
