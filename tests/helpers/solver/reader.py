"""Read one sgfs data file (csv, txt, json, jsonl, xlsx, log) into columns.

Only the published file formats are used (docs/generation.md, section 6); nothing from the
generator is imported.  Every cell is first turned into its *cell text* (the text a csv file
would hold), so that all six formats go through the same typing rule:

* a column is numeric when every one of its cells is a number literal; its values are then
  ``int(text)`` for integer literals and ``float(text)`` otherwise;
* any other column is text and keeps its cell texts unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

import openpyxl

Cell = str | int | float
# A missing cell of a messy repository is ``None``; a clean repository has none.
Columns = dict[str, list[str | None]]
TypedColumns = dict[str, list[Cell | None]]

EXTENSIONS: tuple[str, ...] = ("csv", "txt", "json", "jsonl", "xlsx", "log")

# A decimal number literal: what Python's shortest round-trip repr writes (and plain integers).
# ``nan``/``inf`` and digit separators are deliberately not numbers.
_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def is_number(text: str) -> bool:
    """Whether ``text`` is a number literal."""
    return _FLOAT_RE.fullmatch(text) is not None


def parse_number(text: str) -> int | float:
    """The exact value of a number literal: ``int`` for integer literals, else ``float``."""
    if _INT_RE.fullmatch(text):
        return int(text)
    return float(text)


def cell_text(value: object) -> str:
    """The cell text of a value decoded from json, jsonl or xlsx."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # shortest round-trip form: float(repr(v)) == v
    return str(value)


def column_is_numeric(texts: Sequence[str | None]) -> bool:
    """A column is numeric when every value parses as a number (an empty column is not).

    Missing cells (``None``, messy repositories only) are no values: they neither make a column numeric nor
    text, and a column without any value is not numeric.
    """
    values = [t for t in texts if t is not None]
    return len(values) > 0 and all(is_number(t) for t in values)


def type_columns(columns: Columns) -> TypedColumns:
    """Apply the per-column typing rule to raw cell texts."""
    typed: TypedColumns = {}
    for name, texts in columns.items():
        if column_is_numeric(texts):
            typed[name] = [None if t is None else parse_number(t) for t in texts]
        else:
            typed[name] = list(texts)
    return typed


def _from_records(records: Iterable[dict[str, object]]) -> Columns:
    columns: Columns = {}
    rows = list(records)
    for record in rows:
        for key in record:
            columns.setdefault(key, [])
    for record in rows:
        for key in columns:
            columns[key].append(cell_text(record.get(key)))
    return columns


def _from_rows(header: list[str], rows: Iterable[list[str]]) -> Columns:
    columns: Columns = {name: [] for name in header}
    for row in rows:
        if not row:
            continue
        if len(row) != len(header):
            raise ValueError(f"row of {len(row)} fields under a header of {len(header)}")
        for name, value in zip(header, row, strict=True):
            columns[name].append(value)
    return columns


def _read_delimited(text: str, delimiter: str) -> Columns:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return {}
    return _from_rows(header, reader)


def _read_txt(text: str) -> Columns:
    lines = text.splitlines()
    if not lines:
        return {}
    header = lines[0].split("\t")
    return _from_rows(header, [line.split("\t") for line in lines[1:] if line != ""])


