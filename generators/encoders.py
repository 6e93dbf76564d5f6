"""Encoders: one table, six encodings (csv, json, jsonl, xlsx, txt, log) that parse back to the same rows.

All encoders write the cell texts the synthesiser produced, so a number reads back as the same double in
every format. Rows follow one ``%s`` template per table; the whole body is assembled by strided list
assignments (template text, then each column's cells) and one ``join``, all in C: there is no Python loop
per row, and no ``%`` formatting per row either.

The xlsx writer is our own: a handful of fixed XML parts in a *stored* zip with fixed timestamps
(``generators.storedzip``). XlsxWriter works cell by cell in Python (docs/dependencies.md says why it is not
used), and a stored zip keeps the bytes independent of the zlib build of the machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache

from generators.storedzip import StoredZip
from generators.synth import SMALL_INT_TEXT, Column, Table, measure_text

Cells = list[str]


def _cells(column: Column, quote: Callable[[str], str], wrap: str = "") -> Cells:
    """Text of a column with ``quote`` applied to its strings.

    Categories are few, so ``quote`` runs once per distinct value. Identifiers and timestamps are made of
    letters, digits, ``-``, ``:`` and ``T`` by construction and never need quoting: they are only wrapped
    in ``wrap`` (the JSON quote).
    """
    if column.numeric or (column.type != "categorical" and not wrap):
        return column.text
    if column.type != "categorical":
        return list(map((wrap + "%s" + wrap).__mod__, column.text))
    quoted = {value: quote(value) for value in dict.fromkeys(column.text)}
    return list(map(quoted.__getitem__, column.text))


@lru_cache(maxsize=1024)
def _pieces(template: str) -> tuple[str, ...]:
    """The literal text around a template's ``%s`` slots (``%%`` read as ``%``): one more piece than slots."""
    pieces = [""]
    for token in re.split(r"(%%|%s)", template):
        if token == "%s":
            pieces.append("")
        else:
            pieces[-1] += "%" if token == "%%" else token
    return tuple(pieces)


def _render(template: str, cells: list[Cells], separator: str = "") -> str:
    """``separator.join(template % row for row in zip(*cells, strict=True))``, without formatting any row.

    The rows are laid out in one flat list: piece, cell, piece, cell, …, last piece + separator, per row,
    filled column by column with strided slice assignments, then joined once.
    """
    pieces = _pieces(template)
    if len(pieces) != len(cells) + 1:
        raise ValueError(f"template has {len(pieces) - 1} slots for {len(cells)} columns")
    n = len(cells[0]) if cells else 0
    if n == 0:
        return ""
    stride = 2 * len(cells) + 1
    flat = [""] * (n * stride)
    for i, piece in enumerate(pieces[:-1]):
        if piece:
            flat[2 * i :: stride] = [piece] * n
    for i, column in enumerate(cells):
        flat[2 * i + 1 :: stride] = column  # a column of another length raises, as zip(strict=True) would
    flat[stride - 1 :: stride] = [pieces[-1] + separator] * n
    flat[-1] = pieces[-1]
    return "".join(flat)


def _lines(body: str, header: str | None = None) -> bytes:
    text = f"{header}\n{body}\n" if header is not None else f"{body}\n"
    return text.encode("utf-8")


def _pct(text: str) -> str:
    """Literal text inside a ``%`` template."""
    return text.replace("%", "%%")


# -- csv / txt --------------------------------------------------------------------------------------
@lru_cache(maxsize=65536)  # categories repeat in every file of a repository
def _csv_quote(value: str) -> str:
    if any(ch in value for ch in ',"\r\n') or value != value.strip():
        return '"' + value.replace('"', '""') + '"'
    return value


def encode_csv(table: Table) -> bytes:
    cells = [_cells(c, _csv_quote) for c in table.columns]
    return _lines(_render(",".join(["%s"] * len(cells)), cells, "\n"), ",".join(_csv_quote(n) for n in table.names))


def encode_txt(table: Table) -> bytes:
    cells = [c.text for c in table.columns]
    return _lines(_render("\t".join(["%s"] * len(cells)), cells, "\n"), "\t".join(table.names))


# -- json / jsonl -----------------------------------------------------------------------------------
@lru_cache(maxsize=65536)  # categories repeat in every file of a repository
def _json_quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_slot(column: Column) -> str:
    """The template slot of a column: identifiers and timestamps are JSON strings that need no escaping."""
    return "%s" if column.numeric or column.type == "categorical" else '"%s"'


