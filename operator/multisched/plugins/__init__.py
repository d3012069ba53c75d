"""Built-in plugins, following upstream kube-scheduler semantics.

Each plugin module or package names its plugin class in a module-level ``PLUGIN``, and
``registry.in_tree_plugins`` lists them all. A plugin that spans files is a package named
as upstream's (``podtopologyspread/``, ``volumebinding/``, ...); helper modules (leading
underscore) hold code shared by several plugins, as upstream's ``plugins/helper``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multisched.framework.interfaces import Plugin


def builtin_plugins() -> list[type[Plugin]]:
    """Every built-in plugin class, for the registry."""
    # Imported here: importing one plugin module does not import them all.
    from .registry import in_tree_plugins

    return in_tree_plugins()
