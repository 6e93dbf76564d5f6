"""The messiness ladder (``--mess LEVEL``, issue 24): real data's faults, laid over a clean repository.

A level above 0 keeps the clean repository's study, layout and numbers, and changes how they are written:
missing cells (each format's own token), comment lines and a units row, a missing-value code (-999), a column
recorded in another unit in some files, inconsistent spelling of categories, superseded copies of files (``_v2``
replacements, an ``old/`` folder), and a renamed column with another column order in some files. A
``CODEBOOK.md`` at the root declares the units, the codes and every change between files.

Everything is a function of the spec (its seed, universe and ``mess`` level) and of the file, drawn from streams
of their own: the clean repository's draws are untouched, so ``--mess 0`` is the repository without the option,
byte for byte. The question generator reads files as the documented cleaning convention does
(docs/generation.md, "Messy repositories"), through :meth:`MessPlan.observed`: missing and coded cells are
absent, drifted values are converted back by the stated factor, categories are the codebook's spelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from generators.paths import Tree
from generators.rng import Stream, root_stream
from generators.spec import Spec, Variable
from generators.synth import Column, Table

BoolArray = npt.NDArray[np.bool_]
MESS_LEVELS = (0, 1, 2, 3)
KINDS = ("missing", "header", "sentinel", "unit_drift", "spelling", "superseded", "renamed")
CODEBOOK_NAME = "CODEBOOK.md"
SENTINEL = "-999"
V2_SUFFIX = "_v2"
# The token a format's usual writer leaves for a value that was not recorded.
MISSING_TOKENS = {"csv": "", "txt": "NA", "log": "NA", "xlsx": "", "json": "null", "jsonl": "null"}
# Unit drift: a column recorded in the first unit is written in the second in some files; the value in the first
# unit is (file value) x factor + offset, exactly that operation.
DRIFTS: dict[str, tuple[str, float, float]] = {
    "g": ("kg", 1000.0, 0.0),
    "mg": ("g", 1000.0, 0.0),
    "mm": ("cm", 10.0, 0.0),
    "cm": ("m", 100.0, 0.0),
    "m": ("km", 1000.0, 0.0),
    "ms": ("s", 1000.0, 0.0),
    "mL": ("L", 1000.0, 0.0),
    "W": ("kW", 1000.0, 0.0),
    "Pa": ("kPa", 1000.0, 0.0),
    "kPa": ("MPa", 1000.0, 0.0),
    "Hz": ("kHz", 1000.0, 0.0),
    "mV": ("V", 1000.0, 0.0),
    "mA": ("A", 1000.0, 0.0),
    "°C": ("K", 1.0, -273.15),
}
# Per level: (chance of each optional kind, share of cells missing in a column with gaps, share of files with one
# column left wholly empty, share of files superseded).
_LEVELS = {1: (0.0, 0.02, 0.0, 0.0), 2: (0.5, 0.04, 0.1, 0.08), 3: (0.9, 0.08, 0.2, 0.15)}


@dataclass(frozen=True)
class FileRule:
    """Which files a change applies to: those whose placeholder ``name`` takes one of ``values`` (raw values)."""

    name: str
    values: frozenset[str]
    text: str  # how the codebook says it: "files dated 2024-05-01 or later (20240501 in paths)"

    def covers(self, values: dict[str, str | int | float]) -> bool:
        return str(values[self.name]) in self.values


@dataclass(frozen=True)
class Drift:
    column: str
    unit: str  # the codebook's unit of the column
    file_unit: str  # the unit the covered files record it in
    factor: float
    offset: float
    rule: FileRule


@dataclass(frozen=True)
class Rename:
    column: str
    new_name: str
    order: tuple[str, ...]  # the covered files' column order (new names)
    rule: FileRule


@dataclass(frozen=True)
class FileMess:
    """What one physical file does: its clean table (before stale truncation), who it is, its rows."""

    logical: str  # the layout path whose data it holds
    number: int  # the layout point number
    stale: bool  # a superseded copy (``NAME.ext`` beside ``NAME_v2.ext``, or under ``old/``)


@dataclass(frozen=True)
class MessPlan:
    level: int
    extension: str
    missing_columns: tuple[str, ...]
    missing_rate: float
    dead_rate: float
    comments: tuple[str, ...]  # comment lines of every data file (without "# "), empty for none
    units_row: bool
    sentinel_columns: tuple[str, ...]
    drift: Drift | None
    spelling: tuple[str, ...]
    rename: Rename | None
    old_dir: str
    v2: frozenset[str] = field(default_factory=frozenset)  # logical paths replaced by NAME_v2.ext
    old: frozenset[str] = field(default_factory=frozenset)  # logical paths with a copy under old/

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of mess this repository has."""
        present = {
            "missing": bool(self.missing_columns),
            "header": bool(self.comments) or self.units_row,
            "sentinel": bool(self.sentinel_columns),
            "unit_drift": self.drift is not None,
            "spelling": bool(self.spelling),
            "superseded": bool(self.v2 or self.old),
            "renamed": self.rename is not None,
        }
        return tuple(k for k in KINDS if present[k])

    def current(self, logical: str) -> str:
        """The physical path of a layout file's current version."""
        return v2_name(logical) if logical in self.v2 else logical

    @cached_property
    def stale_copies(self) -> dict[str, str]:
        """Physical path of every superseded copy -> the layout path it is an older version of."""
        copies = {logical: logical for logical in self.v2}
        copies.update({f"{self.old_dir}/{logical}": logical for logical in self.old})
        return copies


