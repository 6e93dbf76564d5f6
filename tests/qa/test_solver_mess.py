"""The independent solver reproduces every ground-truth answer of ``sgfs qa --mess LEVEL`` (levels 1-3).

The solver (``tests/helpers/solver``) reads a messy repository as docs/generation.md ("Messy repositories")
says an agent should: it learns the declarations from ``CODEBOOK.md``'s text and sees only the exported files
and each question's ``query``.  It never imports ``generators`` or ``qa``; the command line is a black box.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.helpers.solver.codebook import Scope, covers, parse_codebook, path_date
from tests.helpers.solver.reader import read_messy
from tests.helpers.solver.solve import NOT_POSSIBLE, solve
from tests.qa.test_solver import WORKERS, solve_records

# Chosen once by hand from `sgfs spec SEED --mess 2` (extension), `sgfs cat SEED CODEBOOK.md --mess 2|3` (kinds)
# and `sgfs tree SEED --mess 3 | wc -l` (all at most 42 lines), so that every format and every kind of mess occurs:
#   txt 1 (renamed by date), 9 (renamed by path field), 14;  log 272 (°C -> K: "add", by path field), 13;
#   json 3 (km: "multiply", by researcher), 23, 36 (categories);  jsonl 8, 40 (categories), 49;
#   xlsx 18 (unit change by path field), 22, 30 (categories, by date);  csv 33, 34.
SEEDS: dict[str, list[int]] = {
    "txt": [1, 9, 14],
    "log": [13, 272],
    "json": [3, 23, 36],
    "jsonl": [8, 40, 49],
    "xlsx": [18, 22, 30],
    "csv": [33, 34],
}
ALL_SEEDS: list[int] = sorted(s for seeds in SEEDS.values() for s in seeds)
LEVELS: tuple[int, ...] = (1, 2, 3)
PER_TYPE = 3


# Runs several `sgfs` command lines in one interpreter (through the command line's own entry point, as
# `python -m sgfs` does), so that starting Python is paid once per batch, not once per repository.
_BATCH = "import json, sys\nfrom sgfs.cli import main\nfor argv in json.loads(sys.argv[1]):\n    main(argv)\n"


def _sgfs_batch(commands: list[list[str]]) -> None:
    result = subprocess.run([sys.executable, "-c", _BATCH, json.dumps(commands)], capture_output=True, timeout=600)
    assert result.returncode == 0, f"sgfs {commands} failed:\n{result.stderr.decode()}"


@dataclass
class MessCorpus:
    records: dict[int, list[dict[str, Any]]]  # level -> records
    repos: dict[tuple[int, int], Path]  # (level, seed) -> exported repository


@pytest.fixture(scope="module")
def mess_corpus(tmp_path_factory: pytest.TempPathFactory) -> MessCorpus:
    base = tmp_path_factory.mktemp("solver-mess")
    seeds_arg = ",".join(str(s) for s in ALL_SEEDS)
    repos = {(level, seed): base / f"repo-{level}-{seed}" for level in LEVELS for seed in ALL_SEEDS}
    batches = [
        [
            [
                "qa",
                seeds_arg,
                "--mess",
                str(level),
                "--per-type",
                str(PER_TYPE),
                "--out",
                str(base / f"qa-{level}.jsonl"),
                "-q",
            ]
        ]
        for level in LEVELS
    ]
    exports = [["export", str(seed), str(path), "--mess", str(level), "-q"] for (level, seed), path in repos.items()]
    batches += [exports[i :: 2 * WORKERS] for i in range(2 * WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(_sgfs_batch, batches))
    records = {
        level: [json.loads(x) for x in (base / f"qa-{level}.jsonl").read_text(encoding="utf-8").splitlines() if x]
        for level in LEVELS
    }
    return MessCorpus(records, repos)


def _kinds(repo: Path) -> set[str]:
    """The kinds of mess a repository shows, from its CODEBOOK.md and its files."""
    book = parse_codebook((repo / "CODEBOOK.md").read_text(encoding="utf-8"))
    kinds = {"missing"} if book.missing_token is not None else set()
    kinds |= {"comments"} if book.comments else set()
    kinds |= {"units_row"} if book.units_row else set()
    kinds |= {"sentinel"} if book.codes else set()
    kinds |= {"spelling"} if book.categories else set()
    for change in book.changes:
        kinds.add(f"renamed:{change.scope.kind}" if change.renamed_to else f"unit_drift:{change.op}")
    files = [p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()]
    kinds |= {"superseded:v2"} if any("_v2." in f for f in files) else set()
    kinds |= {"superseded:folder"} if any(f.split("/", 1)[0] in book.superseded_dirs for f in files) else set()
    return kinds


@pytest.mark.parametrize("level", LEVELS)
def test_solver_reproduces_every_messy_answer(mess_corpus: MessCorpus, level: int) -> None:
    records = mess_corpus.records[level]
    assert {int(r["seed"]) for r in records} == set(ALL_SEEDS)
    assert all(r["mess"] == level for r in records)
    extensions = {r["seed"]: r["answer"] for r in records if r["type"] == "extension"}
    for ext, seeds in SEEDS.items():
        assert all(extensions[s] == ext for s in seeds), (ext, {s: extensions[s] for s in seeds})

    run = solve_records(records, lambda seed: mess_corpus.repos[(level, seed)])
    reasons = run.reasons
    kinds = Counter(k for seed in ALL_SEEDS for k in _kinds(mess_corpus.repos[(level, seed)]))
    lines = run.lines(f"solver summary, --mess {level}")
    lines.append(f"  kinds of mess (repositories): {dict(sorted(kinds.items()))}")
    lines.append(f"  ambiguous path readings: {run.ambiguous_paths}")
    summary = "\n".join(lines)
    print(summary)
    run.check(summary)
    # Every kind of mess of the level occurs (docs/generation.md, "Messy repositories").
    expected = {"missing", "comments", "units_row"}
    if level >= 2:
        expected |= {"sentinel", "spelling", "superseded:v2", "superseded:folder", "unit_drift:multiply"}
        expected |= {"renamed:researcher", "renamed:date", "renamed:field", "unit_drift:add"}
        assert "missing_values" in reasons, summary
    else:
        assert not {k for k in kinds if k not in expected}, summary
    assert expected <= set(kinds), summary


# ------------------------------------------------------------------------------------------------
# The codebook parser and the messy reader on hand-made inputs

CODEBOOK_TEXT = """# Codebook

