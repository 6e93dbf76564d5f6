"""Writers of messy data files (``--mess``): the six formats of ``generators.encoders``, with missing cells, comment
lines, a units row, renamed and reordered columns.

The layout of each format is the clean encoder's (same separators, quoting, JSON indentation, worksheet parts);
what differs is cell by cell, so every column is turned into final cell texts with whole-list operations and the
rows are assembled by the clean encoders' template renderer: no Python loop per row here either. The bytes of a
messy file are not computed from cell lengths ahead of writing (``Repository.size`` writes the file).
"""

from __future__ import annotations

from collections.abc import Callable

from generators.encoders import (
    _SHEET,
    _SHEET_SUFFIX,
    _XLSX_ZIP,
    _column_letter,
    _csv_quote,
    _json_quote,
    _log_quote,
    _pct,
    _render,
    _xml_escape,
)
from generators.mess import MISSING_TOKENS, MessyFile, put
from generators.synth import SMALL_INT_TEXT


def _column(file: MessyFile, i: int, quote: Callable[[str], str] | None, token: str) -> list[str]:
    """Written column ``i``: categories quoted by ``quote`` (a function of one string), missing cells ``token``."""
    cells = file.cells[i]
    if file.kinds[i] == "text" and quote is not None:
        cells = list(map(quote, cells))
    return put(cells, file.missing[i], token)


def _preamble(file: MessyFile) -> str:
    return "".join(f"# {line}\n" for line in file.comments)


def _delimited(file: MessyFile, extension: str) -> bytes:
    csv = extension == "csv"
    separator = "," if csv else "\t"
    quote: Callable[[str], str] | None = _csv_quote if csv else None
    token = MISSING_TOKENS[extension]
    name: Callable[[str], str] = _csv_quote if csv else str
    lines = [separator.join(map(name, file.names))]
    if file.units is not None:
        lines.append(separator.join(map(name, file.units)))
    cells = [_column(file, i, quote, token) for i in range(len(file.names))]
    body = _render(separator.join(["%s"] * len(cells)), cells, "\n")
    return (_preamble(file) + "\n".join(lines) + "\n" + (body + "\n" if body else "")).encode("utf-8")


def _log(file: MessyFile) -> bytes:
    assert file.stamp is not None
    pairs = " ".join(f"{_pct(n)}=%s" for n in file.names)
    cells = [file.stamp, *(_column(file, i, _log_quote, MISSING_TOKENS["log"]) for i in range(len(file.names)))]
    body = _render("%s " + pairs, cells, "\n")
    return (_preamble(file) + (body + "\n" if body else "\n")).encode("utf-8")


def _json_cells(file: MessyFile, i: int) -> list[str]:
    if file.kinds[i] == "raw":  # identifiers and timestamps: strings that need no escaping, never missing
        return list(map('"%s"'.__mod__, file.cells[i]))
    return _column(file, i, _json_quote, "null")


def _jsonl(file: MessyFile) -> bytes:
    fields = ", ".join(f"{_pct(_json_quote(n))}: %s" for n in file.names)
    body = _render("{" + fields + "}", [_json_cells(file, i) for i in range(len(file.names))], "\n")
    return (body + "\n").encode("utf-8")


def _json(file: MessyFile) -> bytes:
    fields = ",".join(f"\n    {_pct(_json_quote(n))}: %s" for n in file.names)
    records = _render("  {" + fields + "\n  }", [_json_cells(file, i) for i in range(len(file.names))], ",\n")
    return ("[\n" + records + "\n]\n").encode("utf-8")


def _xlsx(file: MessyFile) -> bytes:
    """One sheet: the header row, the units row if any, then data rows; a missing cell is left out of its row."""
    letters = [_column_letter(i) for i in range(len(file.names))]
    text_cell = '<c r="%s%s" t="inlineStr"><is><t>%s</t></is></c>'
    head = [file.names] if file.units is None else [file.names, file.units]
    rows_xml = [
        f'<row r="{r + 1}">'
        + "".join(
            text_cell % (letter, r + 1, _xml_escape(text)) for letter, text in zip(letters, row, strict=True) if text
        )
        + "</row>"
        for r, row in enumerate(head)
    ]
    first = len(head) + 1
    n = len(file.cells[0]) if file.cells else 0
    last = first + n
    numbers = list(SMALL_INT_TEXT[first:last]) if last <= len(SMALL_INT_TEXT) else list(map(str, range(first, last)))
    cells: list[list[str]] = [numbers]
    for i, letter in enumerate(letters):
        if file.kinds[i] == "number":
            template = f'<c r="{letter}%s"><v>%s</v></c>'
            texts = file.cells[i]
        else:
            template = f'<c r="{letter}%s" t="inlineStr"><is><t>%s</t></is></c>'
            texts = list(map(_xml_escape, file.cells[i]))
        cells.append(put(list(map(template.__mod__, zip(numbers, texts, strict=True))), file.missing[i], ""))
    body = _render('<row r="%s">' + "%s" * len(letters) + "</row>", cells)
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="A1:{letters[-1]}{last - 1}"/><sheetData>' + "".join(rows_xml) + body + _SHEET_SUFFIX
    )
    return _XLSX_ZIP.archive(_SHEET, sheet.encode("utf-8"))


def encode_messy(file: MessyFile, extension: str) -> bytes:
    """The bytes of a messy data file in ``extension``'s format."""
    if extension in ("csv", "txt"):
        return _delimited(file, extension)
    if extension == "log":
        return _log(file)
    if extension == "jsonl":
        return _jsonl(file)
    if extension == "json":
        return _json(file)
    if extension == "xlsx":
        return _xlsx(file)
    raise ValueError(f"unknown extension {extension!r}")
