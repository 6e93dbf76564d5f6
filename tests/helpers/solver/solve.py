"""Answer an sgfs question from an exported repository and the question's structured ``query``.

Independent of the generator: this module reads only the files under the exported directory
(via :mod:`reader`) and the record's ``query``, and follows the contract of docs/questions.md.
Statistics are computed here with exact-sum arithmetic (``math.fsum``) and scipy distributions.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from .codebook import Codebook, covers, read_codebook
from .reader import EXTENSIONS, Columns, column_is_numeric, is_number, parse_number, read_messy, read_raw

NOT_POSSIBLE = "not possible"
Answer = str | int | float
Result = tuple[Answer, str | None]

MIN_ROWS: dict[str, int] = {
    "mean": 1,
    "median": 1,
    "min": 1,
    "max": 1,
    "sum": 1,
    "std": 2,
    "variance": 2,
    "pearson": 3,
    "spearman": 3,
    "chi2": 1,
    "welch": 2,
}


class Unanswerable(Exception):
    """The data cannot answer the question; ``reason`` is one of the documented reasons."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Stats:
    """Counters of solver-side observations worth reporting (e.g. ambiguous path parses)."""

    ambiguous_paths: list[str] = field(default_factory=list)


STATS = Stats()


# --------------------------------------------------------------------------------------------
# Repository files


@functools.cache
def read_cached(path: Path) -> Columns:
    """:func:`reader.read_raw`, once per file (exported repositories do not change)."""
    return read_raw(path)


@functools.cache
def codebook(repo_dir: Path) -> Codebook | None:
    """The codebook of a messy repository; ``None`` for a clean one (no ``CODEBOOK.md``)."""
    return read_codebook(repo_dir)


_V2_RE = re.compile(r"_v2(\.[A-Za-z0-9]+)$")


def layout_path(repo_dir: Path, path: str) -> str:
    """The path whose layout fields are read: ``NAME_v2.ext`` reads as ``NAME.ext`` in a messy repository."""
    if codebook(repo_dir) is None:
        return path
    return _V2_RE.sub(r"\1", path)


def _converted(text: str | None, op: str, amount: str) -> str | None:
    """The written value converted by exactly the stated operation, as its shortest round-trip text."""
    if text is None:
        return None
    if not is_number(text):
        raise ValueError(f"unit change of a non-number {text!r}")
    value = float(text) * parse_number(amount) if op == "multiply" else float(text) + parse_number(amount)
    return repr(value)


@functools.cache
def load_file(repo_dir: Path, rel: str) -> Columns:
    """One data file's columns under the codebook's names, in the codebook's units; missing cells ``None``.

    A clean repository's file is read as it always was (:func:`read_cached`).
    """
    book = codebook(repo_dir)
    if book is None:
        return read_cached(repo_dir / rel)
    raw = read_messy(repo_dir / rel, book.missing_token, book.comments, book.units_row)
    where = layout_path(repo_dir, rel)
    where = where.rsplit(".", 1)[0]
    renames = {c.renamed_to: c.column for c in book.changes if c.renamed_to and covers(c.scope, where)}
    for written, name in renames.items():
        if written not in raw:
            raise ValueError(f"{rel}: CODEBOOK.md says {name!r} is named {written!r} here, but it is not")
    for change in book.changes:
        if change.renamed_to and change.renamed_to in raw and change.renamed_to not in renames:
            raise ValueError(f"{rel}: column {change.renamed_to!r} in a file no rename covers")
    columns: Columns = {renames.get(name, name): values for name, values in raw.items()}
    for name, code in book.codes.items():
        if name in columns:
            columns[name] = [
                None if t is not None and is_number(t) and parse_number(t) == parse_number(code) else t
                for t in columns[name]
            ]
    for change in book.changes:
        if change.op and change.column in columns and covers(change.scope, where):
            assert change.amount is not None
            columns[change.column] = [_converted(t, change.op, change.amount) for t in columns[change.column]]
    return columns


@functools.cache
def repo_numeric(repo_dir: Path, column: str) -> bool:
    """Whether ``column`` is numeric over every current data file (for a selection without any value)."""
    values: list[str | None] = []
    for rel in data_files(repo_dir):
        values.extend(load_file(repo_dir, rel).get(column, []))
    return column_is_numeric(values)