def v2_name(path: str) -> str:
    stem, dot, extension = path.rpartition(".")
    return f"{stem}{V2_SUFFIX}{dot}{extension}"


def logical_of(physical: str) -> str:
    """The layout path a current physical path stands for (``NAME_v2.ext`` -> ``NAME.ext``)."""
    stem, dot, extension = physical.rpartition(".")
    if stem.endswith(V2_SUFFIX):
        return f"{stem[: -len(V2_SUFFIX)]}{dot}{extension}"
    return physical


# ------------------------------------------------------------------------------------------------ planning
def plan(spec: Spec, tree: Tree) -> MessPlan | None:
    """The repository's mess, None at level 0."""
    if spec.mess == 0:
        return None
    rs = root_stream(spec.seed, spec.universe, "mess")
    chance, rate, dead, superseded = _LEVELS[spec.mess]
    measured = [v for v in spec.variables if v.role not in ("identifier", "datetime")]
    numeric = [v for v in measured if v.type in ("integer", "continuous")]
    categorical = [v for v in measured if v.type == "categorical"]
    missing_rs = rs.child("missing")
    k = min(len(measured), missing_rs.randint(1, 2 + spec.mess))
    missing = tuple(v.column for v in missing_rs.sample(measured, k))
    header = rs.child("header")
    comments = _comments(spec) if header.chance(0.4 + 0.2 * spec.mess) else ()
    units_row = header.chance(0.3 + 0.2 * spec.mess) and spec.extension in ("csv", "txt", "xlsx")
    if spec.extension not in ("csv", "txt", "log"):
        comments = ()  # JSON has no comments, and a spreadsheet's notes would read as rows
    sentinel_rs = rs.child("sentinel")
    sentinel: tuple[str, ...] = ()
    if spec.mess >= 2 and sentinel_rs.chance(chance):
        # Only where -999 can never be a measured value (the column's lower bound is above it).
        sentinel = tuple(v.column for v in numeric if v.column in missing and _above_sentinel(v))
    drift = (
        _drift(spec, tree, numeric, rs.child("drift")) if spec.mess >= 2 and rs.child("drift?").chance(chance) else None
    )
    spelling: tuple[str, ...] = ()
    if spec.mess >= 2 and categorical and rs.child("spelling").chance(chance):
        spelling = tuple(v.column for v in categorical if _spellable(v))
    rename = None
    if spec.mess >= 2 and rs.child("rename?").chance(chance):
        rename = _rename(spec, tree, rs.child("rename"))
    # A folder name no path of the layout can take, present or not.
    tops = {tree.component_name(0, i) for i in range(tree.component_radix[0])}
    old_dir = next(name for name in ("old", "superseded", "_old") if name not in tops)
    v2: set[str] = set()
    old: set[str] = set()
    if superseded and rs.child("superseded?").chance(chance):
        chosen = rs.child("superseded").uniform(len(tree.file_paths)) < superseded
        chosen[rs.child("superseded", "one").randint(0, len(tree.file_paths) - 1)] = True
        styles = rs.child("superseded", "style").uniform(len(tree.file_paths)) < 0.5
        for path, pick, style in zip(tree.file_paths, chosen.tolist(), styles.tolist(), strict=True):
            if pick:
                (v2 if style else old).add(path)
    return MessPlan(
        level=spec.mess,
        extension=spec.extension,
        missing_columns=missing,
        missing_rate=rate,
        dead_rate=dead,
        comments=comments,
        units_row=units_row,
        sentinel_columns=sentinel,
        drift=drift,
        spelling=spelling,
        rename=rename,
        old_dir=old_dir,
        v2=frozenset(v2),
        old=frozenset(old),
    )


