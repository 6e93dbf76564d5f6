"""The restricted expression language: grammar, whitelist, and vectorised == scalar evaluation."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators import expr
from tests.helpers.expr_reference import evaluate_row

SCOPE = expr.Scope(frozenset({"x", "y", "z"}), {"g": ("a", "b", "c")})


def test_parses_and_evaluates_every_construct() -> None:
    env = {"x": np.array([1.0, 4.0]), "g": expr.Categorical(np.array([0, 2]), ("a", "b", "c"))}
    scope = expr.Scope(frozenset({"x"}), {"g": ("a", "b", "c")})
    text = (
        'clamp(2*x + 1, 0, 5) + where(x > 2 and not (g == "a"), 10, -10) '
        '+ lookup(g, {"a": 1.5, "c": -2}, 0) + sqrt(x) ** 2 % 3 + max(x, 2, 3) + pi*0'
    )
    expr.check(text, scope)
    result = expr.evaluate(text, env, 2)
    assert result.tolist() == pytest.approx([3 - 10 + 1.5 + 1 + 3, 5 + 10 - 2 + 1 + 4])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os')", "dunder"),
        ("__import__('os').system('true')", "attribute access"),
        ("x.__class__", "attribute access"),
        ("os.system", "attribute access"),
        ("lambda: 1", "lambdas"),
        ("[x for x in y]", "subscripts and lists"),
        ("(x for x in y)", "comprehensions"),
        ("import os", "imports"),
        ("eval('1')", "eval"),
        ("exec('1')", "exec"),
        ("open('f')", "open"),
        ("x[0]", "subscripts"),
        ("x = 1", "assignment"),
        ("x; y", "statements"),
        ("foo(x)", "unknown function 'foo'"),
        ("exp(x, y)", "exp() takes 1 arguments"),
        ("x if y else z", "where(condition"),
        ("1 < x < 2", "chained comparisons"),
        ("'text'", "may only be compared"),
        ("g + 1", "categorical variable 'g'"),
        ('g == "d"', "'d' is not a value"),
        ('lookup(g, {"a": 1})', "no entry for 'b'"),
        ('lookup(x, {"a": 1})', "needs a categorical variable"),
        ('lookup(g, {"a": 1, "a": 2}, 0)', "duplicate key"),
        ("unknown_name + 1", "unknown name 'unknown_name'"),
        ("exp", "must be called"),
        ("", "empty"),
        ("x +", "unexpected 'end of expression'"),
        ("(" * 60 + "x" + ")" * 60, "nested too deeply"),
        ("+".join(["x"] * 500), "too large"),
        ("1" * 5000, "too long"),
        ("x\\n", "backslashes"),
        ("x @ y", "decorators"),
        ("{'a': 1}", "table literal"),
    ],
)
def test_forbidden_constructs_are_refused(text: str, message: str) -> None:
    with pytest.raises(expr.ExpressionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expr.check(text, SCOPE)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_hostile_text_never_runs_code(text: str) -> None:
    marker = os.path.join(tempfile.gettempdir(), "sgfs-expr-marker")
    hostile = f"__import__('os').system('touch {marker}') or {text}"
    for candidate in (text, hostile):
        with contextlib.suppress(expr.ExpressionError):
            expr.check(candidate, SCOPE)
    assert not os.path.exists(marker)


# --------------------------------------------------------------------------------------------------
# Property: the vectorised evaluation equals the scalar reference, row by row.
# --------------------------------------------------------------------------------------------------
_numbers = st.sampled_from(["0", "1", "2", "0.5", "3.25", "10", "1e-3", "7"])
_names = st.sampled_from(["x", "y", "z"])
_leaves = st.one_of(_numbers, _names)


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(
        children,
        st.sampled_from(["+", "-", "*", "/", "%", "**", "<", ">=", "==", "!=", "and", "or"]),
        children,
    )
    unary_funcs = st.sampled_from(
        [
            "exp",
            "log",
            "log10",
            "log1p",
            "sqrt",
            "abs",
            "sin",
            "cos",
            "tanh",
            "sigmoid",
            "floor",
            "ceil",
            "round",
        ]
    )
    return st.one_of(
        binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(unary_funcs, children).map(lambda t: f"{t[0]}({t[1]})"),
        children.map(lambda c: f"-({c})"),
        children.map(lambda c: f"(not ({c}))"),
        st.tuples(children, children, children).map(lambda t: f"where({t[0]}, {t[1]}, {t[2]})"),
        st.tuples(children, children, children).map(lambda t: f"clamp({t[0]}, {t[1]}, {t[2]})"),
        st.tuples(children, children).map(lambda t: f"max({t[0]}, {t[1]})"),
        st.tuples(children, children).map(lambda t: f"min({t[0]}, {t[1]})"),
        st.tuples(children, children).map(lambda t: f"pow({t[0]}, {t[1]})"),
        st.sampled_from(
            [
                '(g == "a")',
                '(g != "c")',
                'lookup(g, {"a": 1.5, "b": -2}, 0.25)',
                'lookup(g, {"a": 1, "b": 2, "c": 3})',
            ]
        ),
    )


expressions = st.recursive(_leaves, _extend, max_leaves=12)
finite = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False).map(lambda v: v + 0.0)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, st.lists(st.tuples(finite, finite, finite, st.sampled_from("abc")), min_size=1, max_size=6))
def test_vectorised_equals_scalar_reference(text: str, rows: list[tuple[float, float, float, str]]) -> None:
    tree = expr.check(text, SCOPE)
    env = {
        "x": np.array([r[0] for r in rows]),
        "y": np.array([r[1] for r in rows]),
        "z": np.array([r[2] for r in rows]),
        "g": expr.Categorical(np.array(["abc".index(r[3]) for r in rows]), ("a", "b", "c")),
    }
    vectorised = expr.evaluate(text, env, len(rows))
    for i, (x, y, z, g) in enumerate(rows):
        expected = evaluate_row(tree, {"x": x, "y": y, "z": z, "g": g})
        got = float(vectorised[i])
        if math.isnan(expected):
            assert math.isnan(got), (text, rows[i], got)
        else:
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), (text, rows[i])


def test_parse_is_cached_and_pure() -> None:
    assert expr.parse("x + 1") is expr.parse("x + 1")
    assert expr.names_used(expr.parse('x + lookup(g, {"a": 1}, 0)')) == {"x", "g"}


@pytest.mark.parametrize("text", ["x + 1e999", "1e309 * x", "x * 9" + "9" * 400 + ".0", 'lookup(g, {"a": 1e999}, 0)'])
def test_literals_that_overflow_are_refused(text: str) -> None:
    """``1e999`` is infinity as a double: a literal must be a finite number, refused with one clear message."""
    with pytest.raises(expr.ExpressionError, match="out of range"):
        expr.check(text, SCOPE)


def test_restrict_levels_folds_absent_levels_and_keeps_the_rest() -> None:
    """A design formula names every level of a factor; a repository varies some: comparisons with an absent level
    become constants and its lookup() entries go, and the result evaluates as the formula on the present rows."""
    formula = 'where(course == "CIS", 0, n) + lookup(course, {"RR": 1, "CIS": -2}, 0.5) * n - (course != "PP")'
    levels = ("RR", "PP")
    restricted = expr.restrict_levels(formula, {"course": levels})
    assert "CIS" not in restricted
    expr.check(restricted, expr.Scope(frozenset({"n"}), {"course": levels}))
    with pytest.raises(expr.ExpressionError, match="not a value"):
        expr.check(formula, expr.Scope(frozenset({"n"}), {"course": levels}))
    codes = np.array([0, 1, 0, 1])
    n = np.array([1.0, 2.0, 3.0, 4.0])
    full = expr.evaluate(formula, {"course": expr.Categorical(codes, ("RR", "PP", "CIS")), "n": n}, 4)
    cut = expr.evaluate(restricted, {"course": expr.Categorical(codes, levels), "n": n}, 4)
    assert full.tolist() == cut.tolist()
    assert expr.restrict_levels(formula, {"course": ("RR", "PP", "CIS")}) is formula  # nothing absent: unchanged
    assert expr.parse(expr.to_text(expr.parse(formula))) == expr.parse(formula)
