from __future__ import annotations

import pytest

from multisched.config import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("2us", 2e-6),
        ("0", 0.0),
        ("-1s", -1.0),
        (".5s", 0.5),
        ("1h2m3s4ms", 3723.004),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "", "s", "1d", "1 s", "1.2.3s", "--1s", "1S"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)