def _comments(spec: Spec) -> tuple[str, ...]:
    topic = spec.context.topic or spec.context.subdomain
    return (
        f"{spec.project.repo_name}: {topic} data",
        f"exported by the acquisition script; one row per {spec.context.record or 'record'}",
    )


def _above_sentinel(variable: Variable) -> bool:
    """Whether -999 can never be a value of the column: a lower bound above it, or a law of counts."""
    low = variable.bounds[0]
    if low is not None:
        return low > -999
    law = variable.distribution
    return (
        law is not None
        and law.kind in ("bernoulli", "binomial", "geometric", "negative_binomial", "poisson", "exponential", "beta")
        and (law.kind != "beta" or min(_beta_lows(variable)) > -999)
    )


def _beta_lows(variable: Variable) -> list[float]:
    """A beta column's lowest values: its own law's and those of its laws per level (Variable.by_level)."""
    assert variable.distribution is not None
    levels = variable.by_level.params.values() if variable.by_level is not None else ()
    return [variable.distribution.params["low"], *(params["low"] for params in levels)]


def _spellable(variable: Variable) -> bool:
    """Categories that stay distinct when compared without case and surrounding spaces."""
    folded = {c.strip().casefold() for c in variable.categories}
    return len(folded) == len(variable.categories) and all(c == c.strip() for c in variable.categories)


def _rule(spec: Spec, tree: Tree, rs: Stream) -> FileRule | None:
    """A split of the files by date (from a day on), else by researcher, else by a level of a path variable."""
    names = list(tree.placeholders)
    if "date" in names:
        k = names.index("date")
        days = sorted(str(v) for v in tree.values[k])
        if len(days) >= 2:
            start = rs.randint(1, len(days) - 1)
            texts = dict(zip((str(v) for v in tree.values[k]), tree.texts[k], strict=True))
            text = f"files dated {days[start]} or later (`{texts[days[start]]}` in paths)"
            return FileRule("date", frozenset(days[start:]), text)
    if "researcher" in names:
        k = names.index("researcher")
        if len(tree.values[k]) >= 2:
            i = rs.randint(0, len(tree.values[k]) - 1)
            return FileRule(
                "researcher", frozenset({str(tree.values[k][i])}), f"files of researcher `{tree.texts[k][i]}`"
            )
    factors = [n for n in names if n not in ("date", "researcher", "seq_number")]
    for name in rs.shuffled(factors):
        k = names.index(name)
        if len(tree.values[k]) >= 2:
            i = rs.randint(0, len(tree.values[k]) - 1)
            return FileRule(
                name, frozenset({str(tree.values[k][i])}), f"files whose `{name}` is `{tree.texts[k][i]}` in paths"
            )
    return None


def _drift(spec: Spec, tree: Tree, numeric: list[Variable], rs: Stream) -> Drift | None:
    candidates = [v for v in numeric if v.type == "continuous" and v.unit in DRIFTS]
    rule = _rule(spec, tree, rs.child("rule"))
    if not candidates or rule is None:
        return None
    variable = rs.pick(candidates)
    file_unit, factor, offset = DRIFTS[variable.unit]
    return Drift(variable.column, variable.unit, file_unit, factor, offset, rule)


def _rename(spec: Spec, tree: Tree, rs: Stream) -> Rename | None:
    rule = _rule(spec, tree, rs.child("rule"))
    candidates = [v for v in spec.variables if v.role not in ("identifier", "datetime")]
    if rule is None or not candidates:
        return None
    variable = rs.pick(candidates)
    taken = {v.column for v in spec.variables}
    new_name = "_".join(variable.name.replace("-", " ").split()).lower()
    if not new_name.isascii() or not new_name.replace("_", "").isalnum() or new_name in taken:
        new_name = variable.column.upper()
    names = [new_name if v.column == variable.column else v.column for v in spec.variables]
    order = tuple(rs.shuffled(names))
    if order == tuple(names):
        order = tuple(reversed(names))
    return Rename(variable.column, new_name, order, rule)


# ------------------------------------------------------------------------------------------------ files
@dataclass(frozen=True)
class MessyFile:
    """One data file as written: the observed table (what the cleaning convention reads) and the cells."""

    observed: Table
    names: tuple[str, ...]  # as written, in written order
    cells: tuple[list[str], ...]  # text per written column (tokens for missing cells not yet applied)
    missing: tuple[BoolArray, ...]  # per written column
    kinds: tuple[str, ...]  # per written column: "number", "text" (categories) or "raw" (ids, timestamps)
    units: tuple[str, ...] | None
    comments: tuple[str, ...]
    stamp: list[str] | None  # the first timestamp column's text (for log lines)


