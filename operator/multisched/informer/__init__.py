"""List-and-watch of any kind, on transport's lists and watches (client-go's reflector, lean).

This room knows nothing of scheduling: it hands plain JSON objects to a store's
callbacks. The operator wires one informer per kind the scheduler reads. Requests, errors and
lists are the transport room's.
"""

from .informer import Informer, InformerSettings

__all__ = ["Informer", "InformerSettings"]
