"""Device selector CEL: k8s.io/dynamic-resource-allocation/cel compile_test.go (TestCEL) cases.

Cases for the feature-gated DRAListTypeAttributes (``includes``, macros over dyn attributes)
are not here: see multisched.dra.cel's docstring. The cost-limit case ("expensive") and the
cost estimates are in test_cel_cost.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from multisched.dra import cel
from multisched.dra.cel import SelectorError, compile_selector

D = "dra.example.com"

# name: (expression, driver, attributes, capacity, compile error, match error, match)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], str, str, bool]] = {
    "true": ("true", "", {}, {}, "", "", True),
    "false": ("false", "", {}, {}, "", "", False),
    "syntax-error": ("?!", "", {}, {}, "Syntax error", "", False),
    "type-error": (
        "1",
        "",
        {},
        {},
        "must evaluate to bool or the unknown type, not int",
        "",
        False,
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", {}, {}, "", "", False),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        "",
        {"dra.example.com/something": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "empty-driver-name": ('device.driver == ""', "", {}, {}, "", "", True),
    "real-driver-name": ('device.driver == "dra.example.com"', D, {}, {}, "", "", True),
    "driver-name-qualifier": (
        'device.attributes["dra.example.com"].name',
        D,
        {"name": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        D,
        {"name": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        D,
        {"name": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        D,
        {"other.example.com/name": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "bool": (
        'device.attributes["dra.example.com"].name',
        D,
        {"name": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "int": (
        'device.attributes["dra.example.com"].name > 0',
        D,
        {"name": {"int": 1}},
        {},
        "",
        "",
        True,
    ),
    "string": (
        'device.attributes["dra.example.com"].name == "fish"',
        D,
        {"name": {"string": "fish"}},
        {},
        "",
        "",
        True,
    ),
    "list-result-type-causes-match-error": (
        'device.attributes["dra.example.com"].names',
        D,
        {"names": {"strings": ["fish", "bird"]}},
        {},
        "",
        "CEL result of type list could not be converted to bool",
        False,
    ),
    "list-of-bool": (
        'device.attributes["dra.example.com"].names.size() == 2',
        D,
        {"names": {"bools": [True, False]}},
        {},
        "",
        "",
        True,
    ),
    "list-of-int": (
        'device.attributes["dra.example.com"].names.size() == 2',
        D,
        {"names": {"ints": [1, 2]}},
        {},
        "",
        "",
        True,
    ),
    "list-of-string": (
        'device.attributes["dra.example.com"].names.size() == 2',
        D,
        {"names": {"strings": ["fish", "bird"]}},
        {},
        "",
        "",
        True,
    ),
    "list-of-semver": (
        'device.attributes["dra.example.com"].names.size() == 2',
        D,
        {"names": {"versions": ["1.0.0", "2.0.0"]}},
        {},
        "",
        "",
        True,
    ),
    "in-operator-on-list": (
        '1 in device.attributes["dra.example.com"].names',
        D,
        {"names": {"ints": [1, 2, 3]}},
        {},
        "",
        "",
        True,
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        D,
        {"name": {"version": "1.0.0"}},
        {},
        "",
        "",
        True,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true))'
        ' && isSemver("v1.0.0", true)',
        D,
        {"name": {"version": "1.0.0"}},
        {},
        "",
        "",
        True,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        D,
        {},
        {"name": {"value": "1Mi"}},
        "",
        "",
        True,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        D,
        {},
        {"name": {"value": "1Mi"}},
        "",
        "",
        True,
    ),
    "all": (
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        D,
        {
            "bool": {"bool": True},
            "int": {"int": 1},
            "string": {"string": "fish"},
            "version": {"version": "1.0.0"},
        },
        {"quantity": {"value": "1Mi"}},
        "",
        "",
        True,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b'
        ' && device.attributes["dra.example.com"].c',
        D,
        {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        {},
        "",
        "",
        True,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        D,
        {"services": {"string": "some_example_value"}},
        {},
        "",
        "",
        True,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        D,
        {"services": {"string": "some_example_value"}},
        {},
        "",
        "",
        True,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        D,
        {"services": {"string": "some_example_value"}},
        {},
        "",
        "",
        True,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        D,
        {"services": {"string": "asymetric"}},
        {},
        "",
        "",
        True,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        D,
        {},
        {"memory": {"value": "1Mi"}},
        "",
        "",
        True,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        D,
        {},
        {"memory": {"value": "1Mi"}},
        "",
        "",
        True,
    ),
    "allow_multiple_allocations_default": (
        "device.allowMultipleAllocations == false",
        D,
        {},
        {},
        "",
        "",
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cel(name: str) -> None:
    expression, driver, attributes, capacity, compile_err, match_err, expect = CASES[name]
    if compile_err:
        with pytest.raises(SelectorError, match=compile_err):
            compile_selector(expression)
        return
    selector = compile_selector(expression)
    if match_err:
        with pytest.raises(SelectorError, match=match_err):
            selector.matches(driver, attributes, capacity)
        return
    assert selector.matches(driver, attributes, capacity) is expect


def test_allow_multiple_allocations() -> None:
    assert compile_selector("device.allowMultipleAllocations == true").matches(D, {}, {}, True)


@pytest.mark.parametrize(
    ("name", "expression", "message"),
    [
        # Upstream's missing domain is an empty map, so it names the attribute ("noSuchAttr").
        (
            "runtime-error-lookup-identifier",
            'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
            "no such key: noSuchAttr",
        ),
        (
            "runtime-error-lookup-map",
            'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
            "no such key: noSuchAttr",
        ),
        ("no-such-attribute", 'device.attributes["dra.example.com"].nope', "no such key: nope"),
        (
            "no-such-overload",
            'device.attributes["dra.example.com"].name + 1 == 2',
            "no such overload",
        ),
    ],
)
def test_runtime_errors(name: str, expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match=rf"^{message}$"):
        compile_selector(expression).matches(D, {"name": {"string": "x"}}, {})


def test_bad_attribute_version_names_the_attribute() -> None:
    selector = compile_selector("true")
    with pytest.raises(SelectorError, match=r"^attribute v: parse semantic version: Major number"):
        selector.matches(D, {"v": {"version": "01.0.0"}}, {})


def test_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compile_selector.cache_clear()
    calls: list[str] = []
    real = cel._ENV

    class Counting:
        def compile(self, expression: str) -> Any:
            calls.append(expression)
            return real.compile(expression)

    monkeypatch.setattr(cel, "_ENV", Counting())
    expression = 'device.attributes["dra.example.com"].name > 0'
    for node in range(50):
        assert compile_selector(expression).matches(D, {"name": {"int": node}}, {}) is (node > 0)
    assert calls == [expression]
    compile_selector.cache_clear()


def test_cost_limit_is_upstreams() -> None:
    assert cel.CEL_SELECTOR_EXPRESSION_MAX_COST == 1_000_000