def encode_json(table: Table) -> bytes:
    """An array of records, laid out exactly as ``json.dumps(records, indent=2)`` would."""
    fields = ",".join(f"\n    {_pct(_json_quote(c.name))}: {_json_slot(c)}" for c in table.columns)
    records = _render("  {" + fields + "\n  }", [_cells(c, _json_quote) for c in table.columns], ",\n")
    return ("[\n" + records + "\n]\n").encode("utf-8")


def encode_jsonl(table: Table) -> bytes:
    """One record per line, laid out as ``json.dumps(record)`` would."""
    fields = ", ".join(f"{_pct(_json_quote(c.name))}: {_json_slot(c)}" for c in table.columns)
    return _lines(_render("{" + fields + "}", [_cells(c, _json_quote) for c in table.columns], "\n"))


# -- log --------------------------------------------------------------------------------------------
@lru_cache(maxsize=65536)  # categories repeat in every file of a repository
def _log_quote(value: str) -> str:
    if value == "" or any(ch in value for ch in ' "\\=\t'):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def encode_log(table: Table) -> bytes:
    """``<timestamp> key=value ...`` per row; the timestamp repeats the first datetime column."""
    stamp = next(c for c in table.columns if c.type == "datetime")
    pairs = " ".join(f"{_pct(n)}=%s" for n in table.names)
    return _lines(_render("%s " + pairs, [stamp.text, *(_cells(c, _log_quote) for c in table.columns)], "\n"))


# -- xlsx -------------------------------------------------------------------------------------------
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/styles.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>'
)
_WORKBOOK = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<sheets><sheet name="data" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
_WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    'Target="worksheets/sheet1.xml"/>'
    '<Relationship Id="rId2" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
    'Target="styles.xml"/></Relationships>'
)
_STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
    '<borders count="1"><border/></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)


_FIXED_PARTS = (
    ("[Content_Types].xml", _CONTENT_TYPES),
    ("_rels/.rels", _ROOT_RELS),
    ("xl/workbook.xml", _WORKBOOK),
    ("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS),
    ("xl/styles.xml", _STYLES),
)
_SHEET = "xl/worksheets/sheet1.xml"
_XLSX_ZIP = StoredZip([(name, text.encode("utf-8")) for name, text in _FIXED_PARTS])


@lru_cache(maxsize=65536)  # categories repeat in every file of a repository
def _xml_escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


@lru_cache(maxsize=256)
def _sheet_layout(names: tuple[str, ...], numeric: tuple[bool, ...]) -> tuple[str, str, str]:
    """Per column list: the header cells, the row template (row number then text per cell), the last letter."""
    letters = [_column_letter(i) for i in range(len(names))]
    header = "".join(
        f'<c r="{letter}1" t="inlineStr"><is><t>{_xml_escape(name)}</t></is></c>'
        for letter, name in zip(letters, names, strict=True)
    )
    row_template = (
        '<row r="%s">'
        + "".join(
            f'<c r="{letter}%s"><v>%s</v></c>'
            if is_number
            else f'<c r="{letter}%s" t="inlineStr"><is><t>%s</t></is></c>'
            for letter, is_number in zip(letters, numeric, strict=True)
        )
        + "</row>"
    )
    return header, row_template, letters[-1]


def _sheet_prefix(header: str, last_letter: str, n_rows: int) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="A1:{last_letter}{n_rows + 1}"/><sheetData><row r="1">{header}</row>'
    )


_SHEET_SUFFIX = "</sheetData></worksheet>"


def _sheet_parts(table: Table) -> tuple[str, str, list[Cells], str]:
    """The worksheet as prefix + rows (a template filled with cells) + suffix."""
    header, row_template, last_letter = _sheet_layout(table.names, tuple(c.numeric for c in table.columns))
    last = table.n_rows + 2
    numbers = list(SMALL_INT_TEXT[2:last]) if last <= len(SMALL_INT_TEXT) else list(map(str, range(2, last)))
    # Each cell needs its row number next to its text: interleave (row, text) for every column.
    cells: list[Cells] = [numbers]
    for column in table.columns:
        cells += [numbers, _cells(column, _xml_escape)]
    return _sheet_prefix(header, last_letter, table.n_rows), row_template, cells, _SHEET_SUFFIX


def _sheet_xml(table: Table) -> str:
    prefix, row_template, cells, suffix = _sheet_parts(table)
    return prefix + _render(row_template, cells) + suffix


def encode_xlsx(table: Table) -> bytes:
    """One sheet named ``data`` with a header row; byte-for-byte deterministic."""
    return _XLSX_ZIP.archive(_SHEET, _sheet_xml(table).encode("utf-8"))