def data_files(repo_dir: Path) -> list[str]:
    """Every data file path (relative, ``/``-separated), sorted; the root README is not one."""
    return list(_data_files(repo_dir))


@functools.cache
def _data_files(repo_dir: Path) -> tuple[str, ...]:
    out: list[str] = []
    for p in repo_dir.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(repo_dir).as_posix()
        if rel == "README.md":
            continue
        if p.suffix.lstrip(".") in EXTENSIONS:
            out.append(rel)
    book = codebook(repo_dir)
    if book is not None:
        # Current files only: not under a folder of superseded copies, and not NAME.ext beside NAME_v2.ext.
        present = set(out)
        out = [
            rel
            for rel in out
            if rel.split("/", 1)[0] not in book.superseded_dirs
            and not (_V2_RE.search(rel) is None and _v2_name(rel) in present)
        ]
    return tuple(sorted(out))


def _v2_name(rel: str) -> str:
    stem, dot, ext = rel.rpartition(".")
    return f"{stem}_v2{dot}{ext}"


def readme_text(repo_dir: Path) -> str:
    readme = repo_dir / "README.md"
    if not readme.is_file():
        raise Unanswerable("no_readme")
    return readme.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Path conditions


def _parses(
    component: str, names: Sequence[str], joiner: str, rendered: dict[str, list[str]]
) -> Iterator[dict[str, str]]:
    """Every way to read ``component`` as the rendered texts of ``names`` joined by ``joiner``."""
    if not names:
        if component == "":
            yield {}
        return
    name, rest = names[0], names[1:]
    for text in rendered.get(name, []):
        if not component.startswith(text):
            continue
        tail = component[len(text) :]
        if rest:
            if not tail.startswith(joiner):
                continue
            tail = tail[len(joiner) :]
        for sub in _parses(tail, rest, joiner, rendered):
            if name in sub and sub[name] != text:
                continue
            yield {name: text, **sub}


def layout_regex(layout: dict[str, Any]) -> re.Pattern[str]:
    """A full-path regex for ``layout``: every rendered text escaped, one alternation per placeholder."""
    components: list[list[str]] = layout["components"]
    joiners: list[str] = layout["joiners"]
    rendered: dict[str, list[str]] = layout["rendered"]
    parts: list[str] = []
    for names, joiner in zip(components, joiners, strict=True):
        alts = []
        for name in names:
            texts = sorted(rendered[name], key=lambda t: (-len(t), t))
            alts.append("(?:" + "|".join(re.escape(t) for t in texts) + ")")
        parts.append(re.escape(joiner).join(alts))
    return re.compile("/".join(parts) + re.escape("." + layout["extension"]))


def path_values(path: str, layout: dict[str, Any]) -> list[dict[str, str]]:
    """All readings of ``path`` under ``layout`` as placeholder -> rendered text (empty: no match)."""
    ext = "." + layout["extension"]
    if not path.endswith(ext):
        return []
    comps = path[: -len(ext)].split("/")
    components: list[list[str]] = layout["components"]
    joiners: list[str] = layout["joiners"]
    if len(comps) != len(components):
        return []
    readings: list[dict[str, str]] = [{}]
    for comp, names, joiner in zip(comps, components, joiners, strict=True):
        nxt: list[dict[str, str]] = []
        for sub in _parses(comp, names, joiner, layout["rendered"]):
            for prev in readings:
                if any(k in prev and prev[k] != v for k, v in sub.items()):
                    continue
                nxt.append({**prev, **sub})
        readings = nxt
        if not readings:
            return []
    unique = {tuple(sorted(r.items())) for r in readings}
    if len(unique) > 1:
        STATS.ambiguous_paths.append(path)
    return [dict(u) for u in sorted(unique)]


def meets_path_conditions(values: dict[str, str], conditions: Sequence[dict[str, Any]]) -> bool:
    for cond in conditions:
        got = values.get(cond["variable"])
        if got is None:
            return False
        if cond["op"] == "eq":
            if got != cond["value"]:
                return False
        elif cond["op"] == "in":
            if got not in cond["values"]:
                return False
        else:
            raise ValueError(f"unknown path condition op {cond['op']!r}")
    return True


