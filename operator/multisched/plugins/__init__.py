"""Built-in plugins, one module each, following upstream kube-scheduler semantics.

Each plugin module names its plugin class in a module-level ``PLUGIN``; helper modules
(leading underscore) hold code shared by several plugins.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any


def builtin_plugins() -> list[type[Any]]:
    """Every built-in plugin class, for the registry."""
    found = []
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        plugin = getattr(module, "PLUGIN", None)
        if plugin is not None:
            found.append(plugin)
    return found
