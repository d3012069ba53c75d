"""The objects of a cluster file, each named and checked as the API server would check it.

Every problem is one line: ``FILE: document N (Kind ns/name): field.path: message``. A whole
file is checked before anything is refused, so the user sees every problem at once.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .rules import RULES
from .schema import has_schema, structure_errors, type_error
from .yamlsafe import YAMLInputError, decode, json_documents, load_all

#: Kinds read for their scheduler configuration, checked by the config room.
CONFIG_KINDS = ("SchedulerProfile", "KubeSchedulerConfiguration")
CLUSTER_KINDS = (
    "Node",
    "Pod",
    "PriorityClass",
    "Namespace",
    "PodDisruptionBudget",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceClass",
    "ResourceSlice",
    "DeviceTaintRule",
    "PodGroup",
    "ElasticQuota",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
)
NAMESPACED = frozenset(
    {
        "Service",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
        "Pod",
        "PodDisruptionBudget",
        "ConfigMap",
        "PersistentVolumeClaim",
        "CSIStorageCapacity",
        "PodGroup",
        "ElasticQuota",
    }
)
#: Custom kinds: no OpenAPI schema ships for them; their rules check the CRD's structure.
SELF_CHECKED = frozenset({"PodGroup", "ElasticQuota"})


class InputErrors(ValueError):
    """Unusable input; ``lines`` are the problems, one per line, each naming where it is."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = tuple(lines)
        super().__init__("\n".join(self.lines))


class Document:
    """One object of a file: where it is (``label``) and the object itself."""

    __slots__ = ("index", "kind", "obj", "where")

    def __init__(self, where: str, index: str, obj: Any) -> None:
        self.where = where
        self.index = index
        self.obj = obj
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        #: The object's kind ("" when it names none); read on every step, so kept.
        self.kind = kind if isinstance(kind, str) else ""

    @property
    def label(self) -> str:
        """``FILE: document N (Kind ns/name)``, as far as the object tells."""
        base = f"{self.where}: {self.index}" if self.index else self.where
        if not isinstance(self.obj, Mapping) or not self.kind:
            return base
        meta = self.obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            return f"{base} ({self.kind})"
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        if self.kind in NAMESPACED:
            name = f"{namespace if isinstance(namespace, str) and namespace else 'default'}/{name}"
        return f"{base} ({self.kind} {name})"

    def problem(self, message: str) -> str:
        return f"{self.label}: {message}"


def read_documents(path: str | Path, shown: str | None = None) -> list[Document]:
    """Every non-empty document of a YAML file (``-``: standard input); unreadable files
    raise a one-line InputErrors. A snapshot (every document a JSON object) is read at JSON
    speed: a YAML parser takes minutes over 50,000 pods."""
    stdin = str(path) == "-"
    where = shown or ("<stdin>" if stdin else Path(path).name)
    try:
        data = _read_stdin() if stdin else Path(path).read_bytes()
    except OSError as exc:
        raise InputErrors([f"{where}: {exc.strerror or exc}"]) from None
    try:
        text = decode(data)
        docs = json_documents(text)
        if docs is None:
            docs = load_all(text, json_keys=True)
    except YAMLInputError as exc:
        raise InputErrors([f"{where}: {exc}"]) from None
    return [Document(where, f"document {i}", d) for i, d in enumerate(docs, 1) if d is not None]


def _read_stdin() -> bytes:
    binary = getattr(sys.stdin, "buffer", None)  # absent when stdin is replaced by text
    return bytes(binary.read()) if binary is not None else sys.stdin.read().encode()


def expand_lists(docs: Iterable[Document]) -> Iterator[Document]:
    """``kind: List`` documents as their items (``document 2 items[0]``)."""
    for doc in docs:
        items = doc.obj.get("items") if doc.kind == "List" else None
        if not isinstance(items, list):
            yield doc  # not a List, or one whose items ``object_problems`` refuses
            continue
        for i, item in enumerate(items):
            if item is not None:
                yield Document(doc.where, f"{doc.index} items[{i}]", item)


def without_nulls(obj: Any) -> Any:
    """``null`` is Go's zero value: drop it so the engine sees absent fields.

    Most objects hold none: orjson's C encoder tells at a glance (``null`` is how it writes
    None; a string holding "null" only costs the walk), and such an object is kept as is."""
    if type(obj) is dict:
        try:
            if b"null" not in orjson.dumps(obj):
                return obj
        except TypeError:  # orjson.JSONEncodeError too: keys or values beyond JSON
            pass
    return _without_nulls(obj)


def _without_nulls(obj: Any) -> Any:
    kind = type(obj)
    if kind is dict or (kind not in _SCALARS and isinstance(obj, Mapping)):
        return {k: _without_nulls(v) for k, v in obj.items() if v is not None}
    if kind is list:
        return [_without_nulls(v) for v in obj if v is not None]
    return obj


_SCALARS = frozenset({str, int, float, bool, type(None)})


def object_problems(doc: Document) -> list[str]:
    """What the API server would refuse about one cluster object, as "path: message" lines."""
    obj = doc.obj
    if not isinstance(obj, Mapping):
        return [f"expected a Kubernetes object (a mapping), got {_yaml_type(obj)}"]
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind:
        return ["kind: Required value: every object needs a kind"]
    if not isinstance(kind, str):
        return [type_error("kind", kind, "string")]
    if kind in CONFIG_KINDS:
        return []  # the config room checks these, with their own field paths
    if kind == "List":
        return [type_error("items", obj.get("items"), "array")]
    rules = RULES.get(kind)
    if kind != "ConfigMap" and rules is None:
        return [
            f'kind: Unsupported value: "{kind}": supported kinds: '
            f"{', '.join(CLUSTER_KINDS + CONFIG_KINDS)}, ConfigMap (holding a scheduler "
            "configuration) and List"
        ]
    expected = rules[0][0] if rules is not None else "v1"
    if not api_version:
        return [f'apiVersion: Required value: {kind} objects are "{expected}"']
    if not isinstance(api_version, str):
        return [type_error("apiVersion", api_version, "string")]
    # Checked against the known versions first: the version names a schema file.
    versions = rules[0] if rules is not None else ("v1",)
    if api_version not in versions or not (kind in SELF_CHECKED or has_schema(kind, api_version)):
        return [f'apiVersion: Unsupported value: "{api_version}": supported values: "{expected}"']
    structure = structure_errors(obj) or []
    if rules is None:
        return structure
    try:
        # The API server names each distinct line once (``ErrorList.ToAggregate``): a mode
        # listed twice, or two empty topology terms, give one line.
        semantic = list(dict.fromkeys(rules[1](obj)))
    except (TypeError, ValueError, AttributeError, KeyError):
        if not structure:
            raise  # the rules must read any well-typed object: a bug to see, not to hide
        semantic = []  # a field of the wrong type, which the structure errors already name
    if not structure:
        return semantic
    # A field whose structure is wrong is reported once, by the schema.
    bad = [_plain_path(line.split(": ", 1)[0]) for line in structure]
    return structure + [line for line in semantic if not _under(line, bad)]


_MAP_KEY = re.compile(r"\[([^\]0-9][^\]]*)\]")


def _plain_path(path: str) -> str:
    """``requests[cpu]`` and ``requests.cpu`` compare equal."""
    return _MAP_KEY.sub(r".\1", path)


def _under(line: str, paths: list[str]) -> bool:
    path = _plain_path(line.split(": ", 1)[0])
    return any(path == p or path.startswith((f"{p}.", f"{p}[")) for p in paths)


def _yaml_type(value: object) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)
