"""Device selector CEL, as k8s.io/dynamic-resource-allocation/cel compiles and evaluates it.

The runtime is Google's cel-cpp (``cel-expr-python``): parser, type checker, the strings and
bindings extensions. Kubernetes' quantity and semver libraries are registered here; their
values are protobuf messages because the binding has no opaque types. An expression is
compiled once (``compile_selector`` caches by text); callers keep the result per object
generation and evaluate it per device.

The cost limit (CEL_SELECTOR_EXPRESSION_MAX_COST per evaluation, as upstream's CostLimit) is
enforced from a worst-case estimate: an expression that cannot reach it runs untracked; one
that can runs metered per comprehension iteration and fails with cel-go's "operation cancelled:
actual cost limit exceeded" (``celcost`` says how). Like the scheduler, no compile-time check.

Where this differs from upstream (cel-cpp's Python binding allows no more):
- Cost is charged from worst-case sizes (the API's limits, or the device's own when larger or
  when the expression is metered), not measured: a metered expression may fail somewhat
  before upstream's actual cost would, never after (but for devices past the API's limits,
  which only unvalidated documents hold, in unmetered expressions that cannot run long).
- cel-cpp ends any evaluation at 10000 comprehension iterations (not configurable through the
  binding): upstream's cost error if the expression is metered, else ITERATION_LIMIT_EXCEEDED,
  where upstream would go on (such cheap loops reach 1000000 only past ~300000 iterations).
- A missing domain (``device.attributes["x"]``) is an empty map as upstream's is, by
  evaluating again with it filled in (at most 8 domains); so ``has()`` and ``in`` over a
  domain that an earlier failed pass filled in see it present, where upstream's don't.
- Not registered: the DRAListTypeAttributes ``includes`` (a dyn receiver does not dispatch),
  list ``indexOf``/``lastIndexOf`` (the strings extension owns the name), cel-go's lists and
  sets extensions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]
from cel_expr_python import cel  # type: ignore[import-untyped]
from cel_expr_python.ext import ext_bindings, ext_strings  # type: ignore[import-untyped]
from google.protobuf import (  # type: ignore[import-untyped]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

from multisched.dra import celast, celcost, semver
from multisched.validation.quantity import MAX_QUANTITY, QuantityError, parse_quantity

#: resourceapi.CELSelectorExpressionMaxCost (k8s.io/api resource/v1): each evaluation's limit.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000

_T = cel.Type
_POOL = descriptor_pool.DescriptorPool()
_FILE = descriptor_pb2.FileDescriptorProto(
    name="multisched/dra/cel.proto", package="kubernetes", syntax="proto3"
)
for _name in ("Quantity", "Semver"):
    _FILE.message_type.add(name=_name).field.add(name="text", number=1, type=9, label=1)
_POOL.Add(_FILE)
QuantityValue: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("kubernetes.Quantity")
)
SemverValue: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("kubernetes.Semver"))
_QTY = _T("kubernetes.Quantity")
_SEMVER = _T("kubernetes.Semver")


class SelectorError(ValueError):
    """A compile or evaluation error; ``str()`` carries upstream's wording."""


@lru_cache(maxsize=4096)
def _quantity(text: str) -> Decimal:
    return parse_quantity(text, bounded=False)


def _qty(message: Any) -> Decimal:
    return _quantity(message.text)


def _to_quantity(text: str) -> Any:
    """Canonical text, so that CEL's ``==`` (message equality) is Quantity.Equal."""
    return _qty_text(_quantity(text))  # QuantityError carries apimachinery's message


def _is_quantity(text: str) -> bool:
    try:
        _quantity(text)
    except QuantityError:
        return False
    return True


def _cmp(a: Decimal, b: Decimal | int) -> int:
    return (a > b) - (a < b)


def _qty_text(value: Decimal) -> Any:
    return QuantityValue(text=format(value.normalize(), "f"))


