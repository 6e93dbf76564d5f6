"""Table synthesis: the rows of one data file, from the spec, the file's placeholder values and its stream.

Every column is drawn with whole-array operations; the only Python loops run over columns. Continuous
values are written with ``params.sig_digits`` significant digits (``%.6g``) and read back from that text
*before* anything else sees them, so the table in memory is exactly what any encoder writes and any parser
reads back.
"""

from __future__ import annotations

import math
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date

import numpy as np
import numpy.typing as npt

from generators import clock, expr, numfmt
from generators.rng import Stream, prefetch_uniforms, root_stream
from generators.spec import CALENDAR_NAMES, ROW_NAME, Distribution, Spec, Variable, level_key

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_DAY_SECONDS = clock.DAY
_WORKDAY_START = clock.WORKDAY_START
_WORKDAY_SECONDS = clock.WORKDAY_SECONDS
_STUDY_DAYS = 365
_CALENDAR = frozenset(CALENDAR_NAMES)
_EPOCH = date(1970, 1, 1)
# numfmt's whole-array formatting has a fixed cost per call: it pays only for long columns.
VECTOR_FORMAT_MIN_ROWS = 2048


class Column:
    """One column: typed values (for statistics) and their text (for every encoder).

    A continuous column that no expression reads may be *deferred*: it keeps the clipped doubles and writes
    their text (``%.{digits}g``) on first use of ``text``; its values are that text parsed back. Sizes need
    only the byte count of the text, which ``measure_text`` computes for many deferred columns at once
    without writing any text (``numfmt.text_lengths``).
    """

    __slots__ = ("_digits", "_raw", "_text", "_text_bytes", "_values", "name", "present", "type")

    def __init__(self, name: str, type: str, values: npt.NDArray[np.generic] | None, text: list[str]) -> None:
        self.name = name
        self.type = type  # string / datetime / categorical / integer / continuous
        self._values = values  # str objects, int64 seconds, category strings, int64, float64; None: parse text
        self._text: list[str] | None = text
        self._raw: FloatArray | None = None
        self._digits = 0
        self._text_bytes = -1
        # Cells recorded (True) or missing (False) as a messy file writes them (generators.mess); None: all recorded.
        self.present: npt.NDArray[np.bool_] | None = None

    @classmethod
    def deferred(cls, name: str, raw: FloatArray, digits: int) -> Column:
        """A continuous column of ``raw`` (clipped, no -0.0) to be written with ``digits`` significant digits."""
        column = cls(name, "continuous", None, [])
        column._text, column._raw, column._digits = None, raw, digits
        return column

    @property
    def text(self) -> list[str]:
        if self._text is None:
            assert self._raw is not None
            self._text = list(map(f"%.{self._digits}g".__mod__, self._raw.tolist()))
        return self._text

    @property
    def values(self) -> npt.NDArray[np.generic]:
        if self._values is None:
            self._values = np.array(self.text, dtype=np.float64)
        return self._values

    @property
    def numeric(self) -> bool:
        return self.type in ("integer", "continuous")

    def text_bytes(self) -> int:
        """UTF-8 bytes of all cells' text together (``len("".join(text).encode())``)."""
        if self._text_bytes < 0:
            joined = "".join(self.text)
            self._text_bytes = len(joined) if joined.isascii() else len(joined.encode("utf-8"))
        return self._text_bytes

    def __repr__(self) -> str:
        return f"Column(name={self.name!r}, type={self.type!r})"


# numfmt's lengths beat writing the text with Python from about this many values in one call.
VECTOR_LENGTHS_MIN_VALUES = 512


