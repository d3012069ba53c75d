"""The benchmarks name the interpreter their figures were taken on, optimised build or not."""

from __future__ import annotations

import sysconfig

import pytest

from bench.interpreter import describe


@pytest.mark.parametrize(
    ("config_args", "said"),
    [
        # docker-library/python's python:3.11-slim
        (
            "'--build=x86_64-linux-gnu' '--enable-optimizations' '--enable-shared' '--with-lto'",
            "configured with --enable-optimizations --with-lto",
        ),
        ("'--enable-shared' '--with-lto=full'", "configured with --with-lto"),
        # pyenv's default build
        (
            "'--prefix=/root/.pyenv/versions/3.11.7' '--enable-shared'",
            "configure flags record neither --enable-optimizations nor --with-lto",
        ),
        ("'--enable-optimizations=no'", "record neither"),
        ("", "record neither"),
    ],
)
def test_the_build_is_said_as_its_configure_flags_record_it(
    monkeypatch: pytest.MonkeyPatch, config_args: str, said: str
) -> None:
    real = sysconfig.get_config_var
    monkeypatch.setattr(
        sysconfig,
        "get_config_var",
        lambda name: config_args if name == "CONFIG_ARGS" else real(name),
    )
    text = describe("/opt/venv/bin/python")
    assert said in text
    assert text.startswith("CPython 3.")
    assert "/opt/venv/bin/python" in text
