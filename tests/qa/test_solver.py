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
from collections.abc import Callable, Iterator
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


@dataclass
class SolverRun:
    """The solver over a corpus of records: every outcome, and the figures a summary prints."""

    records: list[dict[str, Any]]
    outcomes: list[Outcome]
    ambiguous_paths: int
    continuous: int  # answerable continuous records
    checked: int  # of those, answers the solver computed and compared
    reasons: Counter[str]

    def lines(self, title: str) -> list[str]:
        total, agree = Counter[str](), Counter[str]()
        for o in self.outcomes:
            total[o.type] += 1
            agree[o.type] += o.ok
        seeds = {r["seed"] for r in self.records}
        lines = [f"{title}: {len(self.records)} questions over {len(seeds)} repositories"]
        lines += [f"  {t:24s} {agree[t]:4d}/{total[t]:4d} agree" for t in sorted(total)]
        lines.append(f"  agree in all: {sum(agree.values())}/{len(self.outcomes)}")
        lines.append(f"  continuous answers checked: {self.checked}/{self.continuous}")
        lines.append(f"  unanswerable reasons: {dict(sorted(self.reasons.items()))}")
        return lines

    def check(self, summary: str) -> None:
        """Every answer agrees, nearly every continuous answer was computed, no path was read two ways."""
        failures = [o.message for o in self.outcomes if not o.ok]
        assert not failures, f"{len(failures)} disagreement(s)\n{summary}\n\n" + "\n\n".join(failures[:40])
        assert self.continuous > 0 and self.checked >= 0.95 * self.continuous, summary
        assert self.ambiguous_paths == 0, summary


def solve_records(records: list[dict[str, Any]], repo_of: Callable[[int], Path]) -> SolverRun:
    """``check_seed`` over every seed's records (``repo_of(seed)``: its files), on ``WORKERS`` processes."""
    groups = list(_by_seed(records))
    with ProcessPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(check_seed, recs, repo_of(seed)) for seed, recs in groups]
        reports = [f.result() for f in futures]
    outcomes = [o for rep in reports for o in rep.outcomes]
    continuous = [r for r in records if r["answerable"] and r["answer_kind"] == "continuous"]
    return SolverRun(
        records,
        outcomes,
        sum(rep.ambiguous_paths for rep in reports),
        len(continuous),
        sum(o.continuous_checked for o in outcomes),
        Counter(str(r["unanswerable_reason"]) for r in records if not r["answerable"]),
    )


def test_solver_reproduces_every_answer(corpus: Corpus) -> None:
    records = corpus.records
    assert {int(r["seed"]) for r in records} == set(ALL_SEEDS)
    assert len({r["id"] for r in records}) == len(records)
    extensions = {r["seed"]: r["answer"] for r in records if r["type"] == "extension"}
    for ext, seeds in SEEDS.items():
        assert all(extensions[s] == ext for s in seeds), (ext, {s: extensions[s] for s in seeds})

    run = solve_records(records, corpus.repos.__getitem__)
    lines = run.lines("solver summary")
    lines.append(f"  ambiguous path readings: {run.ambiguous_paths}")
    summary = "\n".join(lines)
    print(summary)
    run.check(summary)
    reasons = run.reasons
    # The scientific reasons and the answerable twins of their forms are all checked, not only the mechanical ones.
    assert {"not_measured", "ambiguous_definition", "confounded"} <= set(reasons), summary
    answerable_forms = {
        "first_run" if r["query"].get("first_run") else (r["query"].get("test") or {}).get("name")
        for r in records
        if r["answerable"]
    }
    assert {"first_run", "welch_factor"} <= answerable_forms, summary


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


# ------------------------------------------------------------------------------------------------
# `first_run` count_rows and `welch_factor` hypothesis questions, on hand-made repositories


def _write_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        file = root / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    return root


def _csv(values: list[float]) -> str:
    return "v,g\n" + "".join(f"{v},{'a' if i % 2 else 'b'}\n" for i, v in enumerate(values))


FIRST_RUN_LAYOUT: dict[str, Any] = {
    "components": [["researcher"], ["date", "seq_number"]],
    "joiners": ["_", "-"],
    "extension": "csv",
    "rendered": {
        "researcher": ["kato", "li", "zed"],
        "date": ["20230105", "20230210", "20230301"],
        "seq_number": ["001", "002", "003"],
    },
}


