"""An independent solver reproduces every ground-truth answer of ``sgfs qa``.

The solver (``tests/helpers/solver``) sees only what an agent sees: the files of a repository exported with
``sgfs export`` and each question's structured ``query``.  It never imports ``generators`` or ``qa``;
this module drives the real command line as a black box.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pytest
from scipy import stats as sps

from tests.helpers.solver import solve as solver_module
from tests.helpers.solver.reader import read_raw, read_table, row_count
from tests.helpers.solver.solve import (
    NOT_POSSIBLE,
    average_ranks,
    chi2_statistic,
    layout_regex,
    path_values,
    pearson_r,
    solve,
    spearman_rho,
    univariate,
    welch_p,
)

# Chosen once by a script (not at test time): for each extension, the first five seeds in 1..140 whose
# `sgfs tree SEED | wc -l` is at most 600, giving 30 seeds (tree sizes in parentheses):
#   txt: 1 (163), 4 (23), 7 (46), 9 (143), 11 (25)      log: 2 (15), 13 (103), 27 (211), 31 (96), 46 (217)
#   json: 3 (241), 17 (16), 20 (163), 23 (19), 36 (30)  csv: 5 (126), 15 (50), 16 (40), 28 (156), 33 (81)
#   xlsx: 6 (74), 18 (30), 22 (15), 25 (207), 29 (317)  jsonl: 8 (18), 12 (223), 21 (17), 24 (234), 40 (125)
SEEDS: dict[str, list[int]] = {
    "txt": [1, 4, 7, 9, 11],
    "log": [2, 13, 27, 31, 46],
    "json": [3, 17, 20, 23, 36],
    "csv": [5, 15, 16, 28, 33],
    "xlsx": [6, 18, 22, 25, 29],
    "jsonl": [8, 12, 21, 24, 40],
}
ALL_SEEDS: list[int] = sorted(s for seeds in SEEDS.values() for s in seeds)
REL_TOL = 1e-9
ABS_TOL = 1e-12
WORKERS = max(1, min(2, os.cpu_count() or 1))


def _sgfs(*args: str) -> None:
    result = subprocess.run([sys.executable, "-m", "sgfs", *args], capture_output=True, timeout=600)
    assert result.returncode == 0, f"sgfs {' '.join(args)} failed:\n{result.stderr.decode()}"


@dataclass
class Corpus:
    """The generated questions and the exported repositories they are about."""

    records: list[dict[str, Any]]
    repos: dict[int, Path]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    base = tmp_path_factory.mktemp("solver")
    qa_file = base / "qa.jsonl"
    seeds_arg = ",".join(str(s) for s in ALL_SEEDS)
    repos = {seed: base / f"repo-{seed}" for seed in ALL_SEEDS}
    # `sgfs qa` runs while the repositories are exported.
    qa = subprocess.Popen(
        [sys.executable, "-m", "sgfs", "qa", seeds_arg, "--out", str(qa_file), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(lambda seed: _sgfs("export", str(seed), str(repos[seed])), ALL_SEEDS))
    _, err = qa.communicate(timeout=600)
    assert qa.returncode == 0, f"sgfs qa failed:\n{err.decode()}"
    records = [json.loads(line) for line in qa_file.read_text(encoding="utf-8").splitlines() if line]
    return Corpus(records, repos)


# ------------------------------------------------------------------------------------------------
# Checking one record


@dataclass
class Outcome:
    id: str
    type: str
    ok: bool
    continuous_checked: bool = False
    message: str = ""


@dataclass
class SeedReport:
    outcomes: list[Outcome] = field(default_factory=list)
    ambiguous_paths: int = 0


def _brief_query(query: dict[str, Any]) -> str:
    shown = {k: v for k, v in query.items() if k != "layout"}
    return json.dumps(shown, sort_keys=True)


def check_record(record: dict[str, Any], repo_dir: Path) -> Outcome:
    rid, qtype = record["id"], record["type"]
    expected, expected_reason = record["answer"], record["unanswerable_reason"]
    head = f"seed {record['seed']} {rid}\n  query: {_brief_query(record['query'])}\n"
    try:
        got, reason = solve(record, repo_dir)
    except Exception:
        return Outcome(rid, qtype, False, message=head + "  solver raised:\n" + traceback.format_exc())
    mine = f"  solver: {got!r} (reason {reason})\n  record: {expected!r} (reason {expected_reason})"
    if not record["answerable"] or expected_reason is not None:
        if (got, reason) == (NOT_POSSIBLE, expected_reason) and expected == NOT_POSSIBLE:
            return Outcome(rid, qtype, True)
        what = "REASON DISAGREEMENT" if got == NOT_POSSIBLE else "ANSWERABILITY DISAGREEMENT"
        return Outcome(rid, qtype, False, message=f"{head}  {what}\n{mine}")
    if reason is not None:
        return Outcome(rid, qtype, False, message=f"{head}  ANSWERABILITY DISAGREEMENT\n{mine}")
    kind = record["answer_kind"]
    if kind == "continuous":
        checked = isinstance(got, int | float) and not isinstance(got, bool) and math.isfinite(got)
        ok = checked and math.isclose(float(got), float(expected), rel_tol=REL_TOL, abs_tol=ABS_TOL)
        return Outcome(rid, qtype, ok, continuous_checked=checked, message="" if ok else f"{head}{mine}")
    if kind == "integer":
        ok = type(got) is int and type(expected) is int and got == expected
    else:  # yes_no, categorical: exact strings
        ok = isinstance(got, str) and got == expected
    return Outcome(rid, qtype, ok, message="" if ok else f"{head}{mine}")


def check_seed(records: list[dict[str, Any]], repo_dir: Path) -> SeedReport:
    before = len(solver_module.STATS.ambiguous_paths)
    outcomes = [check_record(r, repo_dir) for r in records]
    return SeedReport(outcomes, len(solver_module.STATS.ambiguous_paths) - before)


def _by_seed(records: list[dict[str, Any]]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    groups: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(int(record["seed"]), []).append(record)
    # Largest repositories first, so the two workers finish together.
    yield from sorted(groups.items(), key=lambda item: -len(item[1]))


def test_solver_reproduces_every_answer(corpus: Corpus) -> None:
    records = corpus.records
    assert {int(r["seed"]) for r in records} == set(ALL_SEEDS)
    assert len({r["id"] for r in records}) == len(records)
    extensions = {r["seed"]: r["answer"] for r in records if r["type"] == "extension"}
    for ext, seeds in SEEDS.items():
        assert all(extensions[s] == ext for s in seeds), (ext, {s: extensions[s] for s in seeds})

    groups = list(_by_seed(records))
    with ProcessPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(check_seed, recs, corpus.repos[seed]) for seed, recs in groups]
        reports = [f.result() for f in futures]
    outcomes = [o for rep in reports for o in rep.outcomes]

    total, agree = Counter[str](), Counter[str]()
    for o in outcomes:
        total[o.type] += 1
        agree[o.type] += o.ok
    continuous = [r for r in records if r["answerable"] and r["answer_kind"] == "continuous"]
    checked = sum(o.continuous_checked for o in outcomes)
    reasons = Counter(str(r["unanswerable_reason"]) for r in records if not r["answerable"])
    lines = [f"solver summary: {len(records)} questions over {len(ALL_SEEDS)} repositories"]
    lines += [f"  {t:24s} {agree[t]:4d}/{total[t]:4d} agree" for t in sorted(total)]
    lines.append(f"  continuous answers checked: {checked}/{len(continuous)}")
    lines.append(f"  unanswerable reasons: {dict(sorted(reasons.items()))}")
    lines.append(f"  ambiguous path readings: {sum(rep.ambiguous_paths for rep in reports)}")
    summary = "\n".join(lines)
    print(summary)

    failures = [o.message for o in outcomes if not o.ok]
    assert not failures, f"{len(failures)} disagreement(s)\n{summary}\n\n" + "\n\n".join(failures[:40])
    assert len(continuous) > 0 and checked >= 0.95 * len(continuous), summary
    assert sum(rep.ambiguous_paths for rep in reports) == 0, summary


# ------------------------------------------------------------------------------------------------
# Reader on hand-made files

HEADER = ["id", "label", "x", "n"]
ROWS: list[list[Any]] = [
    ["S001", "a, b", 1.5, 3],
    ["S002", 'say "hi"', 1e-05, -2],
    ["S003", "falling limb", 0.1, 10],
]
EXPECTED: dict[str, list[Any]] = {
    "id": ["S001", "S002", "S003"],
    "label": ["a, b", 'say "hi"', "falling limb"],
    "x": [1.5, 1e-05, 0.1],
    "n": [3, -2, 10],
}


def _records() -> list[dict[str, Any]]:
    return [dict(zip(HEADER, row, strict=True)) for row in ROWS]


def _check(table: dict[str, list[Any]]) -> None:
    assert list(table) == HEADER
    assert table == EXPECTED
    assert [type(v) for v in table["n"]] == [int, int, int]
    assert [type(v) for v in table["x"]] == [float, float, float]
    assert row_count(table) == 3


def test_reader_csv_quoted_comma(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('id,label,x,n\r\nS001,"a, b",1.5,3\r\nS002,"say ""hi""",1e-05,-2\r\nS003,falling limb,0.1,10\r\n')
    _check(read_table(path))


