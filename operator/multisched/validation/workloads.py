"""The API server's rules for the Services and pod controllers default spreading reads:
Service (``pkg/apis/core/validation``), ReplicationController, ReplicaSet and StatefulSet
(``pkg/apis/apps/validation``), for their names and selectors, with upstream's wording.

A controller's pod template is checked only for what ties it to the selector: its labels
must match (the API server checks the whole template; scheduling reads none of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .core import (
    Errors,
    Obj,
    _items,
    _map,
    _str,
    validate_label_selector,
    validate_labels,
    validate_meta,
)
from .names import is_dns1035_label, is_dns1123_subdomain, required

_TEMPLATE_LABELS = "spec.template.metadata.labels"
_MISMATCH = "`selector` does not match template `labels`"
#: How Go prints an empty ``*metav1.LabelSelector`` (its generated String method).
_EMPTY_SELECTOR = (
    "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
)


def _invalid(path: str, printed: str, detail: str) -> str:
    """``field.Invalid`` for a value already printed as Go prints it (not a quoted string)."""
    return f"{path}: Invalid value: {printed}: {detail}"


def _go_map(labels: Mapping[str, Any]) -> str:
    """A ``map[string]string`` as ``%#v`` prints it (keys sorted)."""
    return "map[string]string{" + ", ".join(f'"{k}":"{labels[k]}"' for k in sorted(labels)) + "}"


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


def _template_labels(spec: Obj) -> Mapping[str, Any]:
    return _map(_map(_map(spec.get("template")).get("metadata")).get("labels"))


def validate_service(obj: Obj) -> list[str]:
    """``ValidateService``: a DNS-1035 name, and a selector of valid labels."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1035_label)
    validate_labels(errs, _map(obj.get("spec")).get("selector"), "spec.selector")
    return errs


def validate_replication_controller(obj: Obj) -> list[str]:
    """``ValidateReplicationControllerSpec``: a non-empty selector map its template's labels
    carry (an unset selector was defaulted to those labels before this runs)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    labels = _template_labels(spec)
    selector = _map(spec.get("selector")) or labels
    if not selector:
        errs.append(required("spec.selector"))
        return errs
    validate_labels(errs, selector, "spec.selector")
    if "template" not in spec:
        errs.append(required("spec.template"))
        return errs
    if not _matches({"matchLabels": selector}, labels):
        errs.append(_invalid(_TEMPLATE_LABELS, _go_map(labels), _MISMATCH))
    return errs


def _validate_apps(obj: Obj, kind: str) -> list[str]:
    """``ValidateReplicaSetSpec`` / ``ValidateStatefulSetSpec``: a valid, non-empty
    selector that the template's labels match."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    if spec.get("selector") is None:
        errs.append(required("spec.selector"))
        return errs
    selector = _map(spec.get("selector"))
    before = len(errs)
    validate_label_selector(errs, selector, "spec.selector")
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        empty = f"empty selector is invalid for {kind}"
        errs.append(_invalid("spec.selector", _EMPTY_SELECTOR, empty))
    elif len(errs) == before:
        labels = _template_labels(spec)
        if not _matches(selector, labels):
            errs.append(_invalid(_TEMPLATE_LABELS, _go_map(labels), _MISMATCH))
    return errs


def validate_replica_set(obj: Obj) -> list[str]:
    # Upstream's ReplicaSet check reuses the Deployment's wording.
    return _validate_apps(obj, "deployment")


def validate_stateful_set(obj: Obj) -> list[str]:
    return _validate_apps(obj, "statefulset")


WORKLOAD_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "Service": (("v1",), validate_service),
    "ReplicationController": (("v1",), validate_replication_controller),
    "ReplicaSet": (("apps/v1",), validate_replica_set),
    "StatefulSet": (("apps/v1",), validate_stateful_set),
}
