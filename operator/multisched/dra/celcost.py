"""Upstream's runtime cost limit for device selectors, kept on cel-cpp, which tracks no cost.

Upstream runs every selector with ``cel.CostLimit(CELSelectorExpressionMaxCost)``: cel-go adds
up each evaluated node's cost (interpreter/runtimecost.go) and aborts with "operation cancelled:
actual cost limit exceeded" once past the limit. The scheduler skips the compile-time estimate
(cel.Cache compiles with DisableCostEstimation), so the limit only acts while evaluating.

Here a worst-case cost is worked out from the checked AST once per expression, with cel-go's
per-node costs (checker/cost.go, apiserver's library/cost.go) and the sizes the API allows a
device's values (``Limits``):
- at most the limit: the expression cannot exceed it and runs as compiled, untracked;
- otherwise each comprehension's loop condition is wrapped in ``@cost(k, condition)``, which
  charges one iteration's worst-case cost ``k`` and ends the loop once the budget (the limit less
  the cost outside loops) is spent; the evaluation then fails with cel-go's message. Iterations
  are counted as they run, so short-circuiting macros cost what they actually iterate.
Metered expressions, and those whose run time scales with a device's values (loops over them,
concatenation), are re-planned for a device's own sizes when these are past the API's limits
(documents are not validated); metered ones always, so a small device is charged as such.

Independently, cel-cpp ends any evaluation at 10000 comprehension iterations (its
RuntimeOptions default, not exposed by the binding); cel.py reports which limit it was.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from multisched.dra import celast

COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
INF = math.inf


class Limits(NamedTuple):
    """Maximum sizes of a device's values (k8s.io/api resource/v1 validation)."""

    driver: int = 63  # DriverNameMaxLength
    domain: int = 63  # DeviceMaxDomainLength
    ident: int = 32  # DeviceMaxIDLength
    string: int = 64  # DeviceAttributeMaxValueLength
    items: int = 48  # ResourceSliceMaxAttributeValuesPerDevice
    entries: int = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice


API_LIMITS = Limits()


# --- sizes ---


@dataclass(frozen=True, slots=True)
class Shape:
    """What the estimate knows of a value: its CEL size (runes, elements or entries)."""

    size: float = 1
    elem: Shape | None = None  # a list's elements or a map's values
    key: Shape | None = None  # a map's keys
    fields: Mapping[str, Shape] | None = None  # the device's fields
    is_list: bool = False  # certainly a list (``+`` then costs 1, not a string copy)
    device: bool = False  # sized by the device's values


SCALAR = Shape()
UNKNOWN = Shape(INF)