def select_files(repo_dir: Path, query: dict[str, Any]) -> list[str]:
    """The data files meeting the query's path conditions (every reading is checked)."""
    conditions = query["path_conditions"]
    readings = _all_readings(repo_dir, json.dumps(query["layout"], sort_keys=True))
    return [path for path, rs in readings if any(meets_path_conditions(r, conditions) for r in rs)]


def selected_readings(repo_dir: Path, query: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """The selected data files, each with its placeholder values (the reading that meets the conditions).

    A file with several distinct readings meeting the conditions has no single value per placeholder,
    which no documented question relies on: that is an error, not an answer.
    """
    conditions = query["path_conditions"]
    readings = _all_readings(repo_dir, json.dumps(query["layout"], sort_keys=True))
    out: list[tuple[str, dict[str, str]]] = []
    for path, rs in readings:
        meeting = [r for r in rs if meets_path_conditions(r, conditions)]
        if not meeting:
            continue
        if len(meeting) > 1:
            raise ValueError(f"{path!r} has several readings meeting the path conditions: {meeting}")
        out.append((path, meeting[0]))
    return out


def layout_placeholders(layout: dict[str, Any]) -> list[str]:
    """The placeholder names of ``layout``, in path order."""
    return [name for names in layout["components"] for name in names]


@functools.cache
def _all_readings(repo_dir: Path, layout_json: str) -> tuple[tuple[str, list[dict[str, str]]], ...]:
    """Every data file with its readings under a layout (given as canonical JSON, for caching)."""
    layout = json.loads(layout_json)
    regex = layout_regex(layout)
    out: list[tuple[str, list[dict[str, str]]]] = []
    for path in data_files(repo_dir):
        where = layout_path(repo_dir, path)
        readings = path_values(where, layout)
        # The regex and the exhaustive parser must agree on which paths follow the layout.
        assert (regex.fullmatch(where) is not None) == bool(readings), path
        out.append((path, readings))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Ordering runs (``first_run``)

ORDER_PLACEHOLDERS: tuple[str, ...] = ("date", "seq_number")
# English month abbreviations of ``%b``, spelled out so that parsing never depends on the locale.
MONTHS: dict[str, int] = {
    name: i + 1
    for i, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
# The documented date formats: %Y-%m-%d, %Y%m%d, %Y_%m_%d (groups y, m, d) and %d%b%Y (groups d, b, y).
_NUMERIC_DATE_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(\d{4})-(\d{2})-(\d{2})"),
    re.compile(r"(\d{4})(\d{2})(\d{2})"),
    re.compile(r"(\d{4})_(\d{2})_(\d{2})"),
)
_DMY_DATE_RE = re.compile(r"(\d{1,2})([A-Za-z]{3})(\d{4})")
_RUN_RE = re.compile(r"\D*(\d+)\D*")


def parse_date(text: str) -> dt.date:
    """The calendar date of a rendered ``date`` placeholder, in any of the documented formats."""
    for regex in _NUMERIC_DATE_RES:
        m = regex.fullmatch(text)
        if m:
            return dt.date(int(m[1]), int(m[2]), int(m[3]))
    m = _DMY_DATE_RE.fullmatch(text)
    if m and m[2].lower() in MONTHS:
        return dt.date(int(m[3]), MONTHS[m[2].lower()], int(m[1]))
    raise ValueError(f"not a date in a documented format: {text!r}")


def parse_run(text: str) -> int:
    """The run number of a rendered ``seq_number`` placeholder (``"003"`` -> 3)."""
    m = _RUN_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a run number: {text!r}")
    return int(m[1])


def strict_first(keys: dict[str, tuple[Any, ...]]) -> str | None:
    """The path whose key is strictly below every other key; ``None`` on a tie for the smallest."""
    ranked = sorted(keys.items(), key=lambda item: item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def first_run(repo_dir: Path, query: dict[str, Any]) -> str:
    """The path of the first run among the selected files (docs/questions.md): the one file with the earliest
    date; among several files of that date, the lowest run number if they form one group (agree in every
    placeholder but ``date`` and ``seq_number``). Raises ``no_file`` on an empty selection and
    ``ambiguous_definition`` when the dates and run numbers do not single out one file.
    """
    files = selected_readings(repo_dir, query)
    if not files:
        raise Unanswerable("no_file")
    names = layout_placeholders(query["layout"])
    if "date" not in names:
        raise ValueError("a first_run question needs a date placeholder")
    earliest = min(parse_date(v["date"]) for _, v in files)
    same_day = [(p, v) for p, v in files if parse_date(v["date"]) == earliest]
    if len(same_day) == 1:
        return same_day[0][0]
    group_fields = [n for n in names if n not in ORDER_PLACEHOLDERS]
    one_group = len({tuple(v[n] for n in group_fields) for _, v in same_day}) == 1
    if "seq_number" not in names or not one_group:
        raise Unanswerable("ambiguous_definition")
    runs = {p: (parse_run(v["seq_number"]),) for p, v in same_day}
    first = strict_first(runs)
    if first is None:  # one group and one date: only the run number tells paths apart
        raise ValueError(f"two files of one group and one date share a run number: {runs}")
    return first


# --------------------------------------------------------------------------------------------
# Rows


@dataclass
class Table:
    """Pooled rows of one or more files: column name -> cell texts."""

    columns: Columns
    n_rows: int
    # A messy repository's table: missing cells are ``None``, categories compare ignoring case and
    # surrounding spaces, and a column without any value takes its type from the whole repository.
    repo_dir: Path | None = None

    @classmethod
    def load(cls, repo_dir: Path, files: Sequence[str]) -> Table:
        table = cls.pool([load_file(repo_dir, f) for f in files])
        if codebook(repo_dir) is not None:
            table.repo_dir = repo_dir
        return table

    @property
    def messy(self) -> bool:
        return self.repo_dir is not None

    @classmethod
    def pool(cls, tables: Sequence[Columns]) -> Table:
        names: list[str] = []
        for t in tables:
            for name in t:
                if name not in names:
                    names.append(name)
        pooled: Columns = {name: [] for name in names}
        total = 0
        for t in tables:
            n = max((len(v) for v in t.values()), default=0)
            for name in names:
                values = t.get(name)
                if values is None:
                    if n:
                        raise ValueError(f"column {name!r} missing from a non-empty file")
                    continue
                pooled[name].extend(values)
            total += n
        return cls(pooled, total)

    def column(self, name: str) -> list[str | None]:
        if name not in self.columns:
            raise KeyError(f"no column {name!r}")
        return self.columns[name]

    def is_numeric(self, name: str) -> bool:
        texts = self.column(name)
        if self.repo_dir is not None and all(t is None for t in texts):
            return repo_numeric(self.repo_dir, name)
        return column_is_numeric(texts)

    def complete(self, names: Sequence[str], rows: Sequence[int]) -> list[int]:
        """The rows among ``rows`` with a value in every column of ``names`` (all of them when clean)."""
        cols = [self.column(n) for n in names]
        return [i for i in rows if all(c[i] is not None for c in cols)]

    def category(self, text: str) -> str:
        """A category as compared: ignoring case and surrounding spaces in a messy repository."""
        return text.strip().casefold() if self.messy else text


def _row_predicate(table: Table, cond: dict[str, Any]) -> Callable[[int], bool]:
    texts = table.column(cond["column"])
    op = cond["op"]
    if op in ("eq", "in"):
        allowed = {table.category(v) for v in ([cond["value"]] if op == "eq" else cond["values"])}
        cats = [None if t is None else table.category(t) for t in texts]
        return lambda i: cats[i] is not None and cats[i] in allowed
    # A missing cell meets no row condition on its column (messy repositories).
    nums = [math.nan if t is None else parse_number(t) for t in texts]  # raises on a text column
    if op == "gt":
        return lambda i: nums[i] > cond["value"]
    if op == "lt":
        return lambda i: nums[i] < cond["value"]
    if op == "ge":
        return lambda i: nums[i] >= cond["value"]
    if op == "le":
        return lambda i: nums[i] <= cond["value"]
    if op == "between":
        return lambda i: cond["low"] <= nums[i] <= cond["high"]
    raise ValueError(f"unknown row condition op {op!r}")


def selected_rows(table: Table, conditions: Sequence[dict[str, Any]]) -> list[int]:
    preds = [_row_predicate(table, c) for c in conditions]
    return [i for i in range(table.n_rows) if all(p(i) for p in preds)]


def load_single(repo_dir: Path, path: str) -> Table:
    file = repo_dir / path
    if path == "README.md" or not file.is_file():
        raise Unanswerable("no_file")
    if codebook(repo_dir) is not None and path not in data_files(repo_dir):
        raise Unanswerable("no_file")  # CODEBOOK.md or a superseded copy: not a (current) data file
    return Table.load(repo_dir, [path])


def load_selection(repo_dir: Path, query: dict[str, Any]) -> Table:
    """The pooled table the query is about: one file (``path``) or the files meeting path conditions."""
    if "path" in query:
        return load_single(repo_dir, query["path"])
    if "path_conditions" in query:
        files = select_files(repo_dir, query)
    elif "prefix" in query:
        files = [p for p in data_files(repo_dir) if p.startswith(query["prefix"] + "/")]
    else:
        files = data_files(repo_dir)
    if not files:
        raise Unanswerable("no_file")
    return Table.load(repo_dir, files)


# --------------------------------------------------------------------------------------------
# Statistics


def _mean(x: Sequence[float]) -> float:
    return math.fsum(x) / len(x)


def _variance(x: Sequence[float]) -> float:
    m = _mean(x)
    return math.fsum((v - m) ** 2 for v in x) / (len(x) - 1)


def _median(x: Sequence[float]) -> float:
    s = sorted(x)
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2


def univariate(statistic: str, x: Sequence[int | float]) -> float:
    if statistic == "mean":
        return _mean(x)
    if statistic == "median":
        return _median(x)
    if statistic == "std":
        return math.sqrt(_variance(x))
    if statistic == "variance":
        return _variance(x)
    if statistic == "min":
        return min(x)
    if statistic == "max":
        return max(x)
    if statistic == "sum":
        return math.fsum(x) if any(isinstance(v, float) for v in x) else sum(x)
    raise ValueError(f"unknown statistic {statistic!r}")


def pearson_r(x: Sequence[float], y: Sequence[float]) -> float:
    mx, my = _mean(x), _mean(y)
    dx = [v - mx for v in x]
    dy = [v - my for v in y]
    sxy = math.fsum(a * b for a, b in zip(dx, dy, strict=True))
    sxx = math.fsum(a * a for a in dx)
    syy = math.fsum(b * b for b in dy)
    r = sxy / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


def average_ranks(x: Sequence[float]) -> list[float]:
    """Ranks 1..n, ties given their average rank."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    return pearson_r(average_ranks(x), average_ranks(y))


def contingency(a: Sequence[str], b: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float64]]:
    rows = sorted(set(a))
    cols = sorted(set(b))
    ri = {v: i for i, v in enumerate(rows)}
    ci = {v: i for i, v in enumerate(cols)}
    table = np.zeros((len(rows), len(cols)))
    for u, v in zip(a, b, strict=True):
        table[ri[u], ci[v]] += 1
    return table


def chi2_statistic(a: Sequence[str], b: Sequence[str]) -> tuple[float, int]:
    """Pearson's chi-square of independence (no continuity correction) and its degrees of freedom."""
    obs = contingency(a, b)
    n = obs.sum()
    expected = np.outer(obs.sum(axis=1), obs.sum(axis=0)) / n
    stat = math.fsum(((obs - expected) ** 2 / expected).ravel().tolist())
    dof = (obs.shape[0] - 1) * (obs.shape[1] - 1)
    return stat, dof


def correlation_p(r: float, n: int) -> float:
    """Two-sided p-value of zero correlation, t distribution with n - 2 degrees of freedom."""
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / (1.0 - r * r))
    return float(2 * sps.t.sf(abs(t), n - 2))


def welch_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p-value of Welch's two-sample t-test."""
    nx, ny = len(x), len(y)
    vx, vy = _variance(x) / nx, _variance(y) / ny
    t = (_mean(x) - _mean(y)) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1))
    return float(2 * sps.t.sf(abs(t), df))