def _first_run(conditions: list[dict[str, Any]], rows: list[dict[str, Any]], layout: dict[str, Any]) -> Any:
    return {
        "type": "count_rows",
        "first_run": True,
        "path_conditions": conditions,
        "layout": layout,
        "row_conditions": rows,
    }


def test_first_run_parse_dates_every_documented_format() -> None:
    import datetime

    expected = datetime.date(2023, 4, 4)
    for text in ["2023-04-04", "20230404", "2023_04_04", "04Apr2023", "04apr2023"]:
        assert solver_module.parse_date(text) == expected, text
    assert solver_module.parse_date("20Dec2023") < solver_module.parse_date("10Jan2024")
    assert solver_module.parse_run("010") == 10
    with pytest.raises(ValueError):
        solver_module.parse_date("04Foo2023")


def test_first_run_is_the_earliest_date(tmp_path: Path) -> None:
    repo = _write_repo(
        tmp_path,
        {
            "kato/20230105-001.csv": _csv([1, 2, 3, 4, 5]),
            "kato/20230210-003.csv": _csv([1, 2]),
            "li/20230301-002.csv": _csv([1, 2, 3]),
        },
    )
    everyone = [{"variable": "researcher", "op": "in", "values": ["kato", "li"]}]
    assert solve({"query": _first_run(everyone, [], FIRST_RUN_LAYOUT)}, repo) == (5, None)
    gt = [{"column": "v", "op": "gt", "value": 3.5}]
    assert solve({"query": _first_run(everyone, gt, FIRST_RUN_LAYOUT)}, repo) == (2, None)
    # Among li's files only one remains: it is the first run by both readings.
    li = [{"variable": "researcher", "op": "eq", "value": "li"}]
    assert solve({"query": _first_run(li, [], FIRST_RUN_LAYOUT)}, repo) == (3, None)
    # The count follows: no row of the first run meets the condition (other files' rows do not count).
    big = [{"column": "v", "op": "gt", "value": 5.0}]
    assert solve({"query": _first_run(li, big, FIRST_RUN_LAYOUT)}, repo) == (NOT_POSSIBLE, "no_row")


def test_first_run_run_numbers_never_order_runs_of_different_groups(tmp_path: Path) -> None:
    repo = _write_repo(
        tmp_path,
        {
            "kato/20230105-002.csv": _csv([1, 2, 3, 4, 5]),  # the earliest date decides
            "li/20230210-001.csv": _csv([1, 2, 3]),  # a lower run number, but of another group
        },
    )
    everyone = [{"variable": "researcher", "op": "in", "values": ["kato", "li"]}]
    assert solve({"query": _first_run(everyone, [], FIRST_RUN_LAYOUT)}, repo) == (5, None)


def test_first_run_same_day_runs(tmp_path: Path) -> None:
    repo = _write_repo(
        tmp_path,
        {
            "kato/20230105-002.csv": _csv([1, 2, 3, 4, 5]),
            "kato/20230105-001.csv": _csv([1, 2, 3, 4]),  # same group, same day: the lower run number is first
            "li/20230105-001.csv": _csv([1, 2, 3]),  # another group on that day: nothing orders it
            "li/20230301-002.csv": _csv([1, 2]),
        },
    )
    kato = [{"variable": "researcher", "op": "eq", "value": "kato"}]
    assert solve({"query": _first_run(kato, [], FIRST_RUN_LAYOUT)}, repo) == (4, None)
    everyone = [{"variable": "researcher", "op": "in", "values": ["kato", "li"]}]
    ambiguous = (NOT_POSSIBLE, "ambiguous_definition")
    assert solve({"query": _first_run(everyone, [], FIRST_RUN_LAYOUT)}, repo) == ambiguous
    # ambiguous_definition is decided before no_row.
    none = [{"column": "v", "op": "gt", "value": 99.0}]
    assert solve({"query": _first_run(everyone, none, FIRST_RUN_LAYOUT)}, repo) == ambiguous
    li = [{"variable": "researcher", "op": "eq", "value": "li"}]
    assert solve({"query": _first_run(li, [], FIRST_RUN_LAYOUT)}, repo) == (3, None)


