"""The interpreter the figures were taken on, said beside them.

The same Python code runs at different speeds on different CPython builds: the chart's image
(``python:3.11-slim``) is configured with ``--enable-optimizations --with-lto`` (profile-guided
and link-time optimisation), pyenv builds without them by default, and a distribution may
optimise by its own rules. So a figure names its interpreter, and comparisons are between
runs on the same one (README, "Which interpreter").
"""

from __future__ import annotations

import platform
import sys
import sysconfig

#: The configure flags of an optimised CPython build (docker-library/python's are both).
OPTIMISING_FLAGS = ("--enable-optimizations", "--with-lto")


def describe(executable: str = sys.executable) -> str:
    """``CPython 3.11.7 (/path/python; configured with --enable-optimizations --with-lto)``.

    Only what the build recorded is reported: a distribution may optimise its build by its
    own rules without these flags in ``CONFIG_ARGS``."""
    args = str(sysconfig.get_config_var("CONFIG_ARGS") or "").split()
    found = [flag for flag in OPTIMISING_FLAGS if any(_names(arg, flag) for arg in args)]
    built = (
        f"configured with {' '.join(found)}"
        if found
        else f"configure flags record neither {' nor '.join(OPTIMISING_FLAGS)}"
    )
    return f"{platform.python_implementation()} {platform.python_version()} ({executable}; {built})"


def _names(arg: str, flag: str) -> bool:
    """``'--with-lto=full'`` names ``--with-lto``; ``'--enable-optimizations=no'`` does not."""
    name, _, value = arg.strip("'\"").partition("=")
    return name == flag and value not in ("no", "false")
