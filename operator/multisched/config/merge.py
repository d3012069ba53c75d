"""``resolve``: a validated spec plus the plugin catalog -> the frozen ``ResolvedConfig``.

Per profile, as upstream: v1 defaulting merges the user's plugins over the defaults, then
the framework builds each point's list and expands multiPoint (see ``expand``). Every
problem in every profile is collected and raised as one ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from .catalog import PluginCatalog
from .checks import (
    check_default_plugins,
    check_plugin_config,
    check_plugins,
    check_profile_names,
    profile_path,
)
from .defaults import default_plugins
from .errors import ConfigError, Problem
from .expand import effective_plugins, merge_plugins
from .models import Profile, SchedulerProfileSpec
from .resolved import ResolvedConfig, ResolvedProfile


def _plugin_args(
    names: Sequence[str],
    validated: dict[str, BaseModel],
    catalog: PluginCatalog,
    where: str,
) -> tuple[dict[str, BaseModel], list[Problem]]:
    """Args of every plugin the profile runs: the user's, else the model's defaults."""
    args: dict[str, BaseModel] = {}
    problems: list[Problem] = []
    for name in names:
        model = catalog[name].args_model
        if model is None:
            continue
        if name in validated:
            args[name] = validated[name]
            continue
        try:
            args[name] = model()
        except ValidationError:
            problems.append(Problem(f"{where}.pluginConfig", f"plugin {name} needs args"))
    return args, problems


def _resolve_profile(
    index: int, profile: Profile, several: bool, catalog: PluginCatalog
) -> tuple[ResolvedProfile, list[Problem]]:
    where = profile_path(index, profile, several)
    problems = check_plugins(profile.plugins, catalog, where)
    merged = merge_plugins(default_plugins(catalog), profile.plugins)
    problems += check_default_plugins(merged, profile.plugins, catalog, where)
    plugins, weights = effective_plugins(merged, catalog)

    name = profile.scheduler_name
    if len(plugins["queueSort"]) != 1:
        problems.append(
            Problem(
                f"{where}.plugins.queueSort",
                f'only one queue sort plugin required for profile with scheduler name "{name}", '
                f"but got {len(plugins['queueSort'])}",
            )
        )
    if not plugins["bind"]:
        problems.append(
            Problem(
                f"{where}.plugins.bind",
                f'at least one bind plugin is needed for profile with scheduler name "{name}"',
            )
        )

    config_problems, validated = check_plugin_config(profile, catalog, where)
    problems += config_problems
    running = list(dict.fromkeys(n for names in plugins.values() for n in names))
    args, args_problems = _plugin_args(running, validated, catalog, where)
    resolved = ResolvedProfile(
        scheduler_name=name,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        plugins=plugins,
        score_weights=weights,
        plugin_args=args,
    )
    return resolved, problems + args_problems


def _check_common_queue_sort(
    profiles: Sequence[Profile], resolved: Sequence[ResolvedProfile]
) -> list[Problem]:
    """Upstream validateCommonQueueSort, on the resolved queue sort plugin and its args:
    one queue serves all profiles, so they must order pods the same way."""
    several = len(profiles) > 1
    first = resolved[0]
    first_sort = first.plugins["queueSort"]
    first_where = profile_path(0, profiles[0], several)
    problems: list[Problem] = []
    for i in range(1, len(resolved)):
        where = profile_path(i, profiles[i], several)
        sort = resolved[i].plugins["queueSort"]
        if sort != first_sort:
            problems.append(
                Problem(
                    f"{where}.plugins.queueSort",
                    f"has to match for all profiles: {first_where} sorts with "
                    f"{list(first_sort)}, this profile with {list(sort)}",
                )
            )
            continue
        for plugin in sort:
            if resolved[i].plugin_args.get(plugin) != first.plugin_args.get(plugin):
                problems.append(
                    Problem(
                        f"{where}.pluginConfig",
                        f"args of queue sort plugin {plugin} have to match for all profiles "
                        f"(they differ from {first_where})",
                    )
                )
    return problems


def resolve(spec: SchedulerProfileSpec, catalog: PluginCatalog) -> ResolvedConfig:
    """Defaults, merge, multiPoint expansion and validation; raises ``ConfigError``."""
    several = len(spec.profiles) > 1
    problems = check_profile_names(spec.profiles)
    resolved: list[ResolvedProfile] = []
    for i, profile in enumerate(spec.profiles):
        result, profile_problems = _resolve_profile(i, profile, several, catalog)
        resolved.append(result)
        problems += profile_problems
    problems += _check_common_queue_sort(spec.profiles, resolved)
    if problems:
        raise ConfigError(problems)
    return ResolvedConfig(
        profiles=tuple(resolved),
        percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score or 0,
        pod_initial_backoff_seconds=float(spec.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=float(spec.pod_max_backoff_seconds),
    )
