"""Property: whatever the example files are mutated into, simulate and validate answer with
exit 0 or 2, never a traceback, name the file (and the document) when refusing, and finish
well within a second per document.

``MULTISCHED_PROPERTY_EXAMPLES`` raises the example count for a long run; the tallies of a
run are printed (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multisched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "cluster").glob("*.yaml"))
MAX_EXAMPLES = int(os.environ.get("MULTISCHED_PROPERTY_EXAMPLES", "30"))
#: Generous: a second per document, never less than five (this is a hang detector).
SECONDS_PER_DOCUMENT = 1.0
MIN_SECONDS = 5.0

TALLY: Counter[str] = Counter()

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "1e999999999",
            "-1",
            "1e3Gi",
            "1_000",
            "1 Gi",
            "0",
            "1e18",
            "Foo",
            "Exists",
            "exists",
            "In",
            "NoSchedule",
            "DoNotSchedule",
            "xyz",
            "default",
            "a/b/c",
            "-bad-",
            "9223372036854775808",
            "8Ei",
        ]
    ),
)
#: Values the API server accepts in many places: the run should mostly still succeed.
_odd_but_valid = st.sampled_from(
    ["0", "1", "1e18", "1E", "7Ei", "0.001", "1m", "1n", "", "a", "zone-c", "Exists", "NoExecute"]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _set(obj: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = obj
    for part in path[:-1]:
        parent = parent[part]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return obj


@st.composite
def mutated_file(draw: st.DrawFn) -> tuple[str, bytes, int]:
    """(example name, mutated bytes, document count)."""
    source = draw(st.sampled_from(EXAMPLES))
    text = source.read_text()
    docs = list(yaml.safe_load_all(text))
    how = draw(
        st.sampled_from(["value", "value", "odd", "odd", "delete", "add", "bytes", "truncate"])
    )
    if how in ("bytes", "truncate"):
        raw = text.encode()
        at = draw(st.integers(min_value=0, max_value=len(raw)))
        if how == "truncate":
            return source.name, raw[:at], len(docs)
        junk = draw(st.binary(min_size=1, max_size=8))
        return source.name, raw[:at] + junk + raw[at:], len(docs)
    i = draw(st.integers(min_value=0, max_value=len(docs) - 1))
    paths = list(_paths(docs[i]))
    path = draw(st.sampled_from(paths))
    if how == "delete" and path:
        docs[i] = _set(docs[i], path, None, delete=True)
    elif how == "odd":
        leaves = [p for p in paths if p and isinstance(_get(docs[i], p), str | int)]
        if leaves:
            docs[i] = _set(docs[i], draw(st.sampled_from(leaves)), draw(_odd_but_valid), False)
    elif how == "add" and path and isinstance(_get(docs[i], path), dict):
        key = draw(st.text(min_size=1, max_size=8))
        docs[i] = _set(docs[i], (*path, key), draw(_values), delete=False)
    else:
        docs[i] = _set(docs[i], path, draw(_values), delete=False)
    return source.name, yaml.safe_dump_all(docs, allow_unicode=False).encode(), len(docs)


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


class _Hung(BaseException):
    """Not an Exception: the scheduling loop turns a plugin's exceptions into statuses and
    goes on, which would swallow the alarm and hang the test instead of failing it."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hung


def _run(argv: list[str], seconds: float) -> tuple[int, str]:
    """``main`` in-process with a wall-clock bound (a hang raises instead of blocking)."""
    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse
                code = int(exc.code or 0)
    except _Hung:
        pytest.fail(f"{argv[0]} ran longer than {seconds:.0f}s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_file())
def test_mutated_examples_exit_0_or_2_naming_file_and_document(
    case: tuple[str, bytes, int],
) -> None:
    name, data, documents = case
    bound = max(MIN_SECONDS, SECONDS_PER_DOCUMENT * documents)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        for command in ("simulate", "validate"):
            code, err = _run([command, str(path)], bound)
            TALLY[f"{command} exit {code}"] += 1
            assert code in (0, 2), err
            assert "Traceback" not in err
            for line in err.splitlines():
                # Notes (a setting ignored here) and errors both name the file.
                assert line.startswith((f"error: {name}: ", f"note: {name}: ")), line
            if code == 2:
                lines = [line for line in err.splitlines() if line.startswith("error: ")]
                assert lines, "exit 2 without an error line"
                for line in lines:
                    # A problem inside an object names its document.
                    if "): " in line:
                        assert ": document " in line, line


def teardown_module() -> None:
    if TALLY:
        print(f"\nmutated-example runs: {dict(sorted(TALLY.items()))}")
