"""Which of kube-apiserver's rules check which kind.

The table sits above the rule modules: nodes.py, storage.py, groups.py and workloads.py build
on core.py's field rules, so the table that names them all lives in none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .claims import CLAIM_RULES
from .core import Obj, validate_namespace, validate_pdb, validate_pod, validate_priority_class
from .devices import DEVICE_RULES
from .groups import GROUP_RULES
from .nodes import validate_node
from .storage import STORAGE_RULES
from .workloads import WORKLOAD_RULES

#: kind -> (apiVersions the rules apply to, rules).
RULES: dict[str, tuple[Sequence[str], Callable[[Obj], list[str]]]] = {
    "Pod": (("v1",), validate_pod),
    "Namespace": (("v1",), validate_namespace),
    "PriorityClass": (("scheduling.k8s.io/v1",), validate_priority_class),
    "PodDisruptionBudget": (("policy/v1",), validate_pdb),
    "Node": (("v1",), validate_node),
    **STORAGE_RULES,
    **GROUP_RULES,
    **WORKLOAD_RULES,
    **CLAIM_RULES,
    **DEVICE_RULES,
}