def measure_text(tables: Sequence[Table]) -> None:
    """Count the text bytes of every deferred column of ``tables`` in one whole-array pass, writing no text.

    Exact: ``numfmt.text_lengths`` is ``len("%.{p}g" % v)`` for every value. Too few values for the pass
    to pay are left to ``Column.text_bytes``.
    """
    pending: dict[int, list[Column]] = {}
    for table in tables:
        for column in table.columns:
            if column._raw is not None and column._text is None and column._text_bytes < 0:
                pending.setdefault(column._digits, []).append(column)
    for digits, columns in pending.items():
        raws = [c._raw for c in columns if c._raw is not None]
        if sum(r.size for r in raws) < VECTOR_LENGTHS_MIN_VALUES or not all(r.size for r in raws):
            continue
        lengths = numfmt.text_lengths(np.concatenate(raws), digits)
        starts = np.cumsum([0, *(r.size for r in raws[:-1])])
        for column, total in zip(columns, np.add.reduceat(lengths, starts).tolist(), strict=True):
            column._text_bytes = int(total)


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    n_rows: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)


# str(i) of small non-negative integers, looked up rather than written: counts and row numbers mostly are.
SMALL_INT_TEXT = tuple(map(str, range(4096)))


def integer_texts(ints: IntArray) -> list[str]:
    """``[str(i) for i in ints]``."""
    if ints.size and ints.min() >= 0 and ints.max() < len(SMALL_INT_TEXT):
        return list(map(SMALL_INT_TEXT.__getitem__, ints.tolist()))
    return list(map(str, ints.tolist()))


def days_since(iso_day: str, start: str) -> float:
    return float((date.fromisoformat(iso_day) - date.fromisoformat(start)).days)


def _epoch_seconds(iso_day: str) -> int:
    return (date.fromisoformat(iso_day) - _EPOCH).days * _DAY_SECONDS


def n_rows(spec: Spec, stream: Stream) -> int:
    p = spec.params
    drawn = float(stream.normal(p.rows_mean, p.rows_sd, 1)[0])
    return int(min(max(math.floor(drawn + 0.5), p.rows_min), p.rows_max))


def placeholder_env(
    spec: Spec, values: dict[str, str | int | float], n: int, names: Container[str] | None = None
) -> dict[str, expr.Column]:
    """Path placeholders as expression inputs: constant columns of the file's values (only ``names`` if given)."""
    env: dict[str, expr.Column] = {}
    for name, value in values.items():
        if names is not None and name not in names:
            continue
        if name == "researcher":
            env[name] = expr.Categorical(
                np.full(n, spec.researchers.index(str(value)), dtype=np.int64), spec.researchers
            )
        elif name == "date":
            env[name] = np.full(n, days_since(str(value), spec.start_date))
        elif name == "seq_number":
            env[name] = np.full(n, float(value))
        else:
            variable = spec.path_variable(name)
            if variable.numeric:
                env[name] = np.full(n, float(value))
            else:
                categories = tuple(str(v) for v in variable.values)
                env[name] = expr.Categorical(np.full(n, categories.index(str(value)), dtype=np.int64), categories)
    return env


def sample_independent(variable: Variable, stream: Stream, n: int) -> FloatArray | IntArray:
    """Draw an independent numeric column from its named distribution."""
    assert variable.distribution is not None
    kind, p = variable.distribution.kind, variable.distribution.params
    if kind == "normal":
        return stream.normal(p["mean"], p["sd"], n)
    if kind == "uniform":
        return stream.uniform_range(p["low"], p["high"], n)
    if kind == "exponential":
        return stream.exponential(p["scale"], n)
    if kind == "beta":
        return p["low"] + (p["high"] - p["low"]) * stream.beta(p["a"], p["b"], n)
    if kind == "bernoulli":
        return stream.bernoulli(p["p"], n)
    if kind == "binomial":
        return stream.binomial(int(p["n"]), p["p"], n)
    if kind == "geometric":
        return stream.geometric(p["p"], n)
    if kind == "negative_binomial":
        return stream.negative_binomial(int(p["r"]), p["p"], n)
    if kind == "poisson":
        return stream.poisson(p["lam"], n)
    raise ValueError(f"unknown distribution {kind!r}")


