"""DefaultBinder: POST the pod's binding to the API server (upstream ``defaultbinder``).

Any failure becomes an Error status carrying the API's message (and HTTP status for a
refused binding) and the exception itself; the binding cycle then forgets the assumed pod
and requeues it, or counts it where a 409 says it already is.
"""

from __future__ import annotations

import logging

from multisched.cache import PodInfo
from multisched.framework import BindingConflict, CycleState, Handle, Status

NAME = "DefaultBinder"

logger = logging.getLogger(__name__)


class DefaultBinder:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        # Read at bind time: the operator attaches its client after the profiles are built.
        client = self._handle.client
        if client is None:
            return Status.error("no API client to bind with")
        logger.debug("attempting to bind pod %s to node %s", pod.key, node_name)
        try:
            await client.bind(pod, node_name)
        except BindingConflict as exc:
            # Keep the HTTP status: 404 (pod gone) and 409 (already bound) read differently.
            return Status.from_exception(exc, f"{exc} ({exc.status})")
        except Exception as exc:  # CancelledError is no Exception and propagates.
            # The status carries the exception: the binding cycle tells "bound elsewhere"
            # and "no answer" from a plain refusal by it.
            return Status.from_exception(exc)
        return None


PLUGIN = DefaultBinder
