"""Pydantic models of the configuration as written: KubeSchedulerConfiguration v1 field names.

Strict (no "5" -> 5 coercion, as Go's decoder) and closed (unknown fields are refused, as
kube-scheduler's strict decoding). ``null`` counts as absent, like Go's nil. These models
only check single fields; everything that needs the plugin catalog is in ``merge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .durations import parse_duration
from .extension_points import POINTS

DEFAULT_SCHEDULER_NAME = "default-scheduler"
SCHEDULER_PROFILE_API_VERSION = "multisched.dev/v1alpha1"
KUBE_SCHEDULER_API_VERSION = "kubescheduler.config.k8s.io/v1"
#: Older component-config versions accepted with the v1 shape (the seeds' configs use v1beta2).
KUBE_SCHEDULER_API_VERSIONS = frozenset(
    {
        KUBE_SCHEDULER_API_VERSION,
        "kubescheduler.config.k8s.io/v1beta3",
        "kubescheduler.config.k8s.io/v1beta2",
    }
)

#: Camel-case point name (as in YAML) -> Plugins attribute, from the table (and multiPoint).
POINT_FIELDS: dict[str, str] = {"multiPoint": "multi_point", **{p.name: p.field for p in POINTS}}


def _check_percentage(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise ValueError(f"{value} is not in valid range [0-100]")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        frozen=True,
        validate_default=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = {f.alias or n for n, f in cls.model_fields.items()} | set(cls.model_fields)
        return {k: v for k, v in data.items() if not (v is None and k in known)}


class Plugin(_Model):
    name: str = Field(min_length=1)
    #: Only meaningful at score and multiPoint; checked against the catalog in ``merge``.
    weight: int | None = None


class PluginSet(_Model):
    enabled: list[Plugin] = []
    disabled: list[Plugin] = []


class Plugins(_Model):
    multi_point: PluginSet = PluginSet()
    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    #: Pod group points (``catalog.POD_GROUP_EXTENSION_POINTS``): read, must stay empty.
    placement_generate: PluginSet = PluginSet()
    placement_score: PluginSet = PluginSet()
    pod_group_post_filter: PluginSet = PluginSet()

    def point(self, name: str) -> PluginSet:
        """The set of a point named as in YAML ("multiPoint", "preFilter", ...)."""
        result: PluginSet = getattr(self, POINT_FIELDS[name])
        return result


# The fields stay declared (mypy and the config room read ``.score``, ``.multi_point``), so
# they are held to the table here: one field per point, YAML name and order alike, or no import.
_DECLARED = {f.alias or n: n for n, f in Plugins.model_fields.items()}
if list(_DECLARED.items()) != list(POINT_FIELDS.items()):
    raise TypeError(
        f"config.models.Plugins declares {_DECLARED}, the extension point table {POINT_FIELDS}"
    )


class PluginConfig(_Model):
    name: str = Field(min_length=1)
    args: dict[str, Any] = {}


class Profile(_Model):
    #: Upstream defaults the name only when there is a single profile; ``merge`` requires
    #: it explicitly (via ``model_fields_set``) when there are several.
    scheduler_name: str = Field(default=DEFAULT_SCHEDULER_NAME, min_length=1)
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = []

    @field_validator("percentage_of_nodes_to_score")
    @classmethod
    def _percentage(cls, value: int | None) -> int | None:
        return _check_percentage(value)


class LeaderElectionConfig(_Model):
    """``leaderElection`` of a KubeSchedulerConfiguration file (component-base
    LeaderElectionConfiguration). Read and checked so real files load; multisched takes
    leader election from ``multisched run`` flags, so ``simulate``/``validate`` ignore it."""

    #: Upstream defaults leaderElect to true in files.
    leader_elect: bool = True
    resource_namespace: str = Field(default="kube-system", min_length=1)
    resource_name: str = Field(default="multisched", min_length=1)
    lease_duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"
    resource_lock: str = "leases"

    @field_validator("lease_duration", "renew_deadline", "retry_period")
    @classmethod
    def _duration(cls, value: str, info: ValidationInfo) -> str:
        seconds = parse_duration(value)
        # As upstream, the values only have to make sense when election is on.
        if not info.data.get("leader_elect"):
            return value
        if seconds <= 0:
            raise ValueError(f"{value!r} must be greater than zero")
        if info.field_name == "renew_deadline":
            lease = info.data.get("lease_duration")
            if lease is not None and parse_duration(lease) <= seconds:
                raise ValueError(
                    f"renewDeadline {value!r} must be less than leaseDuration {lease!r}"
                )
        if info.field_name == "retry_period":
            renew = info.data.get("renew_deadline")
            # client-go's leader elector requires renewDeadline > JitterFactor(1.2) * retryPeriod.
            if renew is not None and parse_duration(renew) <= 1.2 * seconds:
                raise ValueError(
                    f"retryPeriod {value!r} is too long for renewDeadline {renew!r} "
                    "(renewDeadline must exceed 1.2 x retryPeriod)"
                )
        return value

    @field_validator("resource_lock")
    @classmethod
    def _lock(cls, value: str) -> str:
        if value != "leases":
            raise ValueError(f"resourceLock {value!r} is not supported; multisched uses 'leases'")
        return value

    @property
    def lease_duration_seconds(self) -> float:
        return parse_duration(self.lease_duration)

    @property
    def renew_deadline_seconds(self) -> float:
        return parse_duration(self.renew_deadline)

    @property
    def retry_period_seconds(self) -> float:
        return parse_duration(self.retry_period)


class _SchedulingSettings(_Model):
    """Top-level fields shared by our CRD spec and KubeSchedulerConfiguration."""

    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10

    @field_validator("percentage_of_nodes_to_score")
    @classmethod
    def _percentage(cls, value: int | None) -> int | None:
        return _check_percentage(value)

    @field_validator("pod_initial_backoff_seconds")
    @classmethod
    def _initial(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"{value} must be greater than 0")
        return value

    @field_validator("pod_max_backoff_seconds")
    @classmethod
    def _max(cls, value: int, info: ValidationInfo) -> int:
        initial = info.data.get("pod_initial_backoff_seconds")
        if initial is not None and value < initial:
            raise ValueError(
                f"{value} must be greater than or equal to podInitialBackoffSeconds ({initial})"
            )
        return value


class SchedulerProfileSpec(_SchedulingSettings):
    """The spec of a SchedulerProfile (multisched.dev/v1alpha1). No leaderElection: that
    is a property of the process (``multisched run --leader-elect``), not of a profile."""

    profiles: list[Profile] = Field(min_length=1)
    #: Earlier specs kept as ControllerRevisions (the operator's history, not scheduling).
    revision_history_limit: int | None = Field(default=None, ge=0, le=1000)


class KubeSchedulerConfiguration(_SchedulingSettings):
    """A kube-scheduler ``--config`` file; converted to ``SchedulerProfileSpec`` by ``to_spec``."""

    api_version: str
    kind: str
    leader_election: LeaderElectionConfig | None = None
    profiles: list[Profile] = []
    extenders: list[dict[str, Any]] = []
    # Accepted so real files load; they configure kube-scheduler's process, not scheduling.
    client_connection: dict[str, Any] | None = None
    parallelism: int | None = None
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    delay_cache_until_active: bool | None = None

    @field_validator("api_version")
    @classmethod
    def _api_version(cls, value: str) -> str:
        if value not in KUBE_SCHEDULER_API_VERSIONS:
            raise ValueError(
                f"unsupported apiVersion {value!r} for KubeSchedulerConfiguration; "
                f"expected {KUBE_SCHEDULER_API_VERSION!r}"
            )
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value != "KubeSchedulerConfiguration":
            raise ValueError(f"expected kind 'KubeSchedulerConfiguration', got {value!r}")
        return value

    @field_validator("parallelism")
    @classmethod
    def _parallelism(cls, value: int | None) -> int | None:
        # Upstream defaults an absent value to 16, then refuses anything below 1.
        if value is not None and value <= 0:
            raise ValueError(f"{value} should be an integer value greater than zero")
        return value

    @field_validator("extenders")
    @classmethod
    def _extenders(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if value:
            raise ValueError("scheduler extenders are not supported by multisched")
        return value

    def to_spec(self) -> SchedulerProfileSpec:
        # Upstream v1 defaulting: no profiles means one default-scheduler profile.
        return SchedulerProfileSpec(
            percentage_of_nodes_to_score=self.percentage_of_nodes_to_score,
            pod_initial_backoff_seconds=self.pod_initial_backoff_seconds,
            pod_max_backoff_seconds=self.pod_max_backoff_seconds,
            profiles=list(self.profiles) or [Profile()],
        )


def field_names() -> frozenset[str]:
    """Every field name the models know, for "did you mean" hints."""
    names: set[str] = set()
    for model in (
        Plugin,
        PluginSet,
        Plugins,
        PluginConfig,
        Profile,
        LeaderElectionConfig,
        SchedulerProfileSpec,
        KubeSchedulerConfiguration,
    ):
        names.update(f.alias or n for n, f in model.model_fields.items())
    return frozenset(names)