# --------------------------------------------------------------------------------------------
# Question types


def _count(n: int, reason: str) -> Result:
    if n == 0:
        raise Unanswerable(reason)
    return n, None


def _numeric(table: Table, name: str) -> bool:
    return table.is_numeric(name)


def _values(table: Table, name: str, rows: Sequence[int]) -> list[int | float]:
    """The values of ``name`` in ``rows``, which must all have one (see :meth:`Table.complete`)."""
    texts = table.column(name)
    out = []
    for i in rows:
        t = texts[i]
        assert t is not None
        out.append(parse_number(t))
    return out


def _texts(table: Table, name: str, rows: Sequence[int]) -> list[str]:
    """The categories of ``name`` in ``rows`` (all with a value), as compared."""
    texts = table.column(name)
    out = []
    for i in rows:
        t = texts[i]
        assert t is not None
        out.append(table.category(t))
    return out


def _univariate_answer(table: Table, query: dict[str, Any]) -> Result:
    column, statistic = query["column"], query["statistic"]
    if column not in table.columns:
        raise Unanswerable("not_measured")  # no selected file records the column
    if not _numeric(table, column):
        raise Unanswerable("undefined_statistic")
    rows = selected_rows(table, query.get("row_conditions") or [])
    if not rows:
        raise Unanswerable("no_row")
    rows = table.complete([column], rows)
    if not rows and "path" in query and table.messy:
        raise Unanswerable("missing_values")  # one file whose selected rows have no value in the column
    if len(rows) < MIN_ROWS[statistic]:
        raise Unanswerable("too_few_rows")
    return univariate(statistic, _values(table, column, rows)), None


