"""Read hand-written YAML safely: UTF-8 only, bounded nesting, bounded alias expansion.

PyYAML's composer recurses per nesting level and its constructor shares aliased nodes, so
a deep file raises RecursionError and an anchor bomb (``a: &a [*b, *b, ...]``) turns into a
structure that every later walk expands. Both are refused while composing, by counting each
node's size as if aliases were expanded. Timestamps stay strings, as sigs.k8s.io/yaml reads
them into JSON.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode

#: Deeper than any Kubernetes object (a pod spec is about 12 levels).
MAX_DEPTH = 64
#: Nodes per document with aliases expanded; a 5,000-node cluster file is far below.
MAX_NODES = 2_000_000
#: Nodes that aliases may add to a stream: generous for shared snippets, nothing like a bomb.
MAX_ALIASED = 100_000


class YAMLInputError(ValueError):
    """Unreadable input; ``str()`` is one line for the user."""


class _Loader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliased = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YAMLInputError(
                    f"line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep"
                )
            is_alias = self.check_event(AliasEvent)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None:
            return None
        _count(node)
        if is_alias:
            self._aliased += getattr(node, "expanded_size", 1)
            if self._aliased > MAX_ALIASED:
                raise YAMLInputError(
                    f"line {node.start_mark.line + 1}: aliases expand to more than "
                    f"{MAX_ALIASED:,} values; refusing it"
                )
        return node


def _count(node: Node) -> None:
    """Size of ``node`` with aliases expanded; aliased children were counted already."""
    if hasattr(node, "expanded_size"):
        return
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(getattr(child, "expanded_size", 1) for child in node.value)
    elif isinstance(node, MappingNode):
        size += sum(
            getattr(k, "expanded_size", 1) + getattr(v, "expanded_size", 1) for k, v in node.value
        )
    if size > MAX_NODES:
        raise YAMLInputError(
            f"line {node.start_mark.line + 1}: expands to more than {MAX_NODES:,} values "
            "(aliases expanded); refusing it"
        )
    node.expanded_size = size  # type: ignore[attr-defined]


# Kubernetes reads YAML through JSON: a timestamp is a string.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def decode(data: bytes) -> str:
    """UTF-8 text (a BOM allowed); anything else is refused, naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YAMLInputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream; problems raise YAMLInputError with one line."""
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # the reader refuses control characters here already
        docs = []
        while loader.check_data():  # type: ignore[no-untyped-call]
            docs.append(loader.get_data())
        return docs
    except yaml.YAMLError as exc:
        first = str(exc).replace("\n", " ")
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        if mark is not None and problem:
            first = f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
        raise YAMLInputError(f"not valid YAML: {first}") from None
    except RecursionError:
        raise YAMLInputError(f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_one(text: str) -> Any:
    """A single document (ConfigMap values); None for an empty one."""
    docs = load_all(text)
    return docs[0] if docs else None


#: How ``snapshot`` separates its documents (each one a JSON object).
JSON_SEPARATOR = "\n---\n"


def json_documents(text: str) -> list[Any] | None:
    """The documents when every one is a JSON object (a snapshot), else None: read the text
    as YAML. JSON has no aliases; nesting is held to the YAML bound all the same."""
    if not text.startswith("---\n{"):
        return None
    docs = []
    for part in text[4:].split(JSON_SEPARATOR):
        if not part.lstrip().startswith("{"):
            return None
        try:
            doc = orjson.loads(part)
        except orjson.JSONDecodeError:
            return None  # YAML flow style, say: let the YAML reader judge it
        if _too_deep(doc):
            raise YAMLInputError(f"nested more than {MAX_DEPTH} levels deep")
        docs.append(doc)
    return docs


def _too_deep(doc: Any) -> bool:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
