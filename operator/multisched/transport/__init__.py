"""How multisched talks to the API server, besides kopf (its lifecycle, the SchedulerProfile
and unscheduled-pod handlers): where the server is and who we are, and the client built
from it (``kubeconfig``), the errors every request raises (``errors``), JSON requests,
paginated lists and watches (``requests``), the guarded writes of bindings, events and
leases (``api``, with ``reachability``, and ``send_order``, which keeps bindings in the
order they were made; a recorder's events and pod status patches on it, ``writes``), GETs
of a scheduler's own endpoints (``endpoints``), and the only reaches past
kubernetes_asyncio's public API (``internals``). The informers, the live commands, the
scheduler's client, the recorder and leader election all stand on this room: only it
imports aiohttp and kubernetes_asyncio.
"""

from .api import Api
from .errors import (
    ApiError,
    CertificateRejected,
    ConnectionFailed,
    NotSent,
    TransportError,
    Unreachable,
)
from .kubeconfig import ApiClient, Configuration
from .reachability import Reachability
from .requests import (
    JSON,
    MERGE_PATCH,
    METADATA_ONLY,
    STRATEGIC_MERGE_PATCH,
    ListResult,
    Resource,
    decode_json,
    list_objects,
    list_pages,
    raise_for_status,
    request_json,
    watch,
)
from .writes import RecordWrites

__all__ = [
    "JSON",
    "MERGE_PATCH",
    "METADATA_ONLY",
    "STRATEGIC_MERGE_PATCH",
    "Api",
    "ApiClient",
    "ApiError",
    "CertificateRejected",
    "Configuration",
    "ConnectionFailed",
    "ListResult",
    "NotSent",
    "Reachability",
    "RecordWrites",
    "Resource",
    "TransportError",
    "Unreachable",
    "decode_json",
    "list_objects",
    "list_pages",
    "raise_for_status",
    "request_json",
    "watch",
]
