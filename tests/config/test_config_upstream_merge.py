"""Cases from upstream default_plugins_test.go TestMergePlugins and framework_test.go
TestNewFrameworkMultiPointExpansion (same inputs -> same lists)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from config_fakes import plugin
from multisched.config import (
    EXTENSION_POINTS,
    Plugins,
    PluginSet,
    effective_plugins,
    merge_plugin_set,
    merge_plugins,
)
from multisched.config.checks import check_plugins


def ps(enabled: Sequence[Any] = (), disabled: Sequence[str] = ()) -> PluginSet:
    items = [e if isinstance(e, dict) else {"name": e} for e in enabled]
    return PluginSet.model_validate({"enabled": items, "disabled": [{"name": d} for d in disabled]})


def enabled(s: PluginSet) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in s.enabled]


MERGE_CASES = [
    pytest.param(
        ps(["DefaultPlugin1", "DefaultPlugin2"]),
        ps(["CustomPlugin"]),
        [("DefaultPlugin1", None), ("DefaultPlugin2", None), ("CustomPlugin", None)],
        [],
        id="AppendCustomPlugin",
    ),
    pytest.param(
        ps(["DefaultPlugin1", "DefaultPlugin2"]),
        ps(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
        [("DefaultPlugin1", None), ("CustomPlugin", None), ("DefaultPlugin2", None)],
        ["DefaultPlugin2"],
        id="InsertAfterDefaultPlugins2",
    ),
    pytest.param(
        ps(["DefaultPlugin1", "DefaultPlugin2"]),
        ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
        [("CustomPlugin", None), ("DefaultPlugin1", None), ("DefaultPlugin2", None)],
        ["*"],
        id="InsertBeforeAllPlugins",
    ),
    pytest.param(
        ps(["DefaultPlugin1", "DefaultPlugin2"]),
        ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"]),
        [("DefaultPlugin2", None), ("DefaultPlugin1", None)],
        ["*"],
        id="ReorderDefaultPlugins",
    ),
    pytest.param(
        ps(["Plugin1", "Plugin2", "Plugin3"]),
        ps([{"name": "Plugin1", "weight": 2}, {"name": "Plugin3", "weight": 3}]),
        [("Plugin1", 2), ("Plugin2", None), ("Plugin3", 3)],
        [],
        id="CustomPluginOverrideDefaultPlugin",
    ),
    pytest.param(
        ps(["Plugin1", "Plugin2", "Plugin3"]),
        ps([{"name": "Plugin2", "weight": 2}, {"name": "Plugin1", "weight": 1}]),
        [("Plugin1", 1), ("Plugin2", 2), ("Plugin3", None)],
        [],
        id="OrderPreserveAfterOverride",
    ),
    pytest.param(
        ps(["Plugin1", "Plugin2", "Plugin3"]),
        ps(
            [
                "Plugin1",
                {"name": "Plugin2", "weight": 2},
                "Plugin3",
                {"name": "Plugin2", "weight": 4},
            ]
        ),
        [("Plugin1", None), ("Plugin2", 4), ("Plugin3", None), ("Plugin2", 2)],
        [],
        id="RepeatedCustomPlugin",
    ),
    pytest.param(
        ps(["DefaultPlugin"]),
        ps([], ["DefaultPlugin"]),
        [],
        ["DefaultPlugin"],
        id="multipoint with only disabled gets merged",
    ),
    pytest.param(
        ps(["DefaultPlugin"]),
        ps([{"name": "DefaultPlugin", "weight": 5}]),
        [("DefaultPlugin", 5)],
        [],
        id="override default MultiPoint plugins with custom value",
    ),
    pytest.param(
        ps(["DefaultPlugin"], ["DefaultPlugin2"]),
        ps(["CustomPlugin"]),
        [("DefaultPlugin", None), ("CustomPlugin", None)],
        ["DefaultPlugin2"],
        id="disabled MultiPoint plugin in default set",
    ),
]


@pytest.mark.parametrize(("default", "custom", "want_enabled", "want_disabled"), MERGE_CASES)
def test_merge_plugin_set(
    default: PluginSet, custom: PluginSet, want_enabled: list[Any], want_disabled: list[str]
) -> None:
    got = merge_plugin_set(default, custom)
    assert enabled(got) == want_enabled
    assert [p.name for p in got.disabled] == want_disabled


def test_merge_plugins_nil_custom_keeps_defaults() -> None:
    default = Plugins.model_validate({"filter": {"enabled": [{"name": "DefaultPlugin1"}]}})
    assert merge_plugins(default, None) is default


def test_merge_plugins_append_disabled_multipoint_plugins() -> None:
    default = Plugins.model_validate(
        {"multiPoint": {"enabled": [{"name": "DefaultPlugin1"}, {"name": "DefaultPlugin2"}]}}
    )
    custom = Plugins.model_validate(
        {
            "multiPoint": {
                "enabled": [{"name": "CustomPlugin"}, {"name": "CustomPlugin2"}],
                "disabled": [{"name": "DefaultPlugin2"}],
            },
            "score": {"disabled": [{"name": "CustomPlugin2"}]},
        }
    )
    got = merge_plugins(default, custom)
    assert enabled(got.multi_point) == [
        ("DefaultPlugin1", None),
        ("CustomPlugin", None),
        ("CustomPlugin2", None),
    ]
    assert [p.name for p in got.multi_point.disabled] == ["DefaultPlugin2"]
    assert [p.name for p in got.score.disabled] == ["CustomPlugin2"]
    assert got.score.enabled == []


# Every point but preEnqueue, which upstream's test plugin does not implement.
ALL_POINTS = tuple(p for p in EXTENSION_POINTS if p != "preEnqueue")

# The framework_test.go registry: testPlugin implements every point.
UPSTREAM_REGISTRY = {
    p.name: p
    for p in (
        plugin("test-plugin", "preEnqueue", *ALL_POINTS),
        plugin("score-plugin-1", "preScore", "score"),
        plugin("score-plugin-2", "preScore", "score"),
        plugin("score-with-normalize-plugin-1", "score"),
        plugin("queue-sort-plugin", "queueSort"),
        plugin("bind-plugin", "bind"),
    )
}
T, S1, S2, SN1 = "test-plugin", "score-plugin-1", "score-plugin-2", "score-with-normalize-plugin-1"


def expand(plugins: dict[str, Any]) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    lists, weights = effective_plugins(Plugins.model_validate(plugins), UPSTREAM_REGISTRY)
    return {k: v for k, v in lists.items() if v}, weights


def everywhere(**overrides: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    want: dict[str, tuple[str, ...]] = {p: (T,) for p in ALL_POINTS}
    want["preEnqueue"] = (T,)
    want.update(overrides)
    return {k: v for k, v in want.items() if v}


def mp(*entries: Any, disabled: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "enabled": [e if isinstance(e, dict) else {"name": e} for e in entries],
        "disabled": [{"name": d} for d in disabled],
    }


def test_plugin_expansion() -> None:
    lists, weights = expand({"multiPoint": mp({"name": T, "weight": 5})})
    assert lists == everywhere()
    assert weights == {T: 5}


def test_disable_multipoint_plugin_at_some_extension_points() -> None:
    lists, _ = expand(
        {"multiPoint": mp(T), "preScore": mp(disabled=(T,)), "score": mp(disabled=(T,))}
    )
    assert lists == everywhere(preScore=(), score=())


def test_multiple_multipoint_plugins() -> None:
    lists, weights = expand({"multiPoint": mp(T, S1)})
    assert lists == everywhere(preScore=(T, S1), score=(T, S1))
    assert weights == {T: 1, S1: 1}


def test_disable_multipoint_extension() -> None:
    lists, _ = expand({"multiPoint": mp(T, S1), "preScore": mp(disabled=("*",))})
    assert lists == everywhere(preScore=(), score=(T, S1))


def test_reorder_multipoint_plugins_specified_extension_takes_precedence() -> None:
    lists, _ = expand({"multiPoint": mp(SN1, T, S1), "score": mp(S1, T)})
    assert lists == everywhere(preScore=(T, S1), score=(S1, T, SN1))


def test_reorder_only_when_plugin_exists_in_multipoint() -> None:
    lists, _ = expand({"multiPoint": mp(T, S1), "score": mp(SN1, S1, T)})
    assert lists == everywhere(preScore=(T, S1), score=(S1, T, SN1))


def test_override_multipoint_plugins_weights() -> None:
    lists, weights = expand(
        {"multiPoint": mp(T, S1), "score": mp({"name": S1, "weight": 5}, {"name": T, "weight": 3})}
    )
    assert lists == everywhere(preScore=(T, S1), score=(S1, T))
    assert weights == {S1: 5, T: 3}


def test_disable_and_enable_multipoint_plugins_with_wildcard() -> None:
    lists, weights = expand(
        {"multiPoint": mp("queue-sort-plugin", "bind-plugin", S1, disabled=("*",))}
    )
    assert lists == {
        "queueSort": ("queue-sort-plugin",),
        "preScore": (S1,),
        "score": (S1,),
        "bind": ("bind-plugin",),
    }
    assert weights == {S1: 1}


def test_disable_and_enable_multipoint_plugin_by_name() -> None:
    lists, _ = expand({"multiPoint": mp("bind-plugin", "queue-sort-plugin", S1, disabled=(S1,))})
    assert lists == {
        "queueSort": ("queue-sort-plugin",),
        "preScore": (S1,),
        "score": (S1,),
        "bind": ("bind-plugin",),
    }


def test_already_registered_error() -> None:
    problems = check_plugins(
        Plugins.model_validate({"multiPoint": mp(T, T)}), UPSTREAM_REGISTRY, "profiles[0](p)"
    )
    assert [str(p) for p in problems] == [
        'profiles[0](p).plugins.multiPoint.enabled[1](test-plugin): plugin "test-plugin" '
        "already registered as multiPoint plugin"
    ]


def test_override_weights_and_avoid_loading_a_plugin_twice() -> None:
    lists, weights = expand(
        {
            "multiPoint": mp(T, S1),
            "score": mp(
                {"name": S1, "weight": 5}, {"name": S2, "weight": 5}, {"name": T, "weight": 3}
            ),
        }
    )
    assert lists == everywhere(preScore=(T, S1), score=(S1, T, S2))
    assert weights == {S1: 5, T: 3, S2: 5}