def draw_independent(variable: Variable, stream: Stream, n: int) -> FloatArray | IntArray:
    """An independent numeric column of ``n`` rows: one draw per row, or one for the file (``per_file``), or
    draws that follow the previous record's (``persist``: a continuous law)."""
    if variable.per_file:
        one = sample_independent(variable, stream, 1)
        return np.repeat(one, n)  # type: ignore[return-value]  # the dtype of ``one`` is kept
    if variable.persist:
        assert variable.distribution is not None  # a continuous law (spec validation)
        return _persistent_law(variable.distribution, persistent_normal(stream, n, variable.persist))
    return sample_independent(variable, stream, n)


def _persistent_law(law: Distribution, z: FloatArray) -> FloatArray:
    """Standard normal draws ``z`` carried to a continuous law by its quantile function (a Gaussian copula): each
    value keeps the law, neighbours keep the draws' correlation."""
    p = law.params
    if law.kind == "normal":
        return p["mean"] + p["sd"] * z
    # Imported here: only a series of a non-normal law needs the normal distribution function (a fifth of a second).
    from scipy.special import betaincinv, log_ndtr, ndtr

    if law.kind == "uniform":
        return p["low"] + (p["high"] - p["low"]) * ndtr(z)  # type: ignore[no-any-return]
    if law.kind == "exponential":
        return -p["scale"] * log_ndtr(-z)  # type: ignore[no-any-return]  # -log(1 - u), exact in the upper tail
    if law.kind == "beta":
        return p["low"] + (p["high"] - p["low"]) * betaincinv(p["a"], p["b"], ndtr(z))  # type: ignore[no-any-return]
    raise ValueError(f"no persistent draws of a {law.kind} law")


def _persistent_codes(fresh: IntArray, uniforms: FloatArray, persist: float) -> IntArray:
    """A categorical series that keeps the previous record's category with probability ``persist``, else takes a
    fresh draw (``fresh``): a Markov chain whose stationary law is the column's own, in whole-array steps (each
    record takes the fresh draw of the last record that did not keep)."""
    if fresh.size == 0:
        return fresh
    renewed = uniforms >= persist
    renewed[0] = True
    last = np.maximum.accumulate(np.where(renewed, np.arange(fresh.size), 0))
    return fresh[last]


def persistent_normal(stream: Stream, n: int, persist: float) -> FloatArray:
    """``n`` standard normal draws in which each follows the one before with correlation ``persist``: a stationary
    AR(1) process, ``z[t] = persist * z[t-1] + sqrt(1 - persist**2) * e[t]`` from ``z[0] = e[0]``, so every draw
    keeps the standard normal law. The recursion runs as a scan of log2(n) whole-array steps (after the step of
    shift s, ``z[t]`` holds the terms of its last 2s innovations), not a Python loop per row."""
    z = stream.normal(0.0, 1.0, n)
    z[1:] *= math.sqrt(1.0 - persist * persist)
    shift = 1
    while shift < n:
        z[shift:] += persist**shift * z[:-shift]  # numpy buffers the overlapping read: every term is the old value
        shift *= 2
    return z


@dataclass(frozen=True)
class _Step:
    """How one column is drawn: what depends only on the spec, prepared once per spec."""

    variable: Variable
    read: bool  # some expression reads this column: its values go into the expression environment
    cdf: FloatArray  # categorical: cumulative weights
    labels: npt.NDArray[np.object_]  # categorical: the category strings, indexed by code
    low: float  # continuous: clip bounds
    high: float
    draws: tuple[float, int]  # about how many uniforms the column draws for n rows: draws[0] * n + draws[1]
    # a law per level of a path variable (Variable.by_level): the column, the variant of the variable (numeric) or
    # the cumulative weights (categorical) of each level listed
    level_column: str = ""
    level_variables: Mapping[str, Variable] = field(default_factory=dict)
    level_cdfs: Mapping[str, FloatArray] = field(default_factory=dict)

    def for_file(self, values: Mapping[str, str | int | float]) -> tuple[Variable, FloatArray]:
        """The variable and cumulative weights that this file's level of ``level_column`` draws from."""
        if not self.level_column or self.level_column not in values:
            return self.variable, self.cdf
        key = level_key(values[self.level_column])
        return self.level_variables.get(key, self.variable), self.level_cdfs.get(key, self.cdf)