def _union(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None:
        return a or b
    return Shape(
        max(a.size, b.size),
        _union(a.elem, b.elem),
        _union(a.key, b.key),
        None,
        a.is_list and b.is_list,
        a.device or b.device,
    )


def _index(shape: Shape) -> Shape:
    """What ``shape[key]`` or ``shape.key`` yields."""
    if shape.fields is not None:
        return _union_all(shape.fields.values()) or UNKNOWN
    return shape.elem or (SCALAR if shape.size == 0 else UNKNOWN)


def _iterate(shape: Shape) -> Shape:
    """What a comprehension over ``shape`` binds: a map's keys, a list's elements."""
    return shape.key or _index(shape)


def _mul(a: float, b: float) -> float:
    return 0 if a == 0 or b == 0 else a * b


def _union_all(shapes: Iterable[Shape | None]) -> Shape | None:
    out: Shape | None = None
    for s in shapes:
        out = _union(out, s)
    return out


def device_shape(limits: Limits) -> Shape:
    """The ``device`` variable as the API bounds it (upstream's declared MaxElements)."""
    text = Shape(limits.string, device=True)
    attribute = Shape(max(limits.string, limits.items), elem=text, device=True)
    ident, domain = Shape(limits.ident, device=True), Shape(limits.domain, device=True)
    inner = Shape(limits.entries, elem=attribute, key=ident, device=True)
    attributes = Shape(limits.entries, elem=inner, key=domain, device=True)
    inner_capacity = Shape(limits.entries, elem=SCALAR, key=ident, device=True)
    capacity = Shape(limits.entries, elem=inner_capacity, key=domain, device=True)
    fields = {
        "driver": Shape(limits.driver, device=True),
        "allowMultipleAllocations": SCALAR,
        "attributes": attributes,
        "capacity": capacity,
    }
    return Shape(len(fields), key=Shape(24), fields=fields, device=True)


# --- the estimate ---


def _traverse(size: float, factor: float = 0.1) -> float:
    return math.ceil(size * factor) if size < INF else INF


@dataclass(slots=True)
class Estimate:
    """Worst-case costs of one expression for one set of size limits."""

    total: float = 0  # cel-go's estimated maximum
    fixed: float = 0  # the part outside comprehension iterations
    ticks: dict[int, float] = field(default_factory=dict)  # comprehension id → one iteration
    sized: bool = False  # how long it runs depends on the device's sizes


class _Node(NamedTuple):
    shape: Shape
    total: float
    fixed: float


class _Estimator:
    def __init__(self, limits: Limits) -> None:
        self.scopes: list[dict[str, Shape]] = [{"device": device_shape(limits)}]
        self.estimate = Estimate()

    def visit(self, e: Any) -> _Node:
        kind = celast.kind(e)
        if kind == "const_expr":
            c = e.const_expr
            which = c.WhichOneof("kind")
            size = len(c.string_value) if which == "string_value" else 1
            return _Node(Shape(len(c.bytes_value) if which == "bytes_value" else size), 0, 0)
        if kind == "ident_expr":
            return _Node(self.lookup(e.ident_expr.name), 1, 1)
        if kind == "select_expr":
            sel = e.select_expr
            operand = self.visit(sel.operand)
            if sel.test_only:
                return _Node(SCALAR, operand.total + 1, operand.fixed + 1)
            fields = operand.shape.fields
            shape = fields.get(sel.field, UNKNOWN) if fields is not None else _index(operand.shape)
            return _Node(shape, operand.total + 1, operand.fixed + 1)
        if kind == "call_expr":
            return self.call(e.call_expr)
        if kind == "list_expr":
            elems = [self.visit(x) for x in e.list_expr.elements]
            shape = Shape(len(elems), _union_all(n.shape for n in elems), is_list=True)
            return self.sum(shape, 10, elems)
        if kind == "struct_expr":
            entries = e.struct_expr.entries
            if e.struct_expr.message_name:  # a message: Quantity or Semver
                return self.sum(SCALAR, 40, [self.visit(x.value) for x in entries])
            keys = [self.visit(x.map_key) for x in entries]
            values = [self.visit(x.value) for x in entries]
            shape = Shape(
                len(entries), _union_all(n.shape for n in values), _union_all(n.shape for n in keys)
            )
            return self.sum(shape, 30, keys + values)
        if kind == "comprehension_expr":
            return self.comprehension(e.id, e.comprehension_expr)
        return _Node(UNKNOWN, INF, INF)

    @staticmethod
    def sum(shape: Shape, own: float, parts: Iterable[_Node]) -> _Node:
        total = fixed = own
        for p in parts:
            total += p.total
            fixed += p.fixed
        return _Node(shape, total, fixed)

    def lookup(self, name: str) -> Shape:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return UNKNOWN

    def comprehension(self, node_id: int, comp: Any) -> _Node:
        rng, init = self.visit(comp.iter_range), self.visit(comp.accu_init)
        never = comp.loop_condition.const_expr
        if (
            celast.kind(comp.iter_range) == "list_expr"
            and not comp.iter_range.list_expr.elements
            and never.WhichOneof("kind") == "bool_value"
            and not never.bool_value
        ):
            # cel.bind: no iterations, the result sees the bound value.
            self.scopes.append({comp.accu_var: init.shape})
            result = self.visit(comp.result)
            self.scopes.pop()
            return self.sum(result.shape, 0, (rng, init, result))
        count = rng.shape.size
        if rng.shape.device:
            self.estimate.sized = True
        iter_shape = _iterate(rng.shape)
        accu = init.shape
        if accu.is_list:  # map/filter build a list: its elements come from the step
            probe = self.iteration(comp, iter_shape, Shape(0, is_list=True))[2]
            accu = Shape(count, probe.elem, is_list=True, device=probe.device or rng.shape.device)
        cond, step, _ = self.iteration(comp, iter_shape, accu)
        tick = cond.fixed + step.fixed
        self.estimate.ticks[node_id] = max(tick, self.estimate.ticks.get(node_id, 0))
        self.scopes.append({comp.accu_var: accu})
        result = self.visit(comp.result)
        self.scopes.pop()
        iterations = _mul(count, cond.total + step.total)
        total = rng.total + init.total + iterations + result.total
        fixed = rng.fixed + init.fixed + result.fixed
        return _Node(accu if accu.is_list else result.shape, total, fixed)

    def iteration(self, comp: Any, iter_shape: Shape, accu: Shape) -> tuple[_Node, _Node, Shape]:
        scope = {comp.iter_var: iter_shape, comp.accu_var: accu}
        if comp.iter_var2:
            scope[comp.iter_var2] = UNKNOWN
        self.scopes.append(scope)
        cond, step = self.visit(comp.loop_condition), self.visit(comp.loop_step)
        self.scopes.pop()
        return cond, step, step.shape

    def call(self, call: Any) -> _Node:
        parts = ([self.visit(call.target)] if call.HasField("target") else []) + [
            self.visit(a) for a in call.args
        ]
        if call.function == "_?_:_":  # one branch runs: the dearer one bounds it
            test, yes, no = parts
            branch = max(yes.total, no.total), max(yes.fixed, no.fixed)
            shape = _union(yes.shape, no.shape) or UNKNOWN
            return _Node(shape, test.total + branch[0], test.fixed + branch[1])
        own, shape = self.function(call.function, [p.shape for p in parts])
        return self.sum(shape, own, parts)

    def function(self, name: str, a: list[Shape]) -> tuple[float, Shape]:
        """One call's own cost and result (runtimecost.go costCall, library/cost.go)."""
        sizes = [s.size for s in a]
        if name in ("_&&_", "_||_"):  # no cost of their own in cel-go's runtime
            return 0, SCALAR
        if name in _COMPARE:  # scalars have size 1; "" compares for free
            return _traverse(min(sizes)), SCALAR
        if name in _GROWS:
            if any(s.device for s in a):
                self.estimate.sized = True
            return self.grow(name, a)
        if name in ("@in", "_in_"):  # a list is searched, a map looked up
            return 1 if a[1].key or a[1].fields else max(1, sizes[1]), SCALAR
        if name == "_[_]":
            return 1, _index(a[0])
        if name == "dyn":
            return 1, a[0]
        if name in _TRAVERSE_SAME:  # cost of a pass, result as long as the input
            return max(1, _traverse(sizes[0])), Shape(sizes[0], device=a[0].device)
        if name in _TRAVERSE:
            return max(1, _traverse(sizes[0])), SCALAR
        if name in ("contains",):
            return max(1, _mul(_traverse(sizes[0]), _traverse(sizes[1]))), SCALAR
        if name in ("startsWith", "endsWith"):
            return max(1, _traverse(sizes[1])), SCALAR
        if name in ("matches", "find", "findAll"):
            cost = max(1, _mul(_traverse(sizes[0] + 1), _traverse(sizes[1], 0.25)))
            if name == "find":
                return cost, Shape(sizes[0], device=a[0].device)
            text = Shape(sizes[0], device=a[0].device)
            return cost, Shape(sizes[0] + 1, elem=text, is_list=True, device=a[0].device)
        if name in _LISTS:
            item = _index(a[0])
            cost = _mul(sizes[0], 1 + _traverse(item.size))
            return max(1, cost), item if name in ("min", "max") else SCALAR
        if name == "split":
            text = Shape(sizes[0], device=a[0].device)
            texts = Shape(sizes[0] + 1, elem=text, is_list=True, device=a[0].device)
            return max(1, _traverse(sizes[0], 0.2)), texts
        if name == "string":
            return 1, Shape(_rendered(a[0]), device=a[0].device)
        if name == "bytes":
            return max(1, _traverse(sizes[0])), Shape(4 * sizes[0], device=a[0].device)
        if name in _KNOWN_SCALAR:
            return 1, SCALAR
        return INF, UNKNOWN  # a function without a cost model: never assumed cheap

    @staticmethod
    def grow(name: str, a: list[Shape]) -> tuple[float, Shape]:
        """Functions whose result may outgrow their inputs."""
        device = any(s.device for s in a)
        if name == "_+_":
            size = a[0].size + a[1].size
            cost = 1 if a[0].is_list and a[1].is_list else max(1, _traverse(size))
            elem = _union(a[0].elem, a[1].elem)
            return cost, Shape(size, elem, is_list=a[0].is_list and a[1].is_list, device=device)
        if name == "replace":  # worst case: an empty needle, the replacement between every rune
            size = _mul(a[0].size + 1, a[2].size) + a[0].size
            return max(1, _traverse(a[0].size, 0.2)), Shape(size, device=device)
        if name == "join":
            sep = a[1].size if len(a) > 1 else 0
            size = _mul(a[0].size, _index(a[0]).size) + _mul(max(a[0].size - 1, 0), sep)
            return max(1, _traverse(size)), Shape(size, device=device)
        if name == "format":
            size = a[0].size + _mul(a[1].size, _rendered(_index(a[1])))
            return max(1, _traverse(size)), Shape(size, device=device)
        # strings.quote: every rune escaped, plus the quotes
        return max(1, _traverse(a[0].size)), Shape(2 * a[0].size + 2, device=device)


def _rendered(shape: Shape) -> float:
    """Longest text ``string()`` or ``%s`` makes of a value (a double's ``%f`` is ~330 runes)."""
    if shape.elem is None and shape.key is None and shape.fields is None:
        return max(shape.size, 330)
    inner = _rendered(_index(shape)) + (_rendered(shape.key) if shape.key else 0)
    return _mul(shape.size, inner + 4) + 2


_COMPARE = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})
_GROWS = frozenset({"_+_", "replace", "join", "format", "strings.quote"})
_TRAVERSE_SAME = frozenset({"lowerAscii", "upperAscii", "trim", "substring", "reverse"})
_TRAVERSE = frozenset({"quantity", "isQuantity", "semver", "isSemver", "indexOf", "lastIndexOf"})
_LISTS = frozenset({"isSorted", "sum", "min", "max"})
_KNOWN_SCALAR = frozenset(
    {"!_", "-_", "_-_", "_*_", "_/_", "_%_", "@not_strictly_false", "__not_strictly_false__"}
    | {"size", "int", "uint", "double", "bool", "type", "duration", "timestamp", "charAt"}
    | {"sign", "asInteger", "isInteger", "asApproximateFloat", "add", "sub"}
    | {"isGreaterThan", "isLessThan", "compareTo", "major", "minor", "patch"}
    | {"getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek"}
    | {"getHours", "getMinutes", "getSeconds", "getMilliseconds"}
)


