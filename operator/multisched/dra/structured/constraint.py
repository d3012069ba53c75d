"""Claim constraints (matchAttribute, distinctAttribute): ports incubating/constraint.go
and the matchAttributeConstraint of allocator_incubating.go.

Constraints are monotonic: once one refuses a device, adding more devices cannot satisfy
it, which lets the search stop early. Every successful ``add`` has exactly one ``remove``
with the same arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .slices import Device

_SCALARS = ("string", "int", "bool", "version")


def lookup_attribute(device: Device, name: str) -> Mapping[str, Any] | None:
    """``lookupAttribute``: the fully qualified name, or the bare id in the driver's domain."""
    attributes: Mapping[str, Mapping[str, Any]] = device.raw.get("attributes") or {}
    attr = attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != device.id.driver:
        return None
    return attributes.get(ident)


def _scalar(attr: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The one scalar value set, as (type, value); None for a list or unknown value."""
    for kind in _SCALARS:
        value = attr.get(kind)
        if value is not None:
            return kind, value
    return None


class _RequestScoped:
    __slots__ = ("attribute_name", "request_names")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        self.request_names = frozenset(request_names)
        self.attribute_name = attribute_name

    def applies(self, request_name: str, sub_request_name: str) -> bool:
        names = self.request_names
        if not names or request_name in names:
            return True
        return bool(sub_request_name) and f"{request_name}/{sub_request_name}" in names


class MatchAttributeConstraint(_RequestScoped):
    """All devices must have the attribute, with one and the same value."""

    __slots__ = ("num_devices", "value")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        super().__init__(request_names, attribute_name)
        self.value: tuple[str, Any] | None = None
        self.num_devices = 0

    def add(self, request_name: str, sub_request_name: str, device: Device) -> bool:
        if not self.applies(request_name, sub_request_name):
            return True
        attr = lookup_attribute(device, self.attribute_name)
        if attr is None:
            return False
        value = _scalar(attr)
        if self.num_devices == 0:
            self.value = value  # the first device can always get picked
            self.num_devices = 1
            return True
        if value is None or value != self.value:
            return False  # different value, or an unknown type that cannot match
        self.num_devices += 1
        return True

    def remove(self, request_name: str, sub_request_name: str, device: Device) -> None:
        if self.applies(request_name, sub_request_name):
            self.num_devices -= 1


class DistinctAttributeConstraint(_RequestScoped):
    """All devices must have the attribute, each with a different value."""

    __slots__ = ("values",)

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        super().__init__(request_names, attribute_name)
        self.values: list[tuple[str, Any] | None] = []

    def add(self, request_name: str, sub_request_name: str, device: Device) -> bool:
        if not self.applies(request_name, sub_request_name):
            return True
        attr = lookup_attribute(device, self.attribute_name)
        if attr is None:
            return False
        value = _scalar(attr)
        if self.values and (value is None or value in self.values):
            return False  # duplicated, or an unknown type
        self.values.append(value)
        return True

    def remove(self, request_name: str, sub_request_name: str, device: Device) -> None:
        if self.applies(request_name, sub_request_name):
            self.values.pop()


Constraint = MatchAttributeConstraint | DistinctAttributeConstraint
