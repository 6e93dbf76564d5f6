"""The spec: the privileged, typed description of one repository (the "data-generating program").

Everything about a repository follows from its spec: the tree, every file's bytes, every answer. Specs
round-trip losslessly through JSON (``to_json``/``from_json``); loading validates every field and refuses a
malformed or hostile spec with one :class:`SpecError` naming the offending field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import date
from typing import Any, TypeVar

from generators import expr

FORMAT_VERSION = 1
EXTENSIONS = ("csv", "json", "jsonl", "xlsx", "txt", "log")
ROLES = ("identifier", "datetime", "independent", "dependent")
CONTINUOUS_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": ("mean", "sd"),
    "uniform": ("low", "high"),
    "exponential": ("scale",),
    "beta": ("a", "b", "low", "high"),
}
INTEGER_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "bernoulli": ("p",),
    "binomial": ("n", "p"),
    "geometric": ("p",),
    "negative_binomial": ("r", "p"),
    "poisson": ("lam",),
}
SPECIAL_PLACEHOLDERS = ("researcher", "date", "seq_number")
JOINERS = ("-", "_")
VALUE_STYLES = ("{name}={val}", "{name}_{val}", "{name}-{val}", "{name}{val}", "{val}")
# strftime-like formats, rendered by our own code (no locale, no time zone).
DATE_FORMATS = ("%Y-%m-%d", "%Y%m%d", "%Y_%m_%d", "%d%b%Y")
# Matched whole (``fullmatch``, and ``\Z`` rather than ``$``, which also matches before a final newline).
COLUMN_RE = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
PATH_TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.]{0,23}\Z")
RESEARCHER_RE = re.compile(r"[A-Za-z][A-Za-z.]{0,23}\Z")
CATEGORY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+-]{0,31}\Z")
REPO_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,79}\Z")
PREFIX_RE = re.compile(r"[A-Z]{0,6}\Z")
UNIVERSE_RE = re.compile(r"[0-9a-f]{64}\Z")  # a keyed universe's salt (generators.keys)
# A spec's JSON text is refused past this many characters before it is parsed.
MAX_SPEC_TEXT = 1 << 20
MAX_TEXT = 20_000
# Strings that pandas and other readers turn into missing values or booleans by default: a category with
# one of these names would silently change what an agent reads.
NA_LIKE = frozenset(
    {
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
        "True",
        "False",
        "TRUE",
        "FALSE",
        "true",
        "false",
    }
)
MAX_VALUES = 64
MAX_VARIABLES = 40


class SpecError(ValueError):
    """A spec that is malformed, inconsistent or hostile."""


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Context:
    field: str
    domain: str
    subdomain: str
    description: str


@dataclass(frozen=True)
class Description:
    plan: str
    hypotheses: tuple[str, ...]
    independent: tuple[str, ...]
    dependent: tuple[str, ...]
    confounders: tuple[str, ...]
    setup: str


@dataclass(frozen=True)
class Project:
    title: str
    repo_name: str
    description: Description
    abstract: str


@dataclass(frozen=True)
class Readme:
    present: bool
    show_title: bool
    show_abstract: bool


@dataclass(frozen=True)
class PathVariable:
    """An experimental condition encoded in directory and file names."""

    name: str
    column: str
    description: str
    unit: str
    values: tuple[str, ...] | tuple[float, ...]

    @property
    def numeric(self) -> bool:
        return not isinstance(self.values[0], str)


@dataclass(frozen=True)
class PathTemplate:
    """Components joined by ``/``; the last is the file name (without extension)."""

    components: tuple[tuple[str, ...], ...]
    joiners: tuple[str, ...]
    value_style: str
    date_format: str
    seq_width: int

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(p for component in self.components for p in component)


@dataclass(frozen=True)
class Distribution:
    kind: str
    params: Mapping[str, float]


@dataclass(frozen=True)
class Variable:
    """One column of every data file."""

    name: str
    column: str
    role: str
    type: str  # identifier: "string"; datetime: "datetime"; else categorical / integer / continuous
    description: str
    unit: str = ""
    distribution: Distribution | None = None
    categories: tuple[str, ...] = ()
    probs: tuple[float, ...] = ()
    expression: str | None = None
    noise_sd: float = 0.0
    bounds: tuple[float | None, float | None] = (None, None)
    prefix: str = ""


@dataclass(frozen=True)
class Params:
    """Generation parameters (paper A.2, A.4); all configurable, defaults as in the paper."""

    min_files: int = 15
    max_files: int = 10_000
    files_alpha: float = 1.05
    files_beta: float = 25.0
    rows_mean: float = 160.0
    rows_sd: float = 60.0
    rows_min: int = 20
    rows_max: int = 300
    noise_fraction: float = 0.1
    sig_digits: int = 6


@dataclass(frozen=True)
class Spec:
    seed: int
    context: Context
    project: Project
    readme: Readme
    extension: str
    template: PathTemplate
    researchers: tuple[str, ...]
    dates: tuple[str, ...]  # ISO dates
    seq_count: int
    path_variables: tuple[PathVariable, ...]
    variables: tuple[Variable, ...]
    start_date: str  # ISO date; datetime columns evaluate to days since this date
    params: Params = field(default_factory=Params)
    format_version: int = FORMAT_VERSION
    # The seed's salt in a keyed universe (64 hex, generators.keys), never the key; "" in the open universe,
    # and then absent from the JSON, so open-universe specs, digests and caches are what they always were.
    universe: str = ""

    def path_variable(self, column: str) -> PathVariable:
        for variable in self.path_variables:
            if variable.column == column:
                return variable
        raise KeyError(column)

    def variable(self, column: str) -> Variable:
        for variable in self.variables:
            if variable.column == column:
                return variable
        raise KeyError(column)

    def to_dict(self) -> dict[str, Any]:
        # What dataclasses.asdict gives with tuples as lists, without its deep copy of every leaf: the canonical
        # JSON is hashed on a mount's first touch of each repository (sgfs.store.diskcache).
        plain: dict[str, Any] = _plain(self)
        if not self.universe:
            del plain["universe"]
        return plain

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """Dataclasses as dicts (fields in order), tuples and lists as lists, mappings as dicts; leaves as they are."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(value):
        names = _FIELD_NAMES.setdefault(kind, tuple(f.name for f in fields(value)))
    if names is None:
        return value
    return {name: _plain(getattr(value, name)) for name in names}


