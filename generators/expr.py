"""The restricted expression language for dependent variables.

An expression is parsed by our own tokenizer and recursive-descent parser into a small tree, checked
against a whitelist (names, functions, arities, categorical values) and evaluated with numpy over whole
columns. Nothing is ever handed to Python's ``exec``, ``eval`` or ``compile``.

Grammar (lowest precedence first)::

    expr       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | comparison
    comparison := additive (("<" | "<=" | ">" | ">=" | "==" | "!=") additive)?
    additive   := term (("+" | "-") term)*
    term       := unary (("*" | "/" | "%") unary)*
    unary      := ("-" | "+") unary | power
    power      := atom ("**" unary)?
    atom       := NUMBER | STRING | NAME | NAME "(" args ")" | "(" expr ")" | "{" STRING ":" expr, ... "}"

Truth values are the numbers 1.0 and 0.0; ``where(c, a, b)`` picks ``a`` where ``c`` is non-zero.
Categorical variables may only be compared with ``==``/``!=`` against one of their values, or mapped to
numbers with ``lookup(var, {"value": number, ...}[, default])``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

MAX_LENGTH = 4000
MAX_NODES = 400
MAX_DEPTH = 40

# name -> (min args, max args); ``lookup`` is special-cased by the parser.
FUNCTIONS: dict[str, tuple[int, int]] = {
    "exp": (1, 1),
    "log": (1, 1),
    "log10": (1, 1),
    "log1p": (1, 1),
    "sqrt": (1, 1),
    "abs": (1, 1),
    "sin": (1, 1),
    "cos": (1, 1),
    "tanh": (1, 1),
    "sigmoid": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
    "round": (1, 1),
    "pow": (2, 2),
    "min": (2, 8),
    "max": (2, 8),
    "clamp": (3, 3),
    "where": (3, 3),
    "lookup": (2, 3),
}
CONSTANTS: dict[str, float] = {"pi": math.pi}
KEYWORDS = frozenset({"and", "or", "not"})
# Words of Python that must never be read as names: they get a specific refusal.
_FORBIDDEN_WORDS = {
    "lambda": "lambdas are not allowed",
    "import": "imports are not allowed",
    "for": "comprehensions are not allowed",
    "in": "membership tests and comprehensions are not allowed",
    "if": "use where(condition, a, b) instead of 'if'",
    "else": "use where(condition, a, b) instead of 'else'",
    "def": "definitions are not allowed",
    "class": "definitions are not allowed",
    "exec": "exec is not allowed",
    "eval": "eval is not allowed",
    "compile": "compile is not allowed",
    "open": "open is not allowed",
    "global": "statements are not allowed",
    "yield": "generators are not allowed",
    "await": "coroutines are not allowed",
    "is": "identity tests are not allowed",
}
RESERVED_NAMES = frozenset(FUNCTIONS) | frozenset(CONSTANTS) | KEYWORDS | frozenset(_FORBIDDEN_WORDS)


class ExpressionError(ValueError):
    """An expression that does not parse or breaks the whitelist."""


# --------------------------------------------------------------------------------------------------
# Syntax tree
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Str:
    value: str


@dataclass(frozen=True)
class Name:
    id: str


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "+", "not"
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str  # + - * / % ** < <= > >= == != and or
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Lookup:
    var: str
    table: tuple[tuple[str, float], ...]
    default: float | None


Node = Num | Str | Name | Unary | Binary | Call | Lookup

# --------------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------------
# Whitespace, then one of: number, quoted string, name, operator (one group each, in this order).
_TOKEN = re.compile(
    r"""\s*(?:((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|("[^"\\\n]*"|'[^'\\\n]*')|([A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(\*\*|<=|>=|==|!=|[-+*/%<>(),{}:]))"""
)
_KINDS = ("num", "str", "name", "op")


class _Token(NamedTuple):
    kind: str  # num str name op end
    text: str
    pos: int


_BAD_CHARACTER = {
    ".": "attribute access is not allowed",
    "[": "subscripts and lists are not allowed",
    "]": "subscripts and lists are not allowed",
    "=": "assignment is not allowed",
    ";": "statements are not allowed",
    "@": "decorators and matrix products are not allowed",
    "\\": "backslashes and escapes are not allowed",
}


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            break
        pos = match.end()
        for kind, group in zip(_KINDS, match.groups(), strict=True):
            if group is not None:
                tokens.append(_Token(kind, group, pos - len(group)))
                break
    if pos < len(text.rstrip()):
        pos += len(text[pos:]) - len(text[pos:].lstrip())  # the offending character, not the space before it
        char = text[pos]
        reason = _BAD_CHARACTER.get(char, f"unexpected character {char!r}")
        raise ExpressionError(f"{reason} (at position {pos})")
    tokens.append(_Token("end", "", len(text)))
    return tokens


# --------------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0

    # helpers
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expect(self, text: str) -> _Token:
        token = self.take()
        if token.text != text:
            _refuse_forbidden(token)
            found = token.text or "end of expression"
            raise ExpressionError(f"expected {text!r} but found {found!r} (at position {token.pos})")
        return token

    def node(self, node: Node) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(f"expression is too large (more than {MAX_NODES} nodes)")
        return node

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"expression is nested too deeply (more than {MAX_DEPTH} levels)")

    # grammar
    def parse(self) -> Node:
        tree = self.expr()
        token = self.peek()
        if token.kind != "end":
            _refuse_forbidden(token)
            raise ExpressionError(f"unexpected {token.text!r} (at position {token.pos})")
        return tree

    def expr(self) -> Node:
        self.enter()
        try:
            return self.or_expr()
        finally:
            self.depth -= 1

    def or_expr(self) -> Node:
        left = self.and_expr()
        while self.peek().text == "or":
            self.take()
            left = self.node(Binary("or", left, self.and_expr()))
        return left

    def and_expr(self) -> Node:
        left = self.not_expr()
        while self.peek().text == "and":
            self.take()
            left = self.node(Binary("and", left, self.not_expr()))
        return left

    def not_expr(self) -> Node:
        if self.peek().text == "not":
            self.take()
            self.enter()
            try:
                return self.node(Unary("not", self.not_expr()))
            finally:
                self.depth -= 1
        return self.comparison()

    def comparison(self) -> Node:
        left = self.additive()
        if self.peek().text in ("<", "<=", ">", ">=", "==", "!="):
            op = self.take().text
            left = self.node(Binary(op, left, self.additive()))
            if self.peek().text in ("<", "<=", ">", ">=", "==", "!="):
                raise ExpressionError(f"chained comparisons are not allowed (at position {self.peek().pos})")
        return left

    def additive(self) -> Node:
        left = self.term()
        while self.peek().text in ("+", "-"):
            op = self.take().text
            left = self.node(Binary(op, left, self.term()))
        return left

    def term(self) -> Node:
        left = self.unary()
        while self.peek().text in ("*", "/", "%"):
            op = self.take().text
            left = self.node(Binary(op, left, self.unary()))
        return left

    def unary(self) -> Node:
        if self.peek().text in ("-", "+"):
            op = self.take().text
            self.enter()
            try:
                return self.node(Unary(op, self.unary()))
            finally:
                self.depth -= 1
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.peek().text == "**":
            self.take()
            self.enter()
            try:
                return self.node(Binary("**", base, self.unary()))
            finally:
                self.depth -= 1
        return base

    def atom(self) -> Node:
        token = self.take()
        if token.kind == "num":
            return self.node(Num(_finite(token)))
        if token.kind == "str":
            return self.node(Str(token.text[1:-1]))
        if token.kind == "name":
            return self.name(token)
        if token.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if token.text == "{":
            raise ExpressionError(f"a table literal is only allowed inside lookup() (at position {token.pos})")
        found = token.text or "end of expression"
        raise ExpressionError(f"unexpected {found!r} (at position {token.pos})")

    def name(self, token: _Token) -> Node:
        word = token.text
        if "__" in word:
            raise ExpressionError(f"dunder names are not allowed: {word!r}")
        if word in _FORBIDDEN_WORDS:
            raise ExpressionError(f"{_FORBIDDEN_WORDS[word]} (at position {token.pos})")
        if word in KEYWORDS:
            raise ExpressionError(f"unexpected {word!r} (at position {token.pos})")
        if self.peek().text != "(":
            if word in FUNCTIONS:
                raise ExpressionError(f"function {word!r} must be called")
            if word in CONSTANTS:
                return self.node(Num(CONSTANTS[word]))
            return self.node(Name(word))
        if word not in FUNCTIONS:
            raise ExpressionError(f"unknown function {word!r}")
        self.take()  # "("
        if word == "lookup":
            return self.lookup()
        args: list[Node] = []
        if self.peek().text != ")":
            args.append(self.expr())
            while self.peek().text == ",":
                self.take()
                args.append(self.expr())
        self.expect(")")
        low, high = FUNCTIONS[word]
        if not low <= len(args) <= high:
            wanted = str(low) if low == high else f"{low} to {high}"
            raise ExpressionError(f"{word}() takes {wanted} arguments, got {len(args)}")
        return self.node(Call(word, tuple(args)))

    def lookup(self) -> Node:
        var = self.take()
        if var.kind != "name" or var.text in RESERVED_NAMES or "__" in var.text:
            raise ExpressionError("lookup() takes a categorical variable name as its first argument")
        self.expect(",")
        self.expect("{")
        table: list[tuple[str, float]] = []
        while True:
            key = self.take()
            if key.kind != "str":
                raise ExpressionError(f"lookup() table keys must be quoted strings (at position {key.pos})")
            self.expect(":")
            table.append((key.text[1:-1], self.signed_number()))
            if self.peek().text == ",":
                self.take()
                if self.peek().text == "}":
                    break
                continue
            break
        self.expect("}")
        default: float | None = None
        if self.peek().text == ",":
            self.take()
            default = self.signed_number()
        self.expect(")")
        keys = [k for k, _ in table]
        if len(set(keys)) != len(keys):
            raise ExpressionError("lookup() table has a duplicate key")
        return self.node(Lookup(var.text, tuple(table), default))

    def signed_number(self) -> float:
        sign = 1.0
        if self.peek().text in ("-", "+"):
            sign = -1.0 if self.take().text == "-" else 1.0
        token = self.take()
        if token.kind != "num":
            raise ExpressionError(f"lookup() values must be numbers (at position {token.pos})")
        return sign * _finite(token)


def _finite(token: _Token) -> float:
    """A numeric literal's value; one that overflows a double (``1e999``) is refused, never infinity."""
    value = float(token.text)
    if not math.isfinite(value):
        raise ExpressionError(f"number {token.text[:40]!r} is out of range (at position {token.pos})")
    return value


def _refuse_forbidden(token: _Token) -> None:
    if token.kind == "name" and token.text in _FORBIDDEN_WORDS:
        raise ExpressionError(f"{_FORBIDDEN_WORDS[token.text]} (at position {token.pos})")


@lru_cache(maxsize=4096)
def parse(text: str) -> Node:
    """Parse an expression, refusing anything outside the grammar."""
    if not isinstance(text, str):
        raise ExpressionError("an expression must be a string")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression is too long ({len(text)} characters, at most {MAX_LENGTH})")
    if not text.strip():
        raise ExpressionError("expression is empty")
    return _Parser(text).parse()


# --------------------------------------------------------------------------------------------------
# Checking against the variables in scope
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scope:
    """What an expression may name: numeric variables, and categorical ones with their values."""

    numeric: frozenset[str]
    categorical: Mapping[str, tuple[str, ...]]


def names_used(tree: Node) -> set[str]:
    found: set[str] = set()

    def walk(node: Node) -> None:
        match node:
            case Name(id=name):
                found.add(name)
            case Lookup(var=var):
                found.add(var)
            case Unary(operand=operand):
                walk(operand)
            case Binary(left=left, right=right):
                walk(left)
                walk(right)
            case Call(args=args):
                for arg in args:
                    walk(arg)
            case _:
                pass

    walk(tree)
    return found


def check(text: str, scope: Scope) -> Node:
    """Parse and check an expression against a scope; the result is always numeric."""
    tree = parse(text)
    _check_node(tree, scope)
    return tree


def _check_node(node: Node, scope: Scope) -> None:
    match node:
        case Num():
            return
        case Str(value=value):
            raise ExpressionError(f"a string ({value!r}) may only be compared with a categorical variable")
        case Name(id=name):
            if name in scope.categorical:
                raise ExpressionError(
                    f"categorical variable {name!r} may only be compared with == or != or used in lookup()"
                )
            if name not in scope.numeric:
                raise ExpressionError(f"unknown name {name!r}")
        case Unary(operand=operand):
            _check_node(operand, scope)
        case Binary(op=op, left=left, right=right) if op in ("==", "!=") and _is_categorical_pair(left, right, scope):
            var, literal = (left, right) if isinstance(left, Name) else (right, left)
            assert isinstance(var, Name) and isinstance(literal, Str)
            if literal.value not in scope.categorical[var.id]:
                raise ExpressionError(f"{literal.value!r} is not a value of categorical variable {var.id!r}")
        case Binary(left=left, right=right):
            _check_node(left, scope)
            _check_node(right, scope)
        case Call(args=args):
            for arg in args:
                _check_node(arg, scope)
        case Lookup(var=var, table=table, default=default):
            if var not in scope.categorical:
                kind = "numeric variable" if var in scope.numeric else "unknown name"
                raise ExpressionError(f"lookup() needs a categorical variable, but {var!r} is a {kind}")
            values = scope.categorical[var]
            for key, _ in table:
                if key not in values:
                    raise ExpressionError(f"lookup() key {key!r} is not a value of {var!r}")
            missing = [v for v in values if v not in dict(table)]
            if missing and default is None:
                raise ExpressionError(f"lookup() on {var!r} has no entry for {missing[0]!r} and no default")


def restrict_levels(text: str, levels: Mapping[str, tuple[str, ...]]) -> str:
    """``text`` for a repository whose categorical variables take only ``levels``: a comparison with a level
    that is absent becomes the constant it always is (``==``: 0, ``!=``: 1) and lookup() entries of absent levels
    are dropped. A study design's formula names every level of its factors; a repository varies some of them.
    Returns ``text`` itself when nothing is absent."""
    tree = parse(text)
    restricted = _restrict(tree, levels)
    return text if restricted == tree else to_text(restricted)


def _restrict(node: Node, levels: Mapping[str, tuple[str, ...]]) -> Node:
    match node:
        case Binary(op=op, left=left, right=right) if op in ("==", "!=") and (
            (isinstance(left, Name) and isinstance(right, Str)) or (isinstance(left, Str) and isinstance(right, Name))
        ):
            var, literal = (left, right) if isinstance(left, Name) else (right, left)
            assert isinstance(var, Name) and isinstance(literal, Str)
            if var.id in levels and literal.value not in levels[var.id]:
                return Num(0.0 if op == "==" else 1.0)
            return node
        case Binary(op=op, left=left, right=right):
            return Binary(op, _restrict(left, levels), _restrict(right, levels))
        case Unary(op=op, operand=operand):
            return Unary(op, _restrict(operand, levels))
        case Call(func=func, args=args):
            return Call(func, tuple(_restrict(a, levels) for a in args))
        case Lookup(var=var, table=table, default=default) if var in levels:
            kept = tuple((k, v) for k, v in table if k in levels[var])
            if not kept:
                return Num(default if default is not None else 0.0)
            return Lookup(var, kept, default)
        case _:
            return node


def to_text(node: Node) -> str:
    """Expression text that parses back to ``node`` (every operation in parentheses)."""
    match node:
        case Num(value=value):
            return repr(value) if value >= 0 else f"({value!r})"
        case Str(value=value):
            return f'"{value}"'
        case Name(id=name):
            return name
        case Unary(op=op, operand=operand):
            return f"({op} {to_text(operand)})" if op == "not" else f"({op}{to_text(operand)})"
        case Binary(op=op, left=left, right=right):
            return f"({to_text(left)} {op} {to_text(right)})"
        case Call(func=func, args=args):
            return f"{func}({', '.join(to_text(a) for a in args)})"
        case Lookup(var=var, table=table, default=default):
            entries = ", ".join(f'"{k}": {v!r}' for k, v in table)
            tail = "" if default is None else f", {default!r}"
            return f"lookup({var}, {{{entries}}}{tail})"
    raise AssertionError(node)


def _is_categorical_pair(left: Node, right: Node, scope: Scope) -> bool:
    return (isinstance(left, Name) and left.id in scope.categorical and isinstance(right, Str)) or (
        isinstance(right, Name) and right.id in scope.categorical and isinstance(left, Str)
    )


# --------------------------------------------------------------------------------------------------
# Vectorised evaluation
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Categorical:
    """A categorical column as integer codes into its category names."""

    codes: npt.NDArray[np.int64]
    categories: tuple[str, ...]


Column = FloatArray | Categorical

_UNARY_FUNCS: dict[str, Callable[[FloatArray], FloatArray]] = {
    "exp": np.exp,
    "log": np.log,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "abs": np.abs,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
}


Evaluator = Callable[[Mapping[str, Column]], FloatArray]


def evaluate(text: str, env: Mapping[str, Column], n: int) -> FloatArray:
    """Evaluate a (checked) expression over ``n`` rows; IEEE semantics, no warnings."""
    run = compiled(text)
    with np.errstate(all="ignore"):
        result = run(env)
    if isinstance(result, np.ndarray) and result.shape == (n,) and result.dtype == np.float64:
        return result.copy()
    return np.broadcast_to(np.asarray(result, dtype=np.float64), (n,)).copy()


@lru_cache(maxsize=4096)
def compiled(text: str) -> Evaluator:
    """The expression as nested closures over the environment: the tree is walked once, not once per file.

    Every closure performs exactly the numpy operation the tree node names, on the same operands, so the
    values are those of a direct walk of the tree.
    """
    return _compile(parse(text))


def _compile(node: Node) -> Evaluator:
    match node:
        case Num(value=value):
            constant = np.float64(value)
            return lambda env: constant  # type: ignore[return-value]
        case Name(id=name):
            return lambda env: env[name]  # type: ignore[return-value]
        case Unary(op="-", operand=operand):
            negated = _compile(operand)
            return lambda env: -negated(env)
        case Unary(op="+", operand=operand):
            return _compile(operand)
        case Unary(op="not", operand=operand):
            inner = _compile(operand)
            return lambda env: _as_float(inner(env) == 0)
        case Binary(op=op, left=left, right=right) if op in ("==", "!=") and (
            isinstance(left, Str) or isinstance(right, Str)
        ):
            var, literal = (left, right) if isinstance(left, Name) else (right, left)
            assert isinstance(var, Name) and isinstance(literal, Str)
            return _compile_category_test(var.id, literal.value, op == "==")
        case Binary(op=op, left=left, right=right):
            binary, first, second = _BINARY[op], _compile(left), _compile(right)
            return lambda env: binary(first(env), second(env))
        case Call(func=func, args=args):
            return _compile_call(func, tuple(_compile(arg) for arg in args))
        case Lookup(var=var, table=table, default=default):
            return _compile_lookup(var, dict(table), math.nan if default is None else default)
        case Str():
            return _raiser("a bare string cannot be evaluated")
    return _raiser(f"cannot evaluate {node!r}")


def _raiser(message: str) -> Evaluator:
    def run(env: Mapping[str, Column]) -> FloatArray:
        raise ExpressionError(message)

    return run


def _compile_category_test(name: str, value: str, equal_wanted: bool) -> Evaluator:
    def run(env: Mapping[str, Column]) -> FloatArray:
        column = env[name]
        assert isinstance(column, Categorical)
        equal = column.codes == column.categories.index(value)
        result: FloatArray = (equal if equal_wanted else ~equal).astype(np.float64)
        return result

    return run


def _compile_call(func: str, args: tuple[Evaluator, ...]) -> Evaluator:
    if func in _UNARY_FUNCS:
        unary, arg = _UNARY_FUNCS[func], args[0]
        return lambda env: unary(arg(env))
    if func == "sigmoid":
        return lambda env: 1.0 / (1.0 + np.exp(-args[0](env)))
    if func == "pow":
        return lambda env: np.power(args[0](env), args[1](env))
    if func == "min":
        return lambda env: _reduce(np.minimum, [arg(env) for arg in args])
    if func == "max":
        return lambda env: _reduce(np.maximum, [arg(env) for arg in args])
    if func == "clamp":
        return lambda env: np.minimum(np.maximum(args[0](env), args[1](env)), args[2](env))
    if func == "where":
        return lambda env: np.where(args[0](env) != 0, args[1](env), args[2](env))
    return _raiser(f"unknown function {func!r}")


def _compile_lookup(name: str, mapping: dict[str, float], fallback: float) -> Evaluator:
    # The number of every category, per category list (one list per variable: computed once).
    per_categories: dict[tuple[str, ...], FloatArray] = {}

    def run(env: Mapping[str, Column]) -> FloatArray:
        column = env[name]
        assert isinstance(column, Categorical)
        per_code = per_categories.get(column.categories)
        if per_code is None:
            per_code = np.array([mapping.get(c, fallback) for c in column.categories], dtype=np.float64)
            per_categories[column.categories] = per_code
        result: FloatArray = per_code[column.codes]
        return result

    return run


def _reduce(op: Callable[[FloatArray, FloatArray], FloatArray], values: Sequence[FloatArray]) -> FloatArray:
    result = values[0]
    for value in values[1:]:
        result = op(result, value)
    return result


def _as_float(mask: npt.NDArray[np.bool_]) -> FloatArray:
    return np.asarray(mask, dtype=np.float64)


_BINARY: dict[str, Callable[[FloatArray, FloatArray], FloatArray]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "%": np.fmod,
    "**": np.power,
    "<": lambda a, b: _as_float(np.less(a, b)),
    "<=": lambda a, b: _as_float(np.less_equal(a, b)),
    ">": lambda a, b: _as_float(np.greater(a, b)),
    ">=": lambda a, b: _as_float(np.greater_equal(a, b)),
    "==": lambda a, b: _as_float(np.equal(a, b)),
    "!=": lambda a, b: _as_float(np.not_equal(a, b)),
    "and": lambda a, b: _as_float((a != 0) & (b != 0)),
    "or": lambda a, b: _as_float((a != 0) | (b != 0)),
}