@dataclass(frozen=True)
class _Plan:
    steps: tuple[_Step, ...]
    read: frozenset[str]  # every name some expression reads
    number_format: str


_plans: dict[int, tuple[Spec, _Plan]] = {}
_MAX_PLANS = 64


def _plan(spec: Spec) -> _Plan:
    """The spec's plan, memoised by identity (specs are immutable; the entry keeps its spec alive)."""
    cached = _plans.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    read: set[str] = set()
    for variable in spec.variables:
        if variable.expression is not None:
            read |= expr.names_used(expr.parse(variable.expression))
    steps = []
    empty = np.zeros(0)
    for variable in spec.variables:
        low, high = variable.bounds
        categorical = variable.role not in ("identifier", "datetime") and variable.type == "categorical"
        law = variable.by_level
        steps.append(
            _Step(
                variable,
                variable.column in read,
                np.cumsum(np.asarray(variable.probs, dtype=np.float64)) if categorical else empty,
                np.array(variable.categories, dtype=object),
                -1e15 if low is None else low,
                1e15 if high is None else high,
                _draws(variable),
                law.column if law is not None else "",
                {
                    level: replace(variable, distribution=Distribution(variable.distribution.kind, params))
                    for level, params in law.params.items()
                }
                if law is not None and variable.distribution is not None
                else {},
                {level: np.cumsum(np.asarray(probs, dtype=np.float64)) for level, probs in law.probs.items()}
                if law is not None
                else {},
            )
        )
    plan = _Plan(tuple(steps), frozenset(read), f"%.{spec.params.sig_digits}g")
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[id(spec)] = (spec, plan)
    return plan


def _gamma_draws(shape: float) -> float:
    # Marsaglia-Tsang: a normal (2 uniforms) and a uniform per try, a few percent of tries rejected;
    # below shape 1 one more uniform per value.
    return 3.3 + (1.0 if shape < 1.0 else 0.0)


def _draws(variable: Variable) -> tuple[float, int]:
    """How many uniforms a column draws, about: those are computed ahead, in one pass for the whole file."""
    if variable.role == "identifier":
        return (0.0, 0)  # one scalar draw
    if variable.role == "dependent":
        return (2.0, 0)  # the noise: one normal
    if variable.per_file:
        return (0.0, 0)  # one value for the whole file: drawn as usual
    distribution = variable.distribution
    if variable.persist:  # a series: standard normals for any law; categories: codes, then the keep-or-renew draws
        return (2.0, 0)
    if distribution is None:
        return (1.0, 0)  # datetime offsets, categorical codes
    if distribution.kind == "normal":
        return (2.0, 0)
    if distribution.kind == "beta":
        return (_gamma_draws(distribution.params["a"]) + _gamma_draws(distribution.params["b"]), 64)
    return (1.0, 0)


