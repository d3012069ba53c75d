"""Structure of built-in objects against the Kubernetes OpenAPI schemas (kubernetes-validate).

The strict schemas refuse unknown fields, as ``kubectl apply`` (strict field validation)
does; every error is reported, not only the first. Messages follow the API server's wording
for schema errors (``... in body must be of type integer: "string"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv
from referencing import Registry, Resource

from .names import go_value

#: The newest schemas kubernetes-validate ships that we have checked the rules against.
SCHEMA_VERSION = "1.37.0"
_SCHEMA_DIR = f"kubernetes-json-schema/v{SCHEMA_VERSION}-local-strict"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _fits(bounds: tuple[int, int]) -> Any:
    def check(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            return True
        return bounds[0] <= value <= bounds[1]

    return check


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("int32")(_fits(_INT32))
_FORMATS.checks("int64")(_fits(_INT64))


# Go decodes 1.0 into an int field as an error; JSON Schema would call it an integer.
_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPES)


@cache
def _registry() -> Registry:
    defs = kv.schema_contents(f"{_SCHEMA_DIR}/_definitions.json", SCHEMA_VERSION)
    return Resource.from_contents(defs) @ Registry()


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv.schema_contents(f"{_SCHEMA_DIR}/{kind.lower()}-{group}.json", SCHEMA_VERSION)
    except (FileNotFoundError, OSError):
        return None
    registry = Resource.from_contents(schema) @ _registry()
    return _Validator(schema, registry=registry, format_checker=_FORMATS)


def has_schema(kind: str, api_version: str) -> bool:
    return _validator(kind, api_version) is not None


def _path(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _expected(schema: Mapping[str, Any]) -> str:
    types = schema.get("type")
    if isinstance(types, list):
        types = [t for t in types if t != "null"]
        return " or ".join(types)
    return str(types)


def _message(err: jsonschema.ValidationError) -> Iterator[str]:
    path = _path(list(err.absolute_path))
    where = path or "<root>"
    kind = err.validator
    if kind == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties") or {}), key=str)
        for name in extra:
            yield f'{_path([*err.absolute_path, str(name)])}: unknown field "{name}"'
        return
    if kind == "type":
        yield type_error(where, err.instance, _expected(err.schema))
        return
    if kind == "oneOf" and path and _is_quantity(err.schema):
        yield f"{where}: Invalid value: {go_value(_shown(err.instance))}: must be a quantity"
        return
    if kind == "required":
        missing = re.match(r"'([^']*)' is a required property", err.message)
        name = missing.group(1) if missing else "?"
        yield f"{_path([*err.absolute_path, name])}: Required value"
        return
    if kind == "enum":
        supported = ", ".join(go_value(v) for v in err.validator_value)
        yield f"{where}: Unsupported value: {go_value(err.instance)}: supported values: {supported}"
        return
    if kind == "format":
        yield f"{where}: Invalid value: {err.instance}: must fit in {err.validator_value}"
        return
    yield f"{where}: Invalid value: {go_value(_shown(err.instance))}: {err.message}"


def type_error(path: str, value: object, expected: str) -> str:
    """The API server's schema wording for a value of the wrong type."""
    got = _json_type(value)
    return f'{path}: Invalid value: "{got}": {path} in body must be of type {expected}: "{got}"'


def _is_quantity(schema: Mapping[str, Any]) -> bool:
    options = schema.get("oneOf") or ()
    return {str(o.get("type")) for o in options} == {
        str(["string", "null"]),
        str(["number", "null"]),
    }


def _shown(value: object) -> object:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def structure_errors(obj: Mapping[str, Any]) -> list[str] | None:
    """Schema problems of ``obj`` as "path: message" lines; None when its kind has no schema."""
    validator = _validator(str(obj.get("kind")), str(obj.get("apiVersion")))
    if validator is None:
        return None
    out: list[str] = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path]):
        out.extend(_message(err))
    return out
