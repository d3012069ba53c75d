"""apimachinery's quantity grammar (cases from resource/quantity_test.go) with its bound."""

from decimal import Decimal

import pytest

from multisched.cache.quantity import to_int, to_milli
from multisched.validation.quantity import (
    ERR_FORMAT_WRONG,
    ERR_SUFFIX,
    ERR_TOO_LARGE,
    MAX_QUANTITY,
    QuantityError,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("0n", 0),
        ("0Ki", 0),
        ("1Ki", 1024),
        ("8Ki", 8 * 1024),
        ("7Mi", 7 * 2**20),
        ("6Gi", 6 * 2**30),
        ("5Ti", 5 * 2**40),
        ("4Pi", 4 * 2**50),
        ("3Ei", 3 * 2**60),
        ("5n", Decimal("5e-9")),
        ("4u", Decimal("4e-6")),
        ("3m", Decimal("0.003")),
        ("9", 9),
        ("8k", 8000),
        ("7M", 7 * 10**6),
        ("6G", 6 * 10**9),
        ("5T", 5 * 10**12),
        ("2P", 2 * 10**15),
        ("1E", 10**18),
        ("1E-3", Decimal("0.001")),
        ("1e3", 1000),
        ("1e+3", 1000),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("1.", 1),
        ("1.5Gi", 3 * 2**29),
        ("-1", -1),
        ("+1", 1),
        ("00001e18", 10**18),
        ("9223372036854775807", MAX_QUANTITY),
        (1.5, Decimal("1.5")),
        (3, 3),
    ],
)
def test_valid(text: str | int | float, value: int | Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        ("1 Gi", ERR_FORMAT_WRONG),
        ("1_000", ERR_FORMAT_WRONG),
        ("1e3Gi", ERR_FORMAT_WRONG),
        ("-3.01e-", ERR_SUFFIX),
        ("0.1mi", ERR_SUFFIX),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1K", ERR_SUFFIX),
        ("1e99999999999999999999", ERR_SUFFIX),
        ("1e19", ERR_TOO_LARGE),
        ("8Ei", ERR_TOO_LARGE),
        ("9223372036854775808", ERR_TOO_LARGE),
        ("1e999999999", ERR_TOO_LARGE),
        ("-1e999999999", ERR_TOO_LARGE),
        (float("inf"), ERR_FORMAT_WRONG),
        (float("nan"), ERR_FORMAT_WRONG),
        (True, ERR_FORMAT_WRONG),
        ([1], ERR_FORMAT_WRONG),
    ],
)
def test_invalid(text: object, message: str) -> None:
    with pytest.raises(QuantityError) as exc:
        parse_quantity(text)
    assert str(exc.value) == message


def test_tiny_values_round_up_to_one_nano_without_expanding() -> None:
    assert parse_quantity("1e-999999999") == Decimal("1e-9")
    assert to_milli("1e-999999999") == 1


def test_engine_caps_instead_of_refusing() -> None:
    assert to_int("1e999999999") == MAX_QUANTITY
    assert to_milli("1e999999999") == MAX_QUANTITY * 1000
    assert to_int("-1e30") == -MAX_QUANTITY
    assert to_milli("1E") == 10**21
    assert to_milli("100m") == 100
    assert to_int("1.5Ki") == 1536
