"""Read hand-written YAML safely: UTF-8 only, bounded nesting, bounded alias expansion.

PyYAML's composer recurses per nesting level and its constructor shares aliased nodes, so
a deep file raises RecursionError and an anchor bomb (``a: &a [*b, *b, ...]``) turns into a
structure that every later walk expands. Both are refused while composing, by counting each
node's size as if aliases were expanded (the bounds, and why: limits.py). Timestamps stay
strings, as sigs.k8s.io/yaml reads them into JSON.

Most files take a fast path through libyaml (``_fast_load``) when a cheap scan of the text
proves it holds nothing the bounds exist for; whatever libyaml refuses, and anything the scan
cannot vouch for, goes through the bounded reader above, so both refuse alike, in the same words.
The fast path reads ``make bench``'s simulate file (1,000 nodes, 2,000 pods) over ten times
faster than the bounded reader, which would double the command's time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .limits import LIBYAML_MAX_DEPTH, YAML_MAX_ALIASED, YAML_MAX_DEPTH, YAML_MAX_NODES


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
            if self._depth > YAML_MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YAMLInputError(
                    f"line {mark.line + 1}: nested more than {YAML_MAX_DEPTH} levels deep"
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
            if self._aliased > YAML_MAX_ALIASED:
                raise YAMLInputError(
                    f"line {node.start_mark.line + 1}: aliases expand to more than "
                    f"{YAML_MAX_ALIASED:,} values; refusing it"
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
    if size > YAML_MAX_NODES:
        raise YAMLInputError(
            f"line {node.start_mark.line + 1}: expands to more than {YAML_MAX_NODES:,} values "
            "(aliases expanded); refusing it"
        )
    node.expanded_size = size  # type: ignore[attr-defined]


def _number_or_string(construct: Any) -> Any:
    """PyYAML's resolver calls ``0x_`` and ``._`` numbers its constructor cannot read (a
    ValueError escaped as a traceback); Go's YAML reads them as the strings they are."""

    def construct_number(loader: Any, node: ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except ValueError:
            return loader.construct_scalar(node)

    return construct_number


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_construct_int = _number_or_string(yaml.constructor.SafeConstructor.construct_yaml_int)
_construct_float = _number_or_string(yaml.constructor.SafeConstructor.construct_yaml_float)
_Loader.add_constructor(_INT_TAG, _construct_int)
_Loader.add_constructor(_FLOAT_TAG, _construct_float)

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


def load_all(text: str, *, json_keys: bool = False) -> list[Any]:
    """Every document of a YAML stream; problems raise YAMLInputError with one line.

    ``json_keys``: mapping keys as JSON has them (strings), as sigs.k8s.io/yaml converts
    YAML before decoding (``1: a`` has the key "1", ``true: b`` the key "true")."""
    fast = _fast_load(text)
    if fast is not None:
        docs, plain_keys = fast
        return docs if plain_keys or not json_keys else [json_like(d) for d in docs]
    docs = _bounded_load(text)
    return [json_like(d) for d in docs] if json_keys else docs


def json_like(obj: Any) -> Any:
    """Keys as JSON has them (strings), as sigs.k8s.io/yaml converts YAML before decoding."""
    kind = type(obj)
    if kind is dict or (kind not in _SCALARS and isinstance(obj, Mapping)):
        return {_key(k): json_like(v) for k, v in obj.items()}
    if kind is list:
        return [json_like(v) for v in obj]
    return obj


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


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
        raise YAMLInputError(f"nested more than {YAML_MAX_DEPTH} levels deep") from None
    finally:
        if loader is not None:
            loader.dispose()


# --- libyaml fast path -------------------------------------------------------------------

_CParser: Any = None
try:
    from yaml import cyaml

    _CParser = cyaml.CParser  # type: ignore[attr-defined]
except ImportError:  # PyYAML built without libyaml: everything takes the bounded reader
    pass


if _CParser is not None:

    class _CLoader(_CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):  # type: ignore[misc]
        """yaml.CSafeLoader with the bounded reader's resolvers (timestamps stay strings)."""

        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._plain_tags: dict[str, str] = {}
            if not self.yaml_path_resolvers:
                # libyaml's composer calls both hooks once per node, and they only serve
                # path resolvers (none are added): C-level callables that do nothing, in
                # place of two Python calls per node (5% of reading a large file).
                self.descend_resolver = _IGNORE_TWO  # type: ignore[method-assign]
                self.ascend_resolver = tuple  # type: ignore[method-assign, assignment]

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if self.yaml_path_resolvers:
                return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
            if kind is not ScalarNode or not implicit[0]:
                # A collection's, or a quoted scalar's: what Resolver gives without paths.
                return _DEFAULT_TAGS[kind]
            # A plain scalar's tag depends on its text alone, and files repeat their keys
            # and values: match the resolvers' regexes once per text.
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
                self._plain_tags[value] = tag
            return tag

    #: ``(parent, index) -> index``, at C speed and with no effect.
    _IGNORE_TWO: Any = {}.get
    _DEFAULT_TAGS = {
        ScalarNode: yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG,
        SequenceNode: yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
        MappingNode: yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    }


#: Anchors (&), aliases (*), tags (!, which make sets and tuples) and merge keys (<<, which
#: flatten a level away) are the bounded reader's business: any of them, even quoted, sends
#: the text there. So do the spots where libyaml reads more than the bounded reader does
#: (found by fuzzing both): tabs, "?" (in flow plain scalars), a byte-order mark past the
#: start and a comment glued to a block scalar header (``|#``).
_NOT_FAST = ("&", "*", "!", "<<", "\t", "?", "\ufeff")
_LAX_IN_LIBYAML = re.compile(r"[|>][-+0-9]*#")
#: The pure-Python reader's refusal of control characters; libyaml's differs.
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
#: Line starts as libyaml counts them (it breaks lines on these too).
_LINE_START = r"(?:^|(?<=[\r\x85\u2028\u2029]))"
_RUN = re.compile(_LINE_START + r"[ \t?:-]*", re.MULTILINE)
#: A document marker at column 0 ends any scalar or collection in libyaml (or is an error).
_DOC_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n\x85\u2028\u2029]|$)", re.MULTILINE)
#: A cheap sufficient test for ``nesting_bound(text) <= LIBYAML_MAX_DEPTH``: no run of 400
#: spaces and indicators anywhere (so none leads a line: at most 2 * 400 block levels), and
#: no more flow openers in the whole text than the rest of the limit (a document has no
#: more than the whole text).
_LONG_RUN = re.compile(r"[ \t?:-]{400}")
_FLOW_ALLOWANCE = LIBYAML_MAX_DEPTH - 2 * 401 - 1


