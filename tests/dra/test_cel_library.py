"""Kubernetes' CEL libraries as DRA's environment has them: apiserver pkg/cel/library
quantity_test.go (TestQuantity), semver_test.go (TestSemver), and the Lists/Regex examples
(lists.go, regex.go, cost_test.go)."""

from __future__ import annotations

import pytest

from multisched.dra.cel import SelectorError, compile_selector


def evaluate(expression: str) -> bool:
    return compile_selector(expression).matches("", {}, {})


# name: (expression, expected). Non-bool results are compared inside the expression.
QUANTITY = {
    "parse": ('quantity("12Mi") == quantity("12582912")', True),
    "isQuantity": ('isQuantity("20")', True),
    "isQuantity_megabytes": ('isQuantity("20M")', True),
    "isQuantity_mebibytes": ('isQuantity("20Mi")', True),
    "isQuantity_invalidSuffix": ('isQuantity("20Mo")', False),
    "isQuantity_passingRegex": ('isQuantity("10Mm")', False),
    "equality_reflexivity": ('quantity("200M") == quantity("200M")', True),
    "equality_symmetry": (
        'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
        True,
    ),
    "equality_transitivity": (
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")'
        ' && quantity("0.002G") == quantity("2000k")',
        True,
    ),
    "inequality": ('quantity("200M") == quantity("0.3G")', False),
    "quantity_less": ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    "quantity_less_obvious": ('quantity("50M").isLessThan(quantity("100M"))', True),
    "quantity_less_false": ('quantity("100M").isLessThan(quantity("50M"))', False),
    "quantity_greater": ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    "quantity_greater_obvious": ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    "quantity_greater_false": ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    "compare_equal": ('quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    "compare_less": ('quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    "compare_greater": ('quantity("50Mi").compareTo(quantity("50M")) == 1', True),
    "add_quantity": ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    "add_int": ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    "sub_quantity": ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    "sub_int": ('quantity("50k").sub(20) == quantity("49980")', True),
    "arith_chain_1": ('quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980', True),
    "arith_chain": (
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
        True,
    ),
    "as_integer": ('quantity("50k").asInteger() == 50000', True),
    "is_integer_false": ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    "is_integer": ('quantity("50").isInteger()', True),
    "as_float": ('quantity("50.703k").asApproximateFloat() == 50703.0', True),
    "add_does_not_mutate_receiver": (
        '[quantity("9999999999999")].all(x, '
        'x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)',
        True,
    ),
    "sign": ('quantity("-1m").sign() == -1 && quantity("0").sign() == 0', True),
}

QUANTITY_ERRORS = {
    "parseInvalidSuffix": (
        'quantity("10Mo").sign() == 1',
        "quantities must match the regular expression",
    ),
    "parseInvalidSuffixPassesRegex": (
        'quantity("10Mm").sign() == 1',
        "unable to parse quantity's suffix",
    ),
    "as_integer_error": (
        'quantity("9999999999999999999999999999999999999G").asInteger() == 1',
        "cannot convert value to integer",
    ),
}

SEMVER = {
    "parse": ('semver("1.2.3") == semver("1.2.3")', True),
    "isSemver": ('isSemver("1.2.3-beta.1+build.1")', True),
    "isSemver_empty_false": ('isSemver("")', False),
    "isSemver_v_prefix_false": ('isSemver("v1.0.0")', False),
    "isSemver_v_leading_whitespace_false": ('isSemver(" 1.0.0")', False),
    "isSemver_v_contains_whitespace_false": ('isSemver("1. 0.0")', False),
    "isSemver_v_trailing_whitespace_false": ('isSemver("1.0.0 ")', False),
    "isSemver_leading_zeros_false": ('isSemver("01.01.01")', False),
    "isSemver_major_only_false": ('isSemver("1")', False),
    "isSemver_major_minor_only_false": ('isSemver("1.1")', False),
    "isSemver_empty_normalize_false": ('isSemver("", true)', False),
    "isSemver_v_leading_whitespace_normalize_false": ('isSemver(" 1.0.0", true)', False),
    "isSemver_v_contains_whitespace_normalize_false": ('isSemver("1. 0.0", true)', False),
    "isSemver_v_trailing_whitespace_normalize_false": ('isSemver("1.0.0 ", true)', False),
    "isSemver_v_prefix_normalize_true": ('isSemver("v1.0.0", true)', True),
    "isSemver_leading_zeros_normalize_true": ('isSemver("01.01.01", true)', True),
    "isSemver_major_only_normalize_true": ('isSemver("1", true)', True),
    "isSemver_major_minor_only_normalize_true": ('isSemver("1.1", true)', True),
    "equality_normalize": ('semver("v01.01", true) == semver("1.1.0")', True),
    "equality_reflexivity": ('semver("1.2.3") == semver("1.2.3")', True),
    "inequality": ('semver("1.2.3") == semver("1.0.0")', False),
    "semver_less": ('semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    "semver_less_false": ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    "semver_greater": ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    "semver_greater_false": ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    "compare_equal": ('semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    "compare_less": ('semver("1.0.0").compareTo(semver("1.2.3")) == -1', True),
    "compare_greater": ('semver("1.2.3").compareTo(semver("1.0.0")) == 1', True),
    "major": ('semver("1.2.3").major() == 1', True),
    "minor": ('semver("1.2.3").minor() == 2', True),
    "patch": ('semver("1.2.3").patch() == 3', True),
    # semver.org precedence, as blang/semver orders prereleases.
    "prerelease_precedence": (
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))'
        ' && semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta"))'
        ' && semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))'
        ' && semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
        True,
    ),
}

