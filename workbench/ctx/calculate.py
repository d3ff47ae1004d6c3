"""The agent platform's `calculate` built-in: a safe arithmetic evaluator (no `eval`, no I/O).

The expression is parsed with `ast` (mode="eval") and walked against an allowlist: numbers,
`+ - * / // % **`, unary `+ -`, parentheses, the functions in FUNCTIONS and the constants
`pi` and `e`. Everything is bounded before it costs anything: the text (MAX_EXPRESSION_CHARS,
ASCII letters, digits and operators only), the node count (MAX_NODES), every integer on the way
(MAX_INT_BITS: past 2**1024 neither a float nor a JavaScript number holds it, so a power like
`2**10**10` is refused from the sizes of its operands, never computed). The walk is iterative
(an explicit stack), so nesting costs no Python recursion; the parser's own nesting is bounded
by the text limit. Every failure is WorkbenchError("E_INVALID_ARGUMENT") naming what is wrong.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from typing import Any

from .._errors import WorkbenchError

Number = int | float

MAX_EXPRESSION_CHARS = 2_000
MAX_NODES = 2_000  # expression nodes (numbers, names, operations, calls)
MAX_INT_BITS = 1_024  # |integer| < 2**1024, like the largest float
MAX_ROUND_DIGITS = 400  # round()'s ndigits is clamped here: beyond it the result is the same

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

#: name -> (function, fewest arguments, most arguments or None for any number)
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "abs": (abs, 1, 1),
    "round": (lambda x, n=None: round(x) if n is None else round(x, _ndigits(n)), 1, 2),
    "min": (lambda *xs: min(xs), 1, None),
    "max": (lambda *xs: max(xs), 1, None),
    "sqrt": (math.sqrt, 1, 1),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "log": (math.log, 1, 2),
    "exp": (math.exp, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
}

_OPERATORS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_REFUSED_OPERATORS: dict[type, str] = {
    ast.BitXor: "^ (for a power, write **)",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
}
# no quotes, brackets, backslashes, `#` or `:`: what parses is arithmetic or a near miss we name
_ALLOWED_TEXT = re.compile(r"[0-9A-Za-z_+\-*/%().,\s^&|~<>=!]*")
_CONSTRUCTS = {
    "Compare": "comparisons are",
    "BoolOp": "and/or is",
    "IfExp": "conditional expressions are",
    "Attribute": "attribute access (x.y) is",
}
_HELP = "use numbers, + - * / // % **, parentheses, " + ", ".join([*FUNCTIONS, *CONSTANTS])


def _bad(what: str, source: str = "", node: ast.AST | None = None) -> WorkbenchError:
    at = ast.get_source_segment(source, node) if node is not None else None
    if at is not None and len(at) > 60:
        at = at[:60] + "…"
    where = f" in {at!r}" if at else ""
    details = {"field": "expression", **({"at": at} if at else {})}
    return WorkbenchError("E_INVALID_ARGUMENT", f"calculate: {what}{where}", **details)


def _ndigits(n: Number) -> int:
    if isinstance(n, float):
        raise TypeError("round()'s second argument must be a whole number")
    return max(-MAX_ROUND_DIGITS, min(MAX_ROUND_DIGITS, n))


def _checked(value: Any) -> Number:
    """`value` if it is a real number within the bounds; else ValueError/OverflowError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise OverflowError(f"an integer over 2**{MAX_INT_BITS}")
    if isinstance(value, float) and not math.isfinite(value):
        raise OverflowError("a number too large for a float")
    return value


def _power(a: Number, b: Number) -> Number:
    if a == 0 and b < 0:
        raise ZeroDivisionError("0 cannot be raised to a negative power")
    if isinstance(a, int) and isinstance(b, int) and b >= 0:
        # the result has at least (bits(a) - 1) * b + 1 bits: refuse before computing it
        if abs(a) > 1 and (abs(a).bit_length() - 1) * b + 1 > MAX_INT_BITS:
            raise OverflowError(f"an integer over 2**{MAX_INT_BITS}")
        return a**b
    return math.pow(a, b)  # floats: OverflowError, or ValueError where no real result exists


