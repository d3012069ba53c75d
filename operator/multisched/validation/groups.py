"""scheduler-plugins' PodGroup and ElasticQuota, checked as the API server checks them
against their CRDs (``crds/scheduler-plugins/``, v0.28.9): field types, int32 bounds, the
quantity pattern, and no field the schema does not declare (strict field validation, as
``kubectl apply`` asks for). The CRDs hold no further rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .core import Errors, Obj, _map, validate_meta
from .names import invalid, is_dns1123_subdomain
from .quantity import QuantityError, parse_quantity
from .schema import type_error

API_VERSIONS = ("scheduling.x-k8s.io/v1alpha1",)
_INT32 = (-(2**31), 2**31 - 1)
_TOP = ("apiVersion", "kind", "metadata", "spec", "status")
_POD_GROUP_SPEC = {
    "minMember": "int32",
    "minResources": "quantities",
    "scheduleTimeoutSeconds": "int32",
}
_POD_GROUP_STATUS = {
    "failed": "int32",
    "occupiedBy": "string",
    "phase": "string",
    "running": "int32",
    "scheduleStartTime": "string",
    "succeeded": "int32",
}
_QUOTA_SPEC = {"max": "quantities", "min": "quantities"}
_QUOTA_STATUS = {"used": "quantities"}


def _fields(errs: Errors, obj: Any, path: str, declared: Mapping[str, str]) -> None:
    if obj is None:
        return
    if not isinstance(obj, Mapping):
        errs.append(type_error(path, obj, "object"))
        return
    for name, value in obj.items():
        where = f"{path}.{name}"
        kind = declared.get(name)
        if kind is None:
            errs.append(f'{path}: unknown field "{name}"')
        elif kind == "int32":
            _int32(errs, value, where)
        elif kind == "string" and not isinstance(value, str):
            errs.append(type_error(where, value, "string"))
        elif kind == "quantities":
            _quantities(errs, value, where)


def _int32(errs: Errors, value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        errs.append(type_error(path, value, "integer"))
    elif not _INT32[0] <= value <= _INT32[1]:
        errs.append(invalid(path, value, "must fit in int32"))


def _quantities(errs: Errors, value: Any, path: str) -> None:
    if not isinstance(value, Mapping):
        errs.append(type_error(path, value, "object"))
        return
    for name, amount in value.items():
        where = f"{path}.{name}"
        if isinstance(amount, bool) or not isinstance(amount, int | str):
            errs.append(type_error(where, amount, "integer or string"))
            continue
        try:  # the CRD's pattern is the quantity grammar, sign included
            parse_quantity(amount if isinstance(amount, int) else amount.lstrip("+-"))
        except (QuantityError, ValueError) as exc:
            errs.append(invalid(where, amount, str(exc)))


def _validate(obj: Obj, spec: Mapping[str, str], status: Mapping[str, str]) -> list[str]:
    errs = Errors()
    for name in obj:
        if name not in _TOP:
            errs.append(f'unknown field "{name}"')
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    _fields(errs, obj.get("spec"), "spec", spec)
    _fields(errs, obj.get("status"), "status", status)
    return errs


def validate_pod_group(obj: Obj) -> list[str]:
    return _validate(obj, _POD_GROUP_SPEC, _POD_GROUP_STATUS)


def validate_elastic_quota(obj: Obj) -> list[str]:
    return _validate(obj, _QUOTA_SPEC, _QUOTA_STATUS)


GROUP_RULES = {
    "PodGroup": (API_VERSIONS, validate_pod_group),
    "ElasticQuota": (API_VERSIONS, validate_elastic_quota),
}
