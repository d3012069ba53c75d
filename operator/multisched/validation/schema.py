"""Structure of built-in objects against the Kubernetes OpenAPI schemas (kubernetes-validate).

The strict schemas refuse unknown fields, as ``kubectl apply`` (strict field validation)
does; every error is reported, not only the first. Messages follow the API server's wording
for schema errors (``... in body must be of type integer: "string"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from .names import go_value

if TYPE_CHECKING:  # the CLI's extra: ``multisched run`` never imports them
    import jsonschema
    from referencing import Registry

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


@cache
def _engine() -> tuple[Any, Any]:
    """jsonschema's format checker and validator class, imported on first use: only the
    offline commands check schemas, and the image of ``multisched run`` does not ship
    jsonschema or kubernetes-validate (the ``cli`` extra)."""
    import jsonschema

    formats = jsonschema.FormatChecker(formats=())
    formats.checks("int32")(_fits(_INT32))
    formats.checks("int64")(_fits(_INT64))
    # Go decodes 1.0 into an int field as an error; JSON Schema would call it an integer.
    types = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=types)
    return formats, validator


def _schema(name: str) -> Any:
    try:
        from kubernetes_validate import utils as kv
    except ImportError as exc:
        raise SchemasMissing() from exc
    return kv.schema_contents(f"{_SCHEMA_DIR}/{name}", SCHEMA_VERSION)


class SchemasMissing(ImportError):
    """The offline checks need the ``cli`` extra (kubernetes-validate, jsonschema)."""

    def __init__(self) -> None:
        super().__init__(
            "schema checks need the cli extra: pip install 'multisched[cli]' "
            "(kubernetes-validate, jsonschema)"
        )


@cache
def _definitions_document() -> Any:
    """The shared definitions (1.8 MB of JSON), read once for the registry and the memo."""
    return _schema("_definitions.json")


@cache
def _registry() -> Registry:
    from referencing import Registry, Resource

    return Resource.from_contents(_definitions_document()) @ Registry()


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    from referencing import Resource

    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = _schema(f"{kind.lower()}-{group}.json")
    except (FileNotFoundError, OSError):
        return None
    registry = Resource.from_contents(schema) @ _registry()
    formats, validator = _engine()
    result: jsonschema.protocols.Validator = validator(
        schema, registry=registry, format_checker=formats
    )
    return result


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
    valid = _VALID_SHAPES.setdefault(id(validator), set())
    enum_keys = _enum_keys_for(str(obj.get("kind")), str(obj.get("apiVersion")))
    key = _shape_key(obj, enum_keys) if enum_keys is not None else None
    if key is not None and key in valid:
        return []
    out: list[str] = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path]):
        out.extend(_message(err))
    if not out and key is not None and len(valid) < _MAX_SHAPES:
        valid.add(key)
    return out


# --- shape memo -----------------------------------------------------------------------------
# The strict schemas judge a value by its JSON type, its field names, the range of an integer
# (int32/int64 formats) and, for enum fields, the value itself: nothing else (no patterns,
# lengths or bounds; ``_enum_keys_for`` checks that on the schemas themselves). So objects with
# the same shape key (names kept, strings reduced to their type unless an enum field holds
# them, integers to their range) are valid alike, and a valid shape is checked once. Invalid
# objects always get the full check, which words every problem.

#: Keywords the shape key accounts for; annotations (description, x-kubernetes-*) do not judge.
_JUDGING = frozenset(
    {"type", "properties", "additionalProperties", "items", "required", "enum", "format", "oneOf"}
)
_ANNOTATIONS = frozenset({"description", "$schema", "$id", "$defs", "default"})
#: Formats the format checker judges (every other format is an annotation to it).
_CHECKED_FORMATS = frozenset({"int32", "int64"})
_MAX_SHAPES = 10_000
_VALID_SHAPES: dict[int, set[object]] = {}


@cache
def _definitions() -> dict[str, Any]:
    defs: dict[str, Any] = _definitions_document()["$defs"]
    return defs


@cache
def _enum_roots() -> frozenset[str]:
    """Definitions whose own value (not a field of it) an enum constrains, through items,
    oneOf or $ref: found by iterating to a fixed point, as definitions refer in cycles."""
    defs = _definitions()
    roots: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, schema in defs.items():
            if name not in roots and _holds_enum(schema, roots):
                roots.add(name)
                changed = True
    return frozenset(roots)


def _holds_enum(schema: Any, roots: set[str] | frozenset[str]) -> bool:
    """Whether an enum constrains the value ``schema`` describes (not its fields)."""
    if not isinstance(schema, dict):
        return False
    if "enum" in schema or _holds_enum(schema.get("items"), roots):
        return True
    if any(_holds_enum(option, roots) for option in schema.get("oneOf") or ()):
        return True
    ref = schema.get("$ref")
    return isinstance(ref, str) and ref.rsplit("/", 1)[-1] in roots


def _fields_with_enums(schema: Any, keys: set[str]) -> bool:
    """Adds to ``keys`` the fields of ``schema`` (and of its items, options and map values)
    whose value an enum constrains; False when ``schema`` is beyond the shape key: another
    judging keyword or format, a $ref outside the definitions, or an enum on map values."""
    if isinstance(schema, bool):
        return True  # additionalProperties: false/true
    if not isinstance(schema, dict):
        return False
    roots = _enum_roots()
    for keyword, value in schema.items():
        if keyword.startswith("x-kubernetes-") or keyword in _ANNOTATIONS:
            continue
        if keyword == "$ref":
            if str(value).rsplit("/", 1)[-1] not in _definitions():
                return False
            continue  # every definition is walked on its own
        if keyword not in _JUDGING:
            return False
        if keyword == "properties":
            for name, sub in value.items():
                if _holds_enum(sub, roots):
                    keys.add(name)
                if not _fields_with_enums(sub, keys):
                    return False
        elif keyword == "additionalProperties":
            # A map's values sit under arbitrary keys: an enum there is beyond the key.
            if _holds_enum(value, roots) or not _fields_with_enums(value, keys):
                return False
        elif keyword == "items":
            if not _fields_with_enums(value, keys):
                return False
        elif keyword == "oneOf" and not all(_fields_with_enums(o, keys) for o in value):
            return False
    return True


@cache
def _definition_enum_keys() -> frozenset[str] | None:
    if set(_engine()[0].checkers) - _CHECKED_FORMATS:
        return None  # a format judged by value, beyond the integer ranges
    keys: set[str] = set()
    if not all(_fields_with_enums(schema, keys) for schema in _definitions().values()):
        return None
    return frozenset(keys)


@cache
def _enum_keys_for(kind: str, api_version: str) -> frozenset[str] | None:
    """Field names whose values the schemas of ``kind`` constrain beyond their type (an
    enum); None when they use anything the shape key would not capture (no memo then)."""
    validator = _validator(kind, api_version)
    shared = _definition_enum_keys()
    if validator is None or shared is None:
        return None
    keys = set(shared)
    if _holds_enum(validator.schema, _enum_roots()):
        return None
    if not _fields_with_enums(validator.schema, keys):
        return None
    return frozenset(keys)


class _NoShape(Exception):
    """A value that is not plain JSON (a set, a date): checked in full."""


_INT32 = (-(2**31), 2**31 - 1)


def _shape_key(obj: Any, enum_keys: frozenset[str]) -> object:
    try:
        return _shape(obj, "", enum_keys)
    except _NoShape:
        return None


#: The shape of a scalar outside enum fields: its JSON type (integers by range, below).
_SCALAR_SHAPES: dict[type, str] = {str: "s", bool: "b", float: "f", type(None): "n"}


def _shape(value: Any, field: str, enum_keys: frozenset[str]) -> object:
    """("d", key, shape, key, shape, ...) for a mapping, ("l", shape, ...) for a list, a type
    tag for a scalar, or ("e", type, value) for a scalar of an enum field."""
    kind = type(value)
    if kind is dict:
        out: list[object] = ["d"]
        for name, child in value.items():
            if type(name) is not str:
                raise _NoShape
            tag = _SCALAR_SHAPES.get(type(child))
            if tag is None or name in enum_keys:
                tag = _shape(child, name, enum_keys)  # type: ignore[assignment]
            out.append(name)
            out.append(tag)
        return tuple(out)
    if kind is list:
        return ("l", *[_shape(child, field, enum_keys) for child in value])
    if field in enum_keys:
        if kind in _SCALAR_SHAPES or kind is int:
            return ("e", kind.__name__, value)
        raise _NoShape
    tag = _SCALAR_SHAPES.get(kind)
    if tag is not None:
        return tag
    if kind is int:
        if _INT32[0] <= value <= _INT32[1]:
            return "i32"
        return "i64" if _INT64[0] <= value <= _INT64[1] else "i"
    raise _NoShape