def test_reader_txt(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    lines = ["\t".join(HEADER)] + ["\t".join(str(v) for v in row) for row in ROWS]
    path.write_text("\n".join(lines) + "\n")
    _check(read_table(path))


def test_reader_json_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_records(), indent=2))
    _check(read_table(path))
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    _check(read_table(path))


def test_reader_xlsx(tmp_path: Path) -> None:
    path = tmp_path / "t.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "data"
    sheet.append(HEADER)
    for row in ROWS:
        sheet.append(row)
    book.save(path)
    _check(read_table(path))


def test_reader_log_quoted_value_with_space(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    path.write_text(
        '2021-11-22T22:21:49 id=S001 label="a, b" x=1.5 n=3\n'
        '2021-11-22T22:23:00 id=S002 label="say \\"hi\\"" x=1e-05 n=-2\n'
        '2021-11-22T22:24:10 id=S003 label="falling limb" x=0.1 n=10\n'
    )
    _check(read_table(path))


def test_reader_typing_and_exact_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "mixed,num,ident,when\n1,0.30000000000000004,7,2021-01-01T00:00:00\nx,12.3457,8,2021-01-02T00:00:00\n"
    )
    table = read_table(path)
    assert table["mixed"] == ["1", "x"]  # one non-number makes the whole column text
    assert table["num"] == [0.30000000000000004, 12.3457]
    assert table["ident"] == [7, 8]
    assert table["when"] == ["2021-01-01T00:00:00", "2021-01-02T00:00:00"]
    assert read_raw(path)["num"] == ["0.30000000000000004", "12.3457"]
    empty = tmp_path / "e.csv"
    empty.write_text("a,b\n")
    assert row_count(read_table(empty)) == 0