def _as_integer(message: Any) -> int:
    value = _qty(message)
    if not _is_integer(value):
        raise ValueError("cannot convert value to integer")
    return int(value)


def _semver(text: str, normalize: bool = False) -> Any:
    (semver.parse_normalized if normalize else semver.parse)(text)
    return SemverValue(text=text if not normalize else _normalized_text(text))


def _normalized_text(text: str) -> str:
    major, minor, patch, pre = semver.parse_normalized(text)
    return f"{major}.{minor}.{patch}" + ("-" + ".".join(map(str, pre)) if pre else "")


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        (semver.parse_normalized if normalize else semver.parse)(text)
    except semver.SemverError:
        return False
    return True


def _sv(message: Any) -> semver.Version:
    return semver.parse(message.text)


def _overload(
    oid: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = False
) -> Any:
    return cel.Overload(oid, ret, params, is_member=member, impl=impl)


def _declared(oid: str, ret: Any, params: list[Any]) -> Any:
    """A member overload for the type checker whose runtime impl another overload holds."""
    return cel.Overload(oid, ret, params, is_member=True)


def _compare(a: Any, b: Any) -> int:
    if a.DESCRIPTOR.name == "Semver":
        return semver.compare(_sv(a), _sv(b))
    return _cmp(_qty(a), _qty(b))


def _functions() -> list[Any]:
    """apiserver's library.Quantity() and library.SemverLib(SemverVersion(1)) declarations."""
    q, s, b, i, d, st = _QTY, _SEMVER, _T.BOOL, _T.INT, _T.DOUBLE, _T.STRING
    table: dict[str, list[Any]] = {
        "quantity": [_overload("string_to_quantity", q, [st], _to_quantity)],
        "isQuantity": [_overload("is_quantity_string", b, [st], _is_quantity)],
        "sign": [_overload("quantity_get_sign", i, [q], lambda a: _cmp(_qty(a), 0), True)],
        "asApproximateFloat": [
            _overload("quantity_get_float", d, [q], lambda a: float(_qty(a)), True)
        ],
        "asInteger": [_overload("quantity_get_int", i, [q], _as_integer, True)],
        "isInteger": [
            _overload("quantity_is_integer", b, [q], lambda a: _is_integer(_qty(a)), True)
        ],
        "add": [
            _overload("quantity_add", q, [q, q], lambda a, c: _qty_text(_qty(a) + _qty(c)), True),
            _overload("quantity_add_int", q, [q, i], lambda a, c: _qty_text(_qty(a) + c), True),
        ],
        "sub": [
            _overload("quantity_sub", q, [q, q], lambda a, c: _qty_text(_qty(a) - _qty(c)), True),
            _overload("quantity_sub_int", q, [q, i], lambda a, c: _qty_text(_qty(a) - c), True),
        ],
        # cel-cpp dispatches on the runtime kind (both are messages): one impl serves both
        # declared overloads and looks at which message it got.
        "isGreaterThan": [
            _overload("quantity_is_greater_than", b, [q, q], lambda a, c: _compare(a, c) > 0, True),
            _declared("semver_is_greater_than", b, [s, s]),
        ],
        "isLessThan": [
            _overload("quantity_is_less_than", b, [q, q], lambda a, c: _compare(a, c) < 0, True),
            _declared("semver_is_less_than", b, [s, s]),
        ],
        "compareTo": [
            _overload("quantity_compare_to", i, [q, q], _compare, True),
            _declared("semver_compare_to", i, [s, s]),
        ],
        "semver": [
            _overload("string_to_semver", s, [st], _semver),
            _overload("string_bool_to_semver", s, [st, b], _semver),
        ],
        "isSemver": [
            _overload("is_semver_string", b, [st], _is_semver),
            _overload("is_semver_string_bool", b, [st, b], _is_semver),
        ],
        "major": [_overload("semver_major", i, [s], lambda a: _sv(a)[0], True)],
        "minor": [_overload("semver_minor", i, [s], lambda a: _sv(a)[1], True)],
        "patch": [_overload("semver_patch", i, [s], lambda a: _sv(a)[2], True)],
    }
    table |= _lists_and_regex()
    # Only metered copies of costly expressions call it (the parser cannot name it).
    table[celast.COST_FUNCTION] = [_overload("cost_charge", b, [i, b], celcost.charge)]
    return [cel.FunctionDecl(name, overloads) for name, overloads in table.items()]