def _bivariate(table: Table, query: dict[str, Any], kind: str) -> tuple[float, float | None]:
    """(statistic, p-value or None) of a bivariate statistic or test ``kind``."""
    a, b = query["columns"]
    conditions = query.get("row_conditions") or []
    if kind in ("pearson", "spearman"):
        if not (_numeric(table, a) and _numeric(table, b)):
            raise Unanswerable("undefined_statistic")
        rows = selected_rows(table, conditions)
        if not rows:
            raise Unanswerable("no_row")
        rows = table.complete([a, b], rows)
        if len(rows) < MIN_ROWS[kind]:
            raise Unanswerable("too_few_rows")
        x, y = _values(table, a, rows), _values(table, b, rows)
        if len(set(x)) < 2 or len(set(y)) < 2:
            raise Unanswerable("constant_input")
        r = pearson_r(x, y) if kind == "pearson" else spearman_rho(x, y)
        return r, correlation_p(r, len(rows))
    if kind == "chi2":
        if _numeric(table, a) or _numeric(table, b):
            raise Unanswerable("undefined_statistic")
        rows = selected_rows(table, conditions)
        if not rows:
            raise Unanswerable("no_row")
        rows = table.complete([a, b], rows)
        if len(rows) < MIN_ROWS[kind]:
            raise Unanswerable("too_few_rows")
        ta, tb = _texts(table, a, rows), _texts(table, b, rows)
        # "each column needs at least two observed values": a column with one observed value is
        # constant over the selected rows, which is `constant_input` (the test's input is constant).
        if len(set(ta)) < 2 or len(set(tb)) < 2:
            raise Unanswerable("constant_input")
        stat, dof = chi2_statistic(ta, tb)
        return stat, float(sps.chi2.sf(stat, dof))
    if kind == "welch":
        if _numeric(table, a) or not _numeric(table, b):
            raise Unanswerable("undefined_statistic")
        # docs/questions.md names "groups" next to the test; the generator nests it in "test".
        groups = query.get("groups") or query.get("test", {}).get("groups")
        g1, g2 = groups
        rows = selected_rows(table, conditions)
        if not rows:
            raise Unanswerable("no_row")
        rows = table.complete([a, b], rows)
        labels = _texts(table, a, rows)
        c1, c2 = table.category(g1), table.category(g2)
        x = _values(table, b, [i for i, label in zip(rows, labels, strict=True) if label == c1])
        y = _values(table, b, [i for i, label in zip(rows, labels, strict=True) if label == c2])
        if len(x) < 2 or len(y) < 2:
            raise Unanswerable("too_few_rows")
        if len(set(x)) < 2 and len(set(y)) < 2:
            raise Unanswerable("constant_input")
        return math.nan, welch_p(x, y)
    raise ValueError(f"unknown bivariate kind {kind!r}")


