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
Columns = dict[str, list[str]]
TypedColumns = dict[str, list[Cell]]

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


def column_is_numeric(texts: Sequence[str]) -> bool:
    """A column is numeric when every value parses as a number (an empty column is not)."""
    return len(texts) > 0 and all(is_number(t) for t in texts)


def type_columns(columns: Columns) -> TypedColumns:
    """Apply the per-column typing rule to raw cell texts."""
    typed: TypedColumns = {}
    for name, texts in columns.items():
        if column_is_numeric(texts):
            typed[name] = [parse_number(t) for t in texts]
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