def _lists_and_regex() -> dict[str, list[Any]]:
    """apiserver's library.Lists (v1 at 1.37) and library.Regex.

    Not list.indexOf/lastIndexOf: the strings extension declares ``indexOf`` and cel-cpp
    refuses a second declaration of the name."""
    lst, st, b, i, dyn = _T.List(_T.DYN), _T.STRING, _T.BOOL, _T.INT, _T.DYN
    return {
        "isSorted": [_overload("list_is_sorted", b, [lst], lambda xs: xs == sorted(xs), True)],
        "sum": [_overload("list_sum", dyn, [lst], sum, True)],
        "min": [_overload("list_min", dyn, [lst], lambda xs: _extreme(xs, min, "min"), True)],
        "max": [_overload("list_max", dyn, [lst], lambda xs: _extreme(xs, max, "max"), True)],
        "find": [_overload("string_find_string", st, [st, st], _find, True)],
        "findAll": [
            _overload("string_find_all_string", _T.List(st), [st, st], _find_all, True),
            _overload(
                "string_find_all_string_int",
                _T.List(st),
                [st, st, i],
                lambda s, r, n: _find_all(s, r)[: n if n >= 0 else None],
                True,
            ),
        ],
    }


def _extreme(values: list[Any], pick: Callable[..., Any], name: str) -> Any:
    if not values:
        raise ValueError(f"{name} called on empty list")
    return pick(values)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is the selector's error, not a log line


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """RE2, as cel-go's regex library: linear in the text, whatever the pattern."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as err:
        detail = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else err
        raise ValueError(f"error parsing regexp: {detail}") from None


def _find(text: str, pattern: str) -> str:
    found = _regex(pattern).search(text)
    return found.group(0) if found else ""


def _find_all(text: str, pattern: str) -> list[str]:
    """Go's FindAllString: an empty match right after the previous match is skipped."""
    found, end = [], -1
    for match in _regex(pattern).finditer(text):
        if match.start() == match.end() == end:
            continue
        found.append(match.group(0))
        end = match.end()
    return found


def _is_integer(value: Decimal) -> bool:
    # The parser caps magnitudes past 2^63-1 at it, so the cap itself counts as too large.
    return value == value.to_integral_value() and abs(value) < MAX_QUANTITY


_ENV = cel.NewEnv(
    descriptor_pool=_POOL,
    # device is dynamic, as upstream's attribute values are (a string, int, bool, semver or a list).
    variables={"device": _T.Map(_T.STRING, _T.DYN)},
    extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings()],
    functions=_functions(),
)

