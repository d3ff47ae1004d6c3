"""calculate: the safe arithmetic evaluator (no eval) — values, every refusal coded and named,
hostile sizes refused before they cost anything, and property tests on arbitrary text."""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import WorkbenchError
from workbench.ctx import calculate
from workbench.ctx.calculate import (
    FUNCTIONS,
    MAX_EXPRESSION_CHARS,
    MAX_INT_BITS,
    MAX_NODES,
    evaluate,
)


def refused(expression: Any) -> WorkbenchError:
    with pytest.raises(WorkbenchError) as info:
        evaluate(expression)
    assert info.value.code == "E_INVALID_ARGUMENT" and info.value.details["field"] == "expression"
    return info.value


@pytest.mark.parametrize(
    "expression, value",
    [
        ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3.5), ("7 // 2", 3), ("-7 // 2", -4),
        ("7 % 3", 1), ("-7 % 3", 2), ("2 ** 10", 1024), ("2 ** -1", 0.5), ("-2 ** 2", -4),
        ("(-2) ** 2", 4), ("+-+3", -3), ("0 ** 0", 1), ("1_000 + 0xff", 1255), ("1.5e3", 1500.0),
        ("abs(-3)", 3), ("round(2.567, 2)", 2.57), ("round(2.5)", 2), ("round(1234, -2)", 1200),
        ("round(10 ** 300, -100000)", 0), ("min(3, 1, 2)", 1), ("max(4)", 4), ("sqrt(16)", 4.0),
        ("floor(-0.5)", -1), ("ceil(0.5)", 1), ("log(8, 2)", 3.0), ("log(e)", 1.0), ("exp(0)", 1.0),
        ("sin(0) + cos(0) + tan(0)", 1.0), ("pi", math.pi), ("e", math.e), ("(1\n + 2)", 3),
        ("  42  ", 42), ("2 ** 1023", 2**1023), ("(-1) ** (2 ** 1000)", 1), ("2 ** -2000", 0.0),
        ("-" * 1999 + "1", -1), ("1+" * 999 + "1", 1000),
    ],
)  # fmt: skip
def test_values(expression: str, value: int | float) -> None:
    result = evaluate(expression)
    assert result == value and type(result) is type(value)


@pytest.mark.parametrize(
    "expression, words, at",
    [
        ("1 / 0", "division by zero", "1 / 0"),
        ("5 // (2 - 2)", "division by zero", "5 // (2 - 2)"),
        ("5 % 0.0", "division by zero", "5 % 0.0"),
        ("0 ** -1", "negative power", "0 ** -1"),
        ("0.0 ** -2.5", "negative power", "0.0 ** -2.5"),
        ("log(2, 1)", "division by zero", "log(2, 1)"),
        ("sqrt(-1)", "no real result", "sqrt(-1)"),
        ("log(0)", "no real result", "log(0)"),
        ("(-8) ** (1/3)", "no real result", "(-8) ** (1/3)"),
        ("exp(1000)", "too large", "exp(1000)"),
        ("1e308 * 10", "too large", "1e308 * 10"),
        ("1e999", "too large", "1e999"),
        ("2 ** 1024", "too large", "2 ** 1024"),
        ("2 ** 1023 * 2", "too large", "2 ** 1023 * 2"),
        ("9" * 400, "too large", None),
        ("sqrt(2 ** 1023 * 2 - 1)", "too large", None),
        ("foo", "unknown name 'foo'", "foo"),
        ("foo(1)", "only these functions", "foo(1)"),
        ("pi(1)", "only these functions", "pi(1)"),
        ("sqrt", "is a function", "sqrt"),
        ("min()", "takes 1 or more", "min()"),
        ("round(1, 2, 3)", "takes 1 or 2", None),
        ("abs(1, 2)", "takes 1 argument", None),
        ("max(1, x=2)", "plain arguments", None),
        ("round(1.5, 1.5)", "whole number", None),
        ("1 ^ 2", "write **", "1 ^ 2"),
        ("1 << 2", "<<", None),
        ("~1", "~", None),
        ("not 1", "not", None),
        ("1 < 2", "comparisons", None),
        ("1 and 2", "and/or", None),
        ("1 if 2 else 3", "conditional", None),
        ("x.y", "attribute", None),
        ("True", "True is not allowed", "True"),
        ("1j", "complex", "1j"),
        ("1 <> 2", "not a valid expression", None),
        ("1 +", "not a valid expression", None),
        ("'a' * 3", 'character "\'"', None),
        ("__import__('os')", 'character "\'"', None),
        ("(a:=1)", "character ':'", None),
        ("[1][0]", "character '['", None),
        ("1 # comment", "character '#'", None),
        ("é", "character 'é'", None),
        ("\ud800", "character", None),
        ("1\x00", "character", None),
        ("", "non-empty", None),
        ("   ", "non-empty", None),
    ],
)
def test_refusals_are_coded_and_name_what_is_wrong(expression: str, words: str, at: str | None) -> None:
    e = refused(expression)
    assert words in e.message, e.message
    if at is not None:
        assert e.details["at"] == at


