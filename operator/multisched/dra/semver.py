"""Semantic versions as blang/semver v4 parses and orders them (Kubernetes' CEL semver library)."""

from __future__ import annotations

from functools import lru_cache

_NUMBERS = frozenset("0123456789")
_ALPHANUM = _NUMBERS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")

Version = tuple[int, int, int, tuple[int | str, ...]]


class SemverError(ValueError):
    """A string blang/semver refuses; ``str()`` is its message."""


def _number(text: str, what: str) -> int:
    if not text or not set(text) <= _NUMBERS:
        raise SemverError(f"Invalid character(s) found in {what} number {_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(
            f"{what.capitalize()} number must not contain leading zeroes {_quote(text)}"
        )
    value = int(text)
    if value >= 2**64:
        raise SemverError(f"strconv.ParseUint: parsing {_quote(text)}: value out of range")
    return value


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if set(text) <= _NUMBERS:
        if len(text) > 1 and text[0] == "0":
            raise SemverError(
                f"Numeric PreRelease version must not contain leading zeroes {_quote(text)}"
            )
        return int(text)
    if not set(text) <= _ALPHANUM:
        raise SemverError(f"Invalid character(s) found in prerelease {_quote(text)}")
    return text


@lru_cache(maxsize=4096)
def parse(text: str) -> Version:
    """``semver.Parse``: MAJOR.MINOR.PATCH[-pre][+build]; build metadata does not order."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build = ""
    if "+" in rest:
        rest, build = rest.split("+", 1)
    pre: tuple[int | str, ...] = ()
    if "-" in rest:
        rest, pre_text = rest.split("-", 1)
        pre = tuple(_prerelease(p) for p in pre_text.split("."))
    patch = _number(rest, "patch")
    if build:
        for part in build.split("."):
            if not part:
                raise SemverError("Build meta data is empty")
            if not set(part) <= _ALPHANUM:
                raise SemverError(f"Invalid character(s) found in build meta data {_quote(part)}")
    return (major, minor, patch, pre)


def parse_normalized(text: str) -> Version:
    """The library's ``normalizeAndParse``: a "v" prefix, leading zeros, missing minor/patch."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            if not trimmed or trimmed[0] not in _NUMBERS:
                trimmed = "0" + trimmed
            parts[i] = trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def compare(a: Version, b: Version) -> int:
    """``Version.Compare``: numbers, then a release above its prereleases, then prerelease parts."""
    if a[:3] != b[:3]:
        return 1 if a[:3] > b[:3] else -1
    pa, pb = a[3], b[3]
    if pa == pb:
        return 0
    if not pa:
        return 1
    if not pb:
        return -1
    for x, y in zip(pa, pb, strict=False):
        if x == y:
            continue
        if isinstance(x, int) != isinstance(y, int):
            return -1 if isinstance(x, int) else 1  # numeric identifiers sort first
        return 1 if x > y else -1  # type: ignore[operator]
    return (len(pa) > len(pb)) - (len(pa) < len(pb))