#: cel-cpp's runtime messages → cel-go's, which upstream's tests and users see.
_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"No matching overloads found : .*"), "no such overload"),
)
_STATUS = re.compile(r"^[A-Z_]+: ")
ITERATION_LIMIT_EXCEEDED = (
    "operation cancelled: comprehension iteration limit exceeded (10000 per evaluation)"
)
_TYPE_NAMES = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string"}
_TYPE_NAMES |= {"BYTES": "bytes", "NULL": "null_type", "DURATION": "google.protobuf.Duration"}
_TYPE_NAMES |= {"TIMESTAMP": "google.protobuf.Timestamp", "kubernetes.Semver": "kubernetes.Semver"}


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """One checked expression: ``matches(device)`` evaluates it."""

    expression: str
    program: Any
    #: Evaluated instead of ``program`` when it could exceed the cost limit (``celcost``).
    metered: Any = None
    #: The metered evaluation's budget: the limit less the cost outside comprehensions.
    budget: float = 0
    #: Its run time depends on the device's sizes: sizes past the API's are re-planned.
    sized: bool = False

    def matches(
        self,
        driver: str,
        attributes: Mapping[str, Mapping[str, Any]],
        capacity: Mapping[str, Mapping[str, Any]],
        allow_multiple_allocations: bool = False,
    ) -> bool:
        """``DeviceMatches``: attributes and capacity as the v1 API has them (qualified names)."""
        by_domain = _by_domain(attributes, driver, _attribute_value)
        capacity_by_domain = _by_domain(capacity, driver, _capacity_value)
        device = {
            "driver": driver,
            "allowMultipleAllocations": allow_multiple_allocations,
            "attributes": by_domain,
            "capacity": capacity_by_domain,
        }
        plan = self
        # Sizes past the API's limits, or a costly worst case: plan for this device's sizes.
        if self.sized and (
            limits := celcost.device_limits(
                driver, attributes, capacity, None if self.metered else _LIMITS
            )
        ):
            plan = _planned(self.expression, limits)
        for _ in range(_DEFAULT_DOMAINS):
            try:
                if plan.metered is None:
                    result = plan.program.eval(data={"device": device})
                else:
                    result = _metered_eval(plan.metered, plan.budget, device)
            except RuntimeError as err:  # a Status, not a CEL error value
                raise SelectorError(_status_wording(str(err), plan.metered is not None)) from None
            kind = result.type().name()
            if kind != "ERROR":
                break
            message = _cel_go_wording(str(result.value()))
            domain = _missing_domain(message, by_domain, capacity_by_domain)
            if domain is None:
                raise SelectorError(message)
            # Upstream's attribute and capacity maps give an empty map for a domain the device
            # lacks (newStringInterfaceMapWithDefault): evaluate again with one in its place.
            by_domain[domain] = {}
            capacity_by_domain[domain] = {}
        else:
            raise SelectorError(message)
        if kind != "BOOL":
            raise SelectorError(
                f"CEL result of type {_type_name(kind)} could not be converted to bool: "
                "type conversion error"
            )
        return bool(result.value())


#: Missing domains an evaluation fills in, one per pass, before its error stands.
_DEFAULT_DOMAINS = 8
_NO_SUCH_KEY = "no such key: "


def _missing_domain(
    message: str, attributes: Mapping[str, Any], capacity: Mapping[str, Any]
) -> str | None:
    """The key of a "no such key" error when it is not a domain the device has."""
    if not message.startswith(_NO_SUCH_KEY):
        return None
    key = message[len(_NO_SUCH_KEY) :]
    if key in attributes or key in capacity:
        return None
    return key


def _metered_eval(program: Any, budget: float, device: dict[str, Any]) -> Any:
    """cel-go's CostLimit: past the budget, the loops end and the evaluation fails."""
    if budget < 0:
        raise SelectorError(celcost.COST_EXCEEDED)
    celcost.start(budget)
    result = program.eval(data={"device": device})
    if celcost.exceeded():
        raise SelectorError(celcost.COST_EXCEEDED)
    return result


def _status_wording(message: str, metered: bool) -> str:
    """cel-cpp stops any evaluation at 10000 comprehension iterations (RuntimeOptions'
    comprehension_max_iterations, which the binding does not expose). That is upstream's
    cost error when the expression's worst case is past the limit; else it is this
    runtime's own limit (upstream would go on)."""
    message = _STATUS.sub("", message).removesuffix(" [INTERNAL]")
    if message == "Iteration budget exceeded":
        return celcost.COST_EXCEEDED if metered else ITERATION_LIMIT_EXCEEDED
    return _cel_go_wording(message)


