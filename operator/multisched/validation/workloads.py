"""The API server's rules for the Services and pod controllers default spreading reads:
Service (``pkg/apis/core/validation``), ReplicationController, ReplicaSet and StatefulSet
(``pkg/apis/apps/validation``), for their names and selectors, with upstream's wording.

A controller's pod template is checked only for what ties it to the selector: its labels
must match (the API server checks the whole template; scheduling reads none of it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .core import (
    Errors,
    Obj,
    _items,
    _map,
    _str,
    go_label_selector,
    validate_label_selector,
    validate_labels,
    validate_meta,
)
from .names import (
    go_json,
    go_map,
    invalid_shown,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_long_name,
    required,
)

_TEMPLATE_LABELS = "spec.template.metadata.labels"
_MISMATCH = "`selector` does not match template `labels`"


def _go_labels(labels: Any) -> str:
    """A ``map[string]string`` as JSON (keys sorted; unset is null)."""
    return go_json(go_map(labels) if isinstance(labels, Mapping) else None)


def _go_selector(selector: Any) -> str:
    """A ``*metav1.LabelSelector`` as JSON."""
    return go_json(go_label_selector(selector))


def _matches(selector: Obj, labels: Mapping[str, Any]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)`` for a selector already valid."""
    for key, value in _map(selector.get("matchLabels")).items():
        if key not in labels or labels[key] != value:
            return False
    for item in _items(selector.get("matchExpressions")):
        req = _map(item)
        key, op, values = _str(req.get("key")), req.get("operator"), _items(req.get("values"))
        present = key in labels
        if (
            (op == "In" and not (present and labels[key] in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def template_labels(spec: Obj) -> Any:
    """The template's labels as written (None when unset: Go's nil map)."""
    return _map(_map(spec.get("template")).get("metadata")).get("labels")


def validate_service(obj: Obj) -> list[str]:
    """``ValidateServiceCreate``: a DNS-1123 label for a name (RelaxedServiceNameValidation,
    GA in v1.37: a leading digit is allowed), and a selector of valid labels."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_label)
    validate_labels(errs, _map(obj.get("spec")).get("selector"), "spec.selector")
    return errs


def validate_replication_controller(obj: Obj) -> list[str]:
    """``ValidateReplicationControllerSpec``: a non-empty selector map that the template's
    labels carry (an unset selector was defaulted to those labels before this runs). Its
    name is a ``validate.LongName``, whose length is said in bytes."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_long_name)
    spec = _map(obj.get("spec"))
    labels = template_labels(spec)
    selector = _map(spec.get("selector")) or _map(labels)
    if not selector:
        errs.append(required("spec.selector"))
    if spec.get("template") is None:
        errs.append(required("spec.template"))
    elif selector and not _matches({"matchLabels": selector}, _map(labels)):
        errs.append(invalid_shown(_TEMPLATE_LABELS, _go_labels(labels), _MISMATCH))
    return errs


def _validate_apps(obj: Obj, kind: str, name_check: Callable[[str], list[str]]) -> list[str]:
    """``ValidateReplicaSetSpec`` / ``ValidateStatefulSetSpec``: a valid, non-empty
    selector that the template's labels match (a missing selector matches nothing)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, name_check)
    spec = _map(obj.get("spec"))
    service = _str(spec.get("serviceName"))
    if kind == "statefulset" and service:
        # A new StatefulSet's service name must be a DNS label (AllowInvalidServiceName is
        # only for updates).
        errs.name("spec.serviceName", service, is_dns1123_label)
    raw = spec.get("selector")
    selector = _map(raw)
    labels = template_labels(spec)
    if raw is None:
        errs.append(required("spec.selector"))
        errs.append(invalid_shown(_TEMPLATE_LABELS, _go_labels(labels), _MISMATCH))
        return errs
    before = len(errs)
    validate_label_selector(errs, selector, "spec.selector")
    convertible = len(errs) == before  # what LabelSelectorAsSelector accepts
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        empty = f"empty selector is invalid for {kind}"
        errs.append(invalid_shown("spec.selector", _go_selector(selector), empty))
    if not convertible:
        detail = "invalid label selector" if kind == "deployment" else ""
        errs.append(invalid_shown("spec.selector", _go_selector(selector), detail))
    elif (selector.get("matchLabels") or selector.get("matchExpressions")) and not _matches(
        selector, _map(labels)
    ):
        errs.append(invalid_shown(_TEMPLATE_LABELS, _go_labels(labels), _MISMATCH))
    return errs


def validate_replica_set(obj: Obj) -> list[str]:
    # Upstream's ReplicaSet check reuses the Deployment's wording.
    return _validate_apps(obj, "deployment", is_dns1123_subdomain)


def validate_stateful_set(obj: Obj) -> list[str]:
    # ValidateStatefulSetName: a DNS label (its pods' names and hostnames add to it).
    return _validate_apps(obj, "statefulset", is_dns1123_label)


WORKLOAD_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "Service": (("v1",), validate_service),
    "ReplicationController": (("v1",), validate_replication_controller),
    "ReplicaSet": (("apps/v1",), validate_replica_set),
    "StatefulSet": (("apps/v1",), validate_stateful_set),
}