ENCODERS: dict[str, Callable[[Table], bytes]] = {
    "csv": encode_csv,
    "json": encode_json,
    "jsonl": encode_jsonl,
    "xlsx": encode_xlsx,
    "txt": encode_txt,
    "log": encode_log,
}


def encode(table: Table, extension: str) -> bytes:
    return ENCODERS[extension](table)


# -- exact sizes without assembling the file --------------------------------------------------------
def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _column_size(column: Column, quote: Callable[[str], str], wrap: str = "") -> int:
    """Bytes of ``_cells(column, quote, wrap)``, without building the quoted cells."""
    if column.numeric:
        return column.text_bytes()
    if column.type != "categorical":  # identifiers and timestamps are never quoted (see ``_cells``), only wrapped
        return _utf8_size("".join(column.text)) + 2 * _utf8_size(wrap) * len(column.text)
    quoted = {value: _utf8_size(quote(value)) for value in dict.fromkeys(column.text)}
    return sum(map(quoted.__getitem__, column.text))


def _template_size(template: str, slots: int) -> int:
    """Bytes of the template's own text, its ``%s`` slots left empty."""
    return _utf8_size(template % (("",) * slots))


def _lines_size(rows: int, rows_size: int, header: str | None = None) -> int:
    newlines = max(rows - 1, 0) + 1  # "\n".join(rows) + "\n"
    return rows_size + newlines + (_utf8_size(header) + 1 if header is not None else 0)


def _decimal_digits(low: int, high: int) -> int:
    """``len("".join(map(str, range(low, high))))`` for 0 <= low <= high."""
    total, width, start = 0, 1, 1
    while start < high:
        end = start * 10
        total += width * max(0, min(high, end) - max(low, start))
        width, start = width + 1, end
    return total + (1 if low == 0 < high else 0)


@lru_cache(maxsize=256)
def _json_fields_size(names: tuple[str, ...], separator: str, indent: str) -> int:
    return sum(_utf8_size(f"{indent}{json.dumps(name, ensure_ascii=False)}: ") for name in names) + _utf8_size(
        separator
    ) * max(len(names) - 1, 0)


def encoded_size(table: Table, extension: str) -> int:
    """``len(encode(table, extension))``, computed from the cell texts without building the file.

    Continuous columns whose text is not written yet are counted by ``measure_text``: call it on many
    tables at once first for one whole-array pass over all of them.
    """
    measure_text([table])
    n = table.n_rows
    columns = table.columns
    if extension in ("csv", "txt"):
        if extension == "csv":
            cells = sum(_column_size(c, _csv_quote) for c in columns)
            header = ",".join(_csv_quote(name) for name in table.names)
        else:
            cells = sum(c.text_bytes() if c.numeric else _utf8_size("".join(c.text)) for c in columns)
            header = "\t".join(table.names)
        rows = n * (len(columns) - 1) + cells  # one "," or tab between cells
        return _lines_size(n, rows, header)
    if extension == "jsonl":
        # Per row: "{" fields joined by ", " "}" with '"name": ' before each cell.
        per_row = 2 + _json_fields_size(table.names, ", ", "")
        return _lines_size(n, n * per_row + sum(_column_size(c, _json_quote, '"') for c in columns))
    if extension == "json":
        # Per record: "  {" fields joined by "," each "\n    " '"name": ' cell, then "\n  }".
        per_row = 3 + _json_fields_size(table.names, ",", "\n    ") + 4
        records = n * per_row + sum(_column_size(c, _json_quote, '"') for c in columns)
        return 2 + records + 2 * max(n - 1, 0) + 3  # "[\n" records joined by ",\n" then "\n]\n"
    if extension == "log":
        stamp = next(c for c in columns if c.type == "datetime")
        pairs = " ".join(f"{_pct(name)}=%s" for name in table.names)
        cells = _utf8_size("".join(stamp.text)) + sum(_column_size(c, _log_quote) for c in columns)
        return _lines_size(n, n * _template_size("%s " + pairs, len(columns) + 1) + cells)
    if extension == "xlsx":
        header, row_template, last_letter = _sheet_layout(table.names, tuple(c.numeric for c in columns))
        # Every cell and the row element carry the row number: len(columns) + 1 of them per row.
        numbers = (len(columns) + 1) * _decimal_digits(2, n + 2)
        cells = sum(_column_size(c, _xml_escape) for c in columns)
        rows = n * _template_size(row_template, 2 * len(columns) + 1) + numbers + cells
        sheet = _utf8_size(_sheet_prefix(header, last_letter, n)) + rows + _utf8_size(_SHEET_SUFFIX)
        return _XLSX_ZIP.size(_SHEET, sheet)
    return len(encode(table, extension))
