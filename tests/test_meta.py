"""``now_time``: the API server's ``metav1.Time`` of now, formatted once per second."""

from __future__ import annotations

import datetime

import pytest

from multisched import meta


def test_now_time_is_the_current_second_and_follows_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [1_795_000_000.25]
    monkeypatch.setattr(meta.time, "time", lambda: clock[0])
    assert meta.now_time() == "2026-11-18T11:06:40Z"
    clock[0] = 1_795_000_000.99  # the same second
    assert meta.now_time() == "2026-11-18T11:06:40Z"
    clock[0] = 1_795_000_001.0
    assert meta.now_time() == "2026-11-18T11:06:41Z"
    clock[0] = 1_795_000_000.5  # a clock stepped back is followed too
    assert meta.now_time() == "2026-11-18T11:06:40Z"


def test_now_time_reads_the_real_clock() -> None:
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    stamp = datetime.datetime.strptime(meta.now_time(), "%Y-%m-%dT%H:%M:%SZ")
    after = datetime.datetime.now(datetime.UTC)
    assert before <= stamp.replace(tzinfo=datetime.UTC) <= after
