"""The AST of a compiled selector, as cel-cpp serializes it (``cel.expr`` protos in an Any).

Only the fields the cost estimate reads are declared; the rest (types, references, source
positions) ride along as unknown fields, so a rewritten AST keeps them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import (  # type: ignore[import-untyped]
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

#: The metering function's name: the "@" keeps it out of what users can write.
COST_FUNCTION = "@cost"

_E = ".cel.expr.Expr"
# message: (field, number, type); "*" = repeated; "|" = in the message's one oneof.
_SYNTAX: dict[str, list[tuple[str, int, str]]] = {
    "Expr": [
        ("id", 2, "int64"),
        ("const_expr", 3, "|.cel.expr.Constant"),
        ("ident_expr", 4, f"|{_E}.Ident"),
        ("select_expr", 5, f"|{_E}.Select"),
        ("call_expr", 6, f"|{_E}.Call"),
        ("list_expr", 7, f"|{_E}.CreateList"),
        ("struct_expr", 8, f"|{_E}.CreateStruct"),
        ("comprehension_expr", 9, f"|{_E}.Comprehension"),
    ],
    "Expr.Ident": [("name", 1, "string")],
    "Expr.Select": [("operand", 1, _E), ("field", 2, "string"), ("test_only", 3, "bool")],
    "Expr.Call": [("target", 1, _E), ("function", 2, "string"), ("args", 3, "*" + _E)],
    "Expr.CreateList": [("elements", 1, "*" + _E)],
    "Expr.CreateStruct": [
        ("message_name", 1, "string"),
        ("entries", 2, f"*{_E}.CreateStruct.Entry"),
    ],
    "Expr.CreateStruct.Entry": [
        ("id", 1, "int64"),
        ("field_key", 2, "string"),
        ("map_key", 3, _E),
        ("value", 4, _E),
    ],
    "Expr.Comprehension": [
        ("iter_var", 1, "string"),
        ("iter_range", 2, _E),
        ("accu_var", 3, "string"),
        ("accu_init", 4, _E),
        ("loop_condition", 5, _E),
        ("loop_step", 6, _E),
        ("result", 7, _E),
        ("iter_var2", 8, "string"),
    ],
    "Constant": [
        ("null_value", 1, "|int32"),
        ("bool_value", 2, "|bool"),
        ("int64_value", 3, "|int64"),
        ("uint64_value", 4, "|uint64"),
        ("double_value", 5, "|double"),
        ("string_value", 6, "|string"),
        ("bytes_value", 7, "|bytes"),
    ],
    "CheckedExpr": [("expr", 4, _E)],
    "ParsedExpr": [("expr", 2, _E)],
}
_SCALARS = {"int64": 3, "uint64": 4, "int32": 5, "bool": 8, "string": 9, "double": 1, "bytes": 12}


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="multisched/dra/cel_syntax.proto", package="cel.expr", syntax="proto3"
    )
    messages: dict[str, Any] = {}
    for path, fields in _SYNTAX.items():  # parents come before their nested messages
        parent, _, name = path.rpartition(".")
        message = (messages[parent].nested_type if parent else fd.message_type).add(name=name)
        messages[path] = message
        for fname, number, spec in fields:
            kind = spec.lstrip("*|")
            f = message.field.add(name=fname, number=number, label=3 if spec[0] == "*" else 1)
            if kind in _SCALARS:
                f.type = _SCALARS[kind]
            else:
                f.type, f.type_name = 11, kind
            if spec[0] == "|":
                if not message.oneof_decl:
                    message.oneof_decl.add(name="kind")
                f.oneof_index = 0
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
_CLASSES = {
    f"type.googleapis.com/cel.expr.{name}": message_factory.GetMessageClass(
        _POOL.FindMessageTypeByName(f"cel.expr.{name}")
    )
    for name in ("CheckedExpr", "ParsedExpr")
}


def decode(serialized: bytes) -> tuple[Any, Any]:
    """``Expression.serialize()``'s Any and the CheckedExpr or ParsedExpr in it."""
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(serialized)
    message = _CLASSES[wrapper.type_url]()
    message.ParseFromString(wrapper.value)
    return wrapper, message


def kind(e: Any) -> str:
    return str(e.WhichOneof("kind"))


def children(e: Any) -> Iterator[Any]:
    k = kind(e)
    if k == "select_expr":
        yield e.select_expr.operand
    elif k == "call_expr":
        if e.call_expr.HasField("target"):
            yield e.call_expr.target
        yield from e.call_expr.args
    elif k == "list_expr":
        yield from e.list_expr.elements
    elif k == "struct_expr":
        for entry in e.struct_expr.entries:
            yield from (entry.map_key, entry.value)
    elif k == "comprehension_expr":
        c = e.comprehension_expr
        yield from (c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result)


def metered(serialized: bytes, ticks: Mapping[int, int]) -> bytes:
    """The expression with each listed comprehension's loop condition ``cond`` replaced by
    ``@cost(k, cond)``: every iteration first charges ``k``."""
    wrapper, message = decode(serialized)
    next_id = max(_ids(message.expr)) + 1

    def wrap(e: Any) -> None:
        nonlocal next_id
        for child in children(e):
            wrap(child)
        if kind(e) != "comprehension_expr" or e.id not in ticks:
            return
        loop = e.comprehension_expr
        condition = type(e)()
        condition.CopyFrom(loop.loop_condition)
        loop.loop_condition.Clear()
        loop.loop_condition.id, next_id = next_id, next_id + 2
        call = loop.loop_condition.call_expr
        call.function = COST_FUNCTION
        call.args.add(id=next_id - 1).const_expr.int64_value = ticks[e.id]
        call.args.add().CopyFrom(condition)

    wrap(message.expr)
    wrapper.value = message.SerializeToString()
    return bytes(wrapper.SerializeToString())


def _ids(e: Any) -> Iterator[int]:
    yield e.id
    for child in children(e):
        yield from _ids(child)
