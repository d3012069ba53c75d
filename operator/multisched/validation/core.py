"""kube-apiserver v1.37.2's semantic rules for the objects and fields scheduling reads.

Ported from ``pkg/apis/core/validation`` (pods, nodes, namespaces), ``pkg/apis/scheduling/
validation`` (PriorityClass), ``pkg/apis/policy/validation`` (PodDisruptionBudget) and
apimachinery's ``metav1validation`` (labels, label selectors), with their ``field.Error``
wording, on the object as the create strategy hands it over (defaults applied, a pod's
matchLabelKeys merged). They run after the schema check, so types are right; ``null``
stands for absent, as Go decodes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_UP, Decimal
from functools import lru_cache
from typing import Any, TypeGuard

from .go_quantity import GoQuantity, quantity_text
from .names import (
    duplicate,
    forbidden,
    go_json,
    go_map,
    invalid,
    invalid_shown,
    invalid_typed,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_path_segment_name,
    not_supported,
    required,
)
from .quantity import QuantityError, parse_quantity

Obj = Mapping[str, Any]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
PROTOCOLS = ("SCTP", "TCP", "UDP")
UNSATISFIABLE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
#: ``scheduling.HighestUserDefinablePriority``.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
IS_NEGATIVE = "must be greater than or equal to 0"
IS_NOT_POSITIVE = "must be greater than zero"
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_HUGEPAGES = "hugepages-"
#: ``integerResources``.
_INTEGER_RESOURCES = frozenset(
    {
        "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
        "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
    }
)  # fmt: skip
#: ``standardResources``: the names a resource may have without a domain prefix.
_STANDARD_RESOURCES = _INTEGER_RESOURCES | {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "storage", "requests.storage",
}  # fmt: skip
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
#: ``scheduling.SystemPriorityClasses``: (value, globalDefault) of the built-in classes.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _map(value: Any) -> Obj:
    # type() first: read objects are dicts, and the ABC check costs ten times as much.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> TypeGuard[int]:
    """Whether a field holds an int (the schema reports it otherwise; rules skip it)."""
    return isinstance(value, int) and not isinstance(value, bool)


#: Values each name check has passed (the checks are pure; a file repeats its label keys and
#: values thousands of times), up to _MAX_PASSED per check.
_PASSED: dict[Callable[[str], list[str]], set[str]] = {}
_MAX_PASSED = 100_000


class Errors(list[str]):
    """``field.ErrorList``: every problem, in the order found."""

    def name(self, path: str, value: str, check: Callable[[str], list[str]]) -> None:
        passed = _PASSED.get(check)
        if passed is None:
            passed = _PASSED[check] = set()
        elif value in passed:
            return
        problems = check(value)
        if not problems:
            if len(passed) < _MAX_PASSED:
                passed.add(value)
            return
        for msg in problems:
            self.append(invalid(path, value, msg))

    def label_name(self, path: str, value: str) -> None:
        self.name(path, value, is_qualified_name)

    def label_value(self, path: str, value: Any) -> None:
        if value is None:
            self.append(invalid(path, None, "a label value must be a string, not null"))
        elif isinstance(value, str):  # other types are the schema's to report
            self.name(path, value, is_valid_label_value)


# -- metadata, labels, selectors ---------------------------------------------------------


def validate_labels(errs: Errors, labels: Any, path: str) -> None:
    """``ValidateLabels``: qualified keys, valid values (errors on the map's path)."""
    for key, value in _map(labels).items():
        errs.label_name(path, str(key))
        errs.label_value(path, value)


def validate_meta(
    errs: Errors, meta: Obj, namespaced: bool, name_check: Callable[[str], list[str]]
) -> None:
    """``ValidateObjectMeta`` for what scheduling reads: name, namespace, labels."""
    name = _str(meta.get("name"))
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.name("metadata.name", name, name_check)
    namespace = _str(meta.get("namespace"))
    if namespace:
        if not namespaced:
            errs.append(forbidden("metadata.namespace", "not allowed on this type"))
        else:
            errs.name("metadata.namespace", namespace, is_dns1123_label)
    validate_labels(errs, meta.get("labels"), "metadata.labels")


def _set_operator(errs: Errors, op: str, values: list[Any], path: str) -> bool:
    """The set operators both kinds of selector share; False for any other operator."""
    if op in ("In", "NotIn"):
        if not values:
            errs.append(
                required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                forbidden(
                    f"{path}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        return False
    return True


def _selector_requirement(errs: Errors, req: Obj, path: str) -> None:
    """``ValidateLabelSelectorRequirement`` (values checked as label values)."""
    op = _str(req.get("operator"))
    values = _items(req.get("values"))
    if not _set_operator(errs, op, values, path):
        errs.append(invalid_typed(f"{path}.operator", op, "not a valid selector operator"))
    errs.label_name(f"{path}.key", _str(req.get("key")))
    for i, value in enumerate(values):
        errs.label_value(f"{path}.values[{i}]", value)


def validate_label_selector(errs: Errors, selector: Any, path: str) -> None:
    """``metav1validation.ValidateLabelSelector``: its labels, then its expressions."""
    sel = _map(selector)
    validate_labels(errs, sel.get("matchLabels"), f"{path}.matchLabels")
    for i, req in enumerate(_items(sel.get("matchExpressions"))):
        _selector_requirement(errs, _map(req), f"{path}.matchExpressions[{i}]")


def go_label_selector(selector: Any) -> Any:
    """A ``*metav1.LabelSelector`` as ``go_json`` takes it: its JSON tags, empty fields
    left out (``omitempty``), nil as None."""
    if not isinstance(selector, Mapping):
        return None
    out: dict[str, Any] = {}
    labels = _map(selector.get("matchLabels"))
    if labels:
        out["matchLabels"] = go_map(labels)
    exprs = []
    for raw in _items(selector.get("matchExpressions")):
        req = _map(raw)
        expr: dict[str, Any] = {"key": _str(req.get("key")), "operator": _str(req.get("operator"))}
        if _items(req.get("values")):
            expr["values"] = _items(req.get("values"))
        exprs.append(expr)
    if exprs:
        out["matchExpressions"] = exprs
    return out


def _node_selector_requirement(
    errs: Errors, req: Obj, path: str, allow_invalid_values: bool
) -> None:
    """``ValidateNodeSelectorRequirement``: since v1.30 a required term's values must be
    label values (a preferred term's may be anything: it can still match a lone node)."""
    op = _str(req.get("operator"))
    values = _items(req.get("values"))
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                required(
                    f"{path}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
    elif not _set_operator(errs, op, values, path):
        errs.append(invalid_typed(f"{path}.operator", op, "not a valid selector operator"))
    errs.label_name(f"{path}.key", _str(req.get("key")))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs.label_value(f"{path}.values[{i}]", value)


def _node_field_requirement(errs: Errors, req: Obj, path: str) -> None:
    """``ValidateNodeFieldSelectorRequirement``: only metadata.name, In/NotIn, one value,
    each value a node name."""
    op = _str(req.get("operator"))
    values = _items(req.get("values"))
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        errs.append(invalid_typed(f"{path}.operator", op, "not a valid selector operator"))
    key = _str(req.get("key"))
    if key != "metadata.name":
        errs.append(invalid(f"{path}.key", key, "not a valid field selector key"))
        return
    for i, value in enumerate(values):
        if isinstance(value, str):
            errs.name(f"{path}.values[{i}]", value, is_dns1123_subdomain)


def validate_node_selector_term(
    errs: Errors, term: Any, path: str, allow_invalid_values: bool = False
) -> None:
    """``ValidateNodeSelectorTerm``."""
    t = _map(term)
    for i, req in enumerate(_items(t.get("matchExpressions"))):
        _node_selector_requirement(
            errs, _map(req), f"{path}.matchExpressions[{i}]", allow_invalid_values
        )
    for i, req in enumerate(_items(t.get("matchFields"))):
        _node_field_requirement(errs, _map(req), f"{path}.matchFields[{i}]")


def validate_node_selector(errs: Errors, selector: Any, path: str) -> None:
    """``ValidateNodeSelector`` of a required selector (a pod's, a volume's) on create."""
    terms = _items(_map(selector).get("nodeSelectorTerms"))
    if not terms:
        errs.append(
            required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")
        )
    for i, term in enumerate(terms):
        validate_node_selector_term(errs, term, f"{path}.nodeSelectorTerms[{i}]")


# -- quantities and resources ------------------------------------------------------------


def quantity(errs: Errors, value: Any, path: str) -> Decimal | None:
    """Parse (upstream grammar, bounded), then ``ValidateNonnegativeQuantity``, which shows
    the quantity as the API server holds it (``Quantity.String()`` after the defaults).
    None when it does not parse; a negative amount is returned, for the checks that follow
    upstream regardless."""
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        errs.append(invalid(path, value if isinstance(value, str) else str(value), str(exc)))
        return None
    if amount < 0:
        errs.append(invalid(path, canonical_quantity(value), IS_NEGATIVE))
    return amount


def canonical_quantity(value: Any) -> str:
    """``Quantity.String()`` of a quantity that parses, as v1's defaults leave it (rounded
    up to 1m)."""
    return GoQuantity.parse(quantity_text(value)).string()


def _milli(amount: Decimal) -> Decimal:
    """The amount in milli-units, rounded away from zero (``RoundUp(-3)`` of
    ``SetDefaults_ResourceList``): what ``Cmp`` and ``MilliValue`` see."""
    return (amount * 1000).to_integral_value(rounding=ROUND_UP)


def _container_resource_name(errs: Errors, name: str, path: str) -> None:
    """``ValidateContainerResourceName``. A resource name is a named string type: its value
    prints as JSON."""
    for msg in _container_resource_name_errors(name):
        errs.append(invalid_typed(path, name, msg))


@lru_cache(maxsize=4096)
def _container_resource_name_errors(name: str) -> tuple[str, ...]:
    """``validateResourceName`` (a qualified name, and a standard one when unprefixed),
    then a container's own rule, which runs even after the first refused the name. Cached:
    a file names a handful of resources thousands of times."""
    msgs = is_qualified_name(name)
    if not msgs and "/" not in name and not _is_standard_resource(name):
        msgs.append("must be a standard resource type or fully qualified")
    if "/" not in name:
        if name not in _CONTAINER_RESOURCES and not name.startswith(_HUGEPAGES):
            msgs.append("must be a standard resource for containers")
    elif not _is_native(name) and not is_extended_resource(name):
        msgs.append("doesn't follow extended resource name standard")
    return tuple(msgs)


def _is_standard_resource(name: str) -> bool:
    """``IsStandardResourceName``: the standard names, and (quota) hugepages."""
    return name in _STANDARD_RESOURCES or name.startswith((_HUGEPAGES, "requests.hugepages-"))


def _is_native(name: str) -> bool:
    """``IsNativeResource``: unprefixed or in the kubernetes.io namespace."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """``IsExtendedResourceName``: domain-prefixed, not native, usable in a quota name."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: requests may be below limits for native, non-hugepage ones."""
    return _is_native(name) and not name.startswith(_HUGEPAGES)


@lru_cache(maxsize=4096)
def _is_integer_resource(name: str) -> bool:
    """``IsIntegerResourceName``."""
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def resource_value(errs: Errors, name: str, value: Any, path: str) -> Decimal | None:
    """``ValidateResourceQuantityValue``: a non-negative quantity, whole for integer
    resources (counted in milli-units after the defaults' rounding)."""
    amount = quantity(errs, value, path)
    if amount is not None and _is_integer_resource(name) and _milli(amount) % 1000:
        # The bad value is the Quantity itself, which JSON writes as its String().
        errs.append(invalid(path, canonical_quantity(value), "must be an integer"))
    return amount


def _hugepages_divisible(errs: Errors, name: str, value: Any, path: str) -> None:
    """``validateResourceQuantityHugePageValue``: a whole number of pages, the page size
    being the name's suffix (a quantity of whole units)."""
    try:
        parse_quantity(value)
    except QuantityError:
        return  # said already
    amount = GoQuantity.parse(quantity_text(value))
    size_text = name[len(_HUGEPAGES) :]
    try:
        size = parse_quantity(size_text)
    except QuantityError:
        size = Decimal(0)  # HugePageSizeFromResourceName fails: never divisible
    divisible = False
    if size > 0 and not _milli(size) % 1000:
        divisible = amount.int_value() % GoQuantity.parse(size_text).int_value() == 0
    if not divisible:
        shown = amount.string()
        errs.append(invalid(path, shown, f"{shown} is not positive integer multiple of {name}"))


def _resource_list(errs: Errors, resources: Obj, path: str) -> tuple[dict[str, Decimal], bool]:
    """One side of a ``ResourceRequirements``: each name and quantity checked, then the
    hugepages rule; the amounts that parse, and whether cpu or memory is named."""
    out: dict[str, Decimal] = {}
    compute = False
    for raw_name, value in resources.items():
        name, key = str(raw_name), f"{path}[{raw_name}]"
        _container_resource_name(errs, name, key)
        amount = resource_value(errs, name, value, key)
        if amount is not None:
            out[name] = amount
        if name.startswith(_HUGEPAGES):
            _hugepages_divisible(errs, name, value, key)
        compute = compute or name in ("cpu", "memory")
    return out, compute


def _container_resources(errs: Errors, resources: Obj, path: str) -> None:
    """``validateResourceRequirements`` (a container's, or the overhead's as its limits)."""
    raw_limits, raw_requests = _map(resources.get("limits")), _map(resources.get("requests"))
    limits, limit_compute = _resource_list(errs, raw_limits, f"{path}.limits")
    requests, request_compute = _resource_list(errs, raw_requests, f"{path}.requests")
    for name, amount in requests.items():
        if name not in raw_limits:
            if not _overcommit_allowed(name):
                errs.append(
                    required(f"{path}.limits", "Limit must be set for non overcommitable resources")
                )
            continue
        limit = limits.get(name)
        if limit is None or amount == limit:
            continue  # an unparsable limit: the API server's decoder refuses it first
        overcommit = _overcommit_allowed(name)
        if amount < limit and overcommit:
            continue
        # Compared as held, rounded up to 1m: 1.0001 and 1.001 are equal there.
        request, ceiling = _milli(amount), _milli(limit)
        if request != ceiling and not overcommit:
            detail = f"must be equal to {name} limit of {canonical_quantity(raw_limits[name])}"
            errs.append(invalid(f"{path}.requests", canonical_quantity(raw_requests[name]), detail))
        elif request > ceiling:
            limit_text = canonical_quantity(raw_limits[name])
            detail = f"must be less than or equal to {name} limit of {limit_text}"
            errs.append(invalid(f"{path}.requests", canonical_quantity(raw_requests[name]), detail))
    hugepages = any(str(n).startswith(_HUGEPAGES) for n in (*raw_limits, *raw_requests))
    if hugepages and not limit_compute and not request_compute:
        errs.append(forbidden(path, "HugePages require cpu or memory"))


# -- pods --------------------------------------------------------------------------------


def _ports(errs: Errors, ports: Any, path: str) -> None:
    """``validateContainerPorts`` for what scheduling reads (an empty protocol is TCP by
    the v1 defaults; the host IP is not checked)."""
    for i, raw in enumerate(_items(ports)):
        port, p = _map(raw), f"{path}[{i}]"
        if port.get("containerPort") in (None, 0):
            errs.append(required(f"{p}.containerPort"))
        elif _int(port["containerPort"]) and not 1 <= port["containerPort"] <= 65535:
            errs.append(
                invalid(
                    f"{p}.containerPort",
                    port["containerPort"],
                    "must be between 1 and 65535, inclusive",
                )
            )
        host = port.get("hostPort")
        if _int(host) and host != 0 and not 1 <= host <= 65535:
            errs.append(invalid(f"{p}.hostPort", host, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol")
        if protocol and protocol not in PROTOCOLS:
            errs.append(not_supported(f"{p}.protocol", protocol, PROTOCOLS))


def _host_port_conflicts(errs: Errors, containers: list[Obj], path: str, first: int = 0) -> None:
    """``AccumulateUniqueHostPorts``: a host port once per protocol and host IP, across the
    containers given (``first`` is the first one's index)."""
    seen: set[str] = set()
    for ci, c in enumerate(containers, first):
        for pi, raw in enumerate(_items(c.get("ports"))):
            port = _map(raw)
            host = port.get("hostPort")
            if not _int(host) or host == 0:
                continue
            key = f"{_str(port.get('protocol')) or 'TCP'}/{_str(port.get('hostIP'))}/{host}"
            if key in seen:
                errs.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)


def _containers(
    errs: Errors, containers: Any, path: str, regular: Sequence[str] | None = None
) -> None:
    """``validateContainers``, or ``validateInitContainers`` given the regular containers'
    names, for what scheduling reads: names (an init container's unique among the regular
    ones too), ports, resources. Host ports must differ across the regular containers, and
    within each init container (those run one at a time)."""
    seen = set(regular or ())
    items = [_map(raw) for raw in _items(containers)]
    for i, c in enumerate(items):
        p = f"{path}[{i}]"
        name = _str(c.get("name"))
        if not name:
            errs.append(required(f"{p}.name"))
        else:
            errs.name(f"{p}.name", name, is_dns1123_label)
            if name in seen:
                errs.append(duplicate(f"{p}.name", name))
            seen.add(name)
        _ports(errs, c.get("ports"), f"{p}.ports")
        _container_resources(errs, _map(c.get("resources")), f"{p}.resources")
        if regular is not None:
            _host_port_conflicts(errs, [c], path, i)
    if regular is None:
        _host_port_conflicts(errs, items, path)


def _taint_effect(errs: Errors, effect: Any, path: str, allow_empty: bool) -> None:
    """``validateTaintEffect``."""
    if not effect:
        if not allow_empty:
            errs.append(required(path))
        return
    if effect not in TAINT_EFFECTS:
        errs.append(not_supported(path, effect, TAINT_EFFECTS))


#: Comparison operators, behind the TaintTolerationComparisonOperators gate (alpha, off in
#: v1.37): refused, but listed among the supported values.
_COMPARISON_OPERATORS = ("Lt", "Gt")


def validate_tolerations(errs: Errors, tolerations: Any, path: str) -> None:
    """``ValidateTolerations``."""
    for i, raw in enumerate(_items(tolerations)):
        t, p = _map(raw), f"{path}[{i}]"
        key = _str(t.get("key"))
        op = t.get("operator") or ""
        if key:
            errs.label_name(f"{p}.key", key)
        elif op != "Exists":
            errs.append(
                invalid_typed(
                    f"{p}.operator",
                    op,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        effect = t.get("effect") or ""
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(
                invalid_typed(
                    f"{p}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        value = t.get("value") or ""
        if op in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(f"{p}.operator", value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                detail = "value must be empty when `operator` is 'Exists'"
                errs.append(invalid(f"{p}.operator", value, detail))
        elif op in _COMPARISON_OPERATORS:
            supported = (*TOLERATION_OPERATORS, *_COMPARISON_OPERATORS)
            errs.append(not_supported(f"{p}.operator", op, supported))
        else:
            errs.append(not_supported(f"{p}.operator", op, TOLERATION_OPERATORS))
        _taint_effect(errs, effect, f"{p}.effect", allow_empty=True)


def _weight(errs: Errors, weight: Any, path: str) -> None:
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        errs.append(invalid(path, weight, "must be in the range 1-100"))


def with_label_keys(selector: Any, keys: Sequence[tuple[list[Any], str]], labels: Obj) -> Any:
    """The pod strategy's ``applyLabelKeysToLabelSelector`` on create: for each key the pod
    carries, ``key <op> (its value)`` appended to the selector's expressions, which
    validation then reads. An absent selector stays absent (it matches nothing)."""
    if not isinstance(selector, Mapping):
        return selector
    added = [
        {"key": key, "operator": op, "values": [labels[key]]}
        for names, op in keys
        for key in names
        if isinstance(key, str) and isinstance(labels.get(key), str)
    ]
    if not added:
        return selector
    return {**selector, "matchExpressions": [*_items(selector.get("matchExpressions")), *added]}


def _match_label_keys(
    errs: Errors, path: str, match: list[Any], mismatch: list[Any], selector: Any
) -> None:
    """``ValidateMatchLabelKeysAndMismatchLabelKeys`` on the merged selector: valid label
    keys, beside a selector; a match key its own expressions already hold (its merged
    expression then repeats one) is said at ``path[i]``, upstream's path."""
    if not match and not mismatch:
        return
    for field, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if not keys:
            continue
        if selector is None:
            errs.append(
                forbidden(f"{path}.{field}", "must not be specified when labelSelector is not set")
            )
            continue
        for i, key in enumerate(keys):
            errs.label_name(f"{path}.{field}[{i}]", _str(key))
    if isinstance(selector, Mapping):
        index = {_str(key): i for i, key in enumerate(match)}  # a repeated key: its last index
        seen = set(_map(selector.get("matchLabels")))
        for raw in _items(selector.get("matchExpressions")):
            key = _str(_map(raw).get("key"))
            if key in index and key in seen:
                detail = "exists in both matchLabelKeys and labelSelector"
                errs.append(invalid(f"{path}[{index[key]}]", key, detail))
            seen.add(key)
    mismatched = {_str(key) for key in mismatch}
    for i, key in enumerate(match):
        if _str(key) in mismatched:
            errs.append(
                invalid(
                    f"{path}.matchLabelKeys[{i}]",
                    _str(key),
                    "exists in both matchLabelKeys and mismatchLabelKeys",
                )
            )


def _pod_affinity_term(errs: Errors, term: Obj, path: str, labels: Obj) -> None:
    """``validatePodAffinityTerm``, after the create strategy merged the pod's values of
    matchLabelKeys (In) and mismatchLabelKeys (NotIn) into its selector."""
    match, mismatch = _items(term.get("matchLabelKeys")), _items(term.get("mismatchLabelKeys"))
    selector = term.get("labelSelector")
    if match or mismatch:
        selector = with_label_keys(selector, ((match, "In"), (mismatch, "NotIn")), labels)
    validate_label_selector(errs, selector, f"{path}.labelSelector")
    validate_label_selector(errs, term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for ns in _items(term.get("namespaces")):
        errs.name(f"{path}.namespace", _str(ns), is_dns1123_label)  # upstream's path, no index
    _match_label_keys(errs, path, match, mismatch, selector)
    key = _str(term.get("topologyKey"))
    if not key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs.label_name(f"{path}.topologyKey", key)


def _pod_affinity(errs: Errors, affinity: Obj, path: str, labels: Obj) -> None:
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_items(affinity.get(req))):
        _pod_affinity_term(errs, _map(term), f"{path}.{req}[{i}]", labels)
    for i, raw in enumerate(_items(affinity.get(pref))):
        w, p = _map(raw), f"{path}.{pref}[{i}]"
        _weight(errs, w.get("weight"), f"{p}.weight")
        _pod_affinity_term(errs, _map(w.get("podAffinityTerm")), f"{p}.podAffinityTerm", labels)


def validate_affinity(errs: Errors, affinity: Any, path: str, labels: Obj) -> None:
    """``validateAffinity`` of a pod being created, whose ``labels`` fill its terms'
    matchLabelKeys. A preferred node term's values need not be label values."""
    aff = _map(affinity)
    node = _map(aff.get("nodeAffinity"))
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    if node.get(req) is not None:
        validate_node_selector(errs, node[req], f"{path}.nodeAffinity.{req}")
    for i, raw in enumerate(_items(node.get(pref))):
        term, p = _map(raw), f"{path}.nodeAffinity.{pref}[{i}]"
        _weight(errs, term.get("weight"), f"{p}.weight")
        validate_node_selector_term(
            errs, term.get("preference"), f"{p}.preference", allow_invalid_values=True
        )
    _pod_affinity(errs, _map(aff.get("podAffinity")), f"{path}.podAffinity", labels)
    _pod_affinity(errs, _map(aff.get("podAntiAffinity")), f"{path}.podAntiAffinity", labels)


def validate_topology_spread(errs: Errors, constraints: Any, path: str, labels: Obj) -> None:
    """``validateTopologySpreadConstraints`` of a pod being created, its checks in
    upstream's order, after the create strategy merged the pod's values of matchLabelKeys
    into each selector (MatchLabelKeysInPodTopologySpreadSelectorMerge, on since v1.34)."""
    items = [_map(raw) for raw in _items(constraints)]
    kinds = [(_str(c.get("topologyKey")), _str(c.get("whenUnsatisfiable"))) for c in items]
    for i, c in enumerate(items):
        p = f"{path}[{i}]"
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            errs.append(invalid(f"{p}.maxSkew", skew, IS_NOT_POSITIVE))
        key, action = kinds[i]
        if not key:  # ValidateTopologyKey: any other key is accepted
            errs.append(required(f"{p}.topologyKey", "can not be empty"))
        if action not in UNSATISFIABLE_ACTIONS:
            errs.append(not_supported(f"{p}.whenUnsatisfiable", action, UNSATISFIABLE_ACTIONS))
        # ValidateSpreadConstraintNotRepeat: said of each constraint a later one repeats.
        if kinds[i] in kinds[i + 1 :]:
            errs.append(
                duplicate(f"{p}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}")
            )
        min_domains = c.get("minDomains")
        if _int(min_domains):
            if min_domains <= 0:
                errs.append(invalid(f"{p}.minDomains", min_domains, IS_NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(
                    invalid(
                        f"{p}.minDomains",
                        min_domains,
                        f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
                    )
                )
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = c.get(field)
            if policy is not None and policy not in INCLUSION_POLICIES:
                errs.append(not_supported(f"{p}.{field}", policy, INCLUSION_POLICIES))
        match = _items(c.get("matchLabelKeys"))
        selector = c.get("labelSelector")
        if match:
            selector = with_label_keys(selector, ((match, "In"),), labels)
        _match_label_keys(errs, p, match, [], selector)
        validate_label_selector(errs, selector, f"{p}.labelSelector")


def validate_pod(obj: Obj) -> list[str]:
    """``ValidatePodCreate`` for what scheduling reads, in ``ValidatePodSpec``'s order (the
    scheduler name is not checked upstream)."""
    errs = Errors()
    meta = _map(obj.get("metadata"))
    validate_meta(errs, meta, True, is_dns1123_subdomain)
    # A stored pod (a snapshot's: only an API server writes creationTimestamp) had its label
    # keys merged at create; it is read as an update reads it, without merging them again.
    labels = {} if meta.get("creationTimestamp") else _map(meta.get("labels"))
    spec = _map(obj.get("spec"))
    containers = _items(spec.get("containers"))
    if not containers:
        errs.append(required("spec.containers"))
    _containers(errs, containers, "spec.containers")
    regular = [_str(_map(c).get("name")) for c in containers]
    _containers(errs, spec.get("initContainers"), "spec.initContainers", regular)
    validate_labels(errs, _map(spec.get("nodeSelector")), "spec.nodeSelector")
    validate_affinity(errs, spec.get("affinity"), "spec.affinity", labels)
    gates: set[str] = set()
    for i, raw in enumerate(_items(spec.get("schedulingGates"))):
        name = _str(_map(raw).get("name"))
        errs.name(f"spec.schedulingGates[{i}]", name, is_qualified_name)
        if name in gates:
            errs.append(duplicate(f"spec.schedulingGates[{i}]", name))
        gates.add(name)
    validate_topology_spread(
        errs, spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints", labels
    )
    node_name = _str(spec.get("nodeName"))
    if node_name:
        errs.name("spec.nodeName", node_name, is_dns1123_subdomain)
    validate_tolerations(errs, spec.get("tolerations"), "spec.tolerations")
    class_name = _str(spec.get("priorityClassName"))
    if class_name:
        errs.name("spec.priorityClassName", class_name, is_dns1123_subdomain)
    policy = spec.get("preemptionPolicy")
    if policy is not None:
        _preemption_policy(errs, policy, "spec.preemptionPolicy")
    if spec.get("overhead") is not None:
        # validateOverhead: the overhead is checked as a container's limits.
        _container_resources(errs, {"limits": _map(spec.get("overhead"))}, "spec.overhead")
    return errs


# -- nodes, namespaces, priority classes, PDBs -------------------------------------------


def validate_namespace(obj: Obj) -> list[str]:
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_label)
    return errs


def validate_priority_class(obj: Obj) -> list[str]:
    """``ValidatePriorityClass``."""
    errs = Errors()
    meta = _map(obj.get("metadata"))
    validate_meta(errs, meta, False, is_dns1123_subdomain)
    name = _str(meta.get("name"))
    value = obj.get("value")
    if value is None:
        # Not upstream (Go decodes a missing value as 0), but simulate reads every class's
        # value, so one must be given.
        errs.append(required("value"))
    number = value if _int(value) else 0
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        why = _unknown_system_class(name, number, obj.get("globalDefault") is True)
        if why:
            errs.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are "
                    f"reserved for system use only. error: {why}",
                )
            )
    elif number > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None:
        _preemption_policy(errs, policy, "preemptionPolicy")
    return errs


def _unknown_system_class(name: str, value: int, global_default: bool) -> str:
    """``IsKnownSystemPriorityClass``'s error, or "" for a built-in class as it is defined."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known:
        return f"value of {name} PriorityClass must be {known}"
    if global_default:  # no built-in class is the global default
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


#: In ``ValidatePreemptionPolicy``'s order (which its message lists).
_PREEMPTION_POLICY_VALUES = ("PreemptLowerPriority", "Never")


def _preemption_policy(errs: Errors, policy: Any, path: str) -> None:
    """``ValidatePreemptionPolicy``: an empty policy is missing, not unsupported."""
    if policy == "":
        errs.append(required(path))
    elif policy not in _PREEMPTION_POLICY_VALUES:
        errs.append(not_supported(path, policy, _PREEMPTION_POLICY_VALUES))


def _int_or_percent(errs: Errors, value: Any, path: str) -> None:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``; a string is shown
    as the IntOrString it decodes to, which JSON writes as the string."""
    if _int(value):
        if value < 0:
            errs.append(invalid(path, value, IS_NEGATIVE))
        return
    text = _str(value)
    if not _PERCENT.fullmatch(text):  # Go's $ is the end of the text, not of a line
        errs.append(invalid_shown(path, go_json(text), _PERCENT_MSG))
        return
    digits = text[:-1].lstrip("0")
    # strconv.Atoi saturates on overflow, so any long number is over 100.
    if len(digits) > 3 or int(digits or "0") > 100:
        errs.append(invalid_shown(path, go_json(text), "must not be greater than 100%"))


def _go_pdb_spec(spec: Obj) -> str:
    """``policy.PodDisruptionBudgetSpec`` as JSON: an internal type, without JSON tags, so
    its fields go by their Go names, in order (its selector has tags)."""
    fields = {
        "MinAvailable": spec.get("minAvailable"),
        "Selector": go_label_selector(spec.get("selector")),
        "MaxUnavailable": spec.get("maxUnavailable"),
        "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
    }
    return go_json(fields)


def validate_pdb(obj: Obj) -> list[str]:
    """``ValidatePodDisruptionBudget`` (policy/v1), then the registry's generic metadata
    check, which runs only once the spec passes (``rest.BeforeCreate``)."""
    errs = Errors()
    spec = _map(obj.get("spec"))
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(
            invalid_shown(
                "spec", _go_pdb_spec(spec), "minAvailable and maxUnavailable cannot be both set"
            )
        )
    if min_available is not None:
        _int_or_percent(errs, min_available, "spec.minAvailable")
    if max_unavailable is not None:
        _int_or_percent(errs, max_unavailable, "spec.maxUnavailable")
    validate_label_selector(errs, spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("AlwaysAllow", "IfHealthyBudget"):
        errs.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, ("AlwaysAllow", "IfHealthyBudget")
            )
        )
    if not errs:
        # The PDB's own validation checks no metadata: any path-segment name will do.
        validate_meta(errs, _map(obj.get("metadata")), True, is_valid_path_segment_name)
    return errs
