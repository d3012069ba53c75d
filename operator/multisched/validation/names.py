"""Label, name and selector validation with apimachinery's messages (``field.Error`` strings).

Cluster files and plugin args are checked once at the boundary, so these favour
upstream-identical messages over speed. Two families of checks, as apimachinery v0.37 has
them: ``util/validation`` for object names (lengths "characters"), and
``api/validate/content`` for label keys, label values and label-key prefixes (lengths
"bytes"). Both count bytes, as Go's ``len`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MAX = 63
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")

_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MAX = 63
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
NODE_FIELD_KEYS = ("metadata.name",)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery ``validation.RegexError`` (its odd ``', ' + ' or '`` spacing included)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    """``util/validation.MaxLenError`` (object names)."""
    return f"must be no more than {length} characters"


def _max_bytes_error(length: int) -> str:
    """``content.MaxLenError`` (label keys and values, label-key prefixes, long names)."""
    return f"must be no more than {length} bytes"


def _size(value: str) -> int:
    """Go's ``len`` of the string: its UTF-8 bytes."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def is_dns1123_subdomain(value: str) -> list[str]:
    """``util/validation.IsDNS1123Subdomain`` (most objects' names)."""
    errs = []
    if _size(value) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len_error(_DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_long_name(value: str) -> list[str]:
    """``content.IsDNS1123Subdomain``: a label key's prefix, and the names checked by
    ``validate.LongName`` (a ReplicationController's); its length is said in bytes."""
    errs = []
    if _size(value) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_bytes_error(_DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_MAX = 63
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}$")


def _label(value: str, pattern: re.Pattern[str], msg: str, fmt: str, *examples: str) -> list[str]:
    """A DNS label: at most 63 characters, matching ``pattern``."""
    errs = []
    if _size(value) > _DNS1123_LABEL_MAX:
        errs.append(_max_len_error(_DNS1123_LABEL_MAX))
    if not pattern.fullmatch(value):
        errs.append(_regex_error(msg, fmt, *examples))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = _label(
        value, _DNS1123_LABEL_RE, _DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"
    )
    if not _DNS1123_LABEL_RE.fullmatch(value) and _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        # A valid subdomain: the dots are all that is wrong (upstream's words).
        errs[-1] = "must not contain dots"
    return errs


def is_qualified_name(value: str) -> list[str]:
    """``validation.IsQualifiedName``, which v0.37 makes ``content.IsLabelKey``: an optional
    DNS subdomain prefix, '/', and a name, worded as a label key wherever it is used."""
    errs: list[str] = []
    name_error = _qualified_name_error()
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in is_long_name(prefix))
    else:
        return [
            f"a valid label key {name_error} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > _QUALIFIED_NAME_MAX:
        errs.append(f"name part {_max_bytes_error(_QUALIFIED_NAME_MAX)}")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(f"name part {name_error}")
    return errs


@cache
def _qualified_name_error() -> str:
    return _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")


def is_valid_label_value(value: str) -> list[str]:
    """``content.IsLabelValue``."""
    errs = []
    if _size(value) > _LABEL_VALUE_MAX:
        errs.append(_max_bytes_error(_LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def go_value(value: Any) -> str:
    """A bad value as ``field.Error.ErrorBody`` prints it: a ``string`` quoted (%q), numbers
    and booleans as they are, anything else (a slice, a map, a struct, nil) as JSON."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return go_json(value)


#: What ``encoding/json`` escapes beyond Python's: HTML-significant characters and the two
#: JavaScript line separators.
_GO_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def go_json(value: Any) -> str:
    """``json.Marshal``, compact, as ``field.Error`` shows a value that is not a plain
    string or number (v0.37; v0.28 printed ``%#v``). Mappings are written in their own
    order: Go sorts a map's keys and keeps a struct's field order, so callers pass maps
    through ``go_map`` and build structs in field order. A lone surrogate (not UTF-8) is
    Go's replacement character."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    text = text.translate(_GO_JSON_ESCAPES)
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def go_map(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A ``map[string]...`` for ``go_json``: keys sorted, as Go writes them."""
    return {str(k): mapping[k] for k in sorted(mapping, key=str)}


def invalid(path: str, value: Any, detail: str) -> str:
    return invalid_shown(path, go_value(value), detail)


def invalid_typed(path: str, value: Any, detail: str) -> str:
    """``field.Invalid`` of a named string type (an operator, an effect, a resource name):
    ``ErrorBody`` quotes only a plain ``string``, so these print as JSON."""
    return invalid_shown(path, go_json(value), detail)


def invalid_shown(path: str, shown: str, detail: str = "") -> str:
    """``field.Invalid`` of a value already printed as Go prints it (a struct's JSON)."""
    return (
        f"{path}: Invalid value: {shown}: {detail}" if detail else f"{path}: Invalid value: {shown}"
    )


def required(path: str, detail: str = "") -> str:
    return f"{path}: Required value: {detail}" if detail else f"{path}: Required value"


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: Any, detail: str = "") -> str:
    out = f"{path}: Duplicate value: {go_value(value)}"
    return f"{out}: {detail}" if detail else out


def not_supported(path: str, value: Any, supported: Sequence[str], *, typed: bool = True) -> str:
    """``field.NotSupported``. Its values are nearly always named string types (an enum, or
    a pointer to one), shown as JSON; ``typed=False`` for a plain ``string`` (%q). The
    supported values are ``strconv.Quote``d."""
    listed = ", ".join(go_quote(s) for s in supported)
    shown = go_json(value) if typed else go_value(value)
    return f"{path}: Unsupported value: {shown}: supported values: {listed}"


def aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: each message once, in brackets when more
    than one is left."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def label_name_errors(path: str, name: str) -> list[str]:
    """``metav1validation.ValidateLabelName``: one error per failed rule."""
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def _requirement_errors(path: str, req: Mapping[str, Any]) -> list[str]:
    """``labels.NewRequirement`` on a node selector requirement (matchExpressions)."""
    key, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or ())
    # The slice as given: an absent one is Go's nil, which JSON writes as null.
    shown = values if req.get("values") is not None else None
    errs = []
    if op not in NODE_SELECTOR_OPERATORS:
        return [not_supported(f"{path}.operator", op, NODE_SELECTOR_OPERATORS)]
    key_msgs = is_qualified_name(key)
    if key_msgs:
        errs.append(invalid(f"{path}.key", key, "; ".join(key_msgs)))
    if op in ("In", "NotIn") and not values:
        errs.append(
            invalid(
                f"{path}.values", shown, "for 'in', 'notin' operators, values set can't be empty"
            )
        )
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(
            invalid(
                f"{path}.values", shown, "values set must be empty for exists and does not exist"
            )
        )
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                invalid(
                    f"{path}.values",
                    shown,
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, v in enumerate(values):
            if not re.fullmatch(r"[+-]?[0-9]+", v):
                errs.append(
                    invalid(
                        f"{path}.values[{i}]",
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    for i, v in enumerate(values):
        msgs = is_valid_label_value(v)
        if msgs:
            errs.append(invalid(f"{path}.values[{i}][{key}]", v, "; ".join(msgs)))
    return errs


def _field_requirement_errors(path: str, req: Mapping[str, Any]) -> list[str]:
    """matchFields: In/NotIn with exactly one value; only ``metadata.name`` is a node field."""
    key, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or ())
    if op not in FIELD_SELECTOR_OPERATORS:
        return [not_supported(f"{path}.operator", op, FIELD_SELECTOR_OPERATORS)]
    errs = []
    if key not in NODE_FIELD_KEYS:
        errs.append(not_supported(f"{path}.key", key, NODE_FIELD_KEYS, typed=False))
    if len(values) != 1:
        shown = values if req.get("values") is not None else None
        errs.append(invalid(f"{path}.values", shown, "must have one element"))
    return errs


def node_selector_term_errors(path: str, term: Mapping[str, Any]) -> list[str]:
    """Parse errors of one NodeSelectorTerm (``nodeaffinity.newNodeSelectorTerm``)."""
    errs = []
    for i, req in enumerate(term.get("matchExpressions") or ()):
        errs += _requirement_errors(f"{path}.matchExpressions[{i}]", req)
    for i, req in enumerate(term.get("matchFields") or ()):
        errs += _field_requirement_errors(f"{path}.matchFields[{i}]", req)
    return errs


def is_valid_path_segment_name(value: str) -> list[str]:
    """``path.IsValidPathSegmentName``: the only name rule the generic registry applies to
    kinds whose own validation checks no name (a PodDisruptionBudget's)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_ESCAPES |= {"\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(value: str) -> str:
    """``strconv.Quote``, as ``%#v`` prints a string field of a struct: unprintable
    characters escaped (Python's and Go's notions of printable agree)."""
    out = []
    for ch in value:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'
