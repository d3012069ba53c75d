"""The API server's semantic rules for the objects and fields scheduling reads.

Ported from ``pkg/apis/core/validation`` (pods, nodes, namespaces), ``pkg/apis/scheduling/
validation`` (PriorityClass), ``pkg/apis/policy/validation`` (PodDisruptionBudget) and
apimachinery's ``metav1validation`` (labels, label selectors), with their ``field.Error``
wording. They run after the schema check, so types are right; ``null`` stands for absent,
as Go decodes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeGuard

from .names import (
    duplicate,
    forbidden,
    go_quote,
    go_value,
    invalid,
    invalid_shown,
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
#: ``integerResources`` (the ones a pod or a node can carry).
_INTEGER_RESOURCES = frozenset({"pods"})
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
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    errs.label_name(f"{path}.key", _str(req.get("key")))
    for i, value in enumerate(values):
        errs.label_value(f"{path}.values[{i}]", value)


def validate_label_selector(errs: Errors, selector: Any, path: str) -> None:
    """``metav1validation.ValidateLabelSelector``."""
    sel = _map(selector)
    for i, req in enumerate(_items(sel.get("matchExpressions"))):
        _selector_requirement(errs, _map(req), f"{path}.matchExpressions[{i}]")
    validate_labels(errs, sel.get("matchLabels"), f"{path}.matchLabels")


def _node_selector_requirement(errs: Errors, req: Obj, path: str) -> None:
    """``ValidateNodeSelectorRequirement``."""
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
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    errs.label_name(f"{path}.key", _str(req.get("key")))


def _node_field_requirement(errs: Errors, req: Obj, path: str) -> None:
    """``validateNodeFieldSelectorRequirement``: only metadata.name, In/NotIn, one value."""
    op = _str(req.get("operator"))
    if op in ("In", "NotIn"):
        if len(_items(req.get("values"))) != 1:
            errs.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    key = _str(req.get("key"))
    if key != "metadata.name":
        errs.append(invalid(f"{path}.key", key, "not a valid field selector key"))


def validate_node_selector_term(errs: Errors, term: Any, path: str) -> None:
    t = _map(term)
    for i, req in enumerate(_items(t.get("matchExpressions"))):
        _node_selector_requirement(errs, _map(req), f"{path}.matchExpressions[{i}]")
    for i, req in enumerate(_items(t.get("matchFields"))):
        _node_field_requirement(errs, _map(req), f"{path}.matchFields[{i}]")


def validate_node_selector(errs: Errors, selector: Any, path: str) -> None:
    terms = _items(_map(selector).get("nodeSelectorTerms"))
    if not terms:
        errs.append(
            required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")
        )
    for i, term in enumerate(terms):
        validate_node_selector_term(errs, term, f"{path}.nodeSelectorTerms[{i}]")


# -- quantities and resources ------------------------------------------------------------


def quantity(errs: Errors, value: Any, path: str) -> Decimal | None:
    """Parse (upstream grammar, bounded), then ``ValidateNonnegativeQuantity``."""
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        errs.append(invalid(path, value if isinstance(value, str) else str(value), str(exc)))
        return None
    if amount < 0:
        errs.append(invalid(path, value if isinstance(value, str) else str(value), IS_NEGATIVE))
        return None
    return amount


def _container_resource_name(errs: Errors, name: str, path: str) -> bool:
    """``validateResourceName`` then ``validateContainerResourceName``; False when refused."""
    before = len(errs)
    errs.label_name(path, name)
    if len(errs) > before:
        return False
    if "/" not in name:
        if name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not is_extended_resource(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return len(errs) == before


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
    return _is_native(name) and not name.startswith("hugepages-")


def _is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def resource_value(errs: Errors, name: str, value: Any, path: str) -> Decimal | None:
    """``ValidateResourceQuantityValue``: a non-negative quantity, whole for integer resources."""
    amount = quantity(errs, value, path)
    if amount is not None and _is_integer_resource(name) and amount != amount.to_integral_value():
        errs.append(invalid(path, str(value), "must be an integer"))
    return amount


def resource_list(errs: Errors, resources: Any, path: str) -> dict[str, Decimal]:
    """A container's (or the pod overhead's) ``ResourceList``."""
    out: dict[str, Decimal] = {}
    for name, value in _map(resources).items():
        key = f"{path}[{name}]"
        if not _container_resource_name(errs, str(name), key):
            continue
        amount = resource_value(errs, str(name), value, key)
        if amount is not None:
            out[str(name)] = amount
    return out


def _container_resources(errs: Errors, resources: Obj, path: str) -> None:
    """``ValidateResourceRequirements``."""
    raw_limits, raw_requests = _map(resources.get("limits")), _map(resources.get("requests"))
    limits = resource_list(errs, raw_limits, f"{path}.limits")
    requests = resource_list(errs, raw_requests, f"{path}.requests")
    for name, amount in requests.items():
        limit = limits.get(name)
        if limit is None:
            if not _overcommit_allowed(name) and name not in raw_limits:
                errs.append(
                    required(f"{path}.limits", "Limit must be set for non overcommitable resources")
                )
            continue
        if amount != limit and not _overcommit_allowed(name):
            detail = f"must be equal to {name} limit of {raw_limits[name]}"
            errs.append(invalid(f"{path}.requests", str(raw_requests[name]), detail))
        elif amount > limit:
            detail = f"must be less than or equal to {name} limit of {raw_limits[name]}"
            errs.append(invalid(f"{path}.requests", str(raw_requests[name]), detail))


# -- pods --------------------------------------------------------------------------------


def _ports(errs: Errors, ports: Any, path: str) -> None:
    """``validateContainerPorts``."""
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
        if protocol is not None and protocol not in PROTOCOLS:
            errs.append(not_supported(f"{p}.protocol", protocol, PROTOCOLS))
        host_ip = port.get("hostIP")
        if isinstance(host_ip, str) and host_ip and not _is_ip(host_ip):
            errs.append(invalid(f"{p}.hostIP", host_ip, "must be a valid IP address"))


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _containers(errs: Errors, containers: Any, path: str) -> None:
    seen: set[str] = set()
    for i, raw in enumerate(_items(containers)):
        c, p = _map(raw), f"{path}[{i}]"
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


def _taint_effect(errs: Errors, effect: Any, path: str, allow_empty: bool) -> None:
    """``validateTaintEffect``."""
    if not effect:
        if not allow_empty:
            errs.append(required(path))
        return
    if effect not in TAINT_EFFECTS:
        errs.append(not_supported(path, effect, TAINT_EFFECTS))


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
                invalid(
                    f"{p}.operator",
                    op,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        effect = t.get("effect") or ""
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(
                invalid(
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
                errs.append(
                    invalid_shown(
                        f"{p}.operator",
                        _go_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(not_supported(f"{p}.operator", op, TOLERATION_OPERATORS))
        _taint_effect(errs, effect, f"{p}.effect", allow_empty=True)


def _go_toleration(t: Obj) -> str:
    """A toleration as ``field.Invalid`` prints it (``%#v`` of ``core.Toleration``; a set
    tolerationSeconds is a pointer, whose address Go prints and we cannot)."""
    seconds = "(*int64)(nil)" if t.get("tolerationSeconds") is None else "(*int64)(0x…)"
    fields = ", ".join(
        f"{name}:{go_value(_str(t.get(key)))}"
        for name, key in (("Key", "key"), ("Operator", "operator"), ("Value", "value"))
    )
    return (
        f"core.Toleration{{{fields}, Effect:{go_value(_str(t.get('effect')))}, "
        f"TolerationSeconds:{seconds}}}"
    )


def _weight(errs: Errors, weight: Any, path: str) -> None:
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        errs.append(invalid(path, weight, "must be in the range 1-100"))


def _pod_affinity_term(errs: Errors, term: Obj, path: str) -> None:
    """``validatePodAffinityTerm``."""
    validate_label_selector(errs, term.get("labelSelector"), f"{path}.labelSelector")
    validate_label_selector(errs, term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for ns in _items(term.get("namespaces")):
        errs.name(f"{path}.namespace", _str(ns), is_dns1123_label)  # upstream's path, no index
    key = _str(term.get("topologyKey"))
    if not key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs.label_name(f"{path}.topologyKey", key)
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        for i, k in enumerate(_items(term.get(field))):
            errs.label_name(f"{path}.{field}[{i}]", _str(k))


def _pod_affinity(errs: Errors, affinity: Obj, path: str) -> None:
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_items(affinity.get(req))):
        _pod_affinity_term(errs, _map(term), f"{path}.{req}[{i}]")
    for i, raw in enumerate(_items(affinity.get(pref))):
        w, p = _map(raw), f"{path}.{pref}[{i}]"
        _weight(errs, w.get("weight"), f"{p}.weight")
        _pod_affinity_term(errs, _map(w.get("podAffinityTerm")), f"{p}.podAffinityTerm")


def validate_affinity(errs: Errors, affinity: Any, path: str) -> None:
    """``validateAffinity``."""
    aff = _map(affinity)
    node = _map(aff.get("nodeAffinity"))
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    if node.get(req) is not None:
        validate_node_selector(errs, node[req], f"{path}.nodeAffinity.{req}")
    for i, raw in enumerate(_items(node.get(pref))):
        term, p = _map(raw), f"{path}.nodeAffinity.{pref}[{i}]"
        _weight(errs, term.get("weight"), f"{p}.weight")
        validate_node_selector_term(errs, term.get("preference"), f"{p}.preference")
    _pod_affinity(errs, _map(aff.get("podAffinity")), f"{path}.podAffinity")
    _pod_affinity(errs, _map(aff.get("podAntiAffinity")), f"{path}.podAntiAffinity")


def validate_topology_spread(errs: Errors, constraints: Any, path: str) -> None:
    """``validateTopologySpreadConstraints``, its checks in upstream's order."""
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
        _match_label_keys(errs, c, f"{p}.matchLabelKeys")
        validate_label_selector(errs, c.get("labelSelector"), f"{p}.labelSelector")