def synthesize(spec: Spec, path: str, values: dict[str, str | int | float], rows: int | None = None) -> Table:
    """The table of the data file at ``path`` whose placeholders take ``values``."""
    plan = _plan(spec)
    stream = root_stream(spec.seed, spec.universe, "file", path)
    n = n_rows(spec, stream) if rows is None else rows
    env = placeholder_env(spec, values, n, plan.read)
    if ROW_NAME in plan.read:
        env[ROW_NAME] = np.arange(n, dtype=np.float64)
    columns: list[Column] = []
    subs = stream.children([step.variable.column for step in plan.steps])
    prefetch_uniforms(subs, [int(step.draws[0] * n) + step.draws[1] for step in plan.steps])
    for step, sub in zip(plan.steps, subs, strict=True):
        variable = step.variable
        if variable.role == "identifier":
            # Five-digit serial numbers from a random start, so ids look like lab codes and stay unique.
            start = sub.randint(10_000, 89_000)
            prefix = variable.prefix
            # one id for the whole file where it records one specimen, cell or participant
            ids = (
                [f"{prefix}{start}"] * n
                if variable.per_file
                else [f"{prefix}{number}" for number in range(start, start + n)]
            )
            columns.append(Column(variable.column, "string", np.array(ids, dtype=object), ids))
        elif variable.role == "datetime":
            by_day = variable.type == "date"
            if variable.clock != "random":
                seconds = _clocked(spec, variable, values, sub, n)
                if by_day:
                    seconds = seconds // _DAY_SECONDS * _DAY_SECONDS
            elif by_day:
                seconds = _days(spec, values, sub, n)
            else:
                seconds = _timestamps(spec, values, sub, n)
            if variable.per_file:  # every record taken at once (one capture, one plate read): the file's first time
                seconds = np.repeat(seconds[:1], n)
            if step.read:
                env[variable.column] = (seconds - _epoch_seconds(spec.start_date)) / _DAY_SECONDS
            env.update(clock.calendar(seconds, plan.read & _CALENDAR))
            text = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="D" if by_day else "s").tolist()
            columns.append(Column(variable.column, "datetime", seconds, text))
        elif variable.type == "categorical":
            _, cdf = step.for_file(values)
            codes = sub.from_cdf(cdf, n) if not variable.per_file else np.repeat(sub.from_cdf(cdf, 1), n)
            if variable.persist:
                codes = _persistent_codes(codes, sub.uniform(n), variable.persist)
            if step.read:
                env[variable.column] = expr.Categorical(codes, variable.categories)
            labels = step.labels[codes]
            columns.append(Column(variable.column, "categorical", labels, labels.tolist()))
        elif variable.type == "integer":
            ints = np.asarray(draw_independent(step.for_file(values)[0], sub, n), dtype=np.int64)
            if step.read:
                env[variable.column] = ints.astype(np.float64)
            columns.append(Column(variable.column, "integer", ints, integer_texts(ints)))
        else:
            columns.append(_continuous(spec, plan, step, env, sub, n, values))
    return Table(tuple(columns), n)


def _continuous(
    spec: Spec,
    plan: _Plan,
    step: _Step,
    env: dict[str, expr.Column],
    sub: Stream,
    n: int,
    values: Mapping[str, str | int | float],
) -> Column:
    variable = step.variable
    if variable.role == "dependent":
        assert variable.expression is not None
        raw = expr.evaluate(variable.expression, env, n)
        if variable.persist:  # what repeats is not independent between neighbouring records (a drift, a tool's wear)
            raw += variable.noise_sd * persistent_normal(sub, n, variable.persist)
        else:
            raw += sub.normal(0.0, variable.noise_sd, n)
        if variable.scale == "log":
            raw = from_log(raw)
    else:
        raw = np.asarray(draw_independent(step.for_file(values)[0], sub, n), dtype=np.float64)
    if not np.isfinite(raw).all():
        raw = np.nan_to_num(raw, nan=0.0, posinf=1e15, neginf=-1e15)
    if variable.role == "dependent" and not variable.clip:
        raw = fold(raw, step.low, step.high)
    else:
        np.clip(raw, step.low, step.high, out=raw)
    if variable.decimals is not None:  # the instrument's precision, before the significant digits
        np.round(raw, variable.decimals, out=raw)
    if variable.step is not None:  # a scale read in steps (EDSS 0, 0.5, 1, ...)
        raw = to_steps(raw, variable.step, step.low, step.high)
        if variable.decimals is not None:  # a step of thirds is written 2.67, not 2.66666
            np.round(raw, variable.decimals, out=raw)
    raw += 0.0  # no -0.0
    # The text is the value to `digits` significant figures; the value is that text parsed back, so
    # what every encoder writes and what the statistics see are the same double by construction.
    if n >= VECTOR_FORMAT_MIN_ROWS:
        text, rounded = numfmt.round_g(raw, spec.params.sig_digits)
    elif step.read:
        text = list(map(plan.number_format.__mod__, raw.tolist()))
        rounded = np.array(text, dtype=np.float64)
    else:  # nothing reads it here: the text is written when (and if) an encoder asks for it
        return Column.deferred(variable.column, raw, spec.params.sig_digits)
    env[variable.column] = rounded
    return Column(variable.column, "continuous", rounded, text)