@pytest.mark.parametrize("value", [None, 3, b"1+1", ["1"]])
def test_non_strings_are_refused(value: Any) -> None:
    refused(value)


@pytest.mark.parametrize(
    "expression",
    [
        "2 ** 10 ** 10",  # computing this would take hours and ~1 GiB: refused from the sizes alone
        "10 ** 10 ** 100",
        "(2 ** 1000) ** (2 ** 1000)",
        "2 ** " * 300 + "2",  # a tower, right-associative: the innermost parts fail first
        "3 ** 3 ** 3 ** 3",
        "(-5) ** (10 ** 300)",
        "max(2 ** 1000 * 2 ** 1000, 1)",
    ],
)
def test_huge_powers_are_refused_not_computed(expression: str) -> None:
    assert "too large" in refused(expression).message


def test_size_bounds() -> None:
    assert "over the limit" in refused("1" + "+1" * (MAX_EXPRESSION_CHARS // 2)).message
    assert len("-" * (MAX_EXPRESSION_CHARS - 1) + "1") == MAX_EXPRESSION_CHARS  # the longest chain
    many = "+".join(["(1)"] * 400)  # nodes past MAX_NODES need more text than the limit allows
    assert evaluate(many) == 400 and MAX_NODES >= MAX_EXPRESSION_CHARS // 2


def test_parts_are_counted_as_they_are_visited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calculate, "MAX_NODES", 5)  # the text limit keeps the real one out of reach
    assert evaluate("1+2+3") == 6  # five parts
    assert "over 5 parts" in refused("1+2+3+4").message


def test_deep_nesting_is_refused_or_evaluated_without_recursion() -> None:
    for deep in ["(" * 250 + "1" + ")" * 250, "abs(" * 300 + "1" + ")" * 300, "-(" * 199 + "1" + ")" * 199]:
        try:
            assert evaluate(deep) in (1, -1)
        except WorkbenchError as e:
            assert e.code == "E_INVALID_ARGUMENT"


def test_every_function_is_named_in_the_help() -> None:
    message = refused("nope").message
    assert all(name in message for name in [*FUNCTIONS, "pi", "e"])


def test_integers_stay_within_the_bound() -> None:
    assert evaluate("(2 ** 1023 - 1) * 2 + 1") == 2**1024 - 1  # exactly at the edge
    assert "too large" in refused("(2 ** 1023 - 1) * 2 + 1 + 1").message
    assert (2**1024 - 1).bit_length() == MAX_INT_BITS


# == properties =================================================================================


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_gives_a_number_or_a_coded_error(text: str) -> None:
    try:
        value = evaluate(text)
    except WorkbenchError as e:
        assert e.code == "E_INVALID_ARGUMENT"
    else:
        assert type(value) in (int, float)


_ATOMS = st.one_of(
    st.integers(-1000, 1000).map(str),
    st.floats(-1e6, 1e6, allow_nan=False).map(repr),
    st.sampled_from(["pi", "e", "0", "1", "2 ** 1023", "1e308"]),
)


def _grammar(ops: list[str], functions: list[str]) -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(ops), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(["-", "+"]), inner).map(lambda t: f"{t[0]}{t[1]}"),
            st.tuples(st.sampled_from(functions), st.lists(inner, min_size=1, max_size=3)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"
            ),
        )

    return st.recursive(_ATOMS, extend, max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_grammar(["+", "-", "*", "/", "//", "%", "**"], list(FUNCTIONS)))
def test_generated_expressions_give_bounded_numbers_or_coded_errors(text: str) -> None:
    try:
        value = evaluate(text)
    except WorkbenchError as e:
        assert e.code == "E_INVALID_ARGUMENT"
    else:
        assert type(value) in (int, float)
        assert math.isfinite(value) if isinstance(value, float) else value.bit_length() <= MAX_INT_BITS


_ORACLE_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _oracle(node: ast.expr) -> int:
    """Python's own arithmetic on the same tree (integers, + - * only: always cheap)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return -_oracle(node.operand) if isinstance(node.op, ast.USub) else _oracle(node.operand)
    assert isinstance(node, ast.BinOp)
    return _ORACLE_OPS[type(node.op)](_oracle(node.left), _oracle(node.right))


_INT_EXPRESSIONS = st.recursive(
    st.integers(-(10**6), 10**6).map(str),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda x: f"-{x}"),
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_INT_EXPRESSIONS)
def test_integer_arithmetic_matches_python(text: str) -> None:
    expected = _oracle(ast.parse(text, mode="eval").body)
    if expected.bit_length() > MAX_INT_BITS:
        refused(text)
    else:
        assert evaluate(text) == expected
