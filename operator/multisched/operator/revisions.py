"""Each applied SchedulerProfile spec, kept as a ControllerRevision, as DaemonSets and
StatefulSets keep theirs (``controller_history.go``).

- A revision is written only for a spec the operator put in force (``Ready=True``): a
  refused edit is no revision.
- Its name is ``<profile>-<hash of the spec>``; a spec that comes back (a rollback) reuses
  its revision and gets the next number, as upstream does, so numbers say the order in
  which specs were in force.
- The revisions live in the operator's namespace (ControllerRevisions are namespaced,
  SchedulerProfiles are not), owned by the profile (garbage-collected with it) and labelled
  with its uid, so a profile deleted and created again starts a new history. Only a
  revision with both the label and the ownerReference counts as the profile's.
- ``spec.revisionHistoryLimit`` (default 10) revisions are kept; older ones are deleted,
  never the one in force.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from multisched.transport import MERGE_PATCH, Api, ApiError

logger = logging.getLogger(__name__)

API_VERSION = "apps/v1"
PROFILE_API_VERSION = "multisched.dev/v1alpha1"
PROFILE_KIND = "SchedulerProfile"
PROFILE_UID_LABEL = "multisched.dev/schedulerprofile-uid"
PROFILE_NAME_ANNOTATION = "multisched.dev/schedulerprofile"
GENERATION_ANNOTATION = "multisched.dev/generation"
CHANGE_CAUSE = "kubernetes.io/change-cause"
DEFAULT_HISTORY_LIMIT = 10
#: Room left in a 253-character name for ``-`` and the hash.
_HASH_LEN = 10


def spec_hash(spec: Mapping[str, Any]) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def revision_name(profile: str, spec: Mapping[str, Any]) -> str:
    return f"{profile[: 253 - _HASH_LEN - 1]}-{spec_hash(spec)}"


def revision_number(rev: Mapping[str, Any]) -> int:
    try:
        return int(rev.get("revision") or 0)
    except (TypeError, ValueError):
        return 0


def revisions_path(namespace: str, name: str = "") -> str:
    base = f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
    return f"{base}/{name}" if name else base


def owned_by(rev: Mapping[str, Any], uid: str) -> bool:
    """Labelled with the profile's uid and owned by it: a label alone anyone who may create
    ControllerRevisions here can set, and such a revision is neither counted nor pruned."""
    meta = rev.get("metadata") or {}
    if (meta.get("labels") or {}).get(PROFILE_UID_LABEL) != uid:
        return False
    return any(
        isinstance(ref, dict) and ref.get("kind") == PROFILE_KIND and ref.get("uid") == uid
        for ref in meta.get("ownerReferences") or ()
    )


def owned_revisions(items: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """The profile's revisions, oldest first (a listing may hold others' too)."""
    return sorted((r for r in items if owned_by(r, uid)), key=revision_number)


class RevisionKeeper:
    def __init__(self, api: Api, namespace: str, guard: Callable[[], bool]) -> None:
        self.api = api
        self.namespace = namespace
        #: Writes only while this replica leads (checked again on the wire).
        self.guard = guard

    async def history(self, uid: str) -> list[dict[str, Any]]:
        page = await self.api.request(
            "GET",
            revisions_path(self.namespace),
            query=[("labelSelector", f"{PROFILE_UID_LABEL}={uid}")],
            kind="revisions",
        )
        return owned_revisions(list(page.get("items") or []), uid)

    async def record(
        self,
        profile: str,
        uid: str,
        generation: int,
        spec: Mapping[str, Any],
        annotations: Mapping[str, str],
    ) -> tuple[str, int]:
        """Make ``spec`` the newest revision of the profile; returns (name, number)."""
        existing = await self.history(uid)
        name = revision_name(profile, spec)
        newest = max((revision_number(r) for r in existing), default=0)
        same = next((r for r in existing if r["metadata"]["name"] == name), None)
        if same is not None and revision_number(same) == newest:
            number = newest
        elif same is not None:
            number = newest + 1
            await self.api.request(
                "PATCH",
                revisions_path(self.namespace, name),
                {
                    "revision": number,
                    "metadata": {"annotations": self._notes(generation, annotations)},
                },
                content_type=MERGE_PATCH,
                guard=self.guard,
                kind="revisions",
            )
            same["revision"] = number
        else:
            number = newest + 1
            body = {
                "apiVersion": API_VERSION,
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {PROFILE_UID_LABEL: uid},
                    "annotations": {
                        PROFILE_NAME_ANNOTATION: profile,
                        **self._notes(generation, annotations),
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": PROFILE_API_VERSION,
                            "kind": PROFILE_KIND,
                            "name": profile,
                            "uid": uid,
                            "controller": True,
                        }
                    ],
                },
                "data": {"spec": dict(spec)},
                "revision": number,
            }
            try:
                await self.api.request(
                    "POST", revisions_path(self.namespace), body, guard=self.guard, kind="revisions"
                )
            except ApiError as exc:
                if exc.status != 409:  # a hash collision of different specs: keep going
                    raise
            existing.append(body)
        await self._prune(existing, name, _history_limit(spec))
        return name, number

    @staticmethod
    def _notes(generation: int, annotations: Mapping[str, str]) -> dict[str, str]:
        notes = {GENERATION_ANNOTATION: str(generation)}
        if annotations.get(CHANGE_CAUSE):
            notes[CHANGE_CAUSE] = str(annotations[CHANGE_CAUSE])
        return notes

    async def _prune(self, revisions: list[dict[str, Any]], current: str, limit: int) -> None:
        old = [
            r for r in sorted(revisions, key=revision_number) if r["metadata"]["name"] != current
        ]
        # Like a Deployment's: the limit counts old revisions, besides the one in force.
        for rev in old[: max(0, len(old) - limit)]:
            try:
                await self.api.request(
                    "DELETE",
                    revisions_path(self.namespace, rev["metadata"]["name"]),
                    guard=self.guard,
                    kind="revisions",
                )
            except ApiError as exc:
                if exc.status != 404:
                    raise


def _history_limit(spec: Mapping[str, Any]) -> int:
    limit = spec.get("revisionHistoryLimit")
    return limit if isinstance(limit, int) and limit >= 0 else DEFAULT_HISTORY_LIMIT