def nesting_bound(text: str) -> int:
    """An upper bound on how deep any document of ``text`` nests, from the text alone.

    A block collection nested in another starts at a greater column, save one block
    sequence per mapping (``key:\n- item``), so block nesting is at most twice the number
    of columns a collection can start at: on each line, within its leading run of spaces,
    tabs and ``-``/``?``/``:`` indicators (``- - a: b`` nests three deep by column 4). Flow
    collections nest at most as deep as their document has ``[``/``{`` not directly closed
    (quoted ones included: an over-estimate is safe). Scalars add one level.
    """
    columns = max(map(len, _RUN.findall(text)), default=0) + 1
    return 2 * columns + max(map(_flow_bound, _DOC_MARKER.split(text))) + 1


def _flow_bound(part: str) -> int:
    opened = part.count("[") + part.count("{") - part.count("[]") - part.count("{}")
    return opened + (1 if "[]" in part or "{}" in part else 0)


def _within_c_limit(text: str) -> bool:
    if _LONG_RUN.search(text):
        return False
    if _flow_bound(text) <= _FLOW_ALLOWANCE:
        return True  # the common case: one count over the whole text
    return nesting_bound(text) <= LIBYAML_MAX_DEPTH


def _fast_load(text: str) -> tuple[list[Any], bool] | None:
    """The documents read by libyaml, and whether every key is a string, when that is
    provably as safe as the bounded reader; None when the bounded reader must judge the
    text (it words the errors, too)."""
    if _CParser is None or any(mark in text for mark in _NOT_FAST):
        return None
    if _NON_PRINTABLE.search(text) or _LAX_IN_LIBYAML.search(text):
        return None
    if not _within_c_limit(text):
        return None
    loader = _CLoader(text)
    build = _Builder(loader)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            build.size = 1
            docs.append(build.node(node, 1))
            if build.size > YAML_MAX_NODES:
                return None
    except (yaml.YAMLError, _NotPlain):
        return None
    finally:
        loader.dispose()
    return docs, build.plain_keys


class _NotPlain(Exception):
    """Something the bounded reader must judge: too deep, or beyond plain JSON data."""


_STR = "tag:yaml.org,2002:str"


class _Builder:
    """Python data from libyaml's nodes, as SafeConstructor builds it for plain JSON-like
    data (a tree: no aliases), counting nodes and depth as the bounded reader does."""

    __slots__ = ("_scalars", "loader", "plain_keys", "size")

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.plain_keys = True
        self.size = 0
        safe = yaml.constructor.SafeConstructor
        self._scalars = {
            _INT_TAG: _construct_int,
            _FLOAT_TAG: _construct_float,
            "tag:yaml.org,2002:bool": safe.construct_yaml_bool,
            "tag:yaml.org,2002:null": safe.construct_yaml_null,
        }

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag == _STR:
            return node.value
        construct = self._scalars.get(node.tag)
        if construct is None:
            raise _NotPlain  # "=" (the value tag): SafeConstructor has its own ways there
        return construct(self.loader, node)

    def node(self, node: Node, depth: int) -> Any:
        """The value of ``node`` at ``depth``; its children count toward ``size``."""
        if type(node) is ScalarNode:
            return self.scalar(node)
        if node.value and depth >= YAML_MAX_DEPTH:
            raise _NotPlain
        if type(node) is MappingNode:
            self.size += 2 * len(node.value)
            out = {}
            for key_node, value_node in node.value:
                if type(key_node) is not ScalarNode:
                    raise _NotPlain  # an unhashable key: the bounded reader words it
                key = self.scalar(key_node)
                if type(key) is not str:
                    self.plain_keys = False
                out[key] = self.node(value_node, depth + 1)
            return out
        if type(node) is SequenceNode:
            self.size += len(node.value)
            return [self.node(child, depth + 1) for child in node.value]
        raise _NotPlain


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
            raise YAMLInputError(f"nested more than {YAML_MAX_DEPTH} levels deep")
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
        if depth > YAML_MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
