"""The one extension-point table (``config.extension_points``) and what derives from it: the
config room's lists, the Protocols keyed by it, and the check of each plugin against its
points' Protocols when a profile is built (``framework.runtime``)."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.cache import Cache
from multisched.config import EXTENSION_POINTS, POD_GROUP_EXTENSION_POINTS
from multisched.config.extension_points import POINTS, ExtensionPoint
from multisched.config.models import POINT_FIELDS, Plugins
from multisched.config.resolved import ResolvedProfile
from multisched.framework import EXTENSION_METHODS, Framework, FrameworkError, Registry
from multisched.framework.interfaces import (
    POINT_PROTOCOLS,
    _check_point_protocols,
    _protocol_of,
    protocol_members,
)

RUN = [p for p in POINTS if not p.pod_group]


def _method(self: Any, *args: Any) -> None:
    return None


def plugin_class(name: str, methods: tuple[str, ...]) -> type:
    namespace: dict[str, Any] = {"name": name, "__init__": lambda self, args, handle: None}
    namespace.update(dict.fromkeys(methods, _method))
    return type(name, (), namespace)


def build(plugin: type, point: str) -> Framework:
    profile = ResolvedProfile(
        scheduler_name="test",
        percentage_of_nodes_to_score=None,
        plugins={point: (plugin.name,)},  # type: ignore[attr-defined]
        score_weights={},
    )
    return Framework(profile, Registry([plugin]), Cache().snapshot)


# -- the table and its derivations ---------------------------------------------------------


def test_the_config_rooms_lists_are_the_tables() -> None:
    assert tuple(p.name for p in RUN) == EXTENSION_POINTS
    assert POD_GROUP_EXTENSION_POINTS == (
        "placementGenerate",
        "placementScore",
        "podGroupPostFilter",
    )
    assert list(POINT_FIELDS) == ["multiPoint", *(p.name for p in POINTS)]
    # The declared model fields read the table's YAML names, in its order.
    assert [f.alias for f in Plugins.model_fields.values()] == list(POINT_FIELDS)


def test_the_registry_reads_a_point_from_the_first_method_of_its_protocol() -> None:
    assert {p.name: p.methods[0] for p in RUN} == EXTENSION_METHODS


@pytest.mark.parametrize("point", RUN, ids=lambda p: p.name)
def test_every_point_multisched_runs_has_upstreams_protocol_asking_for_the_tables_methods(
    point: ExtensionPoint,
) -> None:
    protocol = POINT_PROTOCOLS[point.name]
    assert protocol.__name__ == f"{point.go_name}Plugin"
    assert protocol_members(protocol) == {"name", *point.methods}


def test_the_pod_group_points_have_no_protocol() -> None:
    assert set(POINT_PROTOCOLS) == set(EXTENSION_POINTS)


def test_a_point_without_a_protocol_stops_the_import() -> None:
    new = ExtensionPoint("preSign", "PreSign", ("pre_sign",))
    with pytest.raises(TypeError, match="extension point preSign has no Protocol"):
        _check_point_protocols((*POINTS, new))


def test_a_protocol_that_asks_for_other_methods_than_the_table_stops_the_import() -> None:
    reserve = ExtensionPoint("reserve", "Reserve", ("reserve",))
    with pytest.raises(TypeError, match=r"ReservePlugin asks for .*unreserve"):
        _check_point_protocols((reserve,))


@pytest.mark.parametrize("point", ["preSign", "placementScore", "filter"])
def test_a_protocol_for_no_point_or_a_taken_one_stops_the_import(point: str) -> None:
    class SignPlugin:
        pass

    with pytest.raises(TypeError, match=f"SignPlugin: '?{point}'? is"):
        _protocol_of(point)(SignPlugin)
    assert POINT_PROTOCOLS["filter"].__name__ == "FilterPlugin"


# -- the check when a profile is built -----------------------------------------------------


@pytest.mark.parametrize("point", RUN, ids=lambda p: p.name)
def test_a_plugin_with_all_of_its_points_methods_is_built(point: ExtensionPoint) -> None:
    fwk = build(plugin_class("Whole", point.methods), point.name)
    assert list(fwk.plugins) == ["Whole"]


@pytest.mark.parametrize(
    ("point", "missing"),
    [(p, m) for p in RUN for m in p.methods],
    ids=lambda v: v.name if isinstance(v, ExtensionPoint) else v,
)
def test_a_plugin_without_one_of_its_points_methods_is_refused_naming_plugin_and_point(
    point: ExtensionPoint, missing: str
) -> None:
    # Some other point keeps it registered when it lacks the one the registry reads (the
    # config would not enable it there; the profile here is written by hand).
    other = "post_bind" if point.name == "filter" else "filter"
    lacking = plugin_class("Lacking", (other, *(m for m in point.methods if m != missing)))
    with pytest.raises(FrameworkError) as err:
        build(lacking, point.name)
    assert str(err.value) == (
        f"profile test: plugin Lacking does not implement {point.name}: it has no {missing}"
    )


def test_a_refused_plugin_is_a_value_error_as_bad_configuration_is() -> None:
    # The commands that build profiles (simulate, --from-cluster) print ValueErrors as one
    # line; the operator writes any build failure into the SchedulerProfile's status.
    with pytest.raises(ValueError, match="does not implement reserve: it has no unreserve"):
        build(plugin_class("HalfReserve", ("reserve",)), "reserve")
