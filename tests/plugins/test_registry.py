"""The explicit list of in-tree plugins (``plugins/registry.py``, upstream registry.go)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import multisched.plugins
from multisched.framework import PluginEntry, Registry
from multisched.framework.interfaces import POINT_PROTOCOLS
from multisched.plugins import builtin_plugins
from multisched.plugins.registry import (
    BATCH_FILTER,
    BATCH_SCORE,
    BY_PROTOCOL,
    ENQUEUE_EXTENSIONS,
    NORMALIZE_SCORE,
    in_tree_plugins,
)


def _modules_defining_plugin() -> dict[str, type]:
    """Every module under ``multisched.plugins`` (packages and their modules included)
    that defines ``PLUGIN``, found by walking the source tree, not by the list."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(multisched.plugins.__path__, "multisched.plugins."):
        module = importlib.import_module(info.name)
        plugin = getattr(module, "PLUGIN", None)
        if plugin is not None:
            found[info.name] = plugin
    return found


def test_every_module_that_defines_a_plugin_is_listed() -> None:
    listed = set(in_tree_plugins())
    missing = {
        name: plugin.__name__
        for name, plugin in _modules_defining_plugin().items()
        if plugin not in listed
    }
    assert missing == {}, "add these to plugins/registry.py in_tree_plugins()"


def test_the_walk_sees_the_packages_and_the_flat_modules() -> None:
    # The check above is only as good as the walk: it must reach packages' PLUGIN and
    # flat modules' PLUGIN alike.
    found = _modules_defining_plugin()
    assert "multisched.plugins.podtopologyspread" in found
    assert "multisched.plugins.interpodaffinity" in found
    assert "multisched.plugins.node_name" in found
    assert {p.__name__ for p in found.values()} == {p.__name__ for p in in_tree_plugins()}


def test_the_list_has_no_duplicates() -> None:
    plugins = in_tree_plugins()
    assert len(plugins) == len(set(plugins))
    names = [p.name for p in plugins]
    assert len(names) == len(set(names))


def test_builtin_plugins_is_the_list_and_registers_cleanly() -> None:
    assert builtin_plugins() == in_tree_plugins()
    registry = Registry(builtin_plugins())
    assert list(registry) == [p.name for p in in_tree_plugins()]
    assert "PodTopologySpread" in registry
    assert "InterPodAffinity" in registry


def test_helper_modules_define_no_plugin() -> None:
    helpers = [
        info.name
        for info in pkgutil.iter_modules(multisched.plugins.__path__)
        if info.name.startswith("_")
    ]
    assert helpers, "the shared helpers sit beside the plugins"
    for name in helpers:
        module = importlib.import_module(f"multisched.plugins.{name}")
        assert not hasattr(module, "PLUGIN"), name


# -- The typed tables (what mypy checks the plugins' methods against) ----------------------


def test_there_is_a_table_for_every_points_protocol() -> None:
    assert set(BY_PROTOCOL) == set(POINT_PROTOCOLS.values())
    assert len(BY_PROTOCOL) == len(POINT_PROTOCOLS)


@pytest.mark.parametrize("plugin", in_tree_plugins(), ids=lambda p: p.name)
def test_a_plugin_is_in_the_table_of_every_point_it_implements_and_no_other(
    plugin: type,
) -> None:
    tabled = {
        point for point, protocol in POINT_PROTOCOLS.items() if plugin in BY_PROTOCOL[protocol]
    }
    assert tabled == PluginEntry(plugin).extension_points


@pytest.mark.parametrize(
    ("table", "method"),
    [
        (BATCH_FILTER, "filter_nodes"),
        (BATCH_SCORE, "score_nodes"),
        (NORMALIZE_SCORE, "normalize_score"),
        (ENQUEUE_EXTENSIONS, "events_to_register"),
    ],
)
def test_the_optional_extension_tables_match_the_methods(
    table: tuple[type, ...], method: str
) -> None:
    having = [p for p in in_tree_plugins() if getattr(p, method, None) is not None]
    assert sorted(p.__name__ for p in table) == sorted(p.__name__ for p in having)


def test_the_tables_hold_in_tree_plugins_once_each() -> None:
    listed = set(in_tree_plugins())
    optional = [BATCH_FILTER, BATCH_SCORE, NORMALIZE_SCORE, ENQUEUE_EXTENSIONS]
    for table in [*BY_PROTOCOL.values(), *optional]:
        assert len(table) == len(set(table))
        assert set(table) <= listed