def confounders(group1: Sequence[dict[str, str]], group2: Sequence[dict[str, str]], names: Sequence[str]) -> list[str]:
    """The placeholders of ``names`` taking no value in group 1 that they take in group 2."""
    return [n for n in names if {v[n] for v in group1}.isdisjoint(v[n] for v in group2)]


def _group_values(repo_dir: Path, paths: Sequence[str], column: str) -> list[int | float]:
    table = Table.load(repo_dir, paths)
    if not table.is_numeric(column):
        raise ValueError(f"welch_factor column {column!r} is not numeric")  # not a documented query
    return _values(table, column, table.complete([column], range(table.n_rows)))


def welch_factor_p(repo_dir: Path, query: dict[str, Any]) -> float:
    """Welch's p-value of ``columns[1]`` between the files whose ``factor`` is each of ``test.groups``.

    Reasons in the documented order: ``no_file`` (a group has no file), ``confounded`` (another
    placeholder, not ``date`` or ``seq_number``, has disjoint values in the two groups),
    ``too_few_rows``, ``constant_input``.
    """
    factor, column = query["columns"]
    assert factor == query["factor"], query
    assert not query.get("row_conditions"), "welch_factor questions have no row conditions"
    g1, g2 = query["test"]["groups"]
    files = selected_readings(repo_dir, query)
    group1 = [(p, v) for p, v in files if v.get(factor) == g1]
    group2 = [(p, v) for p, v in files if v.get(factor) == g2]
    if not group1 or not group2:
        raise Unanswerable("no_file")
    others = [n for n in layout_placeholders(query["layout"]) if n not in (factor, *ORDER_PLACEHOLDERS)]
    if confounders([v for _, v in group1], [v for _, v in group2], others):
        raise Unanswerable("confounded")
    x = _group_values(repo_dir, [p for p, _ in group1], column)
    y = _group_values(repo_dir, [p for p, _ in group2], column)
    if len(x) < MIN_ROWS["welch"] or len(y) < MIN_ROWS["welch"]:
        raise Unanswerable("too_few_rows")
    if len(set(x)) < 2 and len(set(y)) < 2:
        raise Unanswerable("constant_input")
    return welch_p(x, y)


