"""Turn YAML/JSON objects into a ``SchedulerProfileSpec``; problems raise ``ConfigError``.

Accepted: a SchedulerProfile (multisched.dev/v1alpha1, its ``spec``) or a
KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1; v1beta2/v1beta3 read with
the same shape). Files may also hold a ConfigMap that embeds one, as the usual
"second scheduler" manifests do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from multisched.validation.yamlsafe import YAMLInputError, decode, load_all, load_one

from .errors import ConfigError, Problem, problems_from_validation_error
from .models import (
    KUBE_SCHEDULER_API_VERSION,
    SCHEDULER_PROFILE_API_VERSION,
    KubeSchedulerConfiguration,
    SchedulerProfileSpec,
    field_names,
)

CONFIG_KINDS = ("SchedulerProfile", "KubeSchedulerConfiguration")


def _require_mapping(obj: object, what: str) -> None:
    if not isinstance(obj, Mapping):
        raise ConfigError([Problem("", f"{what} must be a mapping, got {type(obj).__name__}")])


#: Go's JSON encoder writes a float64 below this magnitude without exponent or fraction
#: when it is whole ("1e+21" and up keep their exponent).
_GO_PLAIN_FLOAT_LIMIT = 1e21


def _plain(obj: Any) -> Any:
    """Plain dicts and lists (kopf hands out read-only mapping views; models are strict).

    A whole float becomes an int, as kube-scheduler reads its file: YAML is turned into
    JSON first, where ``1.0`` is written ``1``, so ``maxSkew: 1.0`` decodes into an int32
    and ``maxSkew: 1.5`` does not (checked against kube-scheduler v1.28)."""
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if type(obj) is float and obj.is_integer() and abs(obj) < _GO_PLAIN_FLOAT_LIMIT:
        return int(obj)
    return obj


def parse_scheduler_profile_spec(obj: Mapping[str, Any]) -> SchedulerProfileSpec:
    """The ``spec`` of a SchedulerProfile object."""
    _require_mapping(obj, "a SchedulerProfile spec")
    obj = _plain(obj)
    try:
        return SchedulerProfileSpec.model_validate(obj)
    except ValidationError as exc:
        raise ConfigError(problems_from_validation_error(exc, obj, "", field_names())) from None


def parse_kube_scheduler_configuration(obj: Mapping[str, Any]) -> SchedulerProfileSpec:
    """A whole KubeSchedulerConfiguration object, converted to our spec (upstream defaults)."""
    _require_mapping(obj, "a KubeSchedulerConfiguration")
    obj = _plain(obj)
    try:
        return KubeSchedulerConfiguration.model_validate(obj).to_spec()
    except ValidationError as exc:
        raise ConfigError(problems_from_validation_error(exc, obj, "", field_names())) from None


def parse_config_object(obj: Mapping[str, Any]) -> SchedulerProfileSpec:
    """Dispatch on ``kind``/``apiVersion``."""
    _require_mapping(obj, "a scheduler configuration")
    kind = obj.get("kind")
    if kind == "KubeSchedulerConfiguration":
        return parse_kube_scheduler_configuration(obj)
    if kind == "SchedulerProfile":
        api_version = obj.get("apiVersion")
        if api_version != SCHEDULER_PROFILE_API_VERSION:
            raise ConfigError(
                [
                    Problem(
                        "apiVersion",
                        f"unsupported apiVersion {api_version!r} for SchedulerProfile; "
                        f"expected {SCHEDULER_PROFILE_API_VERSION!r}",
                    )
                ]
            )
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            raise ConfigError([Problem("spec", "required mapping is missing")])
        return parse_scheduler_profile_spec(spec)
    raise ConfigError(
        [
            Problem(
                "kind",
                f"expected SchedulerProfile ({SCHEDULER_PROFILE_API_VERSION}) or "
                f"KubeSchedulerConfiguration ({KUBE_SCHEDULER_API_VERSION}), got {kind!r}",
            )
        ]
    )


def config_notes(obj: Mapping[str, Any]) -> list[str]:
    """What a configuration sets that has no effect where it is read (shown as notes)."""
    notes = []
    if obj.get("kind") == "KubeSchedulerConfiguration" and obj.get("leaderElection") is not None:
        notes.append(
            "leaderElection is ignored: it is a process setting, given to `multisched run` "
            "as flags (--leader-elect, --lease-namespace, --lease-name, --leader-elect-*)"
        )
    return notes


def embedded_configs(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(key, configuration) for each scheduler configuration in a ConfigMap's data values.

    Values are read with the same bounds as files (depth, aliases); values that are not a
    scheduler configuration are other data and are skipped.
    """
    data = doc.get("data")
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():
        if not isinstance(value, str):
            continue
        try:
            inner = load_one(value)
        except YAMLInputError:
            continue
        if isinstance(inner, Mapping) and inner.get("kind") in CONFIG_KINDS:
            yield str(key), inner


def load_config_file(path: str | Path) -> SchedulerProfileSpec:
    """The one scheduler configuration in a (multi-document) YAML file."""
    path = Path(path)
    try:
        docs = [d for d in load_all(decode(path.read_bytes())) if d is not None]
    except OSError as exc:
        raise ConfigError([Problem("", f"{path}: {exc.strerror}")]) from None
    except YAMLInputError as exc:
        raise ConfigError([Problem("", f"{path}: {exc}")]) from None
    found: list[Mapping[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") in CONFIG_KINDS:
            found.append(doc)
        elif doc.get("kind") == "ConfigMap":
            found.extend(inner for _, inner in embedded_configs(doc))
    if len(found) == 1:
        return parse_config_object(found[0])
    if not found and len(docs) == 1:
        return parse_config_object(docs[0])  # let it say what is wrong with the kind
    what = "no" if not found else str(len(found))
    raise ConfigError(
        [Problem("", f"{path}: {what} SchedulerProfile/KubeSchedulerConfiguration found; need one")]
    )
