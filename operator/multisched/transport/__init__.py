"""How multisched talks to the API server, besides kopf (its lifecycle, the SchedulerProfile
and unscheduled-pod handlers): where the server is and who we are (``kubeconfig``), one
error type (``errors``), JSON requests and paginated lists (``requests``), and the only
reaches past kubernetes_asyncio's public API (``internals``). The informers, the live
commands, the binding client and leader election all stand on this room.
"""

from .errors import ApiError
from .requests import (
    JSON,
    METADATA_ONLY,
    ListResult,
    Resource,
    decode_json,
    list_objects,
    list_pages,
    raise_for_status,
    request_json,
)

__all__ = [
    "JSON",
    "METADATA_ONLY",
    "ApiError",
    "ListResult",
    "Resource",
    "decode_json",
    "list_objects",
    "list_pages",
    "raise_for_status",
    "request_json",
]