def test_first_run_needs_a_date_and_compares_calendar_dates(tmp_path: Path) -> None:
    seq_layout: dict[str, Any] = {
        "components": [["researcher"], ["seq_number"]],
        "joiners": ["_", "_"],
        "extension": "csv",
        "rendered": {"researcher": ["kato", "li"], "seq_number": ["002", "010"]},
    }
    date_layout: dict[str, Any] = {
        "components": [["date"], ["researcher"]],
        "joiners": ["_", "_"],
        "extension": "txt",
        "rendered": {"date": ["20Dec2023", "10Jan2024"], "researcher": ["kato", "li"]},
    }
    repo = _write_repo(
        tmp_path,
        {
            "kato/010.csv": _csv([1, 2, 3, 4]),
            "li/002.csv": _csv([1, 2]),
            "10Jan2024/kato.txt": "v\n1\n",  # a second tree, read with the date-only layout
            "20Dec2023/li.txt": "v\n1\n2\n3\n4\n5\n6\n",
            "20Dec2023/kato.txt": "v\n1\n",
        },
    )
    both = [{"variable": "researcher", "op": "in", "values": ["kato", "li"]}]
    with pytest.raises(ValueError, match="date"):
        solve({"query": _first_run(both, [], seq_layout)}, repo)
    li = [{"variable": "researcher", "op": "eq", "value": "li"}]
    # Calendar order, not text order: 20Dec2023 is before 10Jan2024.
    assert solve({"query": _first_run(li, [], date_layout)}, repo) == (6, None)
    # Two researchers on the earliest date and no run number: nothing orders them.
    assert solve({"query": _first_run(both, [], date_layout)}, repo) == (NOT_POSSIBLE, "ambiguous_definition")


def test_first_run_no_file(tmp_path: Path) -> None:
    repo = _write_repo(tmp_path, {"kato/20230105-001.csv": _csv([1, 2, 3])})
    zed = [{"variable": "researcher", "op": "eq", "value": "zed"}]
    assert solve({"query": _first_run(zed, [], FIRST_RUN_LAYOUT)}, repo) == (NOT_POSSIBLE, "no_file")


WELCH_LAYOUT: dict[str, Any] = {
    "components": [["researcher", "date"], ["temp", "seq_number"]],
    "joiners": ["_", "-"],
    "extension": "csv",
    "rendered": {
        "researcher": ["kato", "li"],
        "date": ["2023-01-05", "2023-02-01"],
        "temp": ["temp_1", "temp_10", "temp_100"],
        "seq_number": ["001", "002", "003", "004", "005"],
    },
}
# Group temp_1: kato (two files) and li (run 003); group temp_10: li only.  Dates and run numbers are
# disjoint between the groups, which never confounds.
WELCH_FILES: dict[str, list[float]] = {
    "kato_2023-01-05/temp_1-001.csv": [1.0, 2.5, 3.25],
    "kato_2023-01-05/temp_1-002.csv": [2.0, 1.5],
    "li_2023-01-05/temp_1-003.csv": [2.75, 0.5, 1.25],
    "li_2023-02-01/temp_10-004.csv": [4.0, 5.5, 6.0],
    "li_2023-02-01/temp_10-005.csv": [5.0, 4.75],
}


def _welch_factor(conditions: list[dict[str, Any]], groups: list[str], alpha: float = 0.05) -> dict[str, Any]:
    return {
        "type": "bivariate_hypothesis",
        "columns": ["temp", "v"],
        "factor": "temp",
        "test": {"name": "welch_factor", "alpha": alpha, "groups": groups},
        "path_conditions": conditions,
        "layout": WELCH_LAYOUT,
        "row_conditions": [],
    }


def _welch_repo(tmp_path: Path) -> Path:
    return _write_repo(tmp_path, {rel: _csv(values) for rel, values in WELCH_FILES.items()})


def test_welch_factor_answerable_matches_scipy(tmp_path: Path) -> None:
    repo = _welch_repo(tmp_path)
    both = [{"variable": "temp", "op": "in", "values": ["temp_1", "temp_10"]}]
    query = _welch_factor(both, ["temp_1", "temp_10"])
    x = [v for rel, vs in WELCH_FILES.items() if "temp_1-" in rel for v in vs]
    y = [v for rel, vs in WELCH_FILES.items() if "temp_10-" in rel for v in vs]
    expected = sps.ttest_ind(x, y, equal_var=False).pvalue
    assert math.isclose(solver_module.welch_factor_p(repo, query), expected, rel_tol=1e-9)
    assert expected < 0.05
    assert solve({"query": query}, repo) == ("yes", None)
    assert solve({"query": _welch_factor(both, ["temp_1", "temp_10"], alpha=expected / 2)}, repo) == ("no", None)


