"""The API server's rules for Nodes (``ValidateNode`` in ``pkg/apis/core/validation``): name,
taints, resource quantities, declared features and pod CIDRs, in its order and words, on the
object as v1 decodes and converts it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from .core import (
    Errors,
    Obj,
    _items,
    _map,
    _str,
    _taint_effect,
    resource_value,
    validate_meta,
)
from .names import (
    duplicate,
    go_quote,
    invalid,
    is_dns1123_subdomain,
    is_valid_label_value,
)


def validate_node(obj: Obj) -> list[str]:
    """``ValidateNode``, on the object as v1 decodes and converts it."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    # Upstream passes the taints under the metadata path (shared with the taints annotation).
    _node_taints(errs, spec.get("taints"), "metadata.taints")
    status = _map(obj.get("status"))
    capacity, allocatable = status.get("capacity"), status.get("allocatable")
    if allocatable is None:
        allocatable = capacity  # SetDefaults_NodeStatus: a bad capacity is reported twice
    for field, values in (("capacity", capacity), ("allocatable", allocatable)):
        for name, value in _map(values).items():
            resource_value(errs, str(name), value, f"status.{field}.{name}")
    _declared_features(errs, status.get("declaredFeatures"))
    cidrs = _pod_cidrs(spec)
    if cidrs:
        _validate_pod_cidrs(errs, cidrs)
    return errs


#: ``nodeDeclaredFeatureRegexp``.
_FEATURE_NAME = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
_FEATURE_NAME_MAX = 253  # DNS1123SubdomainMaxLength


def _declared_features(errs: Errors, features: Any) -> None:
    """``validateNodeDeclaredFeatures``: well-formed names, sorted, no duplicates (the
    scheduler matches them as a set, and the kubelet publishes them so)."""
    names = _items(features)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue  # the schema names it
        path = f"status.declaredFeatures[{i}]"
        if len(name.encode(errors="surrogatepass")) > _FEATURE_NAME_MAX:  # Go counts bytes
            detail = f"must be no more than {_FEATURE_NAME_MAX} characters"
            errs.append(invalid(path, name, f"invalid feature name {go_quote(name)}: {detail}"))
        elif not _FEATURE_NAME.fullmatch(name):
            detail = (
                "must start with an UpperCamelCase segment, with subsequent segments separated "
                "by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only "
                "alphanumeric characters and slashes"
            )
            errs.append(invalid(path, name, f"invalid feature name {go_quote(name)}: {detail}"))
        if i + 1 < len(names):
            following, next_path = names[i + 1], f"status.declaredFeatures[{i + 1}]"
            if not isinstance(following, str):
                continue
            if following == name:
                errs.append(duplicate(next_path, following))
            elif following < name:
                errs.append(invalid(next_path, following, "list must be sorted alphabetically"))


def _node_taints(errs: Errors, taints: Any, path: str) -> None:
    """``validateNodeTaints``."""
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(_items(taints)):
        p = f"{path}[{i}]"
        fields = ("key", "value", "effect", "timeAdded")
        if not isinstance(t, Mapping) or any(not isinstance(t.get(f), str | None) for f in fields):
            continue  # the schema names it, under spec.taints, which would not hide ours
        key, value, effect = _str(t.get("key")), _str(t.get("value")), _str(t.get("effect"))
        errs.label_name(f"{p}.key", key)
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(invalid(f"{p}.value", value, ";".join(msgs)))
        _taint_effect(errs, effect, f"{p}.effect", allow_empty=False)
        if (key, effect) in seen:
            detail = "taints must be unique by key and effect pair"
            errs.append(duplicate(p, _go_taint(t), detail))
        seen.add((key, effect))


def _go_taint(t: Obj) -> dict[str, Any]:
    """A ``core.Taint`` as ``field.Duplicate`` shows it: JSON of an internal type without
    JSON tags (Go's field names, in order)."""
    return {
        "Key": _str(t.get("key")),
        "Value": _str(t.get("value")),
        "Effect": _str(t.get("effect")),
        "TimeAdded": _go_time(t.get("timeAdded")),
    }


_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _go_time(text: Any) -> str | None:
    """A ``*metav1.Time`` as JSON writes it: RFC 3339 in UTC, to the second; None (null)
    when unset (or undecodable, which the API server refuses before this)."""
    match = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    y, mo, d, h, mi, sec, zone = match.groups()
    offset: timezone = UTC
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        when = datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec), tzinfo=offset)
        utc = when.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}Z"
    )


def _pod_cidrs(spec: Obj) -> list[str]:
    """``Convert_v1_NodeSpec_To_core_NodeSpec``: the singular podCIDR wins when the two
    disagree, and stands alone when podCIDRs is empty."""
    single, many = spec.get("podCIDR"), spec.get("podCIDRs")
    if not isinstance(single, str | None) or not isinstance(many, list | None):
        return []  # a type error, which the schema names
    cidrs = many or []
    if any(not isinstance(c, str) for c in cidrs):
        return []
    if single and (not cidrs or cidrs[0] != single):
        return [single]
    return list(cidrs)