def _by_domain(
    values: Mapping[str, Any], driver: str, convert: Callable[[str, Any], Any]
) -> dict[str, dict[str, Any]]:
    """parseQualifiedName: "domain/id", or the driver as domain for a bare id."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        domain, sep, ident = name.partition("/")
        if not sep:
            domain, ident = driver, name
        out.setdefault(domain, {})[ident] = convert(name, value)
    return out


def _attribute_value(name: str, attr: Mapping[str, Any]) -> Any:
    """getAttributeValue: the one value set (lists first, then scalars); versions parse."""
    for key in ("int", "bool", "string"):
        if (plural := attr.get(key + "s")) is not None:
            return list(plural)
    if (versions := attr.get("versions")) is not None:
        return [_version(name, v) for v in versions]
    for key in ("int", "bool", "string"):
        if (value := attr.get(key)) is not None:
            return value
    if (version := attr.get("version")) is not None:
        return _version(name, version)
    raise SelectorError(f"attribute {name}: unsupported attribute value")


def _capacity_value(name: str, capacity: Mapping[str, Any]) -> Any:
    try:
        return _to_quantity(str(capacity["value"]))
    except (QuantityError, KeyError) as err:
        raise SelectorError(f"capacity {name}: {err}") from None


def _version(name: str, text: str) -> Any:
    try:
        semver.parse(text)
    except semver.SemverError as err:
        raise SelectorError(f"attribute {name}: parse semantic version: {err}") from None
    return SemverValue(text=text)


def _cel_go_wording(message: str) -> str:
    message = _STATUS.sub("", message)
    for pattern, replacement in _ERRORS:
        if pattern.search(message):
            return pattern.sub(replacement, message)
    return message


def _type_name(kind: str) -> str:
    if kind.lower().startswith("list"):
        return "list"
    if kind.lower().startswith("map"):
        return "map"
    return _TYPE_NAMES.get(kind, kind)


_DYN_RANGE = "cannot be the range of a comprehension"


@lru_cache(maxsize=1024)
def compile_selector(expression: str) -> CompiledSelector:
    """``CompileCELExpression``: parse, type-check, require bool (or dyn) output."""
    try:
        checked = _ENV.compile(expression)
    except RuntimeError as err:
        message = _STATUS.sub("", str(err)).removesuffix(" [INVALID_ARGUMENT]")
        if _DYN_RANGE not in message:
            raise SelectorError("compilation failed: " + message) from None
        # cel-cpp's checker refuses a macro over an index into a dyn map, which cel-go
        # accepts; parsed without the checker, the runtime still dispatches by kind.
        checked = _ENV.compile(expression, disable_check=True)
    kind = checked.return_type().name()
    if kind not in ("BOOL", "DYN", "UNKNOWN", "ERROR"):
        raise SelectorError(f"must evaluate to bool or the unknown type, not {_type_name(kind)}")
    return _plan(expression, checked, _LIMITS)


_LIMITS = celcost.API_LIMITS


def _plan(expression: str, program: Any, limits: celcost.Limits) -> CompiledSelector:
    """Meter the expression only if its worst case under ``limits`` is past the limit."""
    serialized = program.serialize()
    cost = celcost.estimate(serialized, limits)
    if cost.total <= CEL_SELECTOR_EXPRESSION_MAX_COST:
        return CompiledSelector(expression, program, sized=cost.sized)
    # An iteration past the limit on its own still charges it (an int64 constant).
    ticks = {i: int(min(k, CEL_SELECTOR_EXPRESSION_MAX_COST + 1)) for i, k in cost.ticks.items()}
    metered = _ENV.deserialize(celast.metered(serialized, ticks))
    budget = CEL_SELECTOR_EXPRESSION_MAX_COST - cost.fixed
    # Metered, it is charged for the sizes of each device's own values (never less).
    return CompiledSelector(expression, program, metered, budget, sized=True)


@lru_cache(maxsize=256)
def _planned(expression: str, limits: celcost.Limits) -> CompiledSelector:
    """The plan for one device's own sizes (rounded up to powers of two, so few plans)."""
    return _plan(expression, compile_selector(expression).program, limits)