def estimate(serialized: bytes, limits: Limits) -> Estimate:
    """The worst-case cost of a serialized (checked or parsed) expression."""
    estimator = _Estimator(limits)
    root = estimator.visit(celast.decode(serialized)[1].expr)
    estimator.estimate.total, estimator.estimate.fixed = root.total, root.fixed
    return estimator.estimate


# --- the budget one metered evaluation spends ---


class _Budget(threading.local):
    remaining: float = 0
    exceeded: bool = False


_BUDGET = _Budget()


def charge(cost: int, proceed: bool) -> bool:
    """``@cost``: spend one iteration's cost; past the limit, end every loop."""
    budget = _BUDGET
    budget.remaining -= cost
    if budget.remaining < 0:
        budget.exceeded = True
        return False
    return proceed


def start(budget: float) -> None:
    _BUDGET.remaining, _BUDGET.exceeded = budget, False


def exceeded() -> bool:
    return _BUDGET.exceeded


def device_limits(
    driver: str, attributes: Mapping[str, Any], capacity: Mapping[str, Any], within: Limits | None
) -> Limits | None:
    """The device's own sizes, rounded up to powers of two (few plans), or None when
    ``within`` is given and the device keeps to it."""
    if within is not None and (
        len(driver) <= min(within.driver, within.domain)
        and len(attributes) + len(capacity) <= within.entries
        and _names_within(attributes, within)
        and _names_within(capacity, within)
        and _values_within(attributes, within)
    ):
        return None
    strings = items = 0
    for attr in attributes.values():
        for value in attr.values():
            if isinstance(value, str):
                strings = max(strings, len(value))
            elif isinstance(value, list):
                items = max(items, len(value))
                strings = max(strings, *(len(v) for v in value if isinstance(v, str)), 0)
    names = [*attributes, *capacity]
    ident = max((len(n.rpartition("/")[2]) for n in names), default=0)
    # A bare name's domain is the driver.
    domain = max([len(driver)] + [len(n.partition("/")[0]) for n in names if "/" in n])
    own = (len(driver), domain, ident, strings, items, len(names))
    return Limits(*(1 << max(size - 1, 0).bit_length() for size in own))


def _names_within(values: Mapping[str, Any], into: Limits) -> bool:
    short = into.ident
    for name in values:
        if len(name) > short:
            domain, _, ident = name.rpartition("/")
            if len(ident) > into.ident or len(domain) > into.domain:
                return False
    return True


def _values_within(attributes: Mapping[str, Any], into: Limits) -> bool:
    for attr in attributes.values():
        for value in attr.values():
            if isinstance(value, str):
                if len(value) > into.string:
                    return False
            elif isinstance(value, list) and (
                len(value) > into.items
                or any(isinstance(v, str) and len(v) > into.string for v in value)
            ):
                return False
    return True
