"""Input validation at the boundary: cluster files are checked as the API server checks them.

The lowest room: it imports only the standard library, PyYAML, jsonschema and
kubernetes-validate, so the CLI, ``simulate``, the cache's quantity parsing and plugin args
can all use it.
"""

from .core import Errors
from .documents import (
    CLUSTER_KINDS,
    CONFIG_KINDS,
    Document,
    InputErrors,
    expand_lists,
    object_problems,
    read_documents,
    without_nulls,
)
from .quantity import QuantityError, parse_quantity
from .yamlsafe import YAMLInputError, decode, load_all, load_one

__all__ = [
    "CLUSTER_KINDS",
    "CONFIG_KINDS",
    "Document",
    "Errors",
    "InputErrors",
    "QuantityError",
    "YAMLInputError",
    "decode",
    "expand_lists",
    "load_all",
    "load_one",
    "object_problems",
    "parse_quantity",
    "read_documents",
    "without_nulls",
]