def test_welch_factor_confounded_by_researcher(tmp_path: Path) -> None:
    repo = _welch_repo(tmp_path)
    # Without run 003, every temp_1 file is kato's and every temp_10 file li's.
    runs = [{"variable": "seq_number", "op": "in", "values": ["001", "002", "004", "005"]}]
    assert solve({"query": _welch_factor(runs, ["temp_1", "temp_10"])}, repo) == (NOT_POSSIBLE, "confounded")
    kato_only = [{"variable": "researcher", "op": "eq", "value": "kato"}]
    # no_file (temp_10 has no kato file) is decided before confounded.
    assert solve({"query": _welch_factor(kato_only, ["temp_1", "temp_10"])}, repo) == (NOT_POSSIBLE, "no_file")


def test_welch_factor_confounded_by_path_variable(tmp_path: Path) -> None:
    layout: dict[str, Any] = {
        "components": [["mode"], ["temp", "seq_number"]],
        "joiners": ["_", "-"],
        "extension": "csv",
        "rendered": {"mode": ["fast", "slow"], "temp": ["temp_1", "temp_10"], "seq_number": ["001", "002"]},
    }
    repo = _write_repo(
        tmp_path,
        {
            "fast/temp_1-001.csv": _csv([1, 2, 3]),
            "fast/temp_1-002.csv": _csv([2, 3, 4]),
            "slow/temp_10-001.csv": _csv([5, 6, 7]),
            "slow/temp_10-002.csv": _csv([6, 7, 9]),
        },
    )
    query = {**_welch_factor([], ["temp_1", "temp_10"]), "layout": layout}
    assert solve({"query": query}, repo) == (NOT_POSSIBLE, "confounded")


def test_welch_factor_not_confounded_when_a_value_is_shared(tmp_path: Path) -> None:
    repo = _welch_repo(tmp_path)
    # li recorded runs in both groups: researcher does not confound, and dates/runs never do.
    query = _welch_factor([], ["temp_1", "temp_10"])
    answer, reason = solve({"query": query}, repo)
    assert reason is None and answer in ("yes", "no")
    group1 = [{"researcher": "kato", "date": "d1"}, {"researcher": "li", "date": "d1"}]
    group2 = [{"researcher": "li", "date": "d2"}]
    assert solver_module.confounders(group1, group2, ["researcher"]) == []
    assert solver_module.confounders(group1, group2, ["researcher", "date"]) == ["date"]


def test_welch_factor_no_file_when_a_group_is_empty(tmp_path: Path) -> None:
    repo = _welch_repo(tmp_path)
    assert solve({"query": _welch_factor([], ["temp_1", "temp_100"])}, repo) == (NOT_POSSIBLE, "no_file")
    cold = [{"variable": "temp", "op": "eq", "value": "temp_1"}]
    assert solve({"query": _welch_factor(cold, ["temp_1", "temp_10"])}, repo) == (NOT_POSSIBLE, "no_file")


def test_welch_factor_too_few_rows_and_constant_input(tmp_path: Path) -> None:
    repo = _write_repo(
        tmp_path,
        {
            "li_2023-01-05/temp_1-001.csv": _csv([1.0]),
            "li_2023-01-05/temp_10-002.csv": _csv([2.0, 2.0]),
            "li_2023-01-05/temp_100-003.csv": _csv([3.0, 3.0, 3.0]),
            "li_2023-02-01/temp_1-004.csv": _csv([1.0]),
        },
    )
    one_run = [{"variable": "seq_number", "op": "in", "values": ["001", "002"]}]
    assert solve({"query": _welch_factor(one_run, ["temp_1", "temp_10"])}, repo) == (NOT_POSSIBLE, "too_few_rows")
    # Rows are pooled over a group's files: temp_1 has two rows (1.0 twice), constant like temp_100.
    assert solve({"query": _welch_factor([], ["temp_1", "temp_100"])}, repo) == (NOT_POSSIBLE, "constant_input")
