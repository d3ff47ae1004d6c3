"""An Ekanos `pattern` read as JavaScript reads it (`new RegExp(pattern, 'u')`, ECMA-262's `u`
flag, as JSON Schema says), translated to RE2 so that checking it stays linear in the input.

What differs between the two engines is spelled out here, once: `\\s` is JavaScript's WhiteSpace
and LineTerminator set (U+00A0, U+FEFF, U+2029, `\\v`, …), `\\d`, `\\w` and `\\b` are ASCII-only,
`.` matches anything but a line terminator, `^`/`$` are the input's ends (no `m` flag),
`\\p{…}` takes the long and short General_Category and Script names and the `gc=`/`sc=`
forms, `\\cX`, `\\uXXXX`, `\\u{…}`, `\\xHH`, `(?<name>…)`, `[^]` and `[]` mean what they mean in
JavaScript. What RE2 cannot check in linear time (backreferences, lookaround) and what the `u`
flag makes a syntax error raise PatternError with the reason; tests/ecma_pattern_cases.json pins
the reading against V8 itself (test_ekanos_pattern.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .._text import re2_compile, well_formed
from .ecma_names import GENERAL_CATEGORY, SCRIPT_CODES, SCRIPTS

MAX = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]

# ECMA-262 WhiteSpace (TAB, VT, FF, ZWNBSP and every Zs) and LineTerminator (LF, CR, LS, PS)
SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
DIGIT: Ranges = ((0x30, 0x39),)
WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
LINE_END: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
CONTROL = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
SYNTAX = set("^$\\.*+?()[]{}|/")


class PatternError(ValueError):
    """A pattern JavaScript refuses, or one the workbench cannot check in linear time."""


def complement(ranges: Ranges) -> Ranges:
    """The code points not in `ranges` (sorted, disjoint)."""
    out, start = [], 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX:
        out.append((start, MAX))
    return tuple(out)


def fragment(ranges: Ranges) -> str:
    """`ranges` as the inside of an RE2 character class."""
    return "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges)


@lru_cache(maxsize=64)
def _ranges_of(re2_class: str) -> Ranges:
    """The code points RE2's class `[re2_class]` holds, read by running it over all of them
    (for the complements RE2 cannot spell inside a class, such as `\\P{LC}`)."""
    every = "".join(chr(c) for c in range(MAX + 1) if not 0xD800 <= c < 0xE000)
    at = lambda i: i if i < 0xD800 else i + 0x800  # noqa: E731 - index in `every` → code point
    found = re2_compile(f"[{re2_class}]+").finditer(every)
    return tuple((at(m.start()), at(m.end() - 1)) for m in found)


_CLASS_ESCAPES: dict[str, Ranges] = {"d": DIGIT, "w": WORD, "s": SPACE}
_SPECIAL = {
    "Any": ((0, MAX),),
    "ASCII": ((0, 0x7F),),
    "ASCII_Hex_Digit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}


def _property(body: str) -> str:
    """The inside of an RE2 class for `\\p{body}` (the `u` flag's names, case-sensitive)."""
    name, eq, value = body.partition("=")
    if eq:
        if name in ("General_Category", "gc") and value in GENERAL_CATEGORY:
            return _category(GENERAL_CATEGORY[value])
        if name in ("Script", "sc") and (value in SCRIPTS or value in SCRIPT_CODES):
            return _script(SCRIPT_CODES.get(value, value))
        if name in ("Script_Extensions", "scx"):
            raise PatternError(f"\\p{{{body}}}: RE2 has no Script_Extensions data; use Script= instead")
        raise PatternError(f"\\p{{{body}}} is not a Unicode property JavaScript knows")
    if body in GENERAL_CATEGORY:
        return _category(GENERAL_CATEGORY[body])
    if body in _SPECIAL:
        return fragment(_SPECIAL[body])
    if body == "Assigned":
        return fragment(complement(_ranges_of(_category("Cn"))))
    raise PatternError(
        f"\\p{{{body}}}: not a General_Category the workbench's engine (RE2) knows "
        "(scripts need Script=; binary properties other than Any, ASCII, ASCII_Hex_Digit and Assigned "
        "are not supported)"
    )


def _category(short: str) -> str:
    if short == "LC":
        return "\\p{Lu}\\p{Ll}\\p{Lt}"
    if short in ("Cn", "C"):  # RE2's C leaves out the unassigned code points JavaScript's holds
        assigned = "".join(f"\\p{{{c}}}" for c in ("L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Co", "Cs"))
        cn = fragment(complement(_ranges_of(assigned)))
        return cn if short == "Cn" else "\\p{C}" + cn
    return f"\\p{{{short}}}"


def _script(name: str) -> str:
    try:
        re2_compile(f"\\p{{{name}}}")
    except ValueError:
        raise PatternError(f"\\p{{Script={name}}}: RE2's Unicode data has no script {name}") from None
    return f"\\p{{{name}}}"


class _Reader:
    """One pass over the pattern, writing RE2 syntax (linear in its length)."""

    def __init__(self, pattern: str) -> None:
        self.p, self.i, self.out = pattern, 0, []  # type: ignore[var-annotated]
        self.groups, self.names, self.depth = 0, set(), 0  # type: ignore[var-annotated]

    def peek(self, k: int = 0) -> str:
        return self.p[self.i + k] if self.i + k < len(self.p) else ""

    def take(self) -> str:
        c = self.peek()
        if not c:
            raise PatternError("\\ at end of pattern")
        self.i += 1
        return c

    def hex(self, n: int) -> int | None:
        digits = self.p[self.i : self.i + n]
        if len(digits) == n and all(c in "0123456789abcdefABCDEF" for c in digits):
            self.i += n
            return int(digits, 16)
        return None

    # -- escapes (after the backslash) --------------------------------------------------------

    def code_escape(self, c: str, in_class: bool) -> int | None:
        """The code point an escape stands for, or None when it is not a character escape."""
        if c in CONTROL:
            return CONTROL[c]
        if c == "c":
            letter = self.peek()
            if letter.isascii() and letter.isalpha():
                self.i += 1
                return ord(letter) % 32
            raise PatternError("\\c must be followed by a letter A-Z or a-z")
        if c == "x":
            v = self.hex(2)
            if v is None:
                raise PatternError("\\x must be followed by two hex digits")
            return v
        if c == "u":
            return self.unicode_escape()
        if c == "0" and not self.peek().isdigit():
            return 0
        if c in SYNTAX or (in_class and c == "-"):
            return ord(c)
        if in_class and c == "b":
            return 0x08
        return None

    def unicode_escape(self) -> int:
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1 : end] if end > 0 else ""
            if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits) or int(digits, 16) > MAX:
                raise PatternError("\\u{…} must hold a code point in hex, at most 10FFFF")
            self.i = end + 1
            v = int(digits, 16)
        else:
            got = self.hex(4)
            if got is None:
                raise PatternError("\\u must be followed by four hex digits or {…}")
            v = got
            if 0xD800 <= v < 0xDC00 and self.p[self.i : self.i + 2] == "\\u":
                self.i += 2
                low = self.hex(4)
                if low is not None and 0xDC00 <= low < 0xE000:
                    return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                self.i -= 2 + (4 if low is not None else 0)
        if 0xD800 <= v < 0xE000:
            raise PatternError(f"a lone surrogate (\\u{v:04X}) cannot be checked: arguments are text")
        return v

    def set_escape(self, c: str) -> str | None:
        """The inside of an RE2 class for \\d \\D \\w \\W \\s \\S \\p{…} \\P{…}, or None."""
        if c.lower() in _CLASS_ESCAPES:
            ranges = _CLASS_ESCAPES[c.lower()]
            return fragment(ranges if c.islower() else complement(ranges))
        if c in "pP":
            end = self.p.find("}", self.i)
            if self.peek() != "{" or end < 0:
                raise PatternError(f"\\{c} must be followed by {{property}}")
            body, self.i = self.p[self.i + 1 : end], end + 1
            inside = _property(body)
            if c == "p":
                return inside
            if inside.startswith("\\p{") and inside.count("\\") == 1:
                return "\\P" + inside[2:]
            return fragment(complement(_ranges_of(inside)))
        return None

    # -- the pattern ---------------------------------------------------------------------------

    def read(self) -> str:
        quantifiable = False
        while self.i < len(self.p):
            c = self.take()
            if c in "*+?{":
                if c == "{" and not self.quantifier_ahead():
                    raise PatternError("a lone { (write \\{ for the character)")
                if not quantifiable:
                    raise PatternError(f"nothing to repeat before {c!r} at {self.i - 1}")
                self.quantifier(c)
                quantifiable = False
                continue
            quantifiable = True
            if c == "\\":
                quantifiable = self.escape()
            elif c == "[":
                self.out.append(self.char_class())
            elif c == "(":
                self.group()
                quantifiable = False
            elif c == ")":
                if not self.depth:
                    raise PatternError(f"unmatched ) at {self.i - 1}")
                self.depth -= 1
                self.out.append(")")
            elif c in "|^$":
                self.out.append({"|": "|", "^": "\\A", "$": "\\z"}[c])
                quantifiable = False
            elif c == ".":
                self.out.append(f"[^{fragment(LINE_END)}]")
            elif c in "]}":
                raise PatternError(f"a lone {c} (write \\{c} for the character)")
            else:
                self.out.append(c if c.isascii() and c.isalnum() else fragment(((ord(c), ord(c)),)))
        if self.depth:
            raise PatternError("unterminated group")
        return "".join(self.out)

    def quantifier_ahead(self) -> bool:
        j = self.p.find("}", self.i)
        inner = self.p[self.i : j] if j >= 0 else ""
        lo, _, hi = inner.partition(",")
        return lo.isdigit() and (hi == "" or hi.isdigit())

    def quantifier(self, c: str) -> None:
        if c == "{":
            j = self.p.find("}", self.i)
            inner, self.i = self.p[self.i : j], j + 1
            lo, comma, hi = inner.partition(",")
            if hi and int(hi) < int(lo):
                raise PatternError(f"numbers out of order in {{{inner}}}")
            c = f"{{{int(lo)}{comma}{int(hi) if hi else ''}}}"
        if self.peek() == "?":
            self.i += 1
            c += "?"
        self.out.append(c)

    def escape(self) -> bool:
        """Writes one escape outside a class; whether it can be repeated (assertions cannot)."""
        c = self.take()
        if c in "bB":
            self.out.append("\\" + c)  # RE2's \b is ASCII's word boundary, as JavaScript's
            return False
        if c.isdigit() and c != "0" or c == "k":
            raise PatternError(
                "backreferences cannot be checked in linear time (the workbench's engine is RE2)"
            )
        inside = self.set_escape(c)
        if inside is not None:
            self.out.append(f"[{inside}]")
            return True
        v = self.code_escape(c, in_class=False)
        if v is None:
            raise PatternError(f"invalid escape \\{c} (the u flag allows only the listed escapes)")
        self.out.append(fragment(((v, v),)))
        return True

    def group(self) -> None:
        self.depth += 1
        if self.peek() != "?":
            self.groups += 1
            self.out.append("(?:")  # never captured: the check only asks whether it matches
            return
        head = self.p[self.i : self.i + 3]
        if head.startswith(("?=", "?!")) or head in ("?<=", "?<!"):
            raise PatternError("lookaround cannot be checked in linear time (the workbench's engine is RE2)")
        if head.startswith("?:"):
            self.i += 2
        elif head.startswith("?<"):
            end = self.p.find(">", self.i)
            name = self.p[self.i + 2 : end] if end > 0 else ""
            if not name.replace("$", "_").isidentifier():
                raise PatternError(f"invalid group name {name!r}")
            if name in self.names:
                raise PatternError(f"duplicate group name {name!r}")
            self.names.add(name)
            self.groups += 1
            self.i = end + 1
        else:
            raise PatternError(f"invalid group (?{self.peek(1)} (modifiers are not supported)")
        self.out.append("(?:")

    def class_atom(self) -> tuple[int | None, str]:
        """One class member: (its code point, or None for a set such as \\d) and its RE2 text."""
        c = self.take()
        if c != "\\":
            return ord(c), fragment(((ord(c), ord(c)),))
        e = self.take()
        inside = self.set_escape(e)
        if inside is not None:
            return None, inside
        v = self.code_escape(e, in_class=True)
        if v is None:
            raise PatternError(f"invalid escape \\{e} in a class")
        return v, fragment(((v, v),))

    def char_class(self) -> str:
        negated = self.peek() == "^"
        self.i += negated
        parts = []
        while self.peek() != "]":
            if not self.peek():
                raise PatternError("unterminated character class [")
            lo, text = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi, _ = self.class_atom()
                if lo is None or hi is None:
                    raise PatternError("a class escape (\\d, \\p{…}, …) cannot bound a range")
                if hi < lo:
                    raise PatternError("range out of order in character class")
                text = fragment(((lo, hi),))
            parts.append(text)
        self.i += 1
        if not parts:  # JavaScript's [] matches nothing and [^] anything; RE2 has neither
            return f"[{fragment(((0, MAX),))}]" if negated else f"[^{fragment(((0, MAX),))}]"
        return f"[{'^' if negated else ''}{''.join(parts)}]"