def _read_log(text: str) -> Columns:
    records: list[dict[str, object]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        tokens = shlex.split(line)
        record: dict[str, object] = {}
        for token in tokens[1:]:  # tokens[0] is the leading timestamp
            key, sep, value = token.partition("=")
            if not sep:
                raise ValueError(f"log token without '=': {token!r}")
            record[key] = value
        records.append(record)
    return _from_records(records)


def _read_xlsx(path: Path) -> Columns:
    workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = workbook.worksheets[0]
        rows = [list(row) for row in sheet.iter_rows(values_only=True)]
    finally:
        workbook.close()
    if not rows:
        return {}
    header = [cell_text(v) for v in rows[0]]
    body = [[cell_text(v) for v in row] for row in rows[1:] if any(v is not None for v in row)]
    return _from_rows(header, body)


def read_raw(path: Path) -> Columns:
    """Column name -> cell texts, in file order, for a data file of any of the six formats."""
    ext = path.suffix.lstrip(".")
    if ext == "xlsx":
        return _read_xlsx(path)
    text = path.read_text(encoding="utf-8")
    if ext == "csv":
        return _read_delimited(text, ",")
    if ext == "txt":
        return _read_txt(text)
    if ext == "json":
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError("a json data file holds an array of records")
        return _from_records(data)
    if ext == "jsonl":
        return _from_records(json.loads(line) for line in text.splitlines() if line.strip())
    if ext == "log":
        return _read_log(text)
    raise ValueError(f"unknown data file extension: {path}")


def read_table(path: Path) -> TypedColumns:
    """Column name -> values; numeric columns as int/float, text columns as text."""
    return type_columns(read_raw(path))


def row_count(columns: Columns | TypedColumns) -> int:
    """The number of data rows of a table read by :func:`read_raw` or :func:`read_table`."""
    return max((len(v) for v in columns.values()), default=0)


# ------------------------------------------------------------------------------------------------
# Messy repositories (docs/generation.md, "Messy repositories"): what CODEBOOK.md declares

_UNIT_CELL_RE = re.compile(r"\[[^\]]*\]")


def _strip_comments(lines: list[str]) -> list[str]:
    """Drop the comment lines (starting with ``#``) before the header."""
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return lines[i:]


def _is_units_row(cells: Sequence[object]) -> bool:
    return len(cells) > 0 and all(isinstance(c, str) and _UNIT_CELL_RE.fullmatch(c) for c in cells)


def _records_to_columns(records: list[dict[str, str | None]]) -> Columns:
    """Records (key -> cell) as columns: every key any record has, in first-seen order, None where a record lacks it."""
    columns: Columns = {}
    for record in records:
        for key in record:
            columns.setdefault(key, [])
    for record in records:
        for key in columns:
            columns[key].append(record.get(key))
    return columns


def _rows_to_columns(header: list[str], rows: list[list[str | None]], units_row: bool) -> Columns:
    if units_row and rows and _is_units_row(rows[0]):
        rows = rows[1:]
    columns: Columns = {name: [] for name in header}
    for row in rows:
        if len(row) < len(header):  # an xlsx row whose last cells are absent
            row = row + [None] * (len(header) - len(row))
        if len(row) != len(header):
            raise ValueError(f"row of {len(row)} fields under a header of {len(header)}")
        for name, value in zip(header, row, strict=True):
            columns[name].append(value)
    return columns


def read_messy(path: Path, missing_token: str | None, comments: bool, units_row: bool) -> Columns:
    """Column name -> cell texts of a messy repository's data file, a missing cell being ``None``.

    ``missing_token`` is how CODEBOOK.md says a missing value is written (``""`` for an empty cell, ``NA``,
    ``null``); ``comments`` and ``units_row`` whether it declares comment lines before the header and a units
    row right below it.  Missing-value codes (``-999``) are the caller's business: they are per column.
    """
    ext = path.suffix.lstrip(".")

    def missing(text: str) -> str | None:
        return None if missing_token is not None and text == missing_token else text

    if ext == "xlsx":
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
        try:
            raw = [list(row) for row in workbook.worksheets[0].iter_rows(values_only=True)]
        finally:
            workbook.close()
        raw = [row for row in raw if any(v is not None for v in row)]
        if not raw:
            return {}
        header = [cell_text(v) for v in raw[0]]
        while header and header[-1] == "":
            header.pop()
        body = [[None if v is None else cell_text(v) for v in row[: len(header)]] for row in raw[1:]]
        return _rows_to_columns(header, body, units_row)
    text = path.read_text(encoding="utf-8")
    if ext in ("json", "jsonl"):
        data = json.loads(text) if ext == "json" else [json.loads(x) for x in text.splitlines() if x.strip()]
        return _records_to_columns(
            [{key: None if value is None else cell_text(value) for key, value in item.items()} for item in data]
        )
    lines = text.splitlines()
    if comments:
        lines = _strip_comments(lines)
    if ext == "log":
        records: list[dict[str, str | None]] = []
        for line in lines:
            if not line.strip():
                continue
            record: dict[str, str | None] = {}
            for token in shlex.split(line)[1:]:  # the first token is the leading timestamp
                key, sep, value = token.partition("=")
                if not sep:
                    raise ValueError(f"log token without '=': {token!r}")
                record[key] = missing(value)
            records.append(record)
        return _records_to_columns(records)
    text_rows: list[list[str]]
    if ext == "csv":
        text_rows = list(csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=","))
    elif ext == "txt":
        text_rows = [line.split("\t") for line in lines if line != ""]
    else:
        raise ValueError(f"unknown data file extension: {path}")
    text_rows = [r for r in text_rows if r]
    if not text_rows:
        return {}
    names, data_rows = text_rows[0], text_rows[1:]
    if units_row and data_rows and _is_units_row(data_rows[0]):
        data_rows = data_rows[1:]
    return _rows_to_columns(names, [[missing(c) for c in r] for r in data_rows], False)
