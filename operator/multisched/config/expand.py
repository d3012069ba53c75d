"""Upstream's plugin-list algorithms, kept line-for-line in behaviour.

- ``merge_plugin_set``/``merge_plugins``: v1 defaulting (pkg/scheduler/apis/config/v1/
  default_plugins.go ``mergePluginSet``/``mergePlugins``).
- ``effective_plugins``: ``NewFramework`` (pkg/scheduler/framework/runtime/framework.go):
  ``updatePluginList`` per point, ``expandMultiPointPlugins``, ``getScoreWeights``.

These functions never fail: names the catalog doesn't know, points a plugin doesn't
implement and duplicates are skipped here and reported by ``checks``, so every problem of a
profile can be listed at once instead of stopping at the first as upstream does.
"""

from __future__ import annotations

from .catalog import EXTENSION_POINTS, PluginCatalog
from .models import POINT_FIELDS, Plugin, Plugins, PluginSet

WILDCARD = "*"


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Merge the user's set over the default one.

    Disabled names (user's, then default's) drop defaults, ``*`` drops them all; a default the
    user enables again is replaced in place (keeping its position, taking the user's
    weight); other user plugins are appended in the user's order. A name the user enables
    twice is kept twice, so the framework step reports the duplicate, as upstream.
    """
    disabled = [Plugin(name=p.name) for p in (*custom.disabled, *default.disabled)]
    disabled_names = {p.name for p in disabled}
    # Later entries win, as Go's map assignment in a loop.
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if WILDCARD not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            override = custom_by_name.get(plugin.name)
            if override is None:
                enabled.append(plugin)
            else:
                replaced.add(override[0])
                enabled.append(override[1])
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    if custom is None:
        return default
    return Plugins.model_validate(
        {
            field: merge_plugin_set(default.point(point), custom.point(point))
            for point, field in POINT_FIELDS.items()
        }
    )


def _point_list(plugin_set: PluginSet, point: str, catalog: PluginCatalog) -> list[str]:
    """``updatePluginList``: the point's own enabled plugins, in order."""
    names: list[str] = []
    for plugin in plugin_set.enabled:
        spec = catalog.get(plugin.name)
        if spec is None or point not in spec.extension_points or plugin.name in names:
            continue
        names.append(plugin.name)
    return names


def _expand(
    names: list[str],
    plugin_set: PluginSet,
    point: str,
    multi_point: PluginSet,
    catalog: PluginCatalog,
) -> list[str]:
    """``expandMultiPointPlugins`` for one point."""
    disabled = {p.name for p in plugin_set.disabled}
    if WILDCARD in disabled:
        return names
    overrides: set[str] = set()
    multi_enabled: list[str] = []
    for plugin in multi_point.enabled:
        spec = catalog.get(plugin.name)
        if spec is None or point not in spec.extension_points or plugin.name in disabled:
            continue
        if plugin.name in names:
            # Listed at the point itself: the user's explicit setting wins over multiPoint.
            overrides.add(plugin.name)
        elif plugin.name not in multi_enabled:
            multi_enabled.append(plugin.name)
    # Part 1: overridden plugins in the point's order; part 2: multiPoint-only plugins;
    # part 3: the rest of the point's own list.
    return (
        [n for n in names if n in overrides]
        + multi_enabled
        + [n for n in names if n not in overrides]
    )


def _score_weights(
    merged: Plugins, scored: tuple[str, ...], catalog: PluginCatalog
) -> dict[str, int]:
    """``getScoreWeights``: the score point's weight wins over multiPoint's; unset or 0 -> 1."""
    weights: dict[str, int] = {}
    for plugin in (*merged.score.enabled, *merged.multi_point.enabled):
        spec = catalog.get(plugin.name)
        if spec is None or "score" not in spec.extension_points or plugin.name in weights:
            continue
        weights[plugin.name] = plugin.weight or 1
    return {name: weights.get(name, 1) for name in scored}


def effective_plugins(
    merged: Plugins, catalog: PluginCatalog
) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """Run order per extension point and score weights of a merged ``Plugins``."""
    plugins: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        plugin_set = merged.point(point)
        names = _point_list(plugin_set, point, catalog)
        if merged.multi_point.enabled:
            names = _expand(names, plugin_set, point, merged.multi_point, catalog)
        plugins[point] = tuple(names)
    return plugins, _score_weights(merged, plugins["score"], catalog)
