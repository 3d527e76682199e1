"""The regular expressions CEL rules may use in `matches`, and how large RE2 makes each one.

cel-expr-python compiles the pattern of `matches` with RE2 on every call, constant or not
(measured: `'a'.matches('\\pL{100}')` costs about 150 ms each time). RE2 runs in time linear
in the text, but its compile time and its per-character work grow with its program, and the
program grows multiplicatively: a counted repetition copies its operand (`x{300}` is 300
copies), and one Unicode class (`\\pL`) is hundreds of instructions. The pattern text says
little: `[\\pL\\pN]{300}` is 13 characters and tens of thousands of instructions.

So a pattern is accepted only from a subset of RE2's syntax whose program size can be bounded
from the text: literals, `.`, classes of explicit characters and ranges, Perl classes
(`\\d \\w \\s` and their negations; ASCII in RE2), anchors, groups, flags (`i m s U`),
alternation and repetition (`* + ? {n} {n,} {n,m}`, lazy or not). Refused: Unicode classes
(`\\p`, `\\P`), POSIX classes, `\\C`, `\\Q...\\E`, octal and other escapes, case-insensitive
classes with non-ASCII ranges (Unicode case folding adds ranges without a small bound).
`weight` is an upper bound on RE2's instruction count for the pattern; MAX_WEIGHT bounds it.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_WEIGHT = 1_000  # instructions (upper bound) one pattern may compile to
MAX_GROUP_DEPTH = 32  # like the CEL parser's own nesting limit
MAX_REPEAT = 1_000  # RE2's own limit for {n,m}
WIDE = 16  # instructions for one class item that leaves ASCII (a UTF-8 byte automaton)
BASE = 4  # every program: the unanchored search's leading loop, match and fail
EMPTY = 3  # an empty-width assertion (^ $ \b \B \A \z); RE2 wraps a repeated one in no-ops
STAR = 3  # the instructions of * + ? themselves (an alternation, no-ops around empty widths)
REPEAT = 1  # those of each copy in a counted repetition (an alternation for an optional one)
FOLD_EXTRA = 8  # case-insensitive k and s also match the Kelvin sign U+212A and long s U+017F
_FLAGS = frozenset("imsU")
_PERL = {"d": 1, "w": 4, "s": 5}  # ASCII ranges of \d, \w, \s in RE2
_LITERAL_ESCAPES = frozenset("ntrfva")
_UNICODE = (
    "Unicode classes (\\p, \\P) are not supported: each compiles to hundreds of RE2 "
    "instructions; list the characters or ranges"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pattern's bound on RE2 instructions, or why it is refused (and where in the pattern)."""

    weight: int
    problem: str | None = None
    offset: int | None = None  # where in the pattern the refused syntax starts


class _Refused(Exception):  # internal to the parser: check_pattern turns it into a Verdict
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset, self.reason = offset, reason


def check_pattern(pattern: str) -> Verdict:
    """The bound on RE2's program for `pattern`, or a refusal at an offset in the pattern."""
    try:
        weight = BASE + _Parser(pattern).parse()
    except _Refused as refused:
        return Verdict(0, refused.reason, refused.offset)
    if weight > MAX_WEIGHT:
        detail = (
            f"compiles to up to {weight:,} RE2 instructions; the limit is {MAX_WEIGHT:,} "
            "(counted repetitions multiply: x{100} is 100 copies of x)"
        )
        return Verdict(weight, detail)
    return Verdict(weight)


def _is_count(text: str) -> bool:
    """ASCII digits, few enough to be a repetition count (str.isdigit also takes '²' and '٣')."""
    return 0 < len(text) <= 6 and all("0" <= c <= "9" for c in text)


