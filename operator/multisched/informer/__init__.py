"""List-and-watch of any kind, on kubernetes_asyncio alone (client-go's reflector, lean).

This room knows nothing of scheduling: it hands plain JSON objects to a store's
callbacks. The operator wires one informer per kind the scheduler reads.
"""

from .listing import ApiStatusError, ListResult, Resource, list_objects, list_pages

__all__ = ["ApiStatusError", "ListResult", "Resource", "list_objects", "list_pages"]