def messy_file(
    spec: Spec, plan: MessPlan, physical: str, table: Table, values: dict[str, str | int | float]
) -> MessyFile:
    """The file at ``physical`` (a current or superseded copy) made from the clean ``table`` of its layout file."""
    stale = physical in plan.stale_copies
    logical = plan.stale_copies.get(physical, logical_of(physical))
    rs = root_stream(spec.seed, spec.universe, "mess", "file", logical)
    n = table.n_rows
    if stale:  # an earlier export: the run was not finished
        keep = int(n * rs.child("stale").uniform_range(0.5, 0.9, 1)[0])
        table = Table(tuple(_head(c, keep) for c in table.columns), keep)
        n = keep
    drift = plan.drift if plan.drift is not None and plan.drift.rule.covers(values) else None
    rename = plan.rename if plan.rename is not None and plan.rename.rule.covers(values) else None
    dead = ""
    if plan.dead_rate and plan.missing_columns and rs.child("dead").chance(plan.dead_rate):
        dead = rs.child("dead", "column").pick(plan.missing_columns)
    observed_columns: list[Column] = []
    written: dict[str, tuple[list[str], BoolArray, str, str]] = {}
    for column in table.columns:
        variable = spec.variable(column.name)
        missing = np.zeros(n, dtype=bool)
        if column.name in plan.missing_columns:
            missing = rs.child("missing", column.name).uniform(n) < plan.missing_rate
            if column.name == dead:
                missing[:] = True
        text = column.text
        values_out: npt.NDArray[np.generic] = column.values
        if drift is not None and column.name == drift.column:
            in_file = (column.values.astype(np.float64) - drift.offset) / drift.factor
            text = list(map(f"%.{spec.params.sig_digits}g".__mod__, in_file.tolist()))
            # The convention's exact operation on the written value: what a reader computes, to the last bit.
            values_out = np.array(text, dtype=np.float64) * drift.factor + drift.offset
        if column.name in plan.spelling:
            text = _respell(text, variable.categories, rs.child("spelling", column.name))
        missing_written = missing
        if column.name in plan.sentinel_columns:
            text = put(text, missing, SENTINEL)
            missing_written = np.zeros(n, dtype=bool)
        kind = "number" if column.numeric else ("text" if column.type == "categorical" else "raw")
        name = rename.new_name if rename is not None and column.name == rename.column else column.name
        unit = drift.file_unit if drift is not None and column.name == drift.column else variable.unit
        written[name] = (text, missing_written, kind, unit)
        observed = Column(column.name, column.type, values_out, column.text)
        observed.present = ~missing if missing.any() else None
        observed_columns.append(observed)
    order = rename.order if rename is not None else tuple(written)
    stamp = next((c.text for c in table.columns if c.type == "datetime"), None)
    return MessyFile(
        observed=Table(tuple(observed_columns), n),
        names=order,
        cells=tuple(written[name][0] for name in order),
        missing=tuple(written[name][1] for name in order),
        kinds=tuple(written[name][2] for name in order),
        units=tuple(f"[{written[name][3]}]" for name in order) if plan.units_row else None,
        comments=plan.comments,
        stamp=stamp,
    )


def _head(column: Column, keep: int) -> Column:
    return Column(column.name, column.type, column.values[:keep], column.text[:keep])


def put(text: list[str], where: BoolArray, token: str) -> list[str]:
    """``text`` with ``token`` in the cells ``where`` is true."""
    if not where.any():
        return text
    cells = np.array(text, dtype=object)
    cells[where] = token
    out: list[str] = cells.tolist()
    return out


def _respell(text: list[str], categories: tuple[str, ...], rs: Stream) -> list[str]:
    """About one cell in six written another way: lower case, upper case, or with a trailing space."""
    spellings = np.array(
        [[c, c.lower(), c.upper(), c + " "] for c in categories], dtype=object
    )  # column 0: as the codebook writes it
    codes = np.array(list(map({c: i for i, c in enumerate(categories)}.__getitem__, text)), dtype=np.int64)
    draws = rs.uniform(len(text))
    style = np.where(draws < 1 / 6, 1 + (draws * 18).astype(np.int64), 0)  # 1, 2 or 3 for one cell in six
    out: list[str] = spellings[codes, style].tolist()
    return out