class _Parser:
    """Recursive descent over the accepted subset; every method returns a weight."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.depth, self.fold = text, 0, 0, False

    def parse(self) -> int:
        weight = self._alternation()
        if self.pos < len(self.text):  # only an unmatched `)` stops the top level early
            raise _Refused(self.pos, "unmatched )")
        return weight

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _alternation(self) -> int:
        branches = [self._concatenation()]
        while self._peek() == "|":
            self.pos += 1
            branches.append(self._concatenation())
        return sum(branches) + len(branches) - 1

    def _concatenation(self) -> int:
        total = 0
        while self._peek() not in ("", "|", ")"):
            atom = self._atom()
            total = min(10 * MAX_WEIGHT, total + self._repetition(atom))
        return total

    def _repetition(self, weight: int) -> int:
        char = self._peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            weight += STAR
        elif char == "{":
            weight = self._counted(weight)
        else:
            return weight
        if self._peek() == "?":  # lazy
            self.pos += 1
        if self._peek() in ("*", "+", "?", "{"):
            raise _Refused(self.pos, "a repetition of a repetition; add a group: (x*)*")
        return weight

    def _counted(self, weight: int) -> int:
        at = self.pos
        end = self.text.find("}", at)
        body = self.text[at + 1 : end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if not _is_count(low) or not (_is_count(high) or not high):
            raise _Refused(at, "a { that does not start a repetition {n}, {n,} or {n,m}; write \\{")
        least = int(low)
        most = int(high) if high else least + 1 if comma else least
        if least > MAX_REPEAT or (high and not least <= most <= MAX_REPEAT):
            raise _Refused(at, f"invalid repetition size (at most {MAX_REPEAT:,}, n <= m)")
        self.pos = end + 1
        return min(10 * MAX_WEIGHT, most * (weight + REPEAT))

    def _atom(self) -> int:
        char = self._peek()
        if char in ("*", "+", "?", "{"):
            raise _Refused(self.pos, "missing argument to repetition operator")
        if char == "(":
            return self._group()
        if char == "[":
            return self._class()
        self.pos += 1
        if char == "\\":
            return self._escape()
        if char == ".":
            return WIDE
        if char in ("^", "$"):
            return EMPTY
        return self._literal(char)

    def _literal(self, char: str) -> int:
        size = len(char.encode())
        if not self.fold:
            return size
        if size > 1:
            return 4 * size  # a folded non-ASCII rune: its orbit of up to four
        return 1 + (FOLD_EXTRA if char in "kKsS" else 0)

    def _escape(self) -> int:
        at, char = self.pos - 1, self._peek()
        if not char:
            raise _Refused(at, "trailing backslash")
        self.pos += 1
        if char in _PERL:
            return _PERL[char] + 1 + (FOLD_EXTRA if self.fold else 0)
        if char.lower() in _PERL:
            return WIDE * (_PERL[char.lower()] + 1)
        if char in "bBAz":
            return EMPTY
        if char in _LITERAL_ESCAPES:
            return 1
        if char == "x":
            return self._hex(at)
        if not char.isalnum():
            return self._literal(char)
        if char in "pP":
            raise _Refused(at, _UNICODE)
        raise _Refused(at, f"unsupported escape \\{char}")

    def _hex(self, at: int) -> int:
        digits = self.text[self.pos : self.pos + 2]
        if len(digits) != 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise _Refused(at, "\\x takes two hex digits here (\\x{...} is not supported)")
        self.pos += 2
        return 1

    def _group(self) -> int:
        at = self.pos
        self.pos += 1
        capture, saved = 2, self.fold
        if self.text.startswith("?", self.pos):
            capture = self._group_flags(at)
            if capture < 0:  # (?i) alone: the flags hold to the end of the enclosing group
                return 0
        self.depth += 1
        if self.depth > MAX_GROUP_DEPTH:
            raise _Refused(at, f"groups nested deeper than {MAX_GROUP_DEPTH}")
        weight = self._alternation()
        if self._peek() != ")":
            raise _Refused(at, "missing )")
        self.pos += 1
        self.depth -= 1
        self.fold = saved
        return weight + capture

    def _group_flags(self, at: int) -> int:
        """After `(?`: a named group (2), flags then `:` (0), or flags then `)` (-1)."""
        self.pos += 1
        for prefix in ("P<", "<"):
            if self.text.startswith(prefix, self.pos):
                end = self.text.find(">", self.pos)
                name = self.text[self.pos + len(prefix) : end] if end > 0 else ""
                if not name or not all(c.isascii() and (c.isalnum() or c == "_") for c in name):
                    raise _Refused(at, "a group name is letters, digits and _")
                self.pos = end + 1
                return 2
        negate = False
        while (char := self._peek()) in _FLAGS or char == "-":
            if char == "-":
                negate = True
            elif char == "i":
                self.fold = not negate
            self.pos += 1
        if char == ":":
            self.pos += 1
            return 0
        if char == ")":
            self.pos += 1
            return -1
        raise _Refused(at, "unsupported group syntax (flags are i, m, s and U)")

    def _class(self) -> int:
        at = self.pos
        self.pos += 1
        negated = self._peek() == "^"
        self.pos += negated
        ranges, wide, first = 0, False, True
        while (char := self._peek()) != "]" or first:
            if not char:
                raise _Refused(at, "missing ]")
            first = False
            count, leaves_ascii = self._class_item(at)
            ranges += count
            wide = wide or leaves_ascii
        self.pos += 1
        if wide and self.fold:
            raise _Refused(at, "a case-insensitive class must list ASCII characters only")
        extra = 0
        if self.fold:
            ranges, extra = 2 * ranges, FOLD_EXTRA
        if negated or wide:
            return WIDE * (ranges + 1) + extra
        return ranges + 1 + extra

    def _class_item(self, at: int) -> tuple[int, bool]:
        """One item of a class: (ranges it adds, whether it leaves ASCII)."""
        if self.text.startswith("[:", self.pos):
            raise _Refused(self.pos, "POSIX classes ([:alpha:]) are not supported; list ranges")
        low = self._class_char(at)
        if low is None:  # a Perl class: \d, \w, \s or a negation (which leaves ASCII)
            return self._perl_in_class()
        if self._peek() == "-" and self.text[self.pos + 1 : self.pos + 2] not in ("]", ""):
            self.pos += 1
            high = self._class_char(at)
            if high is None or ord(high) < ord(low):
                raise _Refused(at, "invalid character class range")
            return 1, not high.isascii()
        return 1, not low.isascii()

    def _class_char(self, at: int) -> str | None:
        char = self._peek()
        self.pos += 1
        if char != "\\":
            return char
        escaped = self._peek()
        if escaped.lower() in _PERL:
            return None
        if escaped == "x":
            self.pos += 1
            self._hex(self.pos - 2)
            return chr(int(self.text[self.pos - 2 : self.pos], 16))
        if escaped in _LITERAL_ESCAPES:
            self.pos += 1
            return "\n"
        if escaped in ("p", "P"):
            raise _Refused(self.pos - 1, _UNICODE)
        if escaped and not escaped.isalnum():
            self.pos += 1
            return escaped
        raise _Refused(self.pos - 1, f"unsupported escape \\{escaped} in a class")

    def _perl_in_class(self) -> tuple[int, bool]:
        char = self._peek()
        self.pos += 1
        return _PERL[char.lower()], char.isupper()
