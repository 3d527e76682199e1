"""Kubernetes label selectors, parsed as the API server parses `?labelSelector=`.

A port of k8s.io/apimachinery/pkg/labels/selector.go (`Parse`): the same lexer (bytes; a NUL
byte at the start of a token ends the selector, inside one it ends the token), the same grammar
(`key`, `!key`, `key = v`, `key == v`, `key != v`, `key in (v, ...)`, `key notin (...)`,
`key > n`, `key < n`, joined by commas) and the same checks of each requirement (keys are
qualified names, values label values, `>`/`<` take one base-10 int64). `problem` is None
exactly when the API server would accept the selector; otherwise it says why, in the API
server's words where it has them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Token(StrEnum):
    ERROR = "error"
    END = "end of string"
    CLOSE = ")"
    COMMA = ","
    NOT = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GREATER = ">"
    IDENTIFIER = "identifier"
    IN = "in"
    LESS = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN = "("


_SYMBOLS: dict[str, Token] = {
    t.value: t for t in Token if t.value in ("(", ")", ",", "!", "==", "=", ">", "<", "!=")
}
_KEYWORDS = {"in": Token.IN, "notin": Token.NOT_IN}
_WHITESPACE = b" \t\r\n"
_SPECIAL = b"=!(),><"
_BINARY = ("in", "notin", "=", "==", "!=", "gt", "lt")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_INT64 = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """Why the API server would refuse a label selector."""


@dataclass(frozen=True, slots=True)
class _Item:
    token: Token
    literal: str


def _lex(data: bytes) -> list[_Item]:
    """Every token up to the end of the selector (the parser's `scan`)."""
    items: list[_Item] = []
    pos = 0

    def read() -> int:
        nonlocal pos
        if pos < len(data):
            pos += 1
            return data[pos - 1]
        return 0

    while True:
        ch = read()
        while ch in _WHITESPACE and ch != 0:
            ch = read()
        if ch == 0:
            items.append(_Item(Token.END, ""))
            return items
        pos -= 1
        buffer = bytearray()
        if ch in _SPECIAL:
            last: _Item | None = None
            while (ch := read()) != 0:
                if ch not in _SPECIAL:
                    pos -= 1
                    break
                buffer.append(ch)
                found = _SYMBOLS.get(buffer.decode("latin-1"))
                if found is not None:
                    last = _Item(found, buffer.decode("latin-1"))
                elif last is not None:
                    pos -= 1
                    break
            text = buffer.decode("utf-8", "replace")
            items.append(last or _Item(Token.ERROR, f"error expected: keyword found '{text}'"))
            continue
        while (ch := read()) != 0:
            if ch in _WHITESPACE or ch in _SPECIAL:
                pos -= 1
                break
            buffer.append(ch)
        text = buffer.decode("utf-8", "replace")
        items.append(_Item(_KEYWORDS.get(text, Token.IDENTIFIER), text))


class _Parser:
    def __init__(self, items: list[_Item]) -> None:
        self._items = items
        self._pos = 0

    def peek(self, values: bool = True) -> _Item:
        item = self._items[self._pos]
        if values and item.token in (Token.IN, Token.NOT_IN):
            return _Item(Token.IDENTIFIER, item.literal)
        return item

    def take(self, values: bool = True) -> _Item:
        item = self.peek(values)
        self._pos = min(self._pos + 1, len(self._items) - 1)
        return item

    def parse(self) -> None:
        while True:
            item = self.peek()
            if item.token == Token.END:
                return
            if item.token not in (Token.IDENTIFIER, Token.NOT):
                raise SelectorError(
                    f"found '{item.literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                self.requirement()
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            after = self.take()
            if after.token == Token.END:
                return
            if after.token != Token.COMMA:
                raise SelectorError(f"found '{after.literal}', expected: ',' or 'end of string'")
            following = self.peek()
            if following.token not in (Token.IDENTIFIER, Token.NOT):
                raise SelectorError(f"found '{following.literal}', expected: identifier after ','")

    def requirement(self) -> None:
        item = self.take()
        negated = item.token == Token.NOT
        if negated:
            item = self.take()
        if item.token != Token.IDENTIFIER:
            raise SelectorError(f"found '{item.literal}', expected: identifier")
        key = item.literal
        _check_key(key)
        if negated or self.peek().token in (Token.END, Token.COMMA):
            return  # "!key" (what follows must be "," or the end), or "key" (exists)
        operator = self.take(values=False)
        if operator.token in (Token.IN, Token.NOT_IN):
            values = self.values()
            if not values:
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        elif operator.token in (Token.EQUALS, Token.DOUBLE_EQUALS, Token.NOT_EQUALS):
            values = [self.exact_value()]
        elif operator.token in (Token.GREATER, Token.LESS):
            values = [self.exact_value()]
            if not _is_int64(values[0]):
                raise SelectorError(
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                    f" (values[0]: {values[0]!r})"
                )
        else:
            raise SelectorError(f"found '{operator.literal}', expected: {', '.join(_BINARY)}")
        for i, value in enumerate(values):
            if len(value) > 63 or not _VALUE.fullmatch(value):
                raise SelectorError(f"values[{i}]: invalid label value: {value!r}")

    def values(self) -> list[str]:
        item = self.take()
        if item.token != Token.OPEN:
            raise SelectorError(f"found '{item.literal}' expected: '('")
        item = self.peek()
        if item.token == Token.CLOSE:
            self.take()
            return [""]
        if item.token not in (Token.IDENTIFIER, Token.COMMA):
            raise SelectorError(f"found '{item.literal}', expected: ',', ')' or identifier")
        out = self.identifiers()
        closing = self.take()
        if closing.token != Token.CLOSE:
            raise SelectorError(f"found '{item.literal}', expected: ')'")
        return out

    def identifiers(self) -> list[str]:
        out: set[str] = set()
        while True:
            item = self.take()
            if item.token == Token.IDENTIFIER:
                out.add(item.literal)
                following = self.peek()
                if following.token == Token.CLOSE:
                    return sorted(out)
                if following.token != Token.COMMA:
                    raise SelectorError(f"found '{following.literal}', expected: ',' or ')'")
            elif item.token == Token.COMMA:
                if not out:
                    out.add("")
                following = self.peek()
                if following.token == Token.CLOSE:
                    out.add("")
                    return sorted(out)
                if following.token == Token.COMMA:
                    self.take()
                    out.add("")
            else:
                raise SelectorError(f"found '{item.literal}', expected: ',', or identifier")

    def exact_value(self) -> str:
        if self.peek().token in (Token.END, Token.COMMA):
            return ""
        item = self.take()
        if item.token != Token.IDENTIFIER:
            raise SelectorError(f"found '{item.literal}', expected: identifier")
        return item.literal


def _is_int64(text: str) -> bool:
    return bool(_INT64.fullmatch(text)) and -(2**63) <= int(text) < 2**63


def _check_key(key: str) -> None:
    """validation.IsQualifiedName: [prefix/]name, the prefix a DNS subdomain."""
    parts = key.split("/")
    if len(parts) > 2:
        raise SelectorError(f"invalid label key {key!r}: a qualified name has at most one '/'")
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix):
            raise SelectorError(f"invalid label key {key!r}: the prefix must be a DNS subdomain")
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise SelectorError(
            f"invalid label key {key!r}: a name of at most 63 characters, alphanumeric at both"
            " ends, with '-', '_' or '.' between"
        )


def problem(selector: str) -> str | None:
    """None when the API server accepts `selector`, else why it would answer 400."""
    try:
        _Parser(_lex(selector.encode("utf-8", "surrogatepass"))).parse()
    except SelectorError as err:
        return str(err)
    return None