def translate(pattern: str) -> str:
    """`pattern` (ECMAScript, `u` flag) as RE2 syntax with the same matches; PatternError says
    why when JavaScript refuses it or RE2 cannot check it in linear time."""
    if not all(not 0xD800 <= ord(c) < 0xE000 for c in pattern):
        raise PatternError("the pattern holds a lone surrogate")
    return _Reader(pattern).read()


_COMPILED: dict[str, Any] = {}  # by pattern text; bounded below


def compile_pattern(pattern: str) -> Any:
    """`pattern` translated and compiled with RE2 (cached); PatternError when it cannot be."""
    compiled = _COMPILED.get(pattern)
    if compiled is None:
        if len(_COMPILED) > 1000:
            _COMPILED.clear()
        try:
            compiled = re2_compile(translate(pattern))
        except PatternError:
            raise
        except ValueError as exc:  # RE2's own limits: a repeat over 1000, over its memory budget
            raise PatternError(str(exc)) from None
        _COMPILED[pattern] = compiled
    return compiled


def matches(pattern: str, text: str) -> bool:
    """Whether `text` holds a match of `pattern` (JSON Schema's `pattern`: not anchored). A lone
    surrogate in `text` reads as U+FFFD (RE2 matches UTF-8)."""
    return compile_pattern(pattern).search(well_formed(text)) is not None
