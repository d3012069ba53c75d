"""The device selector cost limit: k8s.io/dynamic-resource-allocation/cel compile_test.go
(TestCEL's expectCost and its "expensive" case) and cel-go's CostLimit behaviour."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from multisched.dra import cel, celcost
from multisched.dra.cel import SelectorError, compile_selector

D = "dra.example.com"
LIST = 64  # maxElementsListTypeEnabled: max(DeviceAttributeMaxValueLength, values per device)
EXCEEDED = r"^operation cancelled: actual cost limit exceeded$"
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def _nested(macro: str, innermost: str, names: str = "xyzabcd") -> str:
    expression = innermost
    for name in reversed(names):
        expression = f"{TEN}.{macro}({name}, {expression})"
    return expression


EXPENSIVE = _nested("all", "int('1'.find('[0-9]*')) < 100")
A = f'device.attributes["{D}"]'

# TestCEL's worst-case estimates (upstream's MaxCost), one case per distinct expression.
ESTIMATES: dict[str, tuple[str, int]] = {
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        6,
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        6,
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', 3),
    "empty-driver-name": ('device.driver == ""', 2),
    "real-driver-name": ('device.driver == "dra.example.com"', 4),
    "driver-name-qualifier": (f"{A}.name", 4),
    "driver-name-qualifier-map-lookup": (f'{A}["name"]', 4),
    "bind": (f"cel.bind(dra, {A}, dra.name)", 15),
    "int": (f"{A}.name > 0", 5),
    "string": (f'{A}.name == "fish"', 5),
    "macro-exists-on-int": (f"{A}.name.exists(x, x > 0)", 5 + (3 + 3) * LIST),
    "macro-exists-on-bool": (f"{A}.name.exists(x, x == true)", 5 + (3 + 3) * LIST),
    "macro-exists-on-string": (f'{A}.name.exists(x, x == "fish")', 5 + (3 + 3) * LIST),
    "list-of-int": (f"{A}.names.size() == 2", 6),
    "macro-on-list-of-string": (f'{A}.names.all(x, x != "")', 5 + (2 + 2) * LIST),
    "macro-on-list-of-semver": (
        f'{A}.names.all(x, x.isGreaterThan(semver("0.0.1")))',
        5 + (2 + 4) * LIST,
    ),
    "in-operator-on-list": (f"1 in {A}.names", 4 + 64),
    "version": (f'{A}.name.isGreaterThan(semver("0.0.1"))', 6),
    "version_v": (
        f'{A}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        7,
    ),
    "macro-exists-on-version": (
        f'{A}.name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        5 + (3 + 4) * LIST,
    ),
    "quantity": (f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', 6),
    "check-positive": (
        f'"name" in device.capacity["{D}"] && '
        f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
        10,
    ),
    "check-negative": (
        f'!("name" in device.capacity["{D}"]) || '
        f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
        11,
    ),
    "all": (
        f'device.capacity["{D}"].quantity.isGreaterThan(quantity("1Ki")) && {A}.bool && '
        f'{A}.int > 0 && {A}.string == "fish" && {A}.version.isGreaterThan(semver("0.0.1")) && '
        f'device.capacity["{D}"]["quantity"].isGreaterThan(quantity("1Ki")) && {A}["bool"] && '
        f'{A}["int"] > 0 && {A}["string"] == "fish" && '
        f'{A}["version"].isGreaterThan(semver("0.0.1"))',
        52,
    ),
    "many": (f"{A}.a && {A}.b && {A}.c", 12),
    "check_attribute_domains": (f'device.attributes.exists_one(x, x == "{D}")', 164),
    "check_attribute_ids": (f'{A}.exists_one(x, x == "services")', 133),
    "split_attribute": (f'{A}.services.split("example").size() >= 2', 19),
    "regexp_attribute": (f'{A}.services.matches("[^a]?sym")', 18),
    "check_capacity_domains": (f'device.capacity.exists_one(x, x == "{D}")', 164),
    "check_capacity_ids": (f'device.capacity["{D}"].exists_one(x, x == "memory")', 133),
    "expensive": (EXPENSIVE, 85555551),
    "allow_multiple_allocations": ("device.allowMultipleAllocations == true", 3),
}


def _estimate(expression: str, limits: celcost.Limits = celcost.API_LIMITS) -> celcost.Estimate:
    return celcost.estimate(compile_selector(expression).program.serialize(), limits)


@pytest.mark.parametrize(("expression", "cost"), ESTIMATES.values(), ids=list(ESTIMATES))
def test_worst_case_is_upstreams_estimate(expression: str, cost: int) -> None:
    assert _estimate(expression).total == cost


@pytest.mark.parametrize(("expression", "cost"), ESTIMATES.values(), ids=list(ESTIMATES))
def test_only_expressions_that_can_exceed_the_limit_are_metered(expression: str, cost: int) -> None:
    selector = compile_selector(expression)
    assert (selector.metered is not None) is (cost > cel.CEL_SELECTOR_EXPRESSION_MAX_COST)


def _long_attributes() -> dict[str, Any]:
    """TestCEL "expensive": every attribute there may be, each with the longest name."""
    attributes = {}
    for i in range(32):
        suffix = f"-{i}"
        attributes[f"{D}/" + "x" * (32 - len(suffix)) + suffix] = {"string": "abc"}
    return attributes


def test_expensive_fails_with_upstreams_message_quickly() -> None:
    selector = compile_selector(EXPENSIVE)
    started = time.monotonic()
    with pytest.raises(SelectorError, match=EXCEEDED):
        selector.matches(D, _long_attributes(), {})
    assert time.monotonic() - started < 2


def test_metering_counts_the_iterations_that_run() -> None:
    # Worst case 10^7 iterations, but exists stops at the first element of each list.
    selector = compile_selector(_nested("exists", "z > 0"))
    assert selector.metered is not None
    assert selector.matches(D, {}, {}) is True
    # The same loops that never find their element run on until the budget is gone.
    with pytest.raises(SelectorError, match=EXCEEDED):
        compile_selector(_nested("exists", "z < 0")).matches(D, {}, {})


def _tags(count: int, length: int = 4) -> dict[str, Any]:
    return {"tags": {"strings": [f"{i:0{length}d}" for i in range(count)]}}


def test_within_the_limit_runs_untracked() -> None:
    typical = f'device.driver == "{D}" && {A}.model == "a100"'
    assert compile_selector(typical).metered is None
    assert compile_selector(typical).matches(D, {"model": {"string": "a100"}}, {}) is True
    pairs = compile_selector(f"{A}.tags.all(a, {A}.tags.exists(b, a == b))")
    assert pairs.metered is None and pairs.sized
    assert pairs.matches(D, _tags(48), {}) is True


def test_costly_loop_bodies_stop_at_the_limit() -> None:
    regex = "(" + "|".join(f"x{i:03d}" for i in range(50)) + ")"
    loops = f'{A}.tags.all(a, {A}.tags.all(b, {A}.tags.all(c, !a.matches("{regex}"))))'
    selector = compile_selector(loops)
    assert selector.metered is not None
    started = time.monotonic()
    with pytest.raises(SelectorError, match=EXCEEDED):
        selector.matches(D, _tags(48), {})
    assert time.monotonic() - started < 2
    # The same loops over a short list stay within the limit.
    assert selector.matches(D, _tags(4), {}) is True


def _doubling(times: int) -> str:
    """Each binding twice as long as the one before: the size grows as 2^times."""
    expression = f"a{times}.size() > 0"
    for i in range(times, 0, -1):
        expression = f"cel.bind(a{i}, a{i - 1} + a{i - 1}, {expression})"
    return f"cel.bind(a0, device.driver, {expression})"


def test_string_growth_is_refused_before_it_runs() -> None:
    assert compile_selector(_doubling(12)).matches(D, {}, {}) is True
    # 2^25 copies of the driver name (cel-cpp's parser allows nesting 32 deep): refused
    # before anything is built.
    started = time.monotonic()
    with pytest.raises(SelectorError, match=EXCEEDED):
        compile_selector(_doubling(25)).matches(D, {}, {})
    assert time.monotonic() - started < 1


def test_growth_is_charged_for_the_devices_own_sizes() -> None:
    # 2^17 copies: past the limit for a 63-character driver name, within it for 15 (upstream's
    # actual cost of the concatenations is ~400000).
    selector = compile_selector(_doubling(17))
    assert selector.metered is not None
    assert selector.matches(D, {}, {}) is True
    with pytest.raises(SelectorError, match=EXCEEDED):
        selector.matches("d" * 63, {}, {})


def test_devices_past_the_api_limits_are_charged_for_their_sizes() -> None:
    # Within the limit for the API's 48 values per attribute; not for 2000 (unvalidated).
    pairs = compile_selector(f'{A}.tags.all(a, {A}.tags.all(b, a != "" || b != ""))')
    assert pairs.metered is None
    assert pairs.matches(D, _tags(48), {}) is True
    with pytest.raises(SelectorError, match=EXCEEDED):
        pairs.matches(D, _tags(2000), {})


def test_device_limits() -> None:
    api = celcost.API_LIMITS
    assert celcost.device_limits(D, _tags(48, 64), {"memory": {}}, api) is None
    assert celcost.device_limits(D, _long_attributes(), {}, api) is None
    own = celcost.device_limits(D, _tags(49, 3), {f"{D}/memory": {}}, api)
    assert own == celcost.Limits(driver=16, domain=16, ident=8, string=4, items=64, entries=2)
    assert celcost.device_limits(D, {"x" * 33: {"int": 1}}, {}, api) is not None
    assert celcost.device_limits(D, {"s": {"string": "x" * 65}}, {}, api) is not None


def test_cel_cpps_iteration_limit_is_reported_not_raised() -> None:
    # 100 x 100 iterations cost upstream ~70000; cel-cpp stops at 10000 iterations.
    hundred = "[" + ", ".join(["1"] * 100) + "]"
    selector = compile_selector(f"{hundred}.all(x, {hundred}.all(y, x == y))")
    assert selector.metered is None
    with pytest.raises(SelectorError, match=rf"^{re.escape(cel.ITERATION_LIMIT_EXCEEDED)}$"):
        selector.matches(D, {}, {})


def test_metering_function_cannot_be_called() -> None:
    with pytest.raises(SelectorError, match="Syntax error"):
        compile_selector("@cost(1, true)")


@pytest.mark.parametrize(
    "expression",
    [
        '"a".charAt(0) == "a" && "ab".indexOf("b") == 1 && "ab".lastIndexOf("b") == 1',
        '"Ab".lowerAscii() == "ab" && "ab".upperAscii() == "AB" && " a ".trim() == "a"',
        '"ab".replace("a", "c") == "cb" && "ab".split("").size() == 2',
        '"ab".substring(1) == "b" && ["a"].join() == "a" && ["a", "b"].join("-") == "a-b"',
        '"%s".format(["a"]) == "a" && strings.quote("a") != "" && "ab".reverse() == "ba"',
        '"ab".contains("a") && "ab".startsWith("a") && "ab".endsWith("b") && "a".matches("a")',
        'string(1) == "1" && int("1") == 1 && double(1) == 1.0 && bytes("a").size() == 1',
        'uint(1) == 1u && dyn(1) == 1 && type(1) == int && bool("true") && 7 % 4 - 2 * 1 / 1 == 1',
        'timestamp("2020-01-01T00:00:00Z").getFullYear() == 2020 && duration("1s") > duration("0")',
        'quantity("1").add(1).sub(quantity("1")).isGreaterThan(quantity("0")) && isQuantity("1")',
        'quantity("1").sign() == 1 && quantity("1").asInteger() == 1 && quantity("1").isInteger()',
        'quantity("1").asApproximateFloat() == 1.0 && quantity("1").compareTo(quantity("1")) == 0',
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && isSemver("1.0.0")',
        'semver("1.2.3").patch() == 3 && semver("1.0.0").isLessThan(semver("2.0.0"))',
        "[1, 2].isSorted() && [1, 2].sum() == 3 && [1, 2].min() == 1 && [1, 2].max() == 2",
        '"abc".find("b") == "b" && "abc".findAll("[a-c]").size() == 3',
        '"abc".findAll("[a-c]", 2).size() == 2 && 1 in [1] && "a" in {"a": 1} && -(1) < 0',
        "[1].map(x, x + 1) == [2] && [1].filter(x, x > 0) == [1] && [1].exists_one(x, x == 1)",
        '{"a": 1}.all(k, k == "a") && has({"a": 1}.a) && (true ? 1 : 2) == 1 && !false',
    ],
)
def test_every_function_has_a_cost(expression: str) -> None:
    """A function without a cost model would be charged without bound (never run)."""
    assert _estimate(expression).total < 1000
    assert compile_selector(expression).matches(D, {}, {}) is True