# ------------------------------------------------------------------------------------------------
# Solver pieces on hand-made inputs

LAYOUT: dict[str, Any] = {
    "components": [["researcher"], ["temp", "seq_number"]],
    "joiners": ["_", "-"],
    "extension": "csv",
    "rendered": {"researcher": ["kato", "li"], "temp": ["temp_1", "temp_10"], "seq_number": ["001", "002"]},
}


def test_path_placeholders_match_whole_values() -> None:
    assert path_values("kato/temp_10-001.csv", LAYOUT) == [
        {"researcher": "kato", "seq_number": "001", "temp": "temp_10"}
    ]
    assert path_values("kato/temp_1-002.csv", LAYOUT)[0]["temp"] == "temp_1"
    assert path_values("kato/temp_100-001.csv", LAYOUT) == []
    assert path_values("kato/temp_1-001.json", LAYOUT) == []
    regex = layout_regex(LAYOUT)
    assert regex.fullmatch("li/temp_10-002.csv")
    assert not regex.fullmatch("li/temp_10-002xcsv")


def _repo(tmp_path: Path) -> Path:
    for rel in ["kato/temp_1-001.csv", "kato/temp_10-001.csv", "li/temp_10-002.csv"]:
        file = tmp_path / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("g,v,w\na,1,2\nb,2,4\na,3,5\nb,4,9\n")
    (tmp_path / "README.md").write_text("# A title\n\n## Abstract\n\nFirst sentence. Second.\n")
    return tmp_path


