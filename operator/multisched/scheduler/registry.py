"""The registry a scheduler runs with: built-ins plus installed entry-point plugins."""

from __future__ import annotations

from multisched.framework import Registry
from multisched.plugins import builtin_plugins


def default_registry(load_entry_points: bool = True) -> Registry:
    registry = Registry(builtin_plugins())
    if load_entry_points:
        registry.load_entry_points()
    return registry
