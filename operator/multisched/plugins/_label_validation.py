"""Label and selector validation for plugin args: apimachinery's rules, kept in the validation
room so cluster files and plugin args share one wording."""

from multisched.validation.names import (
    aggregate,
    duplicate,
    forbidden,
    go_value,
    invalid,
    invalid_shown,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    label_name_errors,
    node_selector_term_errors,
    not_supported,
    required,
)

__all__ = [
    "aggregate",
    "duplicate",
    "forbidden",
    "go_value",
    "invalid",
    "invalid_shown",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "label_name_errors",
    "node_selector_term_errors",
    "not_supported",
    "required",
]
