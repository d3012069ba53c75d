"""List-and-watch of any kind, on kubernetes_asyncio alone (client-go's reflector, lean).

This room knows nothing of scheduling: it hands plain JSON objects to a store's
callbacks. The operator wires one informer per kind the scheduler reads. Requests, errors and
lists are the transport room's.
"""

from multisched.transport import ListResult, Resource, list_objects, list_pages
from multisched.transport.errors import ApiError as ApiStatusError

__all__ = ["ApiStatusError", "ListResult", "Resource", "list_objects", "list_pages"]