def _solve(query: dict[str, Any], repo_dir: Path) -> Result:
    qtype = query["type"]
    if qtype == "readme":
        return ("yes" if (repo_dir / "README.md").is_file() else "no"), None
    if qtype == "title":
        if query["title"] not in readme_text(repo_dir):
            raise Unanswerable("title_not_in_readme")
        return query["title"], None
    if qtype == "abstract":
        if query["first_sentence"] not in readme_text(repo_dir):
            raise Unanswerable("abstract_not_in_readme")
        return query["first_sentence"], None
    if qtype == "extension":
        exts = Counter(p.rsplit(".", 1)[-1] for p in data_files(repo_dir))
        if len(exts) != 1:
            raise ValueError(f"expected one data file extension, found {dict(exts)}")
        return next(iter(exts)), None
    if qtype == "prefix":
        prefix = query["prefix"] + "/"
        return _count(sum(1 for p in data_files(repo_dir) if p.startswith(prefix)), "no_file")
    if qtype == "condition":
        return _count(len(select_files(repo_dir, query)), "no_file")
    if qtype == "count_rows":
        if query.get("first_run"):
            table = load_single(repo_dir, first_run(repo_dir, query))
        else:
            table = load_selection(repo_dir, query)
        return _count(len(selected_rows(table, query.get("row_conditions") or [])), "no_row")
    if qtype in ("univariate_single_file", "univariate_condition"):
        return _univariate_answer(load_selection(repo_dir, query), query)
    if qtype == "bivariate_statistic":
        stat, _ = _bivariate(load_selection(repo_dir, query), query, query["statistic"])
        return stat, None
    if qtype == "bivariate_hypothesis":
        test = query["test"]
        p: float | None
        if test["name"] == "welch_factor":
            p = welch_factor_p(repo_dir, query)
        else:
            _, p = _bivariate(load_selection(repo_dir, query), query, test["name"])
        assert p is not None
        return ("yes" if p < test["alpha"] else "no"), None
    raise ValueError(f"unknown question type {qtype!r}")


def solve(record: dict[str, Any], repo_dir: Path) -> Result:
    """(answer, unanswerable reason) for a question record, from the exported repository only.

    The answer is ``"not possible"`` exactly when the reason is not ``None``.
    """
    try:
        return _solve(record["query"], repo_dir)
    except Unanswerable as exc:
        return NOT_POSSIBLE, exc.reason
