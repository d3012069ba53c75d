"""Validation that needs the plugin catalog, against the configuration as the user wrote it.

Each check returns Problems whose paths point at the user's own entries (e.g.
``profiles[0](my-scheduler).plugins.score.enabled[1](Foo)``); ``merge.resolve`` collects
them all before raising.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from .catalog import EXTENSION_POINTS, POD_GROUP_EXTENSION_POINTS, PluginCatalog
from .defaults import UNSUPPORTED_PLUGINS, unsupported_message
from .errors import Problem, problems_from_validation_error, suggest
from .expand import WILDCARD
from .models import Plugins, Profile

#: Upstream weights are int32.
MAX_WEIGHT = 2**31 - 1
_WEIGHTED_POINTS = ("score", "multiPoint")


def profile_path(index: int, profile: Profile, several: bool) -> str:
    named = not several or "scheduler_name" in profile.model_fields_set
    return f"profiles[{index}]({profile.scheduler_name})" if named else f"profiles[{index}]"


def unknown_plugin(name: str, catalog: PluginCatalog) -> str:
    if name in UNSUPPORTED_PLUGINS:
        return unsupported_message(name)
    if name == WILDCARD:
        return '"*" can only be used under disabled'
    return f'unknown plugin "{name}"' + suggest(name, catalog)


def _weight_problem(point: str, weight: int) -> str | None:
    if weight < 0:
        return (
            f"weight must not be negative, got {weight} (0 means the default, 1; "
            "to turn a plugin off, list it under disabled)"
        )
    if weight == 0:
        # Unset: kube-scheduler --write-config-to writes "weight: 0" on every entry it has
        # no weight for (the internal int32 converted back to v1's pointer).
        return None
    if point not in _WEIGHTED_POINTS:
        return f"weight is only used at score and multiPoint, not at {point}; remove it"
    if weight > MAX_WEIGHT:
        return f"weight must be at most {MAX_WEIGHT}, got {weight}"
    return None


def check_plugins(plugins: Plugins | None, catalog: PluginCatalog, where: str) -> list[Problem]:
    """Enabled entries: known, implementing their point, listed once, sensible weights;
    none at the pod group points, which no plugin implements yet."""
    if plugins is None:
        return []
    problems: list[Problem] = []
    for point in ("multiPoint", *EXTENSION_POINTS):
        seen: set[str] = set()
        for j, plugin in enumerate(plugins.point(point).enabled):
            path = f"{where}.plugins.{point}.enabled[{j}]({plugin.name})"
            spec = catalog.get(plugin.name)
            if spec is None:
                problems.append(Problem(path, unknown_plugin(plugin.name, catalog)))
            elif point != "multiPoint" and point not in spec.extension_points:
                implemented = ", ".join(p for p in EXTENSION_POINTS if p in spec.extension_points)
                problems.append(
                    Problem(
                        path,
                        f'plugin "{plugin.name}" does not extend {point} plugin '
                        f"(it implements: {implemented})",
                    )
                )
            if plugin.name in seen:
                problems.append(
                    Problem(path, f'plugin "{plugin.name}" already registered as {point} plugin')
                )
            seen.add(plugin.name)
            if plugin.weight is not None:
                message = _weight_problem(point, plugin.weight)
                if message:
                    problems.append(Problem(f"{path}.weight", message))
        problems += [
            Problem(
                f"{where}.plugins.{point}.disabled[{j}]({plugin.name}).weight",
                "weight is not used under disabled; remove it",
            )
            for j, plugin in enumerate(plugins.point(point).disabled)
            if plugin.weight  # 0 is what kube-scheduler writes there
        ]
    problems += [
        Problem(
            f"{where}.plugins.{point}.enabled[{j}]({plugin.name})",
            f"no built-in plugin implements {point} yet",
        )
        for point in POD_GROUP_EXTENSION_POINTS
        for j, plugin in enumerate(plugins.point(point).enabled)
    ]
    return problems


def check_default_plugins(
    merged: Plugins, user: Plugins | None, catalog: PluginCatalog, where: str
) -> list[Problem]:
    """Defaults left enabled must be registered (upstream: "... does not exist")."""
    mine = {p.name for p in user.multi_point.enabled} if user else set()
    return [
        Problem(
            f"{where}.plugins.multiPoint",
            f'default plugin "{p.name}" is not registered; disable it under '
            "plugins.multiPoint.disabled",
        )
        for p in merged.multi_point.enabled
        if p.name not in catalog and p.name not in mine
    ]


def check_plugin_config(
    profile: Profile, catalog: PluginCatalog, where: str
) -> tuple[list[Problem], dict[str, BaseModel]]:
    """Validate every pluginConfig entry; returns the problems and the validated args."""
    problems: list[Problem] = []
    validated: dict[str, BaseModel] = {}
    first: dict[str, int] = {}
    for j, entry in enumerate(profile.plugin_config):
        path = f"{where}.pluginConfig[{j}]({entry.name})"
        if entry.name in first:
            problems.append(
                Problem(
                    path,
                    f"repeated config for plugin {entry.name} "
                    f"(already at pluginConfig[{first[entry.name]}])",
                )
            )
            continue
        first[entry.name] = j
        spec = catalog.get(entry.name)
        if spec is None:
            problems.append(Problem(path, unknown_plugin(entry.name, catalog)))
            continue
        args = dict(entry.args)
        args.pop("apiVersion", None)
        kind = args.pop("kind", None)
        if kind is not None and kind != f"{entry.name}Args":
            problems.append(
                Problem(f"{path}.args.kind", f"expected {entry.name}Args, got {kind!r}")
            )
        model = spec.args_model
        if model is None:
            if args:
                problems.append(Problem(f"{path}.args", f"plugin {entry.name} takes no args"))
            continue
        try:
            validated[entry.name] = model.model_validate(args)
        except ValidationError as exc:
            known = {f.alias or n for n, f in model.model_fields.items()}
            problems += problems_from_validation_error(
                exc, args, f"{path}.args", known, hints=False
            )
    return problems, validated


def check_profile_names(profiles: Sequence[Profile]) -> list[Problem]:
    """Several profiles each need their own, explicit schedulerName."""
    several = len(profiles) > 1
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for i, profile in enumerate(profiles):
        if several and "scheduler_name" not in profile.model_fields_set:
            problems.append(
                Problem(f"profiles[{i}].schedulerName", "required when there are several profiles")
            )
            continue
        name = profile.scheduler_name
        if name in first:
            problems.append(
                Problem(
                    f"{profile_path(i, profile, several)}.schedulerName",
                    f'duplicate schedulerName "{name}" (also profiles[{first[name]}])',
                )
            )
        else:
            first[name] = i
    return problems