def from_log(log_values: FloatArray) -> FloatArray:
    """A log-scale column's values from their natural logs (expression + noise), capped below the largest double."""
    return np.exp(np.minimum(log_values, 700.0))


def fold(raw: FloatArray, low: float, high: float) -> FloatArray:
    """``raw`` reflected back into [low, high] at the bound it crosses, then clipped (for a value more than the
    interval's width outside): a response near a bound thins out towards it instead of piling up on it, as
    clipping would (a reaction time of exactly 0 ms in a third of the rows)."""
    out = np.where(raw < low, 2.0 * low - raw, raw)
    out = np.where(out > high, 2.0 * high - out, out)
    return np.clip(out, low, high)


def to_steps(raw: FloatArray, step: float, low: float, high: float) -> FloatArray:
    """``raw`` at the nearest whole multiple of ``step`` within [low, high]."""
    k = np.clip(np.round(raw / step), math.ceil(low / step), math.floor(high / step))
    return k * step


def _days(spec: Spec, values: dict[str, str | int | float], stream: Stream, n: int) -> IntArray:
    """Sorted record days (midnight): the file's date, else days across the study."""
    if "date" in values:
        return np.full(n, _epoch_seconds(str(values["date"])), dtype=np.int64)
    offsets = stream.integers(0, _STUDY_DAYS, n)
    return _epoch_seconds(spec.start_date) + np.sort(offsets) * _DAY_SECONDS


def _clocked(spec: Spec, variable: Variable, values: dict[str, str | int | float], stream: Stream, n: int) -> IntArray:
    """The file's record times under the column's clock, from the path's date or a day of the study drawn per
    file (generators.clock)."""
    if "date" in values:
        first_day, dated = _epoch_seconds(str(values["date"])) // _DAY_SECONDS, True
    elif variable.window is None:
        first_day = _epoch_seconds(spec.start_date) // _DAY_SECONDS + int(stream.integers(0, _STUDY_DAYS, 1)[0])
        dated = False
    else:  # a day of the study on which the window lets records start
        days = _epoch_seconds(spec.start_date) // _DAY_SECONDS + np.arange(_STUDY_DAYS, dtype=np.int64)
        # people start sessions and runs on working days: a run's start is never moved out of its open months
        working = variable.clock in ("session", "run")
        days = days[clock.in_window(days, variable.window, working=working)]
        if days.size == 0:  # the study's first year is closed: the first open days after it
            days = clock.open_days(
                _epoch_seconds(spec.start_date) // _DAY_SECONDS, 30, variable.window, working=working
            )
        first_day, dated = int(days[int(stream.integers(0, days.size, 1)[0])]), False
    return clock.record_times(variable.clock, variable.every, first_day, stream, n, dated=dated, window=variable.window)


def _timestamps(spec: Spec, values: dict[str, str | int | float], stream: Stream, n: int) -> IntArray:
    """Sorted measurement times within the working hours of one day: the file's date, else a day of the study
    drawn per file (a file of readings is one session: a PUF characterisation or a sensor log does not run for
    months, and a site's weather that day is one value)."""
    if "date" in values:
        day = _epoch_seconds(str(values["date"]))
    else:
        day = _epoch_seconds(spec.start_date) + int(stream.integers(0, _STUDY_DAYS, 1)[0]) * _DAY_SECONDS
    return day + _WORKDAY_START + np.sort(stream.integers(0, _WORKDAY_SECONDS, n))