def _match_label_keys(errs: Errors, constraint: Obj, path: str) -> None:
    """``validateMatchLabelKeys``: keys only beside a labelSelector, none of its own keys."""
    keys = _items(constraint.get("matchLabelKeys"))
    if not keys:
        return
    selector = constraint.get("labelSelector")
    if selector is None:
        errs.append(forbidden(path, "must not be specified when labelSelector is not set"))
    sel = _map(selector)
    taken = set(_map(sel.get("matchLabels"))) | {
        _str(_map(e).get("key")) for e in _items(sel.get("matchExpressions"))
    }
    for j, k in enumerate(keys):
        errs.label_name(f"{path}[{j}]", _str(k))
        if _str(k) in taken:
            errs.append(
                invalid(f"{path}[{j}]", k, "exists in both matchLabelKeys and labelSelector")
            )


def validate_pod(obj: Obj) -> list[str]:
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    if not _items(spec.get("containers")):
        errs.append(required("spec.containers"))
    _containers(errs, spec.get("containers"), "spec.containers")
    _containers(errs, spec.get("initContainers"), "spec.initContainers")
    resource_list(errs, spec.get("overhead"), "spec.overhead")
    for field in ("schedulerName", "nodeName", "priorityClassName"):
        value = _str(spec.get(field))
        if value:
            errs.name(f"spec.{field}", value, is_dns1123_subdomain)
    policy = spec.get("preemptionPolicy")
    if policy is not None:
        _preemption_policy(errs, policy, "spec.preemptionPolicy")
    selector = _map(spec.get("nodeSelector"))
    validate_labels(errs, selector, "spec.nodeSelector")
    validate_tolerations(errs, spec.get("tolerations"), "spec.tolerations")
    validate_affinity(errs, spec.get("affinity"), "spec.affinity")
    validate_topology_spread(
        errs, spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints"
    )
    gates: set[str] = set()
    for i, raw in enumerate(_items(spec.get("schedulingGates"))):
        name = _str(_map(raw).get("name"))
        errs.name(f"spec.schedulingGates[{i}]", name, is_qualified_name)
        if name in gates:
            errs.append(duplicate(f"spec.schedulingGates[{i}]", name))
        gates.add(name)
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
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if _int(value):
        if value < 0:
            errs.append(invalid(path, value, IS_NEGATIVE))
        return
    text = _str(value)
    # A string is reported as the IntOrString it decodes to (%#v: it has no value String()).
    shown = f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(text)}}}"
    if not _PERCENT.fullmatch(text):  # Go's $ is the end of the text, not of a line
        errs.append(invalid_shown(path, shown, _PERCENT_MSG))
        return
    digits = text[:-1].lstrip("0")
    # strconv.Atoi saturates on overflow, so any long number is over 100.
    if len(digits) > 3 or int(digits or "0") > 100:
        errs.append(invalid_shown(path, shown, "must not be greater than 100%"))


