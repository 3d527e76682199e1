"""The checked AST of a compiled CEL rule, decoded from cel-expr-python's serialized form.

`Expression.serialize()` returns a `google.protobuf.Any` holding a `cel.expr.CheckedExpr`
(cel-spec `proto/cel/expr/checked.proto` and `syntax.proto`). Only the expression tree is read,
with the field numbers of those protos; a small wire-format reader avoids depending on protobuf.
Macros (`all`, `exists`, `exists_one`, `map`, `filter`) arrive already expanded into
comprehensions, so the cost estimate sees exactly what the runtime runs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Union

# cel.expr.Expr: id = 2, then one of const_expr = 3 ... comprehension_expr = 9.
_CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 3, 4, 5, 6, 7, 8, 9


@dataclass(frozen=True, slots=True)
class Const:
    value: str | bytes | int | float | bool | None
    offset: int = field(default=-1, compare=False)  # code points into the source; -1: unknown


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    operand: Expr
    field: str
    test_only: bool  # has(operand.field)


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    target: Expr | None
    args: tuple[Expr, ...]
    offset: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class ListExpr:
    elements: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class MapExpr:
    entries: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True, slots=True)
class Comprehension:
    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr


Expr = Union[Const, Ident, Select, Call, ListExpr, MapExpr, Comprehension]  # noqa: UP007  # a runtime alias the dataclasses above name


class MalformedAst(ValueError):
    """The serialized expression is not the CheckedExpr this module reads (a runtime change)."""


def checked_expr(serialized: bytes) -> Expr:
    """The expression tree of `Expression.serialize()` output (an Any holding a CheckedExpr)."""
    any_fields = _fields(serialized)
    checked = _fields(_req(any_fields, 2))
    source = _opt(checked, 5)  # SourceInfo; positions (4) map expression ids to offsets
    positions = dict(_pair(e) for e in _many(_fields(source), 4)) if source is not None else {}
    return _Decoder(positions).expr(_req(checked, 4))


def walk(root: Expr) -> list[Expr]:
    """Every node of the tree, root first."""
    out: list[Expr] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, Select):
            stack.append(node.operand)
        elif isinstance(node, Call):
            stack.extend(((node.target,) if node.target else ()) + node.args)
        elif isinstance(node, ListExpr):
            stack.extend(node.elements)
        elif isinstance(node, MapExpr):
            stack.extend(x for pair in node.entries for x in pair)
        elif isinstance(node, Comprehension):
            stack.extend(
                (node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
            )
    return out


class _Decoder:
    def __init__(self, positions: dict[int, int]) -> None:
        self.positions = positions

    def expr(self, buf: bytes) -> Expr:
        fields = _fields(buf)
        ident = next((v for n, v in fields if n == 2 and isinstance(v, int)), 0)
        offset = self.positions.get(ident, -1)
        for number, value in fields:
            if number == _CONST and isinstance(value, bytes):
                return Const(_constant(value), offset)
            if number == _IDENT and isinstance(value, bytes):
                return Ident(_text(_opt(_fields(value), 1)))
            if number == _SELECT and isinstance(value, bytes):
                f = _fields(value)
                return Select(
                    self.expr(_req(f, 1)),
                    _text(_opt(f, 2)),
                    _flag(f, 3),
                )
            if number == _CALL and isinstance(value, bytes):
                f = _fields(value)
                target = _opt(f, 1)
                return Call(
                    _text(_opt(f, 2)),
                    None if target is None else self.expr(target),
                    tuple(self.expr(a) for a in _many(f, 3)),
                    offset,
                )
            if number == _LIST and isinstance(value, bytes):
                return ListExpr(tuple(self.expr(e) for e in _many(_fields(value), 1)))
            if number == _STRUCT and isinstance(value, bytes):
                return MapExpr(tuple(self.entry(e) for e in _many(_fields(value), 2)))
            if number == _COMPREHENSION and isinstance(value, bytes):
                f = _fields(value)
                return Comprehension(
                    iter_var=_text(_opt(f, 1)),
                    iter_range=self.expr(_req(f, 2)),
                    accu_var=_text(_opt(f, 3)),
                    accu_init=self.expr(_req(f, 4)),
                    loop_condition=self.expr(_req(f, 5)),
                    loop_step=self.expr(_req(f, 6)),
                    result=self.expr(_req(f, 7)),
                )
        raise MalformedAst("expression without a kind")

    def entry(self, buf: bytes) -> tuple[Expr, Expr]:
        f = _fields(buf)
        key = _opt(f, 3)  # map_key; field_key (2) is for messages, which rules cannot build
        if key is None:
            raise MalformedAst("message construction is not supported")
        return self.expr(key), self.expr(_req(f, 4))


def _constant(buf: bytes) -> str | bytes | int | float | bool | None:
    for number, value in _fields(buf):
        if number == 1:
            return None
        if number == 2 and isinstance(value, int):
            return bool(value)
        if number == 3 and isinstance(value, int):
            return value - (1 << 64) if value >= 1 << 63 else value  # int64, two's complement
        if number == 4 and isinstance(value, int):
            return value
        if number == 5 and isinstance(value, bytes) and len(value) == 8:
            return float(struct.unpack("<d", value)[0])
        if number == 6 and isinstance(value, bytes):
            return _text(value)
        if number == 7 and isinstance(value, bytes):
            return value
    return None


Field = tuple[int, Union[int, bytes]]  # noqa: UP007  # runtime alias


def _fields(buf: bytes) -> list[Field]:
    """Protobuf wire format: (field number, varint or bytes) in order; fixed widths as bytes."""
    out: list[Field] = []
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise MalformedAst("truncated field")
            out.append((number, buf[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            out.append((number, buf[pos : pos + width]))
            pos += width
        else:
            raise MalformedAst(f"unsupported wire type {wire}")
    return out


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise MalformedAst("bad varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _pair(buf: bytes) -> tuple[int, int]:
    """A map<int64, int32> entry: (key 1, value 2)."""
    f = _fields(buf)
    key = next((v for n, v in f if n == 1 and isinstance(v, int)), 0)
    value = next((v for n, v in f if n == 2 and isinstance(v, int)), -1)
    return key, value


def _opt(fields: list[Field], number: int) -> bytes | None:
    for n, value in fields:
        if n == number and isinstance(value, bytes):
            return value
    return None


def _req(fields: list[Field], number: int) -> bytes:
    value = _opt(fields, number)
    if value is None:
        raise MalformedAst(f"field {number} missing")
    return value


def _flag(fields: list[Field], number: int) -> bool:
    return any(n == number and isinstance(v, int) and v for n, v in fields)


def _many(fields: list[Field], number: int) -> list[bytes]:
    return [v for n, v in fields if n == number and isinstance(v, bytes)]


def _text(value: bytes | None) -> str:
    return value.decode() if value is not None else ""
