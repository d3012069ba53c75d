"""The live SchedulerProfile objects and the one configuration they make together.

Each object is validated on its own (parse, resolve, instantiate its frameworks); an invalid
generation keeps the object's last good configuration in effect. Objects are then combined
oldest first (creationTimestamp, then name): a schedulerName belongs to the oldest object
that claims it, and a newer object claiming a taken name is left out as a whole, so one
object is always applied or not as a unit. Global settings (percentageOfNodesToScore,
backoffs) come from the oldest applied object; leader election is the process's (flags).

No I/O here: the runtime feeds objects in and writes the statuses out (the clock that
stamps a condition's transition comes in with the request for a status).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from multisched.config import (
    ConfigError,
    PluginCatalog,
    ResolvedConfig,
    ResolvedProfile,
    parse_scheduler_profile_spec,
    resolve,
)
from multisched.framework import Framework
from multisched.validation.limits import CONDITION_MESSAGE_LIMIT, MAX_SPEC_DEPTH

GROUP = "multisched.dev"
VERSION = "v1alpha1"
PLURAL = "schedulerprofiles"
KIND = "SchedulerProfile"

READY = "Ready"
REASON_APPLIED = "Applied"
REASON_INVALID = "InvalidConfiguration"
REASON_NAME_CONFLICT = "SchedulerNameConflict"
REASON_QUEUE_SORT_CONFLICT = "QueueSortConflict"
REASON_RESERVED_NAME = "ReservedSchedulerName"

Builder = Callable[[ResolvedConfig], dict[str, Framework]]


@dataclass(slots=True)
class ProfileObject:
    name: str
    uid: str
    created: str
    generation: int
    #: The object's status as last seen on the API (to write only what differs).
    status: Mapping[str, Any] = field(default_factory=dict)
    #: The last good configuration of this object and its instantiated profiles.
    config: ResolvedConfig | None = None
    frameworks: dict[str, Framework] = field(default_factory=dict)
    applied_generation: int | None = None
    #: Why the current generation is not applied (ConfigError text), or None.
    error: str | None = None
    #: The spec (as written) and annotations of the generation in force, for its revision.
    applied_spec: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: The ControllerRevision of the spec in force: its name and number (None: not yet).
    revision: tuple[str, int] | None = None
    #: The generation ``revision`` was recorded for.
    revision_generation: int | None = None

    @property
    def order(self) -> tuple[str, str]:
        return (self.created, self.name)


@dataclass(frozen=True, slots=True)
class Verdict:
    ready: bool
    reason: str
    message: str
    #: The profiles of this object in effect (its last good ones when applied).
    in_effect: tuple[ResolvedProfile, ...] = ()


@dataclass(frozen=True, slots=True)
class Combined:
    config: ResolvedConfig
    frameworks: dict[str, Framework]
    #: schedulerName -> the object serving it.
    owners: dict[str, str]
    verdicts: dict[str, Verdict]


def _object_meta(body: Mapping[str, Any]) -> tuple[str, str, str, int]:
    meta = body.get("metadata") or {}
    name = str(meta.get("name") or "")
    return (
        name,
        str(meta.get("uid") or name),
        str(meta.get("creationTimestamp") or ""),
        int(meta.get("generation") or 0),
    )


def too_deep(obj: Any, limit: int = MAX_SPEC_DEPTH) -> str | None:
    """The path (as written in YAML) where ``obj`` nests deeper than ``limit``, else None.

    Iterative, so it works on objects that recursion cannot walk.
    """
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(obj, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            return _render(path)
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1, (*path[:8], str(k))) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1, (*path[:8], i)) for i, v in enumerate(node))
    return None


def _render(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path[:8]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out + (".…" if len(path) > 8 else "")


def condition_message(message: str, limit: int = CONDITION_MESSAGE_LIMIT) -> str:
    """``message`` cut to ``limit`` (in bytes, so also in characters) at a line boundary,
    saying how many of its lines (one per problem) are left out."""
    data = message.encode()
    if len(data) <= limit:
        return message
    total = message.count("\n") + 1
    # Reserve room for the note; its digits are bounded by the number of lines.
    room = limit - len(f"\n… ({total} of {total} problems not shown)".encode())
    kept = data[:room].decode(errors="ignore")
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]
    shown = kept.count("\n") + 1
    return f"{kept}\n… ({total - shown} of {total} problems not shown)"


def profile_summary(prof: ResolvedProfile) -> dict[str, Any]:
    """``status.profiles[]`` entry: extension point -> plugin names in run order."""
    return {
        "schedulerName": prof.scheduler_name,
        "plugins": {point: list(names) for point, names in prof.plugins.items() if names},
    }


class ProfileBook:
    def __init__(
        self,
        catalog: PluginCatalog,
        build: Builder,
        reserved: frozenset[str] = frozenset(),
    ) -> None:
        self.catalog = catalog
        self.build = build
        #: Names other schedulers serve: an object claiming one is left out as a whole.
        self.reserved = reserved
        self.objects: dict[str, ProfileObject] = {}
        self.combined = Combined(ResolvedConfig(profiles=()), {}, {}, {})

    # -- input ----------------------------------------------------------------------------

    def observe(self, body: Mapping[str, Any]) -> bool:
        """An object was listed, added or modified; True when its configuration changed."""
        name, uid, created, generation = _object_meta(body)
        obj = self.objects.get(name)
        status = body.get("status") or {}
        if obj is not None and obj.uid == uid and obj.generation == generation:
            obj.status = status
            return False
        if obj is None or obj.uid != uid:
            obj = self.objects[name] = ProfileObject(name, uid, created, generation)
        obj.generation = generation
        obj.status = status
        raw = body.get("spec") or {}
        where = too_deep(raw)
        if where is not None:
            obj.error = f"{where or 'spec'}: nested more than {MAX_SPEC_DEPTH} levels deep"
            return True
        try:
            spec = parse_scheduler_profile_spec(raw)
            config = resolve(spec, self.catalog)
            frameworks = self.build(config)
        except ConfigError as exc:
            obj.error = str(exc)
            return True
        except RecursionError:  # a plugin's own walk of its args, say: never the operator's
            obj.error = "too deeply nested to read"
            return True
        except Exception as exc:  # a plugin refused its args when instantiated
            obj.error = str(exc) or type(exc).__name__
            return True
        obj.config, obj.frameworks = config, frameworks
        obj.applied_generation = generation
        obj.applied_spec = raw
        obj.annotations = dict((body.get("metadata") or {}).get("annotations") or {})
        obj.error = None
        return True

    def forget(self, body: Mapping[str, Any]) -> bool:
        """The object was deleted; True when it was known (its names retire)."""
        name, uid, _, _ = _object_meta(body)
        obj = self.objects.get(name)
        if obj is None or obj.uid != uid:
            return False
        del self.objects[name]
        return True

    # -- combination ----------------------------------------------------------------------

    def combine(self) -> Combined:
        owners: dict[str, str] = {}
        profiles: list[ResolvedProfile] = []
        frameworks: dict[str, Framework] = {}
        verdicts: dict[str, Verdict] = {}
        base: ResolvedConfig | None = None
        queue_sort: tuple[str, ...] | None = None
        for obj in sorted(self.objects.values(), key=lambda o: o.order):
            config = obj.config
            if config is None:
                verdicts[obj.name] = Verdict(False, REASON_INVALID, obj.error or "not valid")
                continue
            claimed = sorted(
                p.scheduler_name for p in config.profiles if p.scheduler_name in self.reserved
            )
            if claimed:
                message = "; ".join(
                    f'schedulerName "{name}" is reserved for another scheduler '
                    "(--reserved-scheduler-names): multisched does not serve it"
                    for name in claimed
                )
                verdicts[obj.name] = Verdict(False, REASON_RESERVED_NAME, message)
                continue
            taken = [
                (p.scheduler_name, owners[p.scheduler_name])
                for p in config.profiles
                if p.scheduler_name in owners
            ]
            if taken:
                message = "; ".join(
                    f'schedulerName "{sched}" is already served by SchedulerProfile "{owner}"'
                    for sched, owner in taken
                )
                verdicts[obj.name] = Verdict(False, REASON_NAME_CONFLICT, message)
                continue
            sorts = {p.plugins.get("queueSort", ()) for p in config.profiles}
            if queue_sort is not None and sorts != {queue_sort}:
                message = (
                    f"all profiles must use the same queueSort plugin as the oldest "
                    f"SchedulerProfile ({', '.join(queue_sort) or 'none'})"
                )
                verdicts[obj.name] = Verdict(False, REASON_QUEUE_SORT_CONFLICT, message)
                continue
            if base is None:
                base = config
                queue_sort = config.profiles[0].plugins.get("queueSort", ())
            for prof in config.profiles:
                owners[prof.scheduler_name] = obj.name
                profiles.append(prof)
                frameworks[prof.scheduler_name] = obj.frameworks[prof.scheduler_name]
            verdicts[obj.name] = self._applied_verdict(obj, config)
        if base is None:
            combined_config = ResolvedConfig(profiles=())
        else:
            combined_config = ResolvedConfig(
                profiles=tuple(profiles),
                percentage_of_nodes_to_score=base.percentage_of_nodes_to_score,
                pod_initial_backoff_seconds=base.pod_initial_backoff_seconds,
                pod_max_backoff_seconds=base.pod_max_backoff_seconds,
            )
        self.combined = Combined(combined_config, frameworks, owners, verdicts)
        return self.combined

    @staticmethod
    def _applied_verdict(obj: ProfileObject, config: ResolvedConfig) -> Verdict:
        names = ", ".join(p.scheduler_name for p in config.profiles)
        if obj.error is not None:
            message = (
                f"{obj.error}\n(generation {obj.applied_generation}, the last valid one, "
                f"stays in effect for: {names})"
            )
            return Verdict(False, REASON_INVALID, message, config.profiles)
        return Verdict(True, REASON_APPLIED, f"serving {names}", config.profiles)

    # -- output ---------------------------------------------------------------------------

    def desired_status(self, name: str, now: Callable[[], str]) -> dict[str, Any] | None:
        """The status the object should show; None when it is already shown. ``now``: the
        current ``metav1.Time``, for a Ready condition that changes status."""
        obj = self.objects.get(name)
        verdict = self.combined.verdicts.get(name)
        if obj is None or verdict is None:
            return None
        current = obj.status
        old = next(
            (c for c in current.get("conditions") or () if c.get("type") == READY),
            None,
        )
        status = "True" if verdict.ready else "False"
        condition = {
            "type": READY,
            "status": status,
            "reason": verdict.reason,
            "message": condition_message(verdict.message),
            "observedGeneration": obj.generation,
            "lastTransitionTime": (
                old.get("lastTransitionTime")
                if old is not None and old.get("status") == status
                else None
            )
            or now(),
        }
        desired: dict[str, Any] = {
            "observedGeneration": obj.generation,
            "profiles": [profile_summary(p) for p in verdict.in_effect],
            "conditions": [condition],
        }
        if obj.revision is not None:
            desired["currentRevision"], desired["revision"] = obj.revision
        fields = ("type", "status", "reason", "message", "observedGeneration")
        same_condition = old is not None and all(old.get(k) == condition[k] for k in fields)
        if (
            same_condition
            and current.get("observedGeneration") == obj.generation
            and list(current.get("profiles") or []) == desired["profiles"]
            and current.get("currentRevision") == desired.get("currentRevision")
            and current.get("revision") == desired.get("revision")
        ):
            return None
        return desired

    def unrecorded(self) -> list[ProfileObject]:
        """Objects whose spec in force (Ready) has no revision yet: a refused edit, or a
        spec that lost its name to an older object, is no revision."""
        return [
            obj
            for name, obj in self.objects.items()
            if obj.applied_generation is not None
            and obj.applied_generation == obj.generation
            and obj.revision_generation != obj.applied_generation
            and (verdict := self.combined.verdicts.get(name)) is not None
            and verdict.ready
        ]

    def involved(self, name: str) -> dict[str, Any]:
        """An ``involvedObject`` reference for events about the object."""
        obj = self.objects.get(name)
        ref: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "name": name}
        if obj is not None and obj.uid != name:
            ref["uid"] = obj.uid
        return ref
