"""Scheduler configuration: pydantic models at the boundary, upstream defaults and merge
rules, and the frozen ``ResolvedConfig`` the framework builds profiles from."""

from .catalog import EXTENSION_POINTS, POD_GROUP_EXTENSION_POINTS, PluginCatalog, PluginSpec
from .defaults import DEFAULT_MULTI_POINT, UNSUPPORTED_PLUGINS, default_plugins
from .durations import parse_duration
from .errors import ConfigError, Problem
from .expand import effective_plugins, merge_plugin_set, merge_plugins
from .loader import (
    config_notes,
    load_config_file,
    parse_config_object,
    parse_kube_scheduler_configuration,
    parse_scheduler_profile_spec,
)
from .merge import resolve
from .models import (
    DEFAULT_SCHEDULER_NAME,
    KUBE_SCHEDULER_API_VERSION,
    SCHEDULER_PROFILE_API_VERSION,
    KubeSchedulerConfiguration,
    LeaderElectionConfig,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
    Profile,
    SchedulerProfileSpec,
)
from .resolved import ResolvedConfig, ResolvedProfile, component_config

__all__ = [
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KUBE_SCHEDULER_API_VERSION",
    "POD_GROUP_EXTENSION_POINTS",
    "SCHEDULER_PROFILE_API_VERSION",
    "UNSUPPORTED_PLUGINS",
    "ConfigError",
    "KubeSchedulerConfiguration",
    "LeaderElectionConfig",
    "Plugin",
    "PluginCatalog",
    "PluginConfig",
    "PluginSet",
    "PluginSpec",
    "Plugins",
    "Problem",
    "Profile",
    "ResolvedConfig",
    "ResolvedProfile",
    "SchedulerProfileSpec",
    "component_config",
    "config_notes",
    "default_plugins",
    "effective_plugins",
    "load_config_file",
    "merge_plugin_set",
    "merge_plugins",
    "parse_config_object",
    "parse_duration",
    "parse_kube_scheduler_configuration",
    "parse_scheduler_profile_spec",
    "resolve",
]
