"""Parse a messy repository's ``CODEBOOK.md`` (docs/generation.md, "Messy repositories").

Only the codebook's text is read (its format is what ``sgfs cat SEED CODEBOOK.md --mess 2`` shows); nothing
from the generator is imported.  A sentence the parser does not know is an error, never skipped silently, so a
new kind of declaration cannot be overlooked.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

CODEBOOK = "CODEBOOK.md"

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


@dataclass(frozen=True)
class Scope:
    """Which files a change between files covers: ``kind`` is ``researcher``, ``date`` or ``field``."""

    kind: str
    token: str  # the text as it appears in paths
    field_name: str = ""  # the path field (``field``)
    since: dt.date | None = None  # the first date covered (``date``)


@dataclass(frozen=True)
class Change:
    """A change between files: a renamed column, or a column written in another unit."""

    scope: Scope
    column: str  # the codebook's name
    renamed_to: str | None = None
    op: str | None = None  # "multiply" or "add"
    amount: str | None = None  # the number as the codebook writes it


@dataclass
class Codebook:
    columns: dict[str, str] = field(default_factory=dict)  # name -> unit
    missing_token: str | None = None  # "" (an empty cell), "NA", "null"
    codes: dict[str, str] = field(default_factory=dict)  # column -> missing-value code ("-999")
    comments: bool = False
    units_row: bool = False
    changes: list[Change] = field(default_factory=list)
    categories: dict[str, list[str]] = field(default_factory=dict)
    v2: bool = False
    superseded_dirs: list[str] = field(default_factory=list)


def _ticks(text: str) -> list[str]:
    return re.findall(r"`([^`]*)`", text)


def parse_date_token(token: str) -> dt.date:
    """A date as the codebook writes it (ISO ``2016-04-02``)."""
    return dt.date.fromisoformat(token)


_SCOPE_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("researcher", re.compile(r"In files of researcher `(?P<token>[^`]+)`, (?P<rest>.*)")),
    (
        "date",
        re.compile(
            r"In files dated (?P<date>\d{4}-\d{2}-\d{2}) or later \(`(?P<token>[^`]+)` in paths\), (?P<rest>.*)"
        ),
    ),
    ("field", re.compile(r"In files whose `(?P<field>[^`]+)` is `(?P<token>[^`]+)` in paths, (?P<rest>.*)")),
)
_RENAME_RE = re.compile(r"`(?P<col>[^`]+)` is named `(?P<new>[^`]+)`, and the columns are in another order\.")
_UNIT_RE = re.compile(
    r"`(?P<col>[^`]+)` is recorded in (?P<written>.+?) instead of (?P<unit>.+?): "
    r"to get (?P<unit2>.+?), (?P<op>multiply by|add) (?P<amount>[-+0-9.eE]+)\."
)


def _change(line: str) -> Change:
    for kind, regex in _SCOPE_RES:
        m = regex.fullmatch(line)
        if m is None:
            continue
        if kind == "researcher":
            scope = Scope("researcher", m["token"])
        elif kind == "date":
            scope = Scope("date", m["token"], since=parse_date_token(m["date"]))
        else:
            scope = Scope("field", m["token"], field_name=m["field"])
        rest = m["rest"]
        r = _RENAME_RE.fullmatch(rest)
        if r:
            return Change(scope, r["col"], renamed_to=r["new"])
        u = _UNIT_RE.fullmatch(rest)
        if u:
            if u["unit"] != u["unit2"]:
                raise ValueError(f"codebook unit change names two units: {line!r}")
            op = "multiply" if u["op"] == "multiply by" else "add"
            return Change(scope, u["col"], op=op, amount=u["amount"])
        raise ValueError(f"unknown change in CODEBOOK.md: {line!r}")
    raise ValueError(f"unknown change scope in CODEBOOK.md: {line!r}")


def parse_codebook(text: str) -> Codebook:
    book = Codebook()
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("## "):
            section = line[3:]
            continue
        if line.startswith("# ") or line.startswith("Data files:"):
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] in ("column", "---"):
                continue
            (name,) = _ticks(cells[0])
            book.columns[name] = cells[2] if len(cells) > 2 else ""
            continue
        if section == "Missing values":
            if line == "A value that was not recorded is written as an empty cell.":
                book.missing_token = ""
                continue
            m = re.fullmatch(r"A value that was not recorded is written as `([^`]*)`\.", line)
            if m:
                book.missing_token = m[1]
                continue
            m = re.fullmatch(r"In (.*), the code `([^`]+)` marks a value that was not recorded\.", line)
            if m:
                for col in _ticks(m[1]):
                    book.codes[col] = m[2]
                continue
        elif section == "File headers":
            if line == "Lines starting with `#` before the header are comments.":
                book.comments = True
                continue
            if line == "The row right below the header gives each column's unit in square brackets; it is not data.":
                book.units_row = True
                continue
        elif section == "Changes between files":
            if line.startswith("- "):
                book.changes.append(_change(line[2:]))
                continue
        elif section == "Categories":
            if line.startswith("Categories of `") and "typed by hand" in line:
                continue
            m = re.fullmatch(r"- `([^`]+)`: (.*)", line)
            if m:
                book.categories[m[1]] = _ticks(m[2])
                continue
        elif section == "File versions":
            if re.fullmatch(
                r"A file `NAME_v2\.\w+` is a corrected export that replaces `NAME\.\w+` in the same folder; "
                r"the older file is kept but superseded\.",
                line,
            ):
                book.v2 = True
                continue
            m = re.fullmatch(r"`([^`]+)/` holds superseded copies of files; the current versions are elsewhere\.", line)
            if m:
                book.superseded_dirs.append(m[1])
                continue
        raise ValueError(f"unknown CODEBOOK.md line in section {section!r}: {line!r}")
    return book


def read_codebook(repo_dir: Path) -> Codebook | None:
    """The repository's codebook, or ``None`` for a clean repository (no ``CODEBOOK.md``)."""
    file = repo_dir / CODEBOOK
    if not file.is_file():
        return None
    return parse_codebook(file.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# Which files a change covers


def _boundary_find(path: str, token: str) -> list[int]:
    """Offsets where ``token`` is a whole placeholder text of ``path`` (delimited by / _ - or the ends)."""
    out: list[int] = []
    start = 0
    while True:
        i = path.find(token, start)
        if i < 0:
            return out
        before = path[i - 1] if i > 0 else "/"
        j = i + len(token)
        after = path[j] if j < len(path) else "/"
        if before in "/_-" and after in "/_-":
            out.append(i)
        start = i + 1


def _date_regex(token: str) -> tuple[re.Pattern[str], str]:
    """A regex for dates written like ``token`` in paths, and the format's name."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", token):
        return re.compile(r"(?<![0-9A-Za-z])(\d{4})-(\d{2})-(\d{2})(?![0-9A-Za-z])"), "ymd"
    if re.fullmatch(r"\d{4}_\d{2}_\d{2}", token):
        return re.compile(r"(?<![0-9A-Za-z])(\d{4})_(\d{2})_(\d{2})(?![0-9A-Za-z])"), "ymd"
    if re.fullmatch(r"\d{8}", token):
        return re.compile(r"(?<![0-9A-Za-z])(\d{4})(\d{2})(\d{2})(?![0-9A-Za-z])"), "ymd"
    if re.fullmatch(r"\d{2}[A-Za-z]{3}\d{4}", token):
        return re.compile(r"(?<![0-9A-Za-z])(\d{2})([A-Za-z]{3})(\d{4})(?![0-9A-Za-z])"), "dby"
    raise ValueError(f"unknown date format in CODEBOOK.md: {token!r}")


def path_date(path: str, token: str) -> dt.date | None:
    """The date written in ``path`` in the format of ``token`` (``None`` when the path has none)."""
    regex, kind = _date_regex(token)
    dates = set()
    for m in regex.finditer(path):
        try:
            if kind == "ymd":
                dates.add(dt.date(int(m[1]), int(m[2]), int(m[3])))
            elif m[2].lower() in _MONTHS:
                dates.add(dt.date(int(m[3]), _MONTHS.index(m[2].lower()) + 1, int(m[1])))
        except ValueError:
            continue
    if len(dates) > 1:
        raise ValueError(f"several dates in {path!r}: {sorted(dates)}")
    return next(iter(dates), None)


def covers(scope: Scope, layout_path: str) -> bool:
    """Whether a change of ``scope`` covers the file at ``layout_path`` (extension and ``_v2`` removed)."""
    if scope.kind in ("researcher", "field"):
        return bool(_boundary_find(layout_path, scope.token))
    assert scope.since is not None
    day = path_date(layout_path, scope.token)
    return day is not None and day >= scope.since
