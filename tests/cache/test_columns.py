"""``lookup_all``: a batch of nodes' values read from a column in one call."""

from __future__ import annotations

import pytest

from multisched.cache.columns import lookup_all


@pytest.mark.parametrize("keys", [[], ["b"], ["c", "a", "c"]])
def test_values_come_in_the_order_of_the_keys(keys: list[str]) -> None:
    column = {"a": 1, "b": None, "c": 3}
    assert lookup_all(column, keys) == [column[k] for k in keys]


@pytest.mark.parametrize("keys", [["x"], ["a", "x"]])
def test_a_missing_key_raises(keys: list[str]) -> None:
    with pytest.raises(KeyError):
        lookup_all({"a": 1}, keys)
