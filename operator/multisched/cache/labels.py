"""Compiled label and node selectors.

Selectors are parsed once per pod (or per plugin args) into small slotted objects whose
``matches`` only does set and dict look-ups, so filters never walk raw API dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Labels = Mapping[str, str]


class SelectorError(ValueError):
    """A selector the API server would refuse (unknown operator, bad values)."""


class Requirement:
    """One ``key op values`` term of a label selector or node selector."""

    __slots__ = ("key", "number", "op", "values")

    def __init__(self, key: str, op: str, values: Sequence[str] = ()) -> None:
        self.key = key
        self.op = op
        self.values = frozenset(values)
        self.number = 0
        if op in ("In", "NotIn"):
            if not values:
                raise SelectorError(f"{key}: operator {op} needs at least one value")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise SelectorError(f"{key}: operator {op} takes no values")
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                raise SelectorError(f"{key}: operator {op} needs exactly one value")
            try:
                self.number = int(values[0])
            except ValueError:
                raise SelectorError(f"{key}: operator {op} needs an integer value") from None
        else:
            raise SelectorError(f"{key}: unknown operator {op!r}")

    def matches(self, labels: Labels) -> bool:
        op = self.op
        if op == "In":
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == "NotIn":
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > self.number if op == "Gt" else number < self.number


SelectorKey = tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str, frozenset[str]]]]


def selector_key(
    match_labels: Sequence[tuple[str, str]], requirements: Sequence[Requirement]
) -> SelectorKey:
    """Identifies what a selector matches (its parts are ANDed: order is irrelevant)."""
    return frozenset(match_labels), frozenset((r.key, r.op, r.values) for r in requirements)


class LabelSelector:
    """``metav1.LabelSelector``: all of matchLabels and matchExpressions must hold.

    An empty selector matches everything; ``None`` where a selector is optional is handled
    by callers (upstream: a nil selector matches nothing).
    """

    __slots__ = ("key", "match_labels", "requirements")

    def __init__(self, match_labels: Mapping[str, str], requirements: Sequence[Requirement]):
        self.match_labels = tuple(match_labels.items())
        self.requirements = tuple(requirements)
        #: What the selector matches, as a dict key: two selectors with one key select alike.
        self.key = selector_key(self.match_labels, self.requirements)

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        raw = raw or {}
        reqs = [
            Requirement(e["key"], e["operator"], e.get("values") or ())
            for e in raw.get("matchExpressions") or ()
        ]
        for req in reqs:
            if req.op in ("Gt", "Lt"):
                raise SelectorError(
                    f"{req.key}: operator {req.op} is not valid in a label selector"
                )
        return cls(raw.get("matchLabels") or {}, reqs)

    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements

    def matches(self, labels: Labels) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(req.matches(labels) for req in self.requirements)


class NodeSelectorTerm:
    """One term of a NodeSelector: matchExpressions on labels AND matchFields on fields.

    An empty term matches no node, as upstream.
    """

    __slots__ = ("expressions", "fields")

    def __init__(self, expressions: Sequence[Requirement], fields: Sequence[Requirement]):
        self.expressions = tuple(expressions)
        self.fields = tuple(fields)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelectorTerm:
        exprs = [
            Requirement(e["key"], e["operator"], e.get("values") or ())
            for e in raw.get("matchExpressions") or ()
        ]
        fields = []
        for e in raw.get("matchFields") or ():
            if e["key"] != "metadata.name":
                raise SelectorError(f"matchFields: unsupported field {e['key']!r}")
            if e["operator"] not in ("In", "NotIn") or len(e.get("values") or ()) != 1:
                raise SelectorError("matchFields metadata.name takes In/NotIn with one value")
            fields.append(Requirement(e["key"], e["operator"], e["values"]))
        return cls(exprs, fields)

    def matches(self, labels: Labels, node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        for req in self.expressions:
            if not req.matches(labels):
                return False
        if self.fields:
            name = {"metadata.name": node_name}
            return all(req.matches(name) for req in self.fields)
        return True


class NodeSelector:
    """``v1.NodeSelector``: the terms are ORed."""

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[NodeSelectorTerm]) -> None:
        self.terms = tuple(terms)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelector:
        return cls([NodeSelectorTerm.parse(t) for t in raw.get("nodeSelectorTerms") or ()])

    def matches(self, labels: Labels, node_name: str) -> bool:
        return any(term.matches(labels, node_name) for term in self.terms)
