"""Moved to ``multisched.transport`` (kept while the move lands)."""

from multisched.transport.errors import ApiError as ApiStatusError
from multisched.transport.requests import (
    DEFAULT_PAGE_SIZE,
    ListResult,
    Resource,
    get_json,
    list_objects,
    list_pages,
    raise_for_status,
    request_json,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "ApiStatusError",
    "ListResult",
    "Resource",
    "get_json",
    "list_objects",
    "list_pages",
    "raise_for_status",
    "request_json",
]
