"""The question audit (qa/audit.py): every detector fires on a record with its defect and stays silent on one
without, the balance measures, and the whole audit over the questions of seeds 1-300."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from generators import Repository
from qa import audit
from qa.audit import Balance, Finding
from qa.model import CATEGORIES, NOT_POSSIBLE, Answer, Question
from qa.prior import PriorTable
from qa.records import QuestionRecord, parse_question_lines, question_line
from qa.view import RepoView
from tests.helpers import repo

SEED = 12  # every kind of column
CLOSING = (
    " If the data in the repository cannot answer this question (for example, no file or no row meets the "
    'conditions, or the statistic is not defined for the column), answer "not possible".'
)


def make(
    qid: str,
    qtype: str,
    text: str,
    query: dict[str, Any] | None = None,
    *,
    variables: dict[str, str] | None = None,
    paraphrases: list[str] | None = None,
    answer: Answer = 1,
    answerable: bool = True,
    seed: int = SEED,
) -> Question:
    kind = {"readme": "yes_no", "bivariate_hypothesis": "yes_no", "title": "categorical", "abstract": "categorical"}
    answer_kind = kind.get(qtype, "integer")
    return Question(
        id=qid,
        seed=seed,
        category=CATEGORIES[qtype],
        type=qtype,
        question=text,
        variables=variables or {},
        answer=answer if answerable else NOT_POSSIBLE,
        answer_kind=answer_kind,
        choices=["yes", "no"] if answer_kind == "yes_no" else ([str(answer)] if answer_kind == "categorical" else None),
        sig_figs=None,
        answerable=answerable,
        unanswerable_reason=None if answerable else "no_row",
        evidence=[],
        query={"type": qtype, **(query or {})},
        paraphrases=paraphrases or [],
    )


def ids(findings: list[Finding], defect: str) -> set[str]:
    assert all(f.defect == defect for f in findings), findings
    return {f.id for f in findings}


@pytest.fixture(scope="module")
def view() -> RepoView:
    return RepoView(repo(SEED))


def _column(view: RepoView, kind: str) -> str:
    return next(v.column for v in view.spec.variables if v.type == kind)


def _values(view: RepoView, paths: list[str], column: str) -> np.ndarray[Any, Any]:
    return np.asarray(view.pooled(paths, [column], [])[column], dtype=np.float64)


# ---------------------------------------------------------------------------------------------- duplicates


def test_duplicates_fire_on_same_text_or_same_query_only() -> None:
    count = "How many data rows does the file {path} contain?"
    questions = [
        make("1-count_rows-1", "count_rows", count, {"path": "a.csv"}, variables={"path": "a.csv"}),
        make("1-count_rows-2", "count_rows", count, {"path": "a.csv"}, variables={"path": "a.csv"}),
        make("1-count_rows-3", "count_rows", count, {"path": "b.csv"}, variables={"path": "b.csv"}),
        make("1-prefix-1", "prefix", "How many files under {path}?", {"prefix": "x"}, variables={"path": "x"}),
        make("1-prefix-2", "prefix", "Count the files below {path}.", {"prefix": "x"}, variables={"path": "x"}),
        make("2-prefix-1", "prefix", "How many files under {path}?", {"prefix": "x"}, variables={"path": "x"}, seed=2),
    ]
    found = audit.duplicate_questions(questions)
    assert ids(found, "duplicate_question") == {"1-count_rows-2", "1-prefix-2"}
    assert "same text as 1-count_rows-1" in found[0].detail and "same query as 1-prefix-1" in found[1].detail


# ---------------------------------------------------------------------------------------------- filters


def test_between_same_bounds() -> None:
    same = make(
        "q1", "count_rows", "t", {"row_conditions": [{"column": "x", "op": "between", "low": 0.0, "high": 0.0}]}
    )
    fine = make("q2", "count_rows", "t", {"row_conditions": [{"column": "x", "op": "between", "low": 0.0, "high": 1}]})
    assert ids(audit.between_same_bounds([same, fine]), "between_same_bounds") == {"q1"}


def test_repeated_column() -> None:
    twice = [{"column": "x", "op": "gt", "value": 1}, {"column": "x", "op": "lt", "value": 5}]
    once = [{"column": "x", "op": "gt", "value": 1}, {"column": "y", "op": "lt", "value": 5}]
    fields = [{"variable": "site", "op": "eq", "value": "a"}, {"variable": "site", "op": "in", "values": ["a", "b"]}]
    questions = [
        make("q1", "count_rows", "t", {"row_conditions": twice}),
        make("q2", "count_rows", "t", {"row_conditions": once}),
        make("q3", "condition", "t", {"path_conditions": fields}),
    ]
    assert ids(audit.repeated_column(questions), "repeated_column") == {"q1", "q3"}


def test_noop_row_condition_needs_a_condition_that_keeps_every_row(view: RepoView) -> None:
    path = view.paths[0]
    column = _column(view, "continuous")
    values = _values(view, [path], column)
    keeps_all = {"column": column, "op": "ge", "value": float(values.min())}
    keeps_some = {"column": column, "op": "gt", "value": float(np.median(values))}
    questions = [
        make("q1", "count_rows", "t", {"path": path, "row_conditions": [keeps_all]}),
        make("q2", "count_rows", "t", {"path": path, "row_conditions": [keeps_some]}),
        make("q3", "count_rows", "t", {"path": "no/such/file.txt", "row_conditions": [keeps_all]}),
    ]
    assert ids(audit.noop_row_condition(questions, view), "noop_row_condition") == {"q1"}


def test_noop_row_condition_reads_pooled_files_of_path_conditions(view: RepoView) -> None:
    name = view.placeholders[0]
    condition = {"variable": name, "op": "eq", "value": view.rendered(name)[0]}
    paths = view.selected_paths(view.select([condition]))
    # a continuous column whose first file's least value is above the pooled files' (not one held at a bound)
    column, values, first_file = next(
        (c, pooled, first)
        for c in (v.column for v in view.spec.variables if v.type == "continuous")
        for pooled, first in [(_values(view, paths, c), _values(view, paths[:1], c))]
        if first.min() > pooled.min()
    )
    # keeps every row of the first file but not of the pooled files: not a no-op
    threshold = float(first_file.min())
    query = {"path_conditions": [condition], "row_conditions": [{"column": column, "op": "ge", "value": threshold}]}
    everything = {"column": column, "op": "le", "value": float(values.max())}
    questions = [
        make("q1", "univariate_condition", "t", query),
        make("q2", "univariate_condition", "t", {"path_conditions": [condition], "row_conditions": [everything]}),
    ]
    assert ids(audit.noop_row_condition(questions, view), "noop_row_condition") == {"q2"}


def test_noop_path_condition(view: RepoView) -> None:
    name = next(n for n in view.placeholders if len(view.rendered(n)) >= 2)
    texts = list(view.rendered(name))
    every_value = {"variable": name, "op": "in", "values": texts}
    one_value = {"variable": name, "op": "eq", "value": texts[0]}
    top = view.paths[0].split("/")[0]
    questions = [
        make("q1", "condition", "t", {"path_conditions": [every_value]}),
        make("q2", "condition", "t", {"path_conditions": [one_value]}),
        make("q3", "prefix", "t", {"prefix": top}),
    ]
    assert ids(audit.noop_path_condition(questions, view), "noop_path_condition") == {"q1"}


def test_noop_path_condition_flags_a_prefix_holding_every_file() -> None:
    spec = repo(SEED).spec
    view = RepoView(Repository(spec))
    top = {p.split("/")[0] for p in view.paths}
    questions = [make("q1", "prefix", "t", {"prefix": sorted(top)[0]})]
    expected = {"q1"} if len(top) == 1 else set()
    assert ids(audit.noop_path_condition(questions, view), "noop_path_condition") == expected
    view.paths = [p for p in view.paths if p.startswith(sorted(top)[0] + "/")]  # one top directory left
    assert ids(audit.noop_path_condition(questions, view), "noop_path_condition") == {"q1"}


# ---------------------------------------------------------------------------------------------- revealing


def test_reveals_constant_fires_on_a_filter_fixing_an_analysed_column() -> None:
    fixes = [
        {"column": "a", "op": "eq", "value": "x"},
        {"column": "b", "op": "between", "low": 3.0, "high": 3.0},
        {"column": "a", "op": "in", "values": ["x"]},
    ]
    fine = [
        {"column": "c", "op": "eq", "value": "x"},
        {"column": "b", "op": "between", "low": 3.0, "high": 4.0},
        {"column": "a", "op": "in", "values": ["x", "y"]},
    ]
    questions = [
        make(f"fix{i}", "bivariate_statistic", "t", {"columns": ["a", "b"], "row_conditions": [c]})
        for i, c in enumerate(fixes)
    ]
    questions += [
        make(f"ok{i}", "bivariate_hypothesis", "t", {"columns": ["a", "b"], "row_conditions": [c]})
        for i, c in enumerate(fine)
    ]
    questions.append(make("uni", "univariate_condition", "t", {"column": "a", "row_conditions": [fixes[0]]}))
    assert ids(audit.reveals_constant(questions), "reveals_constant") == {"fix0", "fix1", "fix2"}


def test_narrow_window_rule() -> None:
    values = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0, 30.0, 40.0])  # interquartile range 15.5
    assert audit.narrow_window_reason(2.3, 2.6, values) is not None  # empty, holds no integer
    assert audit.narrow_window_reason(5.5, 5.55, values + 0.5) is None  # keeps the value 5.5
    continuous = values + np.linspace(0.01, 0.09, values.size)
    assert audit.narrow_window_reason(12.0, 12.1, continuous) is not None  # 0.65 % of the spread, empty
    assert audit.narrow_window_reason(12.0, 12.5, continuous) is None  # 3 % of the spread
    assert audit.narrow_window_reason(41.0, 60.0, continuous) is None  # wide, beyond the values: no tell
    assert audit.narrow_window_reason(2.0, 2.0, values) is None  # that one is between_same_bounds
    assert audit.narrow_window_reason(1.0, 2.0, np.empty(0)) is None


def test_reveals_narrow_window_on_repository_data(view: RepoView) -> None:
    path = view.paths[0]
    column = _column(view, "continuous")
    values = np.unique(_values(view, [path], column))
    gaps = np.diff(values)
    i = int(np.argmin(gaps))
    empty_narrow = {"column": column, "op": "between", "low": values[i] + gaps[i] / 3, "high": values[i] + gaps[i] / 2}
    kept_narrow = {"column": column, "op": "between", "low": float(values[i]), "high": float(values[i] + gaps[i] / 2)}
    spread = float(values.max() - values.min())
    empty_wide = {"column": column, "op": "between", "low": values.max() + 1, "high": values.max() + spread}
    questions = [
        make("q1", "count_rows", "t", {"path": path, "row_conditions": [empty_narrow]}, answerable=False),
        make("q2", "count_rows", "t", {"path": path, "row_conditions": [kept_narrow]}),
        make("q3", "count_rows", "t", {"path": path, "row_conditions": [empty_wide]}, answerable=False),
    ]
    assert ids(audit.reveals_narrow_window(questions, view), "reveals_narrow_window") == {"q1"}


# ---------------------------------------------------------------------------------------------- wording


def test_wording_not_possible_in_readme_and_extension() -> None:
    readme = "Does this repository contain a README file at its top level? Answer yes or no."
    extension = "What file extension do the data files use? Answer with one of: csv, json, jsonl, xlsx, txt or log."
    questions = [
        make("r1", "readme", readme + ' If there is no README, answer "not possible".'),
        make("r2", "readme", readme, paraphrases=[readme + CLOSING]),
        make("r3", "readme", readme, paraphrases=[readme]),
        make("e1", "extension", extension + CLOSING),
        make("e2", "extension", extension),
    ]
    found = audit.wording_not_possible(questions)
    assert ids(found, "wording_not_possible") == {"r1", "r2", "e1"}
    assert next(f for f in found if f.id == "r2").detail.startswith("paraphrase_1:")


def test_wording_readme_presupposed() -> None:
    ask = "What is the title of the research project, as written in this repository's README? Give it exactly."
    own = ' If there is no README, or it does not give the title, answer "not possible".'
    half = ' If there is no README, answer "not possible".'
    abstract = "What is the first sentence of the abstract in the README? Quote it exactly."
    questions = [
        make("t1", "title", ask + CLOSING),
        make("t2", "title", ask + half),
        make("t3", "title", ask + own, paraphrases=[ask + own]),
        make("t4", "title", ask + own, paraphrases=[ask]),
        make("a1", "abstract", abstract + ' If there is no README or no abstract in it, answer "not possible".'),
        make("a2", "abstract", abstract + own),
    ]
    assert ids(audit.wording_readme_presupposed(questions), "wording_readme_presupposed") == {"t1", "t2", "t4", "a2"}


def test_wording_empty_count() -> None:
    rows = {"path": "f.csv", "row_conditions": [{"column": "x", "op": "gt", "value": 1}]}
    ask = "How many data rows does the file {path} contain where `x` is greater than 1?"
    no_file = ' If there is no such file, answer "not possible".'
    no_row = ' If no row meets the condition, answer "not possible".'
    conditions = {"path_conditions": [{"variable": "site", "op": "eq", "value": "a"}]}
    count_files = "How many data files have a path in which `site` is a?"
    prefix = "How many data files are stored under the directory {path}?"
    questions = [
        make("c1", "count_rows", ask + no_file + CLOSING, rows, variables={"path": "f.csv"}),
        make("c2", "count_rows", ask + no_file + no_row + CLOSING, rows, variables={"path": "f.csv"}),
        make("c3", "count_rows", "How many rows in {path}?" + no_file, {"path": "f.csv"}, variables={"path": "f.csv"}),
        make("c4", "count_rows", "How many rows in {path}?" + CLOSING, {"path": "f.csv"}, variables={"path": "f.csv"}),
        make("d1", "condition", count_files + CLOSING, conditions),
        make("d2", "condition", count_files + ' If no data file has such a path, answer "not possible".', conditions),
        make("p1", "prefix", prefix + CLOSING, {"prefix": "a"}, variables={"path": "a"}),
        make("p2", "prefix", prefix + ' If there is no such directory, answer "not possible".', {"prefix": "a"}),
    ]
    assert ids(audit.wording_empty_count(questions), "wording_empty_count") == {"c1", "c4", "d1", "p1"}


@pytest.mark.parametrize(
    ("text", "defect"),
    [
        ("files whose path shows that `e` is one of OLS, LASSO, pooling their rows, what is it?", True),
        ("files where `e` is one of OLS, LASSO and `n` is 2?", True),
        ("files where `e` is one of OLS or LASSO, pooling their rows, what is it?", False),
        ("files where `e` is one of OLS, LASSO or GLM and `n` is 2?", False),
        ("Answer with one of: csv, json, jsonl, xlsx, txt, log.", False),
        ("rows where `m` is one of PVC, ductile iron.", True),
    ],
)
def test_list_without_or(text: str, defect: bool) -> None:
    assert (audit.list_without_or(text) is not None) == defect
    found = audit.wording_list_without_or([make("q", "condition", text)])
    assert ids(found, "wording_list_without_or") == ({"q"} if defect else set())


def test_wording_numeric_only(view: RepoView) -> None:
    categorical = _column(view, "categorical")
    numeric = _column(view, "continuous")
    ask = "In the file {path}, what is the minimum of the column `%s`?"
    stated = " (The statistic is defined only for numeric columns.)"
    questions = [
        make("u1", "univariate_single_file", ask % categorical, {"column": categorical, "statistic": "min"}),
        make("u2", "univariate_single_file", ask % categorical + stated, {"column": categorical, "statistic": "min"}),
        make("u3", "univariate_single_file", ask % numeric, {"column": numeric, "statistic": "min"}),
        make("u4", "univariate_condition", ask % categorical + stated, {"column": categorical}, paraphrases=["x"]),
    ]
    assert ids(audit.wording_numeric_only(questions, view.repository), "wording_numeric_only") == {"u1", "u4"}


@pytest.mark.parametrize(
    ("text", "defect"),
    [
        ("A observational study of heat.", True),
        ("Is there an table here?", True),
        ("What is the the mean?", True),
        ("Which column is ``?", True),
        ("How many rows , in total?", True),
        ("Give it exactly..", True),
        ("An observational study of a unit, an hour and a one-off run.", False),
        ("It is an estimator of a European survey; an MRI scan; a `x` column.", False),
        ("Is `a` a column? It is 16 16 times.", False),
        ("Rows where `grade` is A and `aspect` is one of E or W; `x` is a or b.", False),
    ],
)
def test_grammar(text: str, defect: bool) -> None:
    assert bool(audit.grammar_defects(text)) == defect, audit.grammar_defects(text)
    assert ids(audit.wording_grammar([make("q", "readme", text)]), "wording_grammar") == ({"q"} if defect else set())


def test_findings_are_one_per_question_and_class() -> None:
    text = "A observational study."
    found = audit.wording_grammar([make("q", "readme", text, paraphrases=[text, "Fine.", text])])
    assert len(found) == 1 and found[0].detail.startswith("template, paraphrase_1, paraphrase_3:")


def test_audit_repository_runs_every_detector() -> None:
    seeds_questions = [
        make("1-readme-1", "readme", "Does it have a README? Answer yes or no." + CLOSING),
        make("1-readme-2", "readme", "Does it have a README? Answer yes or no." + CLOSING),
    ]
    found = audit.audit_repository(seeds_questions, repo(SEED))
    assert {f.defect for f in found} == {"duplicate_question", "wording_not_possible"}
    assert "duplicate_question: 1 e.g. 1-readme-2" in audit.summary(found)
    assert set(audit.defect_counts(found)) == set(audit.DEFECTS)


# ---------------------------------------------------------------------------------------------- balance


def _records(questions: list[Question]) -> list[QuestionRecord]:
    return parse_question_lines([question_line(q) for q in questions], "test")


def test_balance_measures() -> None:
    def hyp(qid: str, answer: str, seed: int, answerable: bool = True) -> Question:
        return make(qid, "bivariate_hypothesis", "t", answer=answer, answerable=answerable, seed=seed)

    questions = [
        make("1-readme-1", "readme", "t", answer="yes", seed=1),
        make("1-title-1", "title", "t", answer="T one", seed=1),
        make("1-abstract-1", "abstract", "t", answer="A one", answerable=False, seed=1),
        make("2-readme-1", "readme", "t", answer="no", seed=2),
        make("2-title-1", "title", "t", answer="T two", answerable=False, seed=2),
        make("2-abstract-1", "abstract", "t", answer="A two", answerable=False, seed=2),
        hyp("1-h-1", "yes", 1),
        hyp("1-h-2", "no", 1),
        hyp("1-h-3", "no", 1),
        hyp("1-h-4", "yes", 1, answerable=False),
    ]
    prior = PriorTable({"readme": "yes", "bivariate_hypothesis": "no"}, (99,), 5, 0.28)
    result = audit.balance(_records(questions), prior)
    assert result.n == 10
    assert result.abstain_floor == pytest.approx(4 / 10)
    # readme yes (1 right), hypothesis no (2 right), the rest "not possible" (title 2, abstract 1 and 2)
    assert result.prior_score == pytest.approx((1 + 2 + 3) / 10)
    assert result.prior_margin == pytest.approx(0.2)
    assert result.hypothesis_n == 3 and result.hypothesis_yes_share == pytest.approx(1 / 3)
    assert result.readme_repositories == 1
    assert result.title_share == 1.0 and result.abstract_share == 0.0
    hypotheses = next(t for t in result.per_type if t.type == "bivariate_hypothesis")
    assert (hypotheses.n, hypotheses.top_answer, hypotheses.top_share) == (4, "no", 0.5)
    assert hypotheses.unanswerable_share == 0.25


def test_reveals_tie_fires_when_the_date_is_fixed() -> None:
    layout = {"components": [["researcher"], ["date", "seq_number"]], "joiners": ["", "_"], "extension": "csv"}

    def first_run(qid: str, conditions: list[dict[str, object]]) -> Question:
        query = {"type": "count_rows", "first_run": True, "path_conditions": conditions, "layout": layout}
        return make(qid, "count_rows", "t", query=query)

    date = {"variable": "date", "op": "eq", "value": "20200101"}
    one_date = {"variable": "date", "op": "in", "values": ["20200101"]}
    two_dates = {"variable": "date", "op": "in", "values": ["20200101", "20200102"]}
    run = {"variable": "seq_number", "op": "eq", "value": "01"}
    questions = [
        first_run("1-count_rows-1", [date]),
        first_run("1-count_rows-2", [one_date, run]),
        first_run("1-count_rows-3", [two_dates]),
        first_run("1-count_rows-4", [run]),
    ]
    assert [f.id for f in audit.reveals_tie(questions)] == ["1-count_rows-1", "1-count_rows-2"]


def test_criteria() -> None:
    good = Balance(100, (), 0.3, 0.34, 40, 0.5, 10, 0.6, 0.5)
    assert not audit.failed(audit.criteria(good, []))
    assert not audit.failed(audit.criteria(Balance(100, (), 0.3, 0.34, 40, 0.5, 10, 0.6, 0.5, 10, 0.5, 8, 0.25), []))
    forms = Balance(100, (), 0.3, 0.34, 40, 0.5, 10, 0.6, 0.5, 10, 0.6, 8, 0.75)
    assert {c.name for c in audit.failed(audit.criteria(forms, []))} == {
        "first-run questions not possible in <= 50%",
        "factor questions not possible in <= 50%",
    }
    bad = Balance(100, (), 0.3, 0.36, 40, 0.3, 10, 0.4, 0.5)
    names = {c.name for c in audit.failed(audit.criteria(bad, [Finding("q", "reveals_constant", "x")]))}
    assert names == {
        "prior score <= abstain floor + 0.05",
        "hypothesis yes share in [0.35, 0.65]",
        "title answerable in >= 50% of README repositories",
        "zero revealing",
    }


def test_script_prints_the_table_and_checks(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "measure_guessing.py"
    run = subprocess.run(
        [sys.executable, str(script), "--train", "1001-1002", "--eval", "1-2", "--per-type", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    for heading in ("Answers per type", "abstain floor", "prior - abstain", "Defects", "Done-when checks"):
        assert heading in run.stdout
    overlap = subprocess.run(
        [sys.executable, str(script), "--train", "1-2", "--eval", "2-3"], capture_output=True, text=True, timeout=60
    )
    assert overlap.returncode == 2 and "overlap" in overlap.stderr


# ---------------------------------------------------------------------------------------------- seeds 1-300


@pytest.fixture(scope="module")
def seeds_audit() -> tuple[Balance, list[Finding]]:
    prior = audit.learn_prior(list(range(1001, 1041)))
    records, findings = audit.audit_seeds(range(1, 301))
    return audit.balance(records, prior), findings


@pytest.mark.slow
def test_questions_of_seeds_1_to_300_meet_every_done_when_criterion(seeds_audit: tuple[Balance, list[Finding]]) -> None:
    result, findings = seeds_audit
    checks = audit.criteria(result, findings)
    failures = audit.failed(checks)
    message = "\n".join(
        [f"{c.name}: {c.detail}" for c in failures] + ["defects per class:", audit.summary(findings, examples=4)]
    )
    assert not failures, message
