"""A plain scalar evaluator for the expression language, written for the tests.

It walks the parsed tree one row at a time with Python's ``math`` module and IEEE-754 rules spelled out by
hand, so the vectorised numpy evaluator can be checked against an independent implementation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from generators import expr

Value = float | str


def _div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _call(name: str, args: list[float]) -> float:
    x = args[0]
    if name == "exp":
        try:
            return math.exp(x)
        except OverflowError:
            return math.inf
    if name in ("log", "log10"):
        if math.isnan(x) or x < 0:
            return math.nan
        if x == 0:
            return -math.inf
        return math.log(x) if name == "log" else math.log10(x)
    if name == "log1p":
        if math.isnan(x) or x < -1:
            return math.nan
        return -math.inf if x == -1 else math.log1p(x)
    if name == "sqrt":
        return math.nan if (math.isnan(x) or x < 0) else math.sqrt(x)
    if name == "abs":
        return abs(x)
    if name in ("sin", "cos"):
        if math.isinf(x) or math.isnan(x):
            return math.nan
        return math.sin(x) if name == "sin" else math.cos(x)
    if name == "tanh":
        return math.tanh(x)
    if name == "sigmoid":
        try:
            return 1.0 / (1.0 + math.exp(-x))
        except OverflowError:
            return 0.0
    if name in ("floor", "ceil", "round"):
        if math.isinf(x) or math.isnan(x):
            return x
        return float({"floor": math.floor, "ceil": math.ceil, "round": round}[name](x))
    if name == "pow":
        return _pow(args[0], args[1])
    if name == "min":
        return math.nan if any(math.isnan(a) for a in args) else min(args)
    if name == "max":
        return math.nan if any(math.isnan(a) for a in args) else max(args)
    if name == "clamp":
        lo_applied = math.nan if math.isnan(x) or math.isnan(args[1]) else max(x, args[1])
        return math.nan if math.isnan(lo_applied) or math.isnan(args[2]) else min(lo_applied, args[2])
    if name == "where":
        return args[1] if x != 0 else args[2]
    raise AssertionError(name)


def _pow(a: float, b: float) -> float:
    try:
        result = math.pow(a, b)
    except OverflowError:
        return math.inf if a > 0 or (float(b).is_integer() and b % 2 == 0) else -math.inf
    except ValueError:
        if a == 0.0 and b < 0:  # IEEE 754 (numpy, C): pow(±0, negative odd integer) is ±inf, else +inf
            return math.copysign(math.inf, a) if float(b).is_integer() and b % 2 == 1 else math.inf
        return math.nan
    return result


def _fmod(a: float, b: float) -> float:
    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    return math.fmod(a, b)


def evaluate_row(node: expr.Node, row: Mapping[str, Value]) -> float:
    if isinstance(node, expr.Num):
        return node.value
    if isinstance(node, expr.Name):
        value = row[node.id]
        assert isinstance(value, float)
        return value
    if isinstance(node, expr.Unary):
        inner = evaluate_row(node.operand, row)
        return {"-": -inner, "+": inner, "not": float(inner == 0)}[node.op]
    if isinstance(node, expr.Binary):
        if node.op in ("==", "!=") and (isinstance(node.left, expr.Str) or isinstance(node.right, expr.Str)):
            var, text = (node.left, node.right) if isinstance(node.left, expr.Name) else (node.right, node.left)
            assert isinstance(var, expr.Name) and isinstance(text, expr.Str)
            equal = row[var.id] == text.value
            return float(equal if node.op == "==" else not equal)
        a, b = evaluate_row(node.left, row), evaluate_row(node.right, row)
        ops = {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: _div(a, b),
            "%": lambda: _fmod(a, b),
            "**": lambda: _pow(a, b),
            "<": lambda: float(a < b),
            "<=": lambda: float(a <= b),
            ">": lambda: float(a > b),
            ">=": lambda: float(a >= b),
            "==": lambda: float(a == b),
            "!=": lambda: float(a != b),
            "and": lambda: float(a != 0 and b != 0),
            "or": lambda: float(a != 0 or b != 0),
        }
        try:
            return ops[node.op]()
        except OverflowError:
            return math.inf
    if isinstance(node, expr.Call):
        return _call(node.func, [evaluate_row(arg, row) for arg in node.args])
    if isinstance(node, expr.Lookup):
        table = dict(node.table)
        key = row[node.var]
        assert isinstance(key, str)
        if key in table:
            return table[key]
        return math.nan if node.default is None else node.default
    raise AssertionError(node)