def _binary(op: type, a: Number, b: Number) -> Number:
    if op is ast.Pow:
        return _power(a, b)
    if op is ast.Add:
        return a + b
    if op is ast.Sub:
        return a - b
    if op is ast.Mult:
        return a * b  # operands are within MAX_INT_BITS: cheap, and checked after
    if op is ast.Div:
        return a / b
    if op is ast.FloorDiv:
        return a // b
    return a % b


def _children(node: ast.expr, source: str) -> list[ast.expr]:
    """The operands of an allowed node, or an error naming what is not allowed."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            kind = "complex numbers are" if isinstance(node.value, complex) else f"{node.value!r} is"
            raise _bad(f"{kind} not allowed: {_HELP}", source, node)
        return []
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise _bad(f"{node.id} is a function: call it, as in {node.id}(x)", source, node)
        if node.id not in CONSTANTS:
            raise _bad(f"unknown name {node.id!r}: {_HELP}", source, node)
        return []
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        op = type(node.op)
        if op in _REFUSED_OPERATORS:
            raise _bad(f"the operator {_REFUSED_OPERATORS[op]} is not allowed: {_HELP}", source, node)
        if isinstance(node, ast.UnaryOp):
            return [node.operand]
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            raise _bad(f"only these functions can be called: {', '.join(FUNCTIONS)}", source, node)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _bad(f"{name}() takes plain arguments (no name=, no *)", source, node)
        _, low, high = FUNCTIONS[name]
        if len(node.args) < low or (high is not None and len(node.args) > high):
            want = f"{low} or more" if high is None else (str(low) if low == high else f"{low} or {high}")
            raise _bad(f"{name}() takes {want} argument(s), got {len(node.args)}", source, node)
        return list(node.args)
    what = _CONSTRUCTS.get(type(node).__name__, f"{type(node).__name__} expressions are")
    raise _bad(f"{what} not allowed: {_HELP}", source, node)


def _apply(node: ast.expr, args: list[Number]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp):
        return -args[0] if isinstance(node.op, ast.USub) else +args[0]
    if isinstance(node, ast.BinOp):
        return _binary(type(node.op), args[0], args[1])
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return FUNCTIONS[node.func.id][0](*args)


def parse(expression: Any) -> ast.Expression:
    """The parsed expression (E_INVALID_ARGUMENT if it is too long or not arithmetic); evaluate()
    bounds its parts (MAX_NODES) as it visits them."""
    if not isinstance(expression, str) or not expression.strip():
        raise _bad("`expression` must be a non-empty string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise _bad(
            f"the expression is {len(expression):,} characters, over the limit of {MAX_EXPRESSION_CHARS:,}"
        )
    ok = _ALLOWED_TEXT.match(expression)
    end = ok.end() if ok else 0
    if end < len(expression):
        raise _bad(f"the character {expression[end]!r} (at {end + 1}) is not allowed: {_HELP}")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _bad(f"not a valid expression ({getattr(exc, 'msg', None) or type(exc).__name__})") from None
    return tree


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression, e.g. "sqrt(2) * (3 + 4) ** 2"."""
    tree = parse(expression)
    source = expression.strip()
    stack: list[tuple[ast.expr, bool]] = [(tree.body, False)]
    values: list[Number] = []
    parts = 0
    while stack:
        node, ready = stack.pop()
        if not ready:
            parts += 1
            if parts > MAX_NODES:
                raise _bad(f"the expression has over {MAX_NODES:,} parts")
            kids = _children(node, source)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
            continue
        n = len(node.args) if isinstance(node, ast.Call) else 2 if isinstance(node, ast.BinOp) else 1
        n = 0 if isinstance(node, ast.Constant | ast.Name) else n
        args = values[len(values) - n :]
        del values[len(values) - n :]
        try:
            values.append(_checked(_apply(node, args)))
        except ZeroDivisionError as exc:
            detail = str(exc) if "cannot" in str(exc) else ""
            raise _bad(f"division by zero{': ' + detail if detail else ''}", source, node) from None
        except OverflowError as exc:
            raise _bad(f"the result is too large ({exc})", source, node) from None
        except (ValueError, TypeError) as exc:
            why = "no real result" if "domain" in str(exc) else str(exc)
            raise _bad(f"math error: {why}", source, node) from None
    return values[0]