def test_solver_hand_made_records(tmp_path: Path) -> None:
    repo = _repo(tmp_path)

    def ask(query: dict[str, Any]) -> tuple[Any, str | None]:
        return solve({"query": query}, repo)

    conds = {"layout": LAYOUT}
    assert ask({"type": "readme"}) == ("yes", None)
    assert ask({"type": "title", "title": "A title"}) == ("A title", None)
    assert ask({"type": "title", "title": "Other"}) == (NOT_POSSIBLE, "title_not_in_readme")
    assert ask({"type": "abstract", "first_sentence": "First sentence."}) == ("First sentence.", None)
    assert ask({"type": "extension"}) == ("csv", None)
    assert ask({"type": "prefix", "prefix": "kato"}) == (2, None)
    assert ask({"type": "prefix", "prefix": "kat"}) == (NOT_POSSIBLE, "no_file")
    temp_1 = [{"variable": "temp", "op": "eq", "value": "temp_1"}]
    assert ask({"type": "condition", "path_conditions": temp_1, **conds}) == (1, None)
    temp_10 = [{"variable": "temp", "op": "in", "values": ["temp_10"]}]
    assert ask({"type": "condition", "path_conditions": temp_10, **conds}) == (2, None)
    path = "kato/temp_1-001.csv"
    assert ask({"type": "count_rows", "path": path, "row_conditions": []}) == (4, None)
    gt = [{"column": "v", "op": "gt", "value": 9.0}]
    assert ask({"type": "count_rows", "path": path, "row_conditions": gt}) == (NOT_POSSIBLE, "no_row")
    assert ask({"type": "count_rows", "path": "kato/x.csv", "row_conditions": []}) == (NOT_POSSIBLE, "no_file")
    uni = {"type": "univariate_condition", "path_conditions": temp_10, **conds, "row_conditions": []}
    assert ask({**uni, "column": "v", "statistic": "sum"}) == (20, None)
    assert ask({**uni, "column": "v", "statistic": "median"}) == (2.5, None)
    assert ask({**uni, "column": "g", "statistic": "mean"}) == (NOT_POSSIBLE, "undefined_statistic")
    one = [{"column": "v", "op": "between", "low": 1.0, "high": 1.0}]
    single = {"type": "univariate_single_file", "path": path, "row_conditions": one}
    assert ask({**single, "column": "w", "statistic": "std"}) == (NOT_POSSIBLE, "too_few_rows")
    biv = {"type": "bivariate_statistic", "path_conditions": temp_1, **conds, "row_conditions": []}
    r, reason = ask({**biv, "columns": ["v", "w"], "statistic": "pearson"})
    assert reason is None and math.isclose(r, sps.pearsonr([1, 2, 3, 4], [2, 4, 5, 9])[0], rel_tol=1e-12)
    only_a = [{"column": "g", "op": "eq", "value": "a"}]
    const = {**biv, "row_conditions": only_a, "columns": ["g", "g"], "statistic": "chi2"}
    assert ask(const) == (NOT_POSSIBLE, "constant_input")
    hyp = {"type": "bivariate_hypothesis", "path_conditions": temp_1, **conds, "row_conditions": []}
    welch = {**hyp, "columns": ["g", "w"], "test": {"name": "welch", "alpha": 0.05, "groups": ["a", "b"]}}
    assert ask(welch) == ("no", None)


def test_statistics_agree_with_scipy() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=57).round(3).tolist()
    y = (np.asarray(x) * 0.4 + rng.normal(size=57)).round(2).tolist()
    assert math.isclose(pearson_r(x, y), sps.pearsonr(x, y)[0], rel_tol=1e-12)
    assert math.isclose(spearman_rho(x, y), sps.spearmanr(x, y)[0], rel_tol=1e-12)
    assert average_ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert math.isclose(univariate("std", x), float(np.std(x, ddof=1)), rel_tol=1e-12)
    assert math.isclose(univariate("variance", x), float(np.var(x, ddof=1)), rel_tol=1e-12)
    assert univariate("median", [4, 1, 3, 2]) == 2.5
    assert math.isclose(welch_p(x[:20], y[20:]), sps.ttest_ind(x[:20], y[20:], equal_var=False).pvalue)
    a = [str(v) for v in rng.integers(0, 3, size=80)]
    b = [str(v) for v in rng.integers(0, 4, size=80)]
    stat, dof = chi2_statistic(a, b)
    labels_a, labels_b = sorted(set(a)), sorted(set(b))
    table = np.array(
        [[sum(1 for u, v in zip(a, b, strict=True) if (u, v) == (p, q)) for q in labels_b] for p in labels_a]
    )
    ref = sps.chi2_contingency(table, correction=False)
    assert math.isclose(stat, ref.statistic, rel_tol=1e-12) and dof == ref.dof