def _validate_pod_cidrs(errs: Errors, cidrs: list[str]) -> None:
    """``ValidateNode``'s podCIDRs checks: each one ``IsValidCIDRForLegacyField`` with
    strict validation (StrictIPCIDRValidation, on since v1.36), then the pair."""
    path = "spec.podCIDRs"
    families = [_cidr_family(c) for c in cidrs]
    for i, (cidr, family) in enumerate(zip(cidrs, families, strict=True)):
        problem = _INVALID_CIDR if family is None else _strict_cidr_problem(cidr)
        if problem:
            errs.append(invalid(f"{path}[{i}]", cidr, problem))
    if len(cidrs) < 2:
        return
    bad = next((i for i, family in enumerate(families) if family is None), None)
    if bad is not None:
        # IsDualStackCIDRStrings fails on the first unparsable one; dualStack is then false.
        errs.append(
            f"{path}: Internal error: invalid PodCIDRs. failed to check with dual stack with "
            f"error:invalid CIDR[{bad}]: <nil> (invalid CIDR address: {cidrs[bad]})"
        )
    dual = bad is None and {4, 6} <= set(families)
    if not dual or len(cidrs) > 2:
        errs.append(invalid(path, cidrs, "may specify no more than one CIDR for each IP family"))


_INVALID_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _strict_cidr_problem(text: str) -> str:
    """What ``netip.ParsePrefix`` finds wrong with a CIDR the sloppy parser took: leading
    zeros (in an IPv4 octet, an IPv6 group or the prefix length), an IPv4-mapped address,
    or bits set past the prefix; "" when none."""
    addr_text, _, bits_text = text.rpartition("/")
    try:
        addr = ipaddress.ip_address(addr_text)
    except ValueError:
        addr = None
    if addr is None or (len(bits_text) > 1 and bits_text[0] == "0"):
        return "must not have leading 0s in IP or prefix length"
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return "must not have an IPv4-mapped IPv6 address"
    host_bits = addr.max_prefixlen - int(bits_text)
    if int(addr) & ((1 << host_bits) - 1):
        return "must not have bits set beyond the prefix length"
    return ""


#: Go's ``dtoi``/``xtoi`` give up at this (``big``).
_BIG = 0xFFFFFF


def _dtoi(s: str) -> tuple[int, int, bool]:
    n = i = 0
    while i < len(s) and "0" <= s[i] <= "9":
        n = n * 10 + ord(s[i]) - ord("0")
        if n >= _BIG:
            return _BIG, i, False
        i += 1
    return n, i, i > 0


def _xtoi(s: str) -> tuple[int, int, bool]:
    n = i = 0
    while i < len(s) and s[i] in "0123456789abcdefABCDEF":
        n = n * 16 + int(s[i], 16)
        if n >= _BIG:
            return 0, i, False
        i += 1
    return n, i, i > 0


def _parse_ipv4(s: str) -> int | None:
    """The forked (pre-Go-1.17) ``parseIPv4`` of k8s.io/utils: leading zeros allowed."""
    value = 0
    for i in range(4):
        if not s:
            return None
        if i > 0:
            if s[0] != ".":
                return None
            s = s[1:]
        n, c, ok = _dtoi(s)
        if not ok or n > 0xFF:
            return None
        s = s[c:]
        value = value << 8 | n
    return None if s else value


def _parse_ipv6(s: str) -> int | None:
    """The forked ``parseIPv6`` (an embedded IPv4 tail parsed as sloppily)."""
    groups: list[int] = []  # 16-bit groups
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return 0
    while len(groups) < 8:
        n, c, ok = _xtoi(s)
        if not ok or n > 0xFFFF:
            return None
        if c < len(s) and s[c] == ".":
            if (ellipsis < 0 and len(groups) != 6) or len(groups) + 2 > 8:
                return None
            ip4 = _parse_ipv4(s)
            if ip4 is None:
                return None
            groups += [ip4 >> 16, ip4 & 0xFFFF]
            s = ""
            break
        groups.append(n)
        s = s[c:]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return None
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return None
            ellipsis, s = len(groups), s[1:]
            if not s:
                break
    if s:
        return None
    if len(groups) < 8:
        if ellipsis < 0:
            return None
        groups[ellipsis:ellipsis] = [0] * (8 - len(groups))
    elif ellipsis >= 0:
        return None  # an ellipsis must stand for at least one group
    value = 0
    for g in groups:
        value = value << 16 | g
    return value


def _cidr_family(text: str) -> int | None:
    """4 or 6 as ``IPFamilyOfCIDR`` tells the result of k8s.io/utils' ``ParseCIDRSloppy``,
    None when that refuses it. A masked IPv4-mapped IPv6 network counts as IPv4 (``To4``)."""
    slash = text.find("/")
    if slash < 0:
        return None
    addr, mask = text[:slash], text[slash + 1 :]
    bits, ip = 32, _parse_ipv4(addr)
    if ip is None:
        bits, ip = 128, _parse_ipv6(addr)
    n, used, ok = _dtoi(mask)
    if ip is None or not ok or used != len(mask) or n > bits:
        return None
    if bits == 32:
        return 4
    masked = ip & (((1 << n) - 1) << (128 - n))
    return 4 if masked >> 32 == 0xFFFF else 6