def _go_pdb_spec(spec: Obj) -> str:
    """``%#v`` of ``policy.PodDisruptionBudgetSpec``: its fields are all pointers, printed
    as ``(0x…)`` when set (the address no one else can know) and ``(nil)`` when not."""
    fields = (
        ("MinAvailable", "minAvailable", "*intstr.IntOrString"),
        ("Selector", "selector", "*v1.LabelSelector"),
        ("MaxUnavailable", "maxUnavailable", "*intstr.IntOrString"),
        (
            "UnhealthyPodEvictionPolicy",
            "unhealthyPodEvictionPolicy",
            "*policy.UnhealthyPodEvictionPolicyType",
        ),
    )
    shown = ", ".join(
        f"{name}:({go_type})({'nil' if spec.get(key) is None else '0x…'})"
        for name, key, go_type in fields
    )
    return f"policy.PodDisruptionBudgetSpec{{{shown}}}"


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


#: kind -> (apiVersions the rules apply to, rules).
RULES: dict[str, tuple[Sequence[str], Callable[[Obj], list[str]]]] = {
    "Pod": (("v1",), validate_pod),
    "Namespace": (("v1",), validate_namespace),
    "PriorityClass": (("scheduling.k8s.io/v1",), validate_priority_class),
    "PodDisruptionBudget": (("policy/v1",), validate_pdb),
}


def _storage_rules() -> None:
    """The node, storage, scheduler-plugins' and workload kinds' rules live beside the
    others' (nodes.py, storage.py, groups.py and workloads.py import this module)."""
    from .groups import GROUP_RULES
    from .nodes import validate_node
    from .storage import STORAGE_RULES
    from .workloads import WORKLOAD_RULES

    RULES["Node"] = (("v1",), validate_node)
    RULES.update(STORAGE_RULES)
    RULES.update(GROUP_RULES)
    RULES.update(WORKLOAD_RULES)


_storage_rules()
