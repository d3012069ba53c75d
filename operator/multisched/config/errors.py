"""Configuration problems: one human-actionable line each, all collected into one error.

Paths read like ``profiles[0](my-scheduler).plugins.score.enabled[1](Foo)``: field names as
written in the YAML, list indices in brackets, and the name of a named list item in
parentheses so the reader finds it without counting.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(ValueError):
    """A configuration that cannot be used; ``str()`` is one line per problem."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def join_path(prefix: str, *parts: str | int) -> str:
    """Append fields (``.name``) and indices (``[i]``) to ``prefix``."""
    out = prefix
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else part
    return out


def item_label(item: object) -> str:
    """``(name)`` for a list item that carries a name, so paths say which item is meant."""
    if isinstance(item, Mapping):
        for key in ("schedulerName", "scheduler_name", "name"):
            value = item.get(key)
            if isinstance(value, str) and value:
                return f"({value})"
    return ""


_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def _as_written(part: str) -> str:
    """Field names in YAML spelling: pydantic reports defaults by attribute name."""
    if not _SNAKE.fullmatch(part):
        return part
    head, *rest = part.split("_")
    return head + "".join(word.capitalize() for word in rest)


def format_loc(loc: Sequence[int | str], raw: object, prefix: str = "") -> str:
    """Render a pydantic error location, labelling list items with their names from ``raw``."""
    out = prefix
    node: object = raw
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            out += f"[{part}]{item_label(item)}"
            node = item
        else:
            key = _as_written(part)
            out = join_path(out, key)
            node = node.get(key) if isinstance(node, Mapping) else None
    return out


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean "X"?)`` for a near miss, else an empty string."""
    candidates = list(known)
    for cand in candidates:
        if cand.lower() == name.lower():
            return f' (did you mean "{cand}"?)'
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


#: Hints for fields that exist, just not where they were written.
_MISPLACED = {
    "leaderElection": (
        "leader election is a process setting, not part of a SchedulerProfile: use "
        "`multisched run --leader-elect` flags or the Helm chart's leaderElection values"
    ),
    "profiles": "profiles is a top-level field",
    "weight": "weight belongs to a plugin entry: {name: X, weight: N}",
    "args": "args belong in pluginConfig: [{name: X, args: {...}}]",
}

_TYPE_MESSAGES = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "missing": "required field is missing",
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(err: ErrorDetails, known_fields: Iterable[str], hints: bool) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(err["loc"][-1]) if err["loc"] else ""
        hint = _MISPLACED.get(key) if hints else None
        return f"unknown field ({hint})" if hint else "unknown field" + suggest(key, known_fields)
    if kind == "model_type" and isinstance(err["input"], str):
        cls = (err.get("ctx") or {}).get("class_name")
        if cls == "Plugin":
            return (
                f"expected a plugin entry like {{name: {err['input']}}}, got the bare string "
                f"{err['input']!r}; write `- name: {err['input']}`"
            )
    if kind == "too_short":
        minimum = (err.get("ctx") or {}).get("min_length", 1)
        return f"must have at least {minimum} item{'s' if minimum != 1 else ''}"
    if kind in _TYPE_MESSAGES:
        msg = _TYPE_MESSAGES[kind]
        return msg if kind == "missing" else f"{msg}, got {_short(err['input'])}"
    msg = err["msg"]
    for noise in ("Value error, ", "Assertion failed, "):
        if msg.startswith(noise):
            msg = msg[len(noise) :]
    return msg


def problems_from_validation_error(
    exc: ValidationError,
    raw: object,
    prefix: str = "",
    known_fields: Iterable[str] = (),
    hints: bool = True,
) -> list[Problem]:
    """One Problem per pydantic error, paths rendered with ``format_loc``.

    ``hints`` adds "belongs elsewhere" hints meant for the scheduler configuration itself;
    plugin args are validated with it off.
    """
    known = tuple(known_fields)
    return [
        Problem(format_loc(err["loc"], raw, prefix), _message(err, known, hints))
        for err in exc.errors()
    ]
