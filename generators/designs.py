"""Study designs per subdomain: what a study of that subdomain measures, varies and expects (issue 24).

One JSON file per field in ``generators/data/designs/`` holds a design for every subdomain of the field's
taxonomy (schema: docs/generation.md, "Study designs"). A design names the subdomain's experimental factors
(path variables), its measured covariates with units, laws and precision, its outcomes with typical values
and bounds, and the expected direction of every causal relation (``parents``). The procedural builder draws a
repository's columns from its subdomain's design; ``--counterfactual`` turns some relations against these
expected directions.

``python scripts/check_designs.py [FILE...]`` checks design files and prints one line per problem.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from generators import clock, expr
from generators.clock import Window
from generators.spec import (
    CALENDAR_NAMES,
    CATEGORY_RE,
    COLUMN_RE,
    CONTINUOUS_DISTRIBUTIONS,
    INTEGER_DISTRIBUTIONS,
    MAX_CROSSINGS,
    MAX_PERSIST,
    NA_LIKE,
    PATH_TOKEN_RE,
    PREFIX_RE,
    RECORD_NAMES,
    ROW_NAME,
    SPECIAL_PLACEHOLDERS,
    Crossing,
    LevelLaw,
    Params,
    PathVariable,
    allowed_combinations,
    distribution_problem,
    level_key,
)

_FOLDER = "designs"
SHARED_FILE = "shared.json"

# Unit grammar: symbols joined by "/" or "·" (or "*"), each with an optional integer exponent ("m^2", "s^-1").
_UNIT_TOKEN_RE = re.compile(r"([^\s/·*^]+)(?:\^(-?[1-9]))?\Z")
TIMESTAMP_RESOLUTIONS = ("datetime", "date")
SCALES = ("linear", "log")
_MAX_DECADES = 3.0  # a log-scale outcome's spread: at most this many decades (sd of log10)
MEASURE_SCOPES = ("row", "file")
FIRST_YEAR, LAST_YEAR = 2015, 2024  # the years in which the builder starts a study
DATA_END = date(LAST_YEAR + 1, 12, 31)  # no record is dated later: the data of a study published by now
FILE_START_DAYS = 365  # a file begins up to a year into the study (its path's date, or the day drawn for it)
ROWS_MAX = Params().rows_max  # the most records a file holds: the longest file a design's clock must fit
ROWS_LEAST = 5  # a design's files hold at least this many records (fewer leave most statistics undefined)


class DesignError(ValueError):
    """A design file that breaks the schema or the sanity rules."""


@dataclass(frozen=True)
class Measure:
    """A covariate recorded on every row (an independent column)."""

    column: str
    name: str
    unit: str
    description: str
    type: str  # continuous, integer or categorical
    dist: str = ""
    params: Mapping[str, float] | None = None
    decimals: int | None = None
    values: tuple[str, ...] = ()
    probs: tuple[float, ...] = ()
    signed: bool = False
    step: float | None = None  # continuous: values are whole multiples of this (a scale read in half points)
    # A property of what a whole file records (a site's rainfall that day, a reactor's charge, a spectrum's map
    # depth): drawn once per file and the same in every row, instead of once per row.
    per_file: bool = False
    # A normal measure drawn per row that follows the previous record (generator version 12): the correlation of
    # neighbouring records, 0 < persist <= 0.99 (a logger's air temperature, a GNSS station's velocity); 0: none.
    persist: float = 0.0
    # The measure's law per level of a factor (generator version 12): household income by sample, elevation by
    # region; the factor's column, and per level (as the paths print it) the parameters or probabilities.
    by_level: LevelLaw | None = None
    # A continuous measure's bounds (generator version 12): a value drawn beyond one is set to it, so a law centred
    # near a bound piles records on it (dry days at 0 mm of rain, calm hours at 0 m/s); None: unbounded.
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Outcome:
    """A measured response (a dependent column) and the expected direction of each of its causes."""

    column: str
    name: str
    unit: str
    description: str
    center: float
    spread: float
    low: float | None
    high: float | None
    decimals: int | None
    parents: tuple[tuple[str, int], ...]  # (column, +1 / -1 / 0) in file order
    # A derived column: its exact definition in the expression language over earlier columns (earnings = wage x
    # hours), with ``noise`` (absolute standard deviation, 0 for an exact definition) added. A definition is not a
    # hypothesis: its parents (the formula's inputs, direction 0) are never turned around by --counterfactual.
    formula: str = ""
    noise: float = 0.0
    step: float | None = None  # values are whole multiples of this (EDSS in 0.5 steps)
    # The expected effect of each level of a categorical cause, in multiples of the outcome's spread (managers earn
    # more than elementary workers): column -> ((level, effect), ...) for every level of the design. A categorical
    # cause without an entry has no expected order: its level effects are drawn at random.
    effects: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    # "log": a quantity that spans decades (a titre, a count of cells, a concentration): ``center`` is its typical
    # (geometric mean) value, ``spread`` the standard deviation of its log10 in decades, and causes and noise act
    # on its logarithm, so they multiply it. "linear" (default): ``spread`` in the outcome's unit.
    scale: str = "linear"
    # The scatter between records taken under the same conditions (a repeat measurement's standard deviation, in the
    # outcome's unit; decades on the log scale): a lift coefficient repeats to 0.01 at a fixed angle, a cohort's
    # scores vary by a whole spread. None: the builder's default share of the spread.
    residual: float | None = None
    # How strongly a numeric cause moves the outcome, where the design says (a parent written 0.3 or -2: the
    # direction is the sign, the strength multiplies the share of the spread the builder draws; 1 by default):
    # a campaign ad moves vote intention a little, temperature moves heating load a lot
    strengths: tuple[tuple[str, float], ...] = ()
    # The correlation of neighbouring records' scatter around what the causes give (generator version 12): a tool's
    # wear or a sensor's drift follows the previous record; 0: independent records.
    persist: float = 0.0
    # Values beyond min or max are set to the bound instead of folded back inside (generator version 12): no rain
    # is 0 mm, a reading under the detection limit is the limit, so many records sit exactly at the bound.
    clip: bool = False

    def strength(self, column: str) -> float:
        """How strongly the numeric cause ``column`` moves the outcome (1: the builder's usual share)."""
        return dict(self.strengths).get(column, 1.0)

    def level_effects(self, column: str) -> dict[str, float] | None:
        """The expected effect of each level of the categorical cause ``column``, or None when the design has none."""
        for name, table in self.effects:
            if name == column:
                return dict(table)
        return None

    @property
    def derived(self) -> bool:
        return bool(self.formula)


@dataclass(frozen=True)
class Identifier:
    column: str
    name: str
    prefix: str
    description: str
    # "per": "file": one id for the whole file (the specimen of a time sweep, the cell of a cycling log, the
    # participant of a trial series), instead of a new id per record
    per_file: bool = False


@dataclass(frozen=True)
class Timestamp:
    column: str
    name: str
    description: str
    # "datetime": a time of day (instrument logs, sensor readings); "date": the day only, for records that take
    # longer than a few minutes (interviews, scans, field visits), so no row claims a time a day cannot hold.
    resolution: str = "datetime"
    # How records follow one another in time (generators.clock): "interval" (a logger's grid), "session" (people,
    # one record after another in working hours), "run" (an instrument's sequence around the clock), "events"
    # (unscheduled arrivals), each with `every` seconds; "random" with 0: uniform times in the working day (a
    # design that names no clock).
    clock: str = "random"
    every: int = 0
    # When records can be taken (generators.clock.Window): months (a growing season, a school term), hours of the
    # day (opening hours, a day shift), weekdays only; None: whenever the clock runs.
    window: Window | None = None
    # Every record of a file taken at one moment (generator version 12): the nuclei of one droplet capture, the wells
    # of one plate read, the genes of one screen sample; the file's time is its first record's by the clock.
    per_file: bool = False


@dataclass(frozen=True)
class Design:
    field: str
    subdomain: str
    topic: str  # noun phrase for the subdomain's data: "catalyst screening" -> "catalyst screening files"
    record: str  # what one row is, singular: "effluent sample"
    identifiers: tuple[Identifier, ...]
    timestamp: Timestamp | None
    factors: tuple[PathVariable, ...]  # experimental conditions with all their levels: they become path variables
    measures: tuple[Measure, ...]
    outcomes: tuple[Outcome, ...]
    # The first year a study of this design can have run (a method or instrument named among its levels exists
    # since then): the study starts in that year or later. 0: any year the generator draws (2015-2024).
    since: int = 0
    # How many records one file holds, (fewest, most): a crash-test campaign's 6-40 tests, a chamber's members; None:
    # the paper's law (about 160, from 20 to 300)
    rows: tuple[int, int] | None = None
    # Levels of factors that cannot occur together (generator version 12), each as {factor: (level, ...)}: every
    # combination of the listed levels is a path no repository holds.
    excluded: tuple[Crossing, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Every variable name of the design (identifiers and timestamp included)."""
        names = [i.column for i in self.identifiers]
        if self.timestamp is not None:
            names.append(self.timestamp.column)
        names += [f.column for f in self.factors] + [m.column for m in self.measures]
        return tuple(names + [o.column for o in self.outcomes])


# --------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------
class _Obj:
    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise DesignError(f"{where}: expected an object")
        self.data: dict[str, Any] = data
        self.where = where

    def check_keys(self, required: Iterable[str], optional: Iterable[str] = ()) -> None:
        required = tuple(required)
        missing = [k for k in required if k not in self.data]
        if missing:
            raise DesignError(f"{self.where}.{missing[0]}: missing")
        extra = sorted(set(self.data) - set(required) - set(optional))
        if extra:
            raise DesignError(f"{self.where}.{extra[0]}: unknown field")

    def text(self, key: str, pattern: re.Pattern[str] | None = None, empty: bool = False, limit: int = 200) -> str:
        value = self.data.get(key, "" if empty else None)
        where = f"{self.where}.{key}"
        if not isinstance(value, str):
            raise DesignError(f"{where}: expected a string")
        if not value and not empty:
            raise DesignError(f"{where}: must not be empty")
        if len(value) > limit or any(c in value for c in "\n\t\r\x00"):
            raise DesignError(f"{where}: one line of at most {limit} characters")
        if value and pattern is not None and pattern.fullmatch(value) is None:
            raise DesignError(f"{where}: invalid value {value!r}")
        return value

    def number(self, key: str, allow_none: bool = False) -> float | None:
        value = self.data.get(key)
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DesignError(f"{self.where}.{key}: expected a number")
        return float(value)

    def decimals(self) -> int | None:
        value = self.data.get("decimals")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 6:
            raise DesignError(f"{self.where}.decimals: expected an integer in [0, 6]")
        return value

    def step(self) -> float | None:
        value = self.data.get("step")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1e6:
            raise DesignError(f"{self.where}.step: expected a positive number")
        places = self.decimals()
        if places is not None and 10.0**-places > value * (1 + 1e-9):
            raise DesignError(
                f"{self.where}.decimals: {places} decimal(s) are coarser than the step {value:g}: the written values "
                "would leave the steps"
            )
        return float(value)

    def items(self, key: str, low: int, high: int) -> list[_Obj]:
        value = self.data.get(key)
        if not isinstance(value, list) or not low <= len(value) <= high:
            raise DesignError(f"{self.where}.{key}: expected a list of {low} to {high} objects")
        return [_Obj(v, f"{self.where}.{key}[{i}]") for i, v in enumerate(value)]


def parse_unit(unit: str) -> tuple[tuple[str, int], ...]:
    """The unit's symbols with exponents; raise :class:`DesignError` on a unit outside the grammar or registry."""
    if unit == "":
        return ()
    symbols = units()
    parts: list[tuple[str, int]] = []
    for position, chunk in enumerate(re.split(r"(/|·|\*)", unit)):
        if position % 2:
            continue
        match = _UNIT_TOKEN_RE.fullmatch(chunk)
        if match is None or match.group(1) not in symbols:
            raise DesignError(f"unit {unit!r}: {chunk!r} is not a known unit symbol (generators/data/units.json)")
        parts.append((match.group(1), int(match.group(2) or 1)))
    return tuple(parts)


def _factor(o: _Obj) -> PathVariable:
    o.check_keys(("column", "name", "unit", "description", "values"))
    raw = o.data["values"]
    if not isinstance(raw, list) or not 3 <= len(raw) <= 8:
        raise DesignError(f"{o.where}.values: expected 3 to 8 levels")
    values: tuple[str, ...] | tuple[float, ...]
    if all(isinstance(v, str) for v in raw):
        for v in raw:
            if PATH_TOKEN_RE.fullmatch(v) is None or v in NA_LIKE:
                raise DesignError(f"{o.where}.values: {v!r} is not a path token (letters, digits and '.')")
        values = tuple(raw)
    elif all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in raw):
        values = tuple(float(v) for v in raw)
        if list(values) != sorted(values):
            raise DesignError(f"{o.where}.values: numeric levels must be in increasing order")
    else:
        raise DesignError(f"{o.where}.values: all strings or all non-negative numbers")
    if len(set(values)) != len(values):
        raise DesignError(f"{o.where}.values: levels must be distinct")
    unit = o.text("unit", empty=True)
    _unit_ok(unit, o.where)
    return PathVariable(
        name=o.text("name"), column=o.text("column", COLUMN_RE), description=o.text("description"), unit=unit,
        values=values,
    )  # fmt: skip


def _unit_ok(unit: str, where: str) -> None:
    try:
        parse_unit(unit)
    except DesignError as exc:
        raise DesignError(f"{where}.unit: {exc}") from None


def _measure(o: _Obj) -> Measure:
    kind = o.data.get("type")
    column, name = o.text("column", COLUMN_RE), o.text("name")
    if kind == "categorical":
        o.check_keys(("column", "name", "description", "type", "values", "probs"), ("unit", "per", "by", "persist"))
        values = o.data["values"]
        probs = o.data["probs"]
        if not isinstance(values, list) or not 2 <= len(values) <= 8:
            raise DesignError(f"{o.where}.values: expected 2 to 8 categories")
        for v in values:
            if not isinstance(v, str) or CATEGORY_RE.fullmatch(v) is None or v in NA_LIKE:
                raise DesignError(f"{o.where}.values: {v!r} is not a valid category")
            if _looks_numeric(v):  # a reader would take the column for a number: write "PS 1", "Q3", "N256"
                raise DesignError(f"{o.where}.values: category {v!r} reads as a number")
        if len(set(values)) != len(values):
            raise DesignError(f"{o.where}.values: categories must be distinct")
        if (
            not isinstance(probs, list)
            or len(probs) != len(values)
            or not all(isinstance(p, int | float) and not isinstance(p, bool) and p > 0 for p in probs)
            or abs(sum(probs) - 1.0) > 1e-6
        ):
            raise DesignError(f"{o.where}.probs: one positive probability per category, summing to 1")
        per_file, persist = _per_file(o), _persist(o)
        if persist and per_file:
            raise DesignError(f"{o.where}.persist: a per-file measure has one value per file, nothing to follow")
        measure = Measure(
            column, name, "", o.text("description"), "categorical", values=tuple(values), probs=tuple(probs),
            per_file=per_file, persist=persist,
        )  # fmt: skip
        return replace(measure, by_level=_by_level(o, measure)) if "by" in o.data else measure
    if kind not in ("continuous", "integer"):
        raise DesignError(f"{o.where}.type: expected continuous, integer or categorical")
    o.check_keys(
        ("column", "name", "unit", "description", "type", "dist", "params"),
        ("decimals", "signed", "step", "per", "persist", "by", "min", "max"),
    )
    table = CONTINUOUS_DISTRIBUTIONS if kind == "continuous" else INTEGER_DISTRIBUTIONS
    dist = o.text("dist")
    if dist not in table:
        raise DesignError(f"{o.where}.dist: {dist!r} is not one of {', '.join(table)}")
    params_obj = _Obj(o.data["params"], f"{o.where}.params")
    params_obj.check_keys(table[dist])
    params = {k: float(params_obj.number(k) or 0.0) for k in table[dist]}
    signed = o.data.get("signed", False)
    if not isinstance(signed, bool):
        raise DesignError(f"{o.where}.signed: expected true or false")
    unit = o.text("unit", empty=True)
    _unit_ok(unit, o.where)
    if kind == "integer" and "step" in o.data:
        raise DesignError(f"{o.where}.step: only a continuous measure has a step (an integer one has step 1)")
    low, high = o.number("min", allow_none=True), o.number("max", allow_none=True)
    if (low is not None or high is not None) and kind != "continuous":
        raise DesignError(f"{o.where}: only a continuous measure has a min or a max (an integer law has its own)")
    if low is not None and high is not None and low >= high:
        raise DesignError(f"{o.where}: min must be below max")
    persist = _persist(o)
    if persist and kind != "continuous":
        raise DesignError(f"{o.where}.persist: only a continuous measure follows the previous record")
    per_file = _per_file(o)
    if persist and per_file:
        raise DesignError(f"{o.where}.persist: a per-file measure has one value per file, nothing to follow")
    measure = Measure(
        column, name, unit, o.text("description"), kind, dist, params, o.decimals() if kind == "continuous" else None,
        signed=signed, step=o.step(), per_file=per_file, persist=persist, low=low, high=high,
    )  # fmt: skip
    _sane_law(measure, o.where)
    return replace(measure, by_level=_by_level(o, measure)) if "by" in o.data else measure


def _by_level(o: _Obj, measure: Measure) -> LevelLaw:
    """``"by": {"factor": F, "params": {level: {...}}}`` (a numeric measure) or ``{"factor": F, "probs": {level:
    [...]}}`` (a categorical one): the measure's law per level of factor F, each checked as the measure's own law. The
    factor's levels are checked in ``_cross_checks``; a level's key is the level as the paths print it."""
    by = _Obj(o.data["by"], f"{o.where}.by")
    wanted = "probs" if measure.type == "categorical" else "params"
    by.check_keys(("factor", wanted))
    table = by.data[wanted]
    if not isinstance(table, dict) or not table:
        raise DesignError(f"{by.where}.{wanted}: expected an object of levels")
    params: dict[str, dict[str, float]] = {}
    probs: dict[str, tuple[float, ...]] = {}
    for raw_level, law in table.items():
        here = f"{by.where}.{wanted}.{raw_level}"
        level = _level_text_key(raw_level)
        if measure.type == "categorical":
            if (
                not isinstance(law, list)
                or len(law) != len(measure.values)
                or not all(isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in law)
                or abs(sum(law) - 1.0) > 1e-6
            ):
                # a level may rule a category out (THP-1 cells are male-derived): 0 is allowed here, not in the
                # measure's own probs, where a category nobody can draw would be no category
                raise DesignError(f"{here}: one probability per category (0 or more), summing to 1")
            probs[level] = tuple(float(p) for p in law)
        else:
            assert measure.params is not None
            level_obj = _Obj(law, here)
            level_obj.check_keys(tuple(measure.params))
            params[level] = {k: float(level_obj.number(k) or 0.0) for k in measure.params}
            _sane_law(replace(measure, params=params[level]), here)
    return LevelLaw(by.text("factor", COLUMN_RE), params, probs)


def _level_text_key(raw: str) -> str:
    """A level key as the paths print it: "300" for 300 or 300.0, "0.5", "PtAl2O3"."""
    try:
        return level_key(float(raw))
    except ValueError:
        return raw


def _persist(o: _Obj) -> float:
    """``persist``: a record's correlation with the previous one in its file, 0 < persist <= MAX_PERSIST."""
    if "persist" not in o.data:
        return 0.0
    value = o.data["persist"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_PERSIST:
        raise DesignError(f"{o.where}.persist: expected a correlation above 0 and at most {MAX_PERSIST:g}")
    return float(value)


def _clip(o: _Obj, low: float | None, high: float | None) -> bool:
    """``clip``: values beyond a bound are set to it (true) or folded back inside (false, the default)."""
    clip = o.data.get("clip", False)
    if not isinstance(clip, bool):
        raise DesignError(f"{o.where}.clip: expected true or false")
    if clip and low is None and high is None:
        raise DesignError(f"{o.where}.clip: needs a min or a max to set values to")
    return clip


def _per_file(o: _Obj) -> bool:
    """``"per": "file"``: one value per file; ``"row"`` (default): one per row."""
    scope = o.data.get("per", "row")
    if scope not in MEASURE_SCOPES:
        raise DesignError(f"{o.where}.per: expected one of {', '.join(MEASURE_SCOPES)}")
    return bool(scope == "file")


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _sane_law(m: Measure, where: str) -> None:
    assert m.params is not None
    problem = distribution_problem(m.dist, m.params)
    if problem:
        raise DesignError(f"{where}.params: {problem}")
    if m.low is not None and m.low >= 0:
        return  # values below the measure's min are set to it: no negative value whatever the law
    if m.dist == "normal" and not m.signed and m.params["mean"] < 4 * m.params["sd"]:
        raise DesignError(
            f'{where}.params: a normal law with mean < 4 sd gives negative values; narrow it or set "signed": true'
        )
    if m.dist == "uniform" and not m.signed and m.params["low"] < 0:
        raise DesignError(f'{where}.params: negative low without "signed": true')


def _outcome(o: _Obj) -> Outcome:
    if "formula" in o.data:
        return _derived(o)
    o.check_keys(
        ("column", "name", "unit", "description", "center", "spread", "min", "max", "parents"),
        ("decimals", "step", "scale", "residual", "persist", "clip"),
    )
    center, spread = o.number("center"), o.number("spread")
    low, high = o.number("min", allow_none=True), o.number("max", allow_none=True)
    assert center is not None and spread is not None
    scale = _scale(o)
    if spread <= 0:
        raise DesignError(f"{o.where}.spread: must be positive")
    typical_low, typical_high = center - spread, center + spread
    if scale == "log":
        if center <= 0:
            raise DesignError(f"{o.where}.center: a log-scale outcome needs a positive typical value")
        if spread > _MAX_DECADES:
            raise DesignError(f"{o.where}.spread: a log-scale spread is in decades (sd of log10), at most 3")
        typical_low, typical_high = center / 10**spread, center * 10**spread
    clip = _clip(o, low, high)
    if low is not None and typical_low < low and not clip:  # clipped: records below pile on the bound (hurdle)
        raise DesignError(
            f"{o.where}: center - spread falls below min" + (" (center / 10^spread)" if scale == "log" else "")
        )
    if high is not None and typical_high > high and not clip:
        raise DesignError(
            f"{o.where}: center + spread exceeds max" + (" (center * 10^spread)" if scale == "log" else "")
        )
    step = o.step()
    if step is not None and step > typical_high - typical_low:
        raise DesignError(
            f"{o.where}.step: {step:g} is coarser than the typical range (center ± spread): the values would collapse "
            "onto one or two steps"
        )
    residual = o.number("residual") if "residual" in o.data else None
    if residual is not None and not 0 < residual <= spread:
        raise DesignError(
            f"{o.where}.residual: the scatter between repeat records must be positive and at most the spread "
            f"({spread:g}{' decades' if scale == 'log' else ''})"
        )
    parents = o.data["parents"]
    if not isinstance(parents, dict) or not 1 <= len(parents) <= MAX_CAUSES:
        raise DesignError(f"{o.where}.parents: expected an object of 1 to {MAX_CAUSES} causes")
    directions: list[tuple[str, int]] = []
    effects: list[tuple[str, tuple[tuple[str, float], ...]]] = []
    strengths: list[tuple[str, float]] = []
    for column, direction in parents.items():
        if isinstance(direction, dict):  # a categorical cause with the expected effect of each level
            effects.append((str(column), _level_effects(direction, f"{o.where}.parents.{column}")))
            direction = 0
        elif (
            isinstance(direction, bool)
            or not isinstance(direction, int | float)
            or not -_MAX_STRENGTH <= direction <= _MAX_STRENGTH
            or (direction != 0 and abs(direction) < _MIN_STRENGTH)
        ):
            raise DesignError(
                f"{o.where}.parents.{column}: expected a direction 1 or -1 (a strength {_MIN_STRENGTH:g} to "
                f"{_MAX_STRENGTH:g} with its sign: 0.3, -2), 0 (an optimum) or an object of level effects"
            )
        elif direction not in (-1, 0, 1):  # a direction with a strength
            strengths.append((str(column), abs(float(direction))))
            direction = 1 if direction > 0 else -1
        directions.append((str(column), int(direction)))
    unit = o.text("unit", empty=True)
    _unit_ok(unit, o.where)
    return Outcome(
        o.text("column", COLUMN_RE), o.text("name"), unit, o.text("description"), center, spread, low, high,
        o.decimals(), tuple(directions), step=step, effects=tuple(effects), scale=scale, residual=residual,
        strengths=tuple(strengths), persist=_persist(o), clip=clip,
    )  # fmt: skip


_MAX_LEVEL_EFFECT = 3.0  # in multiples of the outcome's spread
# an outcome's causes: six, not the four of version 11, since a study's key response often has more (a migrant stock
# follows distance, both populations, language and the origin's history)
MAX_CAUSES = 6
_MIN_STRENGTH, _MAX_STRENGTH = 0.1, 3.0  # a numeric cause's strength, times the builder's drawn share


def _level_effects(data: dict[str, Any], where: str) -> tuple[tuple[str, float], ...]:
    """``{"level": effect, ...}``: numbers in [-3, 3] (multiples of the outcome's spread), not all equal (the level
    set is checked against the cause in ``_cross_checks``)."""
    table: list[tuple[str, float]] = []
    for level, effect in data.items():
        if isinstance(effect, bool) or not isinstance(effect, int | float) or abs(effect) > _MAX_LEVEL_EFFECT:
            raise DesignError(f"{where}.{level}: expected a number in [-3, 3] (multiples of the outcome's spread)")
        table.append((str(level), float(effect)))
    if len({e for _, e in table}) < 2:
        raise DesignError(f"{where}: level effects must not all be equal (write 0 for no expected order)")
    return tuple(table)


def _scale(o: _Obj) -> str:
    """An outcome's ``scale``: ``linear`` (the default) or ``log`` (a response's causes, or a formula's noise,
    multiply its value)."""
    scale = o.text("scale") if "scale" in o.data else "linear"
    if scale not in SCALES:
        raise DesignError(f"{o.where}.scale: expected one of {', '.join(SCALES)}")
    return scale


def _derived(o: _Obj) -> Outcome:
    """A column defined by a formula over earlier columns (checked against the design in ``_cross_checks``)."""
    o.check_keys(
        ("column", "name", "unit", "description", "formula", "min", "max"),
        ("decimals", "noise", "step", "clip", "persist", "scale"),
    )
    formula = o.text("formula", limit=300)
    try:
        tree = expr.parse(formula)
    except expr.ExpressionError as exc:
        raise DesignError(f"{o.where}.formula: {exc}") from None
    inputs = sorted(expr.names_used(tree))
    if not inputs:
        raise DesignError(f"{o.where}.formula: uses no column")
    noise = o.number("noise") if "noise" in o.data else 0.0
    assert noise is not None
    if noise < 0:
        raise DesignError(f"{o.where}.noise: must not be negative")
    low, high = o.number("min", allow_none=True), o.number("max", allow_none=True)
    if low is not None and high is not None and low >= high:
        raise DesignError(f"{o.where}: min must be below max")
    step = o.step()
    if (
        step is not None
        and low is not None
        and high is not None
        and math.floor(high / step) - math.ceil(low / step) < 1
    ):
        raise DesignError(f"{o.where}.step: fewer than two multiples of {step:g} lie between min and max")
    persist = _persist(o)
    if persist and not noise:
        raise DesignError(f"{o.where}.persist: an exact formula has no scatter to follow the previous record (noise 0)")
    scale = _scale(o)
    if scale == "log":  # the noise multiplies the formula's value: a 15 % jitter on a solve time, not 15 s
        if low is None or low <= 0:
            raise DesignError(f"{o.where}.min: a log-scale formula needs a positive min (its value is never below it)")
        if not 0 < noise <= _MAX_DECADES:
            raise DesignError(f"{o.where}.noise: a log-scale formula's noise is in decades (sd of log10), above 0")
    unit = o.text("unit", empty=True)
    _unit_ok(unit, o.where)
    # center and spread describe a hypothesised response; a definition's values follow from its inputs.
    return Outcome(
        o.text("column", COLUMN_RE), o.text("name"), unit, o.text("description"), 0.0, 0.0, low, high,
        o.decimals(), tuple((c, 0) for c in inputs), formula=formula, noise=noise, step=step, clip=_clip(o, low, high),
        persist=persist, scale=scale,
    )  # fmt: skip


def _clock(t: _Obj, resolution: str) -> tuple[str, int]:
    """A timestamp's time model: ``clock`` and ``every`` ("45min") come together; neither is the random clock."""
    if ("clock" in t.data) != ("every" in t.data):
        raise DesignError(f"{t.where}: 'clock' and 'every' come together")
    if "clock" not in t.data:
        return "random", 0
    name = t.text("clock")
    if name == "random":
        raise DesignError(
            f"{t.where}.clock: name interval, session, run or events (leave both keys out for random times)"
        )
    try:
        every = clock.parse_every(t.text("every"))
    except ValueError as error:
        raise DesignError(f"{t.where}.every: {error}") from None
    problem = clock.cadence_problem(name, every, resolution)
    if problem is not None:
        raise DesignError(f"{t.where}: {problem}")
    return name, every


def _window(t: _Obj, clock_name: str, every: int, resolution: str) -> Window | None:
    """A timestamp's window (``months``, ``hours``, ``weekdays``, ``closed``), or None where it names none."""
    if not {"months", "hours", "weekdays", "closed"} & set(t.data):
        return None
    parts: dict[str, tuple[int, ...]] = {}
    for key in ("months", "hours"):
        value = t.data.get(key, [])
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise DesignError(f"{t.where}.{key}: expected a list of whole numbers")
        parts[key] = tuple(value)
    weekdays = t.data.get("weekdays", False)
    if not isinstance(weekdays, bool):
        raise DesignError(f"{t.where}.weekdays: expected true or false")
    closed = t.data.get("closed", [])
    if not isinstance(closed, list) or any(
        not isinstance(p, list) or len(p) != 2 or not all(isinstance(d, str) for d in p) for p in closed
    ):
        raise DesignError(f"{t.where}.closed: expected a list of [first day, last day] ISO dates")
    window = Window(parts["months"], parts["hours"], weekdays, tuple((p[0], p[1]) for p in closed))
    problem = clock.window_problem(window, clock_name, every, resolution)
    if problem is not None:
        raise DesignError(f"{t.where}: {problem}")
    return window


def start_room(design: Design, rows_max: int = ROWS_MAX) -> int | None:
    """Days from the design's first possible start (1 January of ``since``, else of FIRST_YEAR) to the latest start
    that lets its longest file (``rows_max`` records), begun a year into the study, end by DATA_END; negative when
    no start can; None for a design without a timestamp (its records take one day)."""
    if design.timestamp is None:
        return None
    longest = min(rows_max, design.rows[1]) if design.rows else rows_max
    span = clock.span_days(design.timestamp.clock, design.timestamp.every, longest, design.timestamp.window)
    first = date(design.since or FIRST_YEAR, 1, 1)
    return (DATA_END - timedelta(days=FILE_START_DAYS + math.ceil(span)) - first).days


def _check_span(design: Design, where: str) -> None:
    """Refuse a design some of whose repositories would hold records dated after the present."""
    room = start_room(design)
    if room is None or room >= 0:
        return
    assert design.timestamp is not None
    longest = design.rows[1] if design.rows else ROWS_MAX
    span = clock.span_days(design.timestamp.clock, design.timestamp.every, longest, design.timestamp.window)
    every = clock.format_every(design.timestamp.every)
    raise DesignError(
        f"{where}.timestamp.every: {longest} records every {every} span {span / 365.25:.1f} years, which cannot "
        f"end by {DATA_END.isoformat()} for a study started in {design.since or FIRST_YEAR} or later"
    )


def _design(field: str, data: object, where: str) -> Design:
    o = _Obj(data, where)
    o.check_keys(
        ("subdomain", "topic", "record", "identifiers", "factors", "measures", "outcomes"),
        ("timestamp", "since", "rows", "exclude"),
    )
    since = o.data.get("since", 0)
    if isinstance(since, bool) or not isinstance(since, int) or not (since == 0 or FIRST_YEAR < since <= LAST_YEAR):
        raise DesignError(f"{where}.since: expected a year from {FIRST_YEAR + 1} to {LAST_YEAR}")
    identifiers = []
    for item in o.items("identifiers", 1, 2):
        item.check_keys(("column", "name", "prefix", "description"), ("per",))
        prefix = item.text("prefix", PREFIX_RE)
        column, name = item.text("column", COLUMN_RE), item.text("name")
        identifiers.append(Identifier(column, name, prefix, item.text("description"), _per_file(item)))
    timestamp = None
    if "timestamp" in o.data:
        t = _Obj(o.data["timestamp"], f"{where}.timestamp")
        t.check_keys(
            ("column", "name", "description"),
            ("resolution", "clock", "every", "months", "hours", "weekdays", "closed", "per"),
        )
        resolution = t.text("resolution") if "resolution" in t.data else "datetime"
        if resolution not in TIMESTAMP_RESOLUTIONS:
            raise DesignError(f"{where}.timestamp.resolution: expected one of {', '.join(TIMESTAMP_RESOLUTIONS)}")
        clock_name, every = _clock(t, resolution)
        timestamp = Timestamp(
            t.text("column", COLUMN_RE),
            t.text("name"),
            t.text("description"),
            resolution,
            clock_name,
            every,
            _window(t, clock_name, every, resolution),
            _per_file(t),
        )
    rows = o.data.get("rows")
    if rows is not None and (
        not isinstance(rows, list)
        or len(rows) != 2
        or any(isinstance(r, bool) or not isinstance(r, int) for r in rows)
        or not ROWS_LEAST <= rows[0] <= rows[1] <= ROWS_MAX
    ):
        raise DesignError(
            f"{where}.rows: expected [fewest, most] records per file, {ROWS_LEAST} <= fewest <= most <= {ROWS_MAX}"
        )
    design = Design(
        field=field,
        subdomain=o.text("subdomain"),
        topic=o.text("topic", limit=60),
        record=o.text("record", limit=60),
        identifiers=tuple(identifiers),
        timestamp=timestamp,
        factors=tuple(_factor(f) for f in o.items("factors", 3, 6)),
        measures=tuple(_measure(m) for m in o.items("measures", 3, 8)),
        outcomes=tuple(_outcome(y) for y in o.items("outcomes", 2, 8)),
        since=since,
        rows=(rows[0], rows[1]) if rows is not None else None,
    )
    if "exclude" in o.data:
        design = replace(design, excluded=_exclusions(o.data["exclude"], design, f"{where}.exclude"))
    _cross_checks(design, where)
    _check_span(design, where)
    return design


def _exclusions(data: object, design: Design, where: str) -> tuple[Crossing, ...]:
    """``[{factor: [level, ...], ...}, ...]``: 1-8 crossings, each of two or more factors and some of their levels,
    that leave every level of every factor they name in some combination the study can have."""
    if not isinstance(data, list) or not 1 <= len(data) <= MAX_CROSSINGS:
        raise DesignError(f"{where}: expected a list of 1 to {MAX_CROSSINGS} crossings")
    factors = {f.column: f for f in design.factors}
    crossings: list[Crossing] = []
    for i, item in enumerate(data):
        here = f"{where}[{i}]"
        if not isinstance(item, dict) or len(item) < 2:
            raise DesignError(f"{here}: expected an object of two or more factors, each with a list of its levels")
        crossing: dict[str, tuple[str, ...] | tuple[float, ...]] = {}
        for column, levels in item.items():
            factor = factors.get(column)
            if factor is None:
                raise DesignError(f"{here}: {column!r} is not a factor of this design")
            if not isinstance(levels, list) or not levels or len(set(map(str, levels))) != len(levels):
                raise DesignError(f"{here}.{column}: expected a list of distinct levels")
            typed = tuple(float(v) if factor.numeric and not isinstance(v, str | bool) else v for v in levels)
            unknown = [v for v in typed if v not in factor.values]
            if unknown:
                shown = ", ".join(map(_level_text, factor.values))
                raise DesignError(f"{here}.{column}: {_level_text(unknown[0])} is not one of its levels ({shown})")
            crossing[column] = typed
        crossings.append(crossing)
    named = list(dict.fromkeys(c for crossing in crossings for c in crossing))
    allowed = allowed_combinations({c: factors[c].values for c in named}, crossings)
    for axis, column in enumerate(named):
        kept = allowed.any(axis=tuple(a for a in range(len(named)) if a != axis))
        if not kept.all():
            level = _level_text(factors[column].values[int(np.flatnonzero(~kept)[0])])
            raise DesignError(f"{where}: level {level} of {column!r} is ruled out with every other level")
    return tuple(crossings)


def _level_text(level: str | float) -> str:
    """A level as the design writes it: 'a1', 500 (not 500.0), 0.1."""
    return repr(level) if isinstance(level, str) else level_key(level)


def _cross_checks(d: Design, where: str) -> None:
    columns = d.columns
    for column in columns:
        if columns.count(column) > 1:
            raise DesignError(f"{where}: column {column!r} is used twice")
        if column in SPECIAL_PLACEHOLDERS or column in RECORD_NAMES or column in expr.RESERVED_NAMES or "__" in column:
            raise DesignError(f"{where}: column {column!r} is a reserved name")
    causes = {f.column for f in d.factors} | {m.column for m in d.measures}
    categorical = {f.column for f in d.factors if not f.numeric} | {
        m.column for m in d.measures if m.type == "categorical"
    }
    numeric = {f.column for f in d.factors if f.numeric} | {m.column for m in d.measures if m.type != "categorical"}
    levels = {f.column: tuple(str(v) for v in f.values) for f in d.factors if not f.numeric}
    levels |= {m.column: m.values for m in d.measures if m.type == "categorical"}
    # A formula may read the time (days since the study start, so ``t % 1`` is the time of day: sunlight, traffic)
    # and the record's position in its file (``row``: what climbs within a file). The time does not cause a response:
    # a hypothesis about it would be about the calendar, not the study; ``row`` may, as a trend over a file's records
    # with a direction (contributions falling round by round, a migrant stock growing year by year; version 12).
    # With a timestamp, also the record's calendar (day of year: seasons; day of week: weekends; days since the
    # file's first record: what accumulates).
    formula_only = {ROW_NAME} | ({d.timestamp.column, *CALENDAR_NAMES} if d.timestamp is not None else set())
    if sum(not o.derived for o in d.outcomes) < 2:
        raise DesignError(f"{where}: at least two outcomes must be responses (without a formula)")
    for outcome in d.outcomes:
        if outcome.derived:
            try:
                expr.check(outcome.formula, expr.Scope(frozenset(numeric | formula_only), levels))
            except expr.ExpressionError as exc:
                raise DesignError(
                    f"{where}: formula of {outcome.column!r}: {exc} (it may use factors, measures, earlier "
                    "outcomes, row and, with a timestamp, the timestamp, day_of_year, day_of_week and elapsed_days)"
                ) from None
        for parent, direction in outcome.parents:
            if parent in formula_only and outcome.derived:
                continue
            if parent == ROW_NAME:
                if direction == 0:
                    raise DesignError(
                        f"{where}: outcome {outcome.column!r}: 'row' as a cause is a trend over a file's records and "
                        "needs a direction (1, -1 or a strength), not 0"
                    )
                continue
            if parent in formula_only:
                raise DesignError(
                    f"{where}: outcome {outcome.column!r} has {parent!r} as a cause: the time and the calendar are "
                    "read by formulas only (the time of day is the timestamp % 1; a trend over records is 'row')"
                )
            if parent not in causes:
                raise DesignError(
                    f"{where}: outcome {outcome.column!r} has parent {parent!r}, which is not a factor, a measure or "
                    "an earlier outcome"
                )
            if parent in categorical and direction != 0:
                raise DesignError(f"{where}: {outcome.column!r}: categorical parent {parent!r} needs direction 0")
            table = outcome.level_effects(parent)
            if table is not None:
                if parent not in categorical:
                    raise DesignError(
                        f"{where}: {outcome.column!r}: level effects for {parent!r}, which is not categorical"
                    )
                if sorted(table) != sorted(levels[parent]):
                    raise DesignError(
                        f"{where}: {outcome.column!r}: level effects for {parent!r} must name each of its levels "
                        f"once ({', '.join(levels[parent])})"
                    )
        causes.add(outcome.column)
        numeric.add(outcome.column)
    factor_levels = {f.column: {level_key(v) for v in f.values} for f in d.factors}
    for m in d.measures:
        if m.by_level is None:
            continue
        if m.by_level.column not in factor_levels:
            raise DesignError(f"{where}: measure {m.column!r}: by {m.by_level.column!r}, which is not a factor")
        for level in [*m.by_level.params, *m.by_level.probs]:
            if level not in factor_levels[m.by_level.column]:
                raise DesignError(
                    f"{where}: measure {m.column!r}: {level!r} is not a level of {m.by_level.column!r} "
                    f"({', '.join(sorted(factor_levels[m.by_level.column]))})"
                )
    # Every factor and most measures should matter to something, or the study would not record them.
    used = {p for o in d.outcomes if not o.derived for p, _ in o.parents}
    idle = [f.column for f in d.factors if f.column not in used]
    if idle:
        raise DesignError(f"{where}: factor {idle[0]!r} is a parent of no response (an outcome without a formula)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of a design file: a key written twice is refused (JSON would keep the last one silently, and a
    designer's first ``parents`` would be lost)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} appears twice in one object")
        seen[key] = value
    return seen


def load_file(text: str, taxonomy_field: Any, where: str) -> tuple[Design, ...]:
    """Parse one field's design file against the field's taxonomy entry (:class:`generators.data_files.Field`)."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except ValueError as exc:
        raise DesignError(f"{where}: not valid JSON: {exc}") from None
    top = _Obj(data, where)
    top.check_keys(("field", "designs"))
    if top.data["field"] != taxonomy_field.name:
        raise DesignError(f"{where}.field: {top.data['field']!r} is not {taxonomy_field.name!r}")
    designs = tuple(_design(taxonomy_field.name, d, f"{where}.designs[{i}]") for i, d in enumerate(top.data["designs"]))
    expected = [s.name for d in taxonomy_field.domains for s in d.subdomains]
    got = [d.subdomain for d in designs]
    for name in expected:
        if name not in got:
            raise DesignError(f"{where}: no design for subdomain {name!r}")
    for name in got:
        if name not in expected or got.count(name) > 1:
            raise DesignError(f"{where}: subdomain {name!r} is not in the taxonomy or appears twice")
    return designs


@cache
def units() -> frozenset[str]:
    """The unit symbols designs may use."""
    path = resources.files("generators").joinpath("data", "units.json")
    return frozenset(json.loads(path.read_text("utf-8"))["symbols"])


@cache
def shared_columns() -> frozenset[str]:
    """Columns that designs of different domains may share on purpose (temperature, age...)."""
    path = resources.files("generators").joinpath("data", _FOLDER, SHARED_FILE)
    return frozenset(json.loads(path.read_text("utf-8"))["columns"])


@cache
def designs() -> dict[tuple[str, str], Design]:
    """Every design, keyed by (field name, subdomain name)."""
    from generators.data_files import taxonomy

    root = resources.files("generators").joinpath("data", _FOLDER)
    out: dict[tuple[str, str], Design] = {}
    for field in taxonomy():
        name = f"{field.slug}.json"
        for design in load_file(root.joinpath(name).read_text("utf-8"), field, name):
            out[(field.name, design.subdomain)] = design
    return out


def borrowed(field_designs: Mapping[str, tuple[Design, ...]]) -> list[str]:
    """Columns used by designs of two domains of one field without being declared shared: one line each.

    ``field_designs`` maps a domain name to the designs of its subdomains."""
    owner: dict[str, str] = {}
    problems = []
    shared = shared_columns()
    for domain, group in field_designs.items():
        for column in sorted({c for d in group for c in d.columns}):
            if column in shared:
                continue
            if column in owner and owner[column] != domain:
                problems.append(f"column {column!r} is used in domains {owner[column]!r} and {domain!r}")
            owner.setdefault(column, domain)
    return problems


def check_files(paths: list[Path]) -> list[str]:
    """Problems in design files (the taxonomy field is found by file name): one line each."""
    from generators.data_files import taxonomy

    fields = {f.slug: f for f in taxonomy()}
    problems: list[str] = []
    for path in paths:
        field = fields.get(path.stem)
        if field is None:
            problems.append(f"{path.name}: no taxonomy field has this file name")
            continue
        try:
            loaded = load_file(path.read_text("utf-8"), field, path.name)
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        except DesignError as exc:
            problems.append(str(exc))
            continue
        domain_of = {s.name: d.name for d in field.domains for s in d.subdomains}
        grouped: dict[str, tuple[Design, ...]] = {}
        for design in loaded:
            grouped[domain_of[design.subdomain]] = (*grouped.get(domain_of[design.subdomain], ()), design)
        problems += [f"{path.name}: {p}" for p in borrowed(grouped)]
    return problems


def main(argv: list[str]) -> int:
    root = Path(str(resources.files("generators").joinpath("data", _FOLDER)))
    paths = [Path(a) for a in argv] or sorted(p for p in root.glob("*.json") if p.name != SHARED_FILE)
    problems = check_files(paths)
    for line in problems:
        print(line)
    print(f"{len(paths)} file(s), {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0
