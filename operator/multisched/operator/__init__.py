"""The operator: kopf handlers, the API client, leader election, health and metrics.

Importing the package registers the handlers with kopf's default registry, so
``kopf run -A -m multisched.operator`` runs the scheduler.
"""

from . import handlers as handlers

__all__ = ["handlers"]
