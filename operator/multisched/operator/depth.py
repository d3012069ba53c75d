"""Objects the API server accepts but naive recursion in Python would choke on.

The API server takes JSON nested up to 10,000 levels (its decoder's limit), and a CRD field
with ``x-kubernetes-preserve-unknown-fields`` (a plugin's free-form args) stores whatever
comes. Python's recursion limit (1,000) is far below that: ``json.loads`` in kopf's watch,
kopf's ``deepcopy`` of each body for its diff-base, and any recursive walk of ours would
raise ``RecursionError`` - in the watcher, that stops the whole operator, at every start.

So: the process allows recursion deep enough to *decode* anything the API server stores;
kopf keeps no diff-base (we have no change handlers, so it never needs one); and the
profile book measures depth without recursion and refuses a too-deep spec on its status
(``profiles.too_deep``) before anything recursive touches it. The bounds themselves, and
why each is what it is, are in ``validation/limits.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import kopf

from multisched.validation.limits import RECURSION_LIMIT


def allow_api_depth() -> None:
    """Raise the recursion limit so that whatever the API server stores can be decoded."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


class NoDiffBase(kopf.DiffBaseStorage):
    """kopf's default diff-base deep-copies every body on every event, recursively. Our
    handlers are event and index handlers only: they never see a diff, so keep none."""

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


class NoProgress(kopf.ProgressStorage):
    """kopf's default progress storage reads and deep-copies annotations and status stanzas
    on every event (3% of the CPU per pod of a backlog). Progress is kept for change
    handlers' retries; ours are event handlers, which kopf never resumes: store nothing."""

    def fetch(self, *, key: kopf.HandlerId, body: kopf.Body) -> kopf.ProgressRecord | None:
        return None

    def store(
        self,
        *,
        key: kopf.HandlerId,
        record: kopf.ProgressRecord,
        body: kopf.Body,
        patch: kopf.Patch,
    ) -> None:
        return None

    def purge(self, *, key: kopf.HandlerId, body: kopf.Body, patch: kopf.Patch) -> None:
        return None

    def touch(self, *, body: kopf.Body, patch: kopf.Patch, value: str | None) -> None:
        return None

    def clear(self, *, essence: kopf.BodyEssence) -> kopf.BodyEssence:
        return essence
