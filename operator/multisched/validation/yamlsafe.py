"""Read hand-written YAML safely: UTF-8 only, bounded nesting, bounded alias expansion.

PyYAML's composer recurses per nesting level and its constructor shares aliased nodes, so
a deep file raises RecursionError and an anchor bomb (``a: &a [*b, *b, ...]``) turns into a
structure that every later walk expands. Both are refused while composing, by counting each
node's size as if aliases were expanded. Timestamps stay strings, as sigs.k8s.io/yaml reads
them into JSON.

Most files take a fast path through libyaml (``_fast_load``) when a cheap scan of the text
proves it holds nothing the bounds exist for; whatever libyaml refuses, and anything the scan
cannot vouch for, goes through the bounded reader above, so both refuse alike, in the same words.
"""

from __future__ import annotations

from typing import Any

import re

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
    fast = _fast_load(text)
    if fast is not None:
        return fast
    return _bounded_load(text)


def _bounded_load(text: str) -> list[Any]:
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


# --- libyaml fast path -------------------------------------------------------------------

try:
    from yaml.cyaml import CParser as _CParser
except ImportError:  # PyYAML built without libyaml: everything takes the bounded reader
    _CParser = None


if _CParser is not None:

    class _CLoader(_CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):  # type: ignore[misc]
        """yaml.CSafeLoader with the bounded reader's resolvers (timestamps stay strings)."""

        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


#: Anchors (&), aliases (*), tags (!, which make sets and tuples) and merge keys (<<, which
#: flatten a level away): the bounded reader's business. Any of them, even quoted, sends the
#: text there.
_NOT_FAST = re.compile(r"[&*!]|<<")
#: The pure-Python reader's refusal of control characters; libyaml's differs.
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
#: Line starts as libyaml counts them (it breaks lines on these too).
_LINE_START = re.compile(r"(?:^|(?<=[\r\x85\u2028\u2029]))[ \t?:-]*", re.MULTILINE)
#: A document marker at column 0 ends any scalar or collection in libyaml (or is an error).
_DOC_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n\x85\u2028\u2029]|$)", re.MULTILINE)
#: libyaml's composer recurses in C: the scan must prove the nesting is far below the stack.
_C_DEPTH_LIMIT = 1_000


def nesting_bound(text: str) -> int:
    """An upper bound on how deep any document of ``text`` nests, from the text alone.

    A block collection nested in another starts at a greater column, save one block
    sequence per mapping (``key:\n- item``), so block nesting is at most twice the number
    of columns a collection can start at: on each line, within its leading run of spaces,
    tabs and ``-``/``?``/``:`` indicators (``- - a: b`` nests three deep by column 4). Flow
    collections nest at most as deep as their document has ``[``/``{`` not directly closed
    (quoted ones included: an over-estimate is safe). Scalars add one level.
    """
    columns = max(map(len, _LINE_START.findall(text)), default=0) + 1
    flow = 0
    for part in _DOC_MARKER.split(text):
        opened = part.count("[") + part.count("{") - part.count("[]") - part.count("{}")
        flow = max(flow, opened + (1 if "[]" in part or "{}" in part else 0))
    return 2 * columns + flow + 1


def _fast_load(text: str) -> list[Any] | None:
    """The documents read by libyaml when that is provably as safe as the bounded reader;
    None when the bounded reader must judge the text (it gives the errors, too)."""
    if _CParser is None or _NOT_FAST.search(text) or _NON_PRINTABLE.search(text):
        return None
    if nesting_bound(text) > _C_DEPTH_LIMIT:
        return None
    loader = _CLoader(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
    except yaml.YAMLError:
        return None  # the bounded reader words the error
    finally:
        loader.dispose()
    # Without aliases the data is a tree: its depth and size are the composed nodes'.
    try:
        if any(_tree_size(doc, 1) > MAX_NODES for doc in docs):
            return None
    except _TooDeep:
        return None
    return docs


class _TooDeep(Exception):
    pass


def _tree_size(value: Any, depth: int) -> int:
    """Nodes in ``value`` at ``depth`` (mapping keys included); _TooDeep when a node would
    lie deeper than MAX_DEPTH, as the bounded reader counts it."""
    kind = type(value)
    if kind is dict:
        children = value.values()
        size = 1 + len(value)  # keys are scalars: sets and tuples need tags
    elif kind is list:
        children = value
        size = 1
    else:
        return 1
    if value and depth >= MAX_DEPTH:
        raise _TooDeep
    for child in children:
        size += _tree_size(child, depth + 1) if type(child) in (dict, list) else 1
    return size


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