# --------------------------------------------------------------------------------------------------
# Loading with validation
# --------------------------------------------------------------------------------------------------
T = TypeVar("T")


class _Reader:
    """Typed access to a JSON object that names the failing field in every error."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise SpecError(f"{where or 'spec'}: expected an object")
        self.data: dict[str, object] = data
        self.where = where

    def at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str) -> object:
        if key not in self.data:
            raise SpecError(f"{self.at(key)}: missing")
        return self.data[key]

    def child(self, key: str) -> _Reader:
        return _Reader(self.get(key), self.at(key))

    def text(self, key: str, *, pattern: re.Pattern[str] | None = None, empty: bool = False) -> str:
        return _text(self.get(key), self.at(key), pattern=pattern, empty=empty)

    def texts(self, key: str, *, pattern: re.Pattern[str] | None = None, empty: bool = True) -> tuple[str, ...]:
        items = _list(self.get(key), self.at(key))
        return tuple(_text(v, f"{self.at(key)}[{i}]", pattern=pattern) for i, v in enumerate(items)) or (
            () if empty else _fail(f"{self.at(key)}: must not be empty")
        )

    def integer(self, key: str, low: int, high: int) -> int:
        return _integer(self.get(key), self.at(key), low, high)

    def number(self, key: str) -> float:
        return _number(self.get(key), self.at(key))

    def boolean(self, key: str) -> bool:
        value = self.get(key)
        if not isinstance(value, bool):
            raise SpecError(f"{self.at(key)}: expected true or false")
        return value

    def unknown_keys(self, allowed: tuple[str, ...]) -> None:
        extra = sorted(set(self.data) - set(allowed))
        if extra:
            raise SpecError(f"{self.at(extra[0])}: unknown field")


def _fail(message: str) -> Any:
    raise SpecError(message)


def _text(value: object, where: str, *, pattern: re.Pattern[str] | None = None, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise SpecError(f"{where}: expected a string")
    if not value and not empty:
        raise SpecError(f"{where}: must not be empty")
    if len(value) > MAX_TEXT:
        raise SpecError(f"{where}: longer than {MAX_TEXT} characters")
    if any(ch in value for ch in "\x00\r") or (pattern is not None and pattern.fullmatch(value) is None):
        raise SpecError(f"{where}: invalid value {value[:60]!r}")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise SpecError(f"{where}: expected a list")
    if len(value) > 1000:
        raise SpecError(f"{where}: too many items")
    return value


def _integer(value: object, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: expected an integer")
    if not low <= value <= high:
        raise SpecError(f"{where}: {value} is outside [{low}, {high}]")
    return value


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: expected a number")
    if not math.isfinite(value):
        raise SpecError(f"{where}: must be finite")
    return float(value)


def _one_line(value: str, where: str) -> str:
    if "\n" in value or "\t" in value:
        raise SpecError(f"{where}: must be a single line without tabs")
    return value


def from_json(text: str) -> Spec:
    """Parse and validate a spec; one :class:`SpecError` names the first problem.

    Whatever the text holds (integers of thousands of digits, nesting thousands deep, NaN, huge strings), the
    outcome is a spec or one :class:`SpecError`, never another exception."""
    if not isinstance(text, str):
        raise SpecError("not valid JSON: expected text")
    if len(text) > MAX_SPEC_TEXT:
        raise SpecError(f"longer than {MAX_SPEC_TEXT} characters")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, and ValueError of int's digit limit
        raise SpecError(f"not valid JSON: {_first_line(exc)}") from None
    except MemoryError:
        raise SpecError("not valid JSON: too large to parse") from None
    return from_dict(data)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__


def from_dict(data: object) -> Spec:
    top = _Reader(data, "")
    version = top.integer("format_version", 0, 10**6)
    if version != FORMAT_VERSION:
        raise SpecError(f"format_version: {version} is not supported (this sgfs reads {FORMAT_VERSION})")
    top.unknown_keys(tuple(Spec.__dataclass_fields__))
    seed = top.integer("seed", 0, 2**63 - 1)
    ctx = top.child("context")
    context = Context(*(_one_line(ctx.text(k), ctx.at(k)) for k in ("field", "domain", "subdomain", "description")))
    proj = top.child("project")
    desc = proj.child("description")
    description = Description(
        plan=desc.text("plan"),
        hypotheses=desc.texts("hypotheses"),
        independent=desc.texts("independent"),
        dependent=desc.texts("dependent"),
        confounders=desc.texts("confounders"),
        setup=desc.text("setup"),
    )
    project = Project(
        title=_one_line(proj.text("title"), proj.at("title")),
        repo_name=proj.text("repo_name", pattern=REPO_NAME_RE),
        description=description,
        abstract=proj.text("abstract"),
    )
    rd = top.child("readme")
    readme = Readme(rd.boolean("present"), rd.boolean("show_title"), rd.boolean("show_abstract"))
    extension = top.text("extension")
    if extension not in EXTENSIONS:
        raise SpecError(f"extension: {extension!r} is not one of {', '.join(EXTENSIONS)}")
    researchers = top.texts("researchers", pattern=RESEARCHER_RE)
    dates = top.texts("dates")
    for i, value in enumerate(dates):
        _iso_date(value, f"dates[{i}]")
    start_date = top.text("start_date")
    _iso_date(start_date, "start_date")
    seq_count = top.integer("seq_count", 0, 10_000)
    path_variables = tuple(
        _path_variable(item, f"path_variables[{i}]")
        for i, item in enumerate(_list(top.get("path_variables"), "path_variables"))
    )
    template = _template(top.child("template"))
    variables = tuple(
        _variable(item, f"variables[{i}]") for i, item in enumerate(_list(top.get("variables"), "variables"))
    )
    params = _params(top.child("params"))
    universe = top.text("universe", pattern=UNIVERSE_RE) if "universe" in top.data else ""
    spec = Spec(
        seed=seed,
        context=context,
        project=project,
        readme=readme,
        extension=extension,
        template=template,
        researchers=researchers,
        dates=dates,
        seq_count=seq_count,
        path_variables=path_variables,
        variables=variables,
        start_date=start_date,
        params=params,
        universe=universe,
    )
    validate(spec)
    return spec


def _iso_date(value: str, where: str) -> date:
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        raise SpecError(f"{where}: {value!r} is not an ISO date (YYYY-MM-DD)") from None
    if not 1900 <= parsed.year <= 2100:
        raise SpecError(f"{where}: year must be within 1900-2100")
    return parsed


def _path_variable(data: object, where: str) -> PathVariable:
    r = _Reader(data, where)
    r.unknown_keys(tuple(PathVariable.__dataclass_fields__))
    raw = _list(r.get("values"), r.at("values"))
    if not 1 <= len(raw) <= MAX_VALUES:
        raise SpecError(f"{r.at('values')}: needs 1 to {MAX_VALUES} values")
    values: tuple[str, ...] | tuple[float, ...]
    if all(isinstance(v, str) for v in raw):
        values = tuple(_text(v, f"{r.at('values')}[{i}]", pattern=PATH_TOKEN_RE) for i, v in enumerate(raw))
    else:
        values = tuple(_number(v, f"{r.at('values')}[{i}]") for i, v in enumerate(raw))
        if any(v < 0 for v in values):
            raise SpecError(f"{r.at('values')}: numeric path values must not be negative")
    if len(set(values)) != len(values):
        raise SpecError(f"{r.at('values')}: values must be distinct")
    return PathVariable(
        name=_one_line(r.text("name"), r.at("name")),
        column=r.text("column", pattern=COLUMN_RE),
        description=_one_line(r.text("description"), r.at("description")),
        unit=_one_line(r.text("unit", empty=True), r.at("unit")),
        values=values,
    )


def _template(r: _Reader) -> PathTemplate:
    r.unknown_keys(tuple(PathTemplate.__dataclass_fields__))
    components = tuple(
        tuple(
            _text(p, f"{r.at('components')}[{i}][{j}]", pattern=COLUMN_RE)
            for j, p in enumerate(_list(c, f"{r.at('components')}[{i}]"))
        )
        for i, c in enumerate(_list(r.get("components"), r.at("components")))
    )
    joiners = r.texts("joiners")
    style = r.text("value_style")
    if style not in VALUE_STYLES:
        raise SpecError(f"{r.at('value_style')}: {style!r} is not one of {', '.join(VALUE_STYLES)}")
    date_format = r.text("date_format")
    if date_format not in DATE_FORMATS:
        raise SpecError(f"{r.at('date_format')}: {date_format!r} is not one of {', '.join(DATE_FORMATS)}")
    return PathTemplate(components, joiners, style, date_format, r.integer("seq_width", 1, 6))


def _variable(data: object, where: str) -> Variable:
    r = _Reader(data, where)
    r.unknown_keys(tuple(Variable.__dataclass_fields__))
    distribution = None
    if r.get("distribution") is not None:
        d = r.child("distribution")
        d.unknown_keys(("kind", "params"))
        params_reader = d.child("params")
        params = {k: _number(v, params_reader.at(k)) for k, v in params_reader.data.items()}
        distribution = Distribution(d.text("kind"), params)
    bounds_raw = _list(r.get("bounds"), r.at("bounds"))
    if len(bounds_raw) != 2:
        raise SpecError(f"{r.at('bounds')}: expected [low, high] (null for none)")
    bounds = tuple(None if b is None else _number(b, f"{r.at('bounds')}[{i}]") for i, b in enumerate(bounds_raw))
    expression = r.get("expression")
    if expression is not None:
        expression = r.text("expression")
    probs = tuple(_number(p, f"{r.at('probs')}[{i}]") for i, p in enumerate(_list(r.get("probs"), r.at("probs"))))
    return Variable(
        name=_one_line(r.text("name"), r.at("name")),
        column=r.text("column", pattern=COLUMN_RE),
        role=r.text("role"),
        type=r.text("type"),
        description=_one_line(r.text("description"), r.at("description")),
        unit=_one_line(r.text("unit", empty=True), r.at("unit")),
        distribution=distribution,
        categories=r.texts("categories", pattern=CATEGORY_RE),
        probs=probs,
        expression=expression,
        noise_sd=r.number("noise_sd"),
        bounds=(bounds[0], bounds[1]),
        prefix=r.text("prefix", empty=True, pattern=PREFIX_RE),
    )


def _params(r: _Reader) -> Params:
    r.unknown_keys(tuple(Params.__dataclass_fields__))
    return Params(
        min_files=r.integer("min_files", 1, 100_000),
        max_files=r.integer("max_files", 1, 100_000),
        files_alpha=r.number("files_alpha"),
        files_beta=r.number("files_beta"),
        rows_mean=r.number("rows_mean"),
        rows_sd=r.number("rows_sd"),
        rows_min=r.integer("rows_min", 1, 100_000),
        rows_max=r.integer("rows_max", 1, 100_000),
        noise_fraction=r.number("noise_fraction"),
        sig_digits=r.integer("sig_digits", 2, 15),
    )


# --------------------------------------------------------------------------------------------------
# Consistency checks (also run on specs the builders make)
# --------------------------------------------------------------------------------------------------
def validate(spec: Spec) -> None:
    """Cross-field checks; raise :class:`SpecError` on the first problem."""
    p = spec.params
    _require(p.min_files <= p.max_files, "params: min_files exceeds max_files")
    _require(p.rows_min <= p.rows_max, "params: rows_min exceeds rows_max")
    _require(p.files_alpha > 0 and p.files_beta > 0, "params: files_alpha and files_beta must be positive")
    _require(p.rows_sd >= 0 and 0 <= p.noise_fraction <= 10, "params: rows_sd and noise_fraction out of range")
    _require(
        spec.universe == "" or UNIVERSE_RE.fullmatch(spec.universe) is not None,
        "universe: expected 64 lowercase hexadecimal characters (a keyed universe's salt) or nothing",
    )
    _validate_template(spec)
    _validate_variables(spec)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)


def _validate_template(spec: Spec) -> None:
    t = spec.template
    _require(2 <= len(t.components) <= 8, "template.components: needs 1 to 7 directory levels and a file name")
    _require(len(t.joiners) == len(t.components), "template.joiners: one joiner per component")
    for i, joiner in enumerate(t.joiners):
        _require(joiner in JOINERS, f"template.joiners[{i}]: {joiner!r} is not one of {JOINERS}")
    for i, component in enumerate(t.components):
        _require(1 <= len(component) <= 4, f"template.components[{i}]: needs 1 to 4 placeholders")
    placeholders = t.placeholders
    seen: set[str] = set()
    path_columns = {v.column for v in spec.path_variables}
    for name in placeholders:
        _require(name not in seen, f"template: placeholder {name!r} appears more than once")
        seen.add(name)
        _require(name in SPECIAL_PLACEHOLDERS or name in path_columns, f"template: unknown placeholder {name!r}")
    _require(
        {v.column for v in spec.path_variables} <= seen,
        "path_variables: every path variable must be in the template",
    )
    if "researcher" in seen:
        _require(bool(spec.researchers), "researchers: the template uses researcher but none are given")
        _require(len(set(spec.researchers)) == len(spec.researchers), "researchers: names must be distinct")
    if "date" in seen:
        _require(bool(spec.dates), "dates: the template uses date but none are given")
        _require(len(set(spec.dates)) == len(spec.dates), "dates: must be distinct")
    if "seq_number" in seen:
        _require(spec.seq_count >= 1, "seq_count: the template uses seq_number but seq_count is 0")
    size = 1
    for name in placeholders:
        size *= _radix(spec, name)
    _require(size < 2**50, "template: the product of placeholder values is too large")


def _radix(spec: Spec, name: str) -> int:
    if name == "researcher":
        return len(spec.researchers)
    if name == "date":
        return len(spec.dates)
    if name == "seq_number":
        return spec.seq_count
    return len(spec.path_variable(name).values)


def expression_scope(spec: Spec, upto: int | None = None) -> expr.Scope:
    """Names an expression of variable ``upto`` may use: path placeholders and earlier columns."""
    numeric: set[str] = set()
    categorical: dict[str, tuple[str, ...]] = {}
    placeholders = set(spec.template.placeholders)
    if "researcher" in placeholders:
        categorical["researcher"] = spec.researchers
    if "date" in placeholders:
        numeric.add("date")
    if "seq_number" in placeholders:
        numeric.add("seq_number")
    for pv in spec.path_variables:
        if pv.numeric:
            numeric.add(pv.column)
        else:
            categorical[pv.column] = tuple(str(v) for v in pv.values)
    for variable in spec.variables[:upto]:
        if variable.role == "identifier":
            continue
        if variable.type == "categorical":
            categorical[variable.column] = variable.categories
        else:
            numeric.add(variable.column)
    return expr.Scope(frozenset(numeric), categorical)


def _validate_variables(spec: Spec) -> None:
    _require(1 <= len(spec.variables) <= MAX_VARIABLES, f"variables: needs 1 to {MAX_VARIABLES} columns")
    columns = [v.column for v in spec.variables]
    taken = set(SPECIAL_PLACEHOLDERS) | {v.column for v in spec.path_variables} | expr.RESERVED_NAMES
    for i, variable in enumerate(spec.variables):
        where = f"variables[{i}]"
        _require(columns.count(variable.column) == 1, f"{where}.column: {variable.column!r} is used twice")
        _require(variable.column not in taken, f"{where}.column: {variable.column!r} is a reserved or path name")
        _require(variable.role in ROLES, f"{where}.role: {variable.role!r} is not one of {', '.join(ROLES)}")
        for check in _ROLE_CHECKS[variable.role]:
            check(spec, i, variable, where)
    if spec.extension == "log":
        _require(
            any(v.role == "datetime" for v in spec.variables),
            "variables: a log repository needs a datetime column",
        )


def _check_identifier(spec: Spec, i: int, v: Variable, where: str) -> None:
    _require(v.type == "string", f"{where}.type: an identifier has type 'string'")
    _require(bool(v.prefix), f"{where}.prefix: an identifier needs a prefix")


def _check_datetime(spec: Spec, i: int, v: Variable, where: str) -> None:
    _require(v.type == "datetime", f"{where}.type: a datetime column has type 'datetime'")


def _check_independent(spec: Spec, i: int, v: Variable, where: str) -> None:
    if v.type == "categorical":
        _require(2 <= len(v.categories) <= MAX_VALUES, f"{where}.categories: needs 2 to {MAX_VALUES} values")
        _require(len(set(v.categories)) == len(v.categories), f"{where}.categories: must be distinct")
        for clash in sorted(set(v.categories) & NA_LIKE):
            raise SpecError(f"{where}.categories: {clash!r} would read back as a missing value or boolean")
        _require(len(v.probs) == len(v.categories), f"{where}.probs: one probability per category")
        _require(all(p >= 0 for p in v.probs), f"{where}.probs: must not be negative")
        _require(abs(sum(v.probs) - 1.0) < 1e-6, f"{where}.probs: must sum to 1")
        return
    _require(v.distribution is not None, f"{where}.distribution: an independent {v.type} column needs one")
    assert v.distribution is not None
    table = {"continuous": CONTINUOUS_DISTRIBUTIONS, "integer": INTEGER_DISTRIBUTIONS}.get(v.type)
    _require(table is not None, f"{where}.type: {v.type!r} is not categorical, integer or continuous")
    assert table is not None
    kind, params = v.distribution.kind, v.distribution.params
    _require(kind in table, f"{where}.distribution.kind: {kind!r} is not one of {', '.join(table)}")
    _require(set(params) == set(table[kind]), f"{where}.distribution.params: {kind} takes {', '.join(table[kind])}")
    problem = _distribution_problem(kind, params)
    _require(problem is None, f"{where}.distribution.params: {problem}")


def _distribution_problem(kind: str, p: Mapping[str, float]) -> str | None:
    def prob(x: float) -> bool:
        return 0.0 < x < 1.0

    problems = {
        "normal": None if p.get("sd", 0) > 0 else "sd must be positive",
        "uniform": None if p.get("low", 0) < p.get("high", 0) else "low must be below high",
        "exponential": None if p.get("scale", 0) > 0 else "scale must be positive",
        "beta": None
        if p.get("a", 0) > 0 and p.get("b", 0) > 0 and p.get("low", 0) < p.get("high", 0)
        else "a and b must be positive and low below high",
        "bernoulli": None if prob(p.get("p", 0)) else "p must be in (0, 1)",
        "binomial": None
        if prob(p.get("p", 0)) and float(p.get("n", 0)).is_integer() and 1 <= p.get("n", 0) <= 100_000
        else "n must be an integer in [1, 100000] and p in (0, 1)",
        "geometric": None if prob(p.get("p", 0)) else "p must be in (0, 1)",
        "negative_binomial": None
        if prob(p.get("p", 0))
        and float(p.get("r", 0)).is_integer()
        and 1 <= p.get("r", 0) <= 1000
        and p.get("r", 0) * (1 - p.get("p", 0)) / p.get("p", 1) <= 10_000
        else "r must be an integer in [1, 1000], p in (0, 1) and the mean at most 10000",
        "poisson": None if 0 < p.get("lam", 0) <= 10_000 else "lam must be in (0, 10000]",
    }
    return problems[kind]


def _check_dependent(spec: Spec, i: int, v: Variable, where: str) -> None:
    _require(v.type == "continuous", f"{where}.type: a dependent column is continuous")
    _require(v.expression is not None, f"{where}.expression: a dependent column needs an expression")
    _require(v.noise_sd >= 0, f"{where}.noise_sd: must not be negative")
    low, high = v.bounds
    _require(low is None or high is None or low < high, f"{where}.bounds: low must be below high")
    assert v.expression is not None
    try:
        expr.check(v.expression, expression_scope(spec, i))
    except expr.ExpressionError as exc:
        raise SpecError(f"{where}.expression: {exc}") from None


_ROLE_CHECKS: dict[str, tuple[Callable[[Spec, int, Variable, str], None], ...]] = {
    "identifier": (_check_identifier,),
    "datetime": (_check_datetime,),
    "independent": (_check_independent,),
    "dependent": (_check_dependent,),
}