LISTS_AND_REGEX = {
    "sum": ("[1, 3].sum() == 4", True),
    "sum_double": ("[1.0, 3.0].sum() == 4.0", True),
    "sum_empty": ("[].sum() == 0", True),
    "min": ("[1, 3].min() == 1", True),
    "max": ("[1, 3].max() == 3", True),
    "min_single": ("[1].min() == 1", True),
    "isSorted": ("[1, 2, 3].isSorted()", True),
    "isSorted_false": ("[3, 1].isSorted()", False),
    "find": ("'abc 123 def 123'.find('123') == '123'", True),
    "find_none": ("'abc 123'.find('xyz') == ''", True),
    "findAll": ("'abc 123 def 123'.findAll('123') == ['123', '123']", True),
    "findAll with limit": ("'abc 123 def 123'.findAll('123', 1) == ['123']", True),
    # Go skips an empty match abutting the previous match (regexp allMatches).
    "findAll_empty_matches": (
        "'123 abc 456'.findAll('[0-9]*') == ['123', '', '', '', '', '456']",
        True,
    ),
    "findAll_none": ("'123 abc 456'.findAll('xyz') == []", True),
    # RE2 (as cel-go): linear time. A backtracking engine (Python's re) would not finish this
    # within the suite's timeout.
    "find_nested_quantifier": (f"'{'a' * 64}b'.find('(a+)+$') == ''", True),
    "findAll_nested_quantifier": (f"'{'a' * 64}b'.findAll('(a|aa)+$') == []", True),
}


@pytest.mark.parametrize("name", sorted(QUANTITY))
def test_quantity(name: str) -> None:
    expression, expect = QUANTITY[name]
    assert evaluate(expression) is expect


@pytest.mark.parametrize("name", sorted(QUANTITY_ERRORS))
def test_quantity_errors(name: str) -> None:
    expression, message = QUANTITY_ERRORS[name]
    with pytest.raises(SelectorError, match=rf"^{message}"):
        evaluate(expression)


@pytest.mark.parametrize("name", sorted(SEMVER))
def test_semver(name: str) -> None:
    expression, expect = SEMVER[name]
    assert evaluate(expression) is expect


def test_semver_parse_invalid_version() -> None:
    with pytest.raises(SelectorError, match=r"^No Major.Minor.Patch elements found$"):
        evaluate('semver("v1.0").major() == 1')


@pytest.mark.parametrize(
    "expression",
    [
        "isQuantity([1, 2, 3])",
        "isSemver([1, 2, 3])",
        'quantity("1").isGreaterThan(semver("1.0.0"))',
    ],
)
def test_no_overload_at_compile_time(expression: str) -> None:
    with pytest.raises(SelectorError, match=r"^compilation failed: .*found no matching overload"):
        compile_selector(expression)


@pytest.mark.parametrize("name", sorted(LISTS_AND_REGEX))
def test_lists_and_regex(name: str) -> None:
    expression, expect = LISTS_AND_REGEX[name]
    assert evaluate(expression) is expect


def test_min_of_empty_list() -> None:
    with pytest.raises(SelectorError, match=r"^min called on empty list$"):
        evaluate("[].min() == 0")


def test_a_bad_pattern_is_the_selectors_error() -> None:
    with pytest.raises(SelectorError, match=r"^error parsing regexp: missing \): \($"):
        evaluate("'abc'.find('(') == ''")