Data files: `.csv` tables, one row per sample.

| column | description | unit |
| --- | --- | --- |
| `sample_id` | Code of one sample. |  |
| `temp_c` | Temperature. | °C |
| `mass_g` | Mass. | g |
| `site` | Site. |  |

## Missing values

A value that was not recorded is written as an empty cell.
In `mass_g`, the code `-999` marks a value that was not recorded.

## File headers

Lines starting with `#` before the header are comments.
The row right below the header gives each column's unit in square brackets; it is not data.

## Categories

Categories of `site` were typed by hand: the same category may appear in another case or with a trailing space. \
The spelling of this codebook's values is the category's name.
- `site`: `North`, `south bank`

## Changes between files

- In files of researcher `kato`, `temp_c` is recorded in K instead of °C: to get °C, add -273.15.
- In files dated 2023-02-01 or later (`2023_02_01` in paths), `mass_g` is named `MASS_G`, and the columns are in \
another order.
- In files whose `mode` is `mode-fast` in paths, `mass_g` is recorded in kg instead of g: to get g, multiply by 1000.

## File versions

A file `NAME_v2.csv` is a corrected export that replaces `NAME.csv` in the same folder; the older file is kept but \
superseded.
`old/` holds superseded copies of files; the current versions are elsewhere.
"""


def test_codebook_parser() -> None:
    book = parse_codebook(CODEBOOK_TEXT)
    assert list(book.columns) == ["sample_id", "temp_c", "mass_g", "site"]
    assert book.missing_token == "" and book.codes == {"mass_g": "-999"}
    assert book.comments and book.units_row and book.v2 and book.superseded_dirs == ["old"]
    assert book.categories == {"site": ["North", "south bank"]}
    by_researcher, by_date, by_field = book.changes
    assert (by_researcher.scope.kind, by_researcher.op, by_researcher.amount) == ("researcher", "add", "-273.15")
    assert (by_date.scope.kind, by_date.renamed_to) == ("date", "MASS_G")
    assert (by_field.scope.kind, by_field.scope.field_name, by_field.op) == ("field", "mode", "multiply")
    assert covers(by_researcher.scope, "kato/2023_01_05-001") and not covers(by_researcher.scope, "li/x-kato2")
    assert covers(by_date.scope, "li/2023_02_01-002") and not covers(by_date.scope, "li/2023_01_31-002")
    assert covers(by_field.scope, "mode-fast/x") and not covers(by_field.scope, "mode-fastest/x")
    assert path_date("a/14May2021_003", "01Oct2021") == path_date("b/2021-05-14", "2021-04-20")
    with pytest.raises(ValueError):
        parse_codebook(CODEBOOK_TEXT + "\nAn unknown declaration.\n")


def test_messy_reader_every_format(tmp_path: Path) -> None:
    expected = {"id": ["S1", "S2"], "x": ["1.5", None], "g": ["a ", "B"]}
    csv_file = tmp_path / "t.csv"
    csv_file.write_text("# a comment\n# another\nid,x,g\n[],[mg],[]\nS1,1.5,a \nS2,,B\n")
    assert read_messy(csv_file, "", comments=True, units_row=True) == expected
    txt_file = tmp_path / "t.txt"
    txt_file.write_text("# a comment\nid\tx\tg\n[]\t[mg]\t[]\nS1\t1.5\ta \nS2\tNA\tB\n")
    assert read_messy(txt_file, "NA", comments=True, units_row=True) == expected
    log_file = tmp_path / "t.log"
    log_file.write_text('# a comment\n2021-01-01T00:00:00 id=S1 x=1.5 g="a "\n2021-01-02T00:00:00 id=S2 x=NA g=B\n')
    assert read_messy(log_file, "NA", comments=True, units_row=False) == expected
    json_file = tmp_path / "t.json"
    json_file.write_text(json.dumps([{"id": "S1", "x": 1.5, "g": "a "}, {"id": "S2", "x": None, "g": "B"}]))
    assert read_messy(json_file, "null", comments=False, units_row=False) == expected
    xlsx_file = tmp_path / "t.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["id", "x", "g"], ["[]", "[mg]", "[]"], ["S1", 1.5, "a "], ["S2", None, "B"]):
        sheet.append(row)
    book.save(xlsx_file)
    assert read_messy(xlsx_file, "", comments=False, units_row=True) == expected


def test_messy_repository_hand_made(tmp_path: Path) -> None:
    (tmp_path / "CODEBOOK.md").write_text(CODEBOOK_TEXT)
    files = {
        "kato/mode-slow/2023_01_05-001.csv": "sample_id,temp_c,mass_g,site\nS1,300.15,5,North\nS2,,-999,NORTH \n",
        "li/mode-fast/2023_02_01-002.csv": "# c\nsample_id,site,MASS_G,temp_c\n[],[],[kg],[]\nS3,south bank,0.002,20\n",
        "li/mode-fast/2023_02_01-002_v2.csv": "sample_id,site,MASS_G,temp_c\nS3,south bank,0.002,20\nS4,North,,30\n",
        "old/li/mode-slow/2023_01_05-003.csv": "sample_id,temp_c,mass_g,site\nS9,1,1,North\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)

    def ask(query: dict[str, Any]) -> tuple[Any, str | None]:
        return solve({"query": query}, tmp_path)

    assert ask({"type": "prefix", "prefix": "li"}) == (1, None)
    assert ask({"type": "prefix", "prefix": "old"}) == (NOT_POSSIBLE, "no_file")
    uni: dict[str, Any] = {"type": "univariate_condition", "row_conditions": []}
    layout = {
        "components": [["researcher"], ["mode"], ["date", "seq_number"]],
        "joiners": ["_", "_", "-"],
        "extension": "csv",
        "rendered": {
            "researcher": ["kato", "li"],
            "mode": ["mode-fast", "mode-slow"],
            "date": ["2023_01_05", "2023_02_01"],
            "seq_number": ["001", "002", "003"],
        },
    }
    every = {**uni, "path_conditions": [{"variable": "researcher", "op": "in", "values": ["kato", "li"]}]}
    every["layout"] = layout
    # kato's temperatures are converted from K (add -273.15); S2 has none.
    assert ask({**every, "column": "temp_c", "statistic": "max"}) == (30, None)
    assert ask({**every, "column": "temp_c", "statistic": "min"}) == (20, None)
    assert ask({**every, "column": "temp_c", "statistic": "mean"}) == ((300.15 + -273.15 + 20 + 30) / 3, None)
    # -999 and an empty cell are missing; li's MASS_G is mass_g, in kg (multiply by 1000).
    assert ask({**every, "column": "mass_g", "statistic": "sum"}) == (5 + 0.002 * 1000, None)
    north = [{"column": "site", "op": "eq", "value": "North"}]
    count = {"type": "count_rows", "path": "kato/mode-slow/2023_01_05-001.csv"}
    assert ask({**count, "row_conditions": north}) == (2, None)
    # A missing cell meets no row condition on its column, but a count of rows counts it.
    assert ask({**count, "row_conditions": [{"column": "mass_g", "op": "ge", "value": 0}]}) == (1, None)
    assert ask({**count, "row_conditions": []}) == (2, None)
    v2 = "li/mode-fast/2023_02_01-002_v2.csv"
    single = {"type": "univariate_single_file", "path": v2, "column": "mass_g", "statistic": "mean"}
    only_s4 = [{"column": "sample_id", "op": "eq", "value": "S4"}]
    assert ask({**single, "row_conditions": only_s4}) == (NOT_POSSIBLE, "missing_values")
    assert ask({**single, "path": "li/mode-fast/2023_02_01-002.csv", "row_conditions": []}) == (NOT_POSSIBLE, "no_file")
    _ = Scope  # the dataclass is part of the parser's interface
