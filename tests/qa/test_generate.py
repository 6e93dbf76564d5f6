"""The question generator: record shape, determinism, the unanswerable knob, and known failure modes."""

from __future__ import annotations

import collections
import functools
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from generators import Repository
from qa import stats
from qa.generate import Options, generate
from qa.model import ANSWER_KINDS, CATEGORIES, NOT_POSSIBLE, REASONS, Question
from qa.view import RepoView, row_mask
from tests.helpers import repo


@functools.cache
def default_questions(seed: int) -> list[Question]:
    return generate(repo(seed))


KEYS = [
    "id",
    "seed",
    "category",
    "type",
    "question",
    "variables",
    "answer",
    "answer_kind",
    "choices",
    "sig_figs",
    "answerable",
    "unanswerable_reason",
    "evidence",
    "query",
    "paraphrases",
    "generator_version",
    "prior",
    "counterfactual",
    "mess",
]


def test_records_have_every_key_and_valid_values() -> None:
    questions = default_questions(118)
    assert len(questions) == 4 + 7 * 5
    assert len({q.id for q in questions}) == len(questions)
    r = repo(118)
    files = set(r.file_paths())
    for q in questions:
        record = q.to_dict()
        assert list(record) == KEYS
        assert q.category == CATEGORIES[q.type] and q.answer_kind in ANSWER_KINDS
        assert q.answerable == (q.unanswerable_reason is None)
        assert q.unanswerable_reason is None or q.unanswerable_reason in REASONS
        assert (q.answer == NOT_POSSIBLE) == (not q.answerable)
        assert (q.sig_figs is not None) == (q.answer_kind == "continuous")
        assert q.sig_figs is None or 2 <= q.sig_figs <= 4
        assert set(q.evidence) <= files
        assert q.query["type"] == q.type
        assert len(q.paraphrases) == 3 and len(set(q.paraphrases)) == 3
        for name in q.variables:
            placeholder = "{" + name + "}"
            assert placeholder in q.question and all(placeholder in p for p in q.paraphrases)
        # Each question says when it is answered "not possible", in its own words; the two always answerable
        # types never mention it.
        assert ('"not possible"' in q.question) == (q.type not in ("readme", "extension"))
        if q.answer_kind == "continuous":
            assert f"{q.sig_figs} significant figures" in q.question
        json.dumps(record)


def test_generation_is_deterministic() -> None:
    first = [q.to_dict() for q in generate(repo(3))]
    second = [q.to_dict() for q in generate(Repository(repo(3).spec))]
    assert first == second


def test_unanswerable_share_follows_the_knob() -> None:
    questions = [q for s in range(1, 31) for q in default_questions(s)]
    assert 0.22 <= sum(not q.answerable for q in questions) / len(questions) <= 0.34
    never = [q for s in range(1, 6) for q in generate(repo(s), Options(unanswerable=0.0))]
    assert all(q.answerable for q in never if q.type not in ("title", "abstract"))
    always = [q for s in range(1, 4) for q in generate(repo(s), Options(unanswerable=1.0))]
    assert sum(not q.answerable for q in always if q.type not in ("readme", "extension")) >= 0.9 * (len(always) - 6)


def test_every_reason_and_type_occurs() -> None:
    questions = [q for s in range(1, 31) for q in default_questions(s)]
    assert {q.type for q in questions} == set(CATEGORIES)
    # missing_values only arises in a messy repository (--mess 2 or 3: tests/qa/test_solver_mess.py)
    assert {q.unanswerable_reason for q in questions if not q.answerable} == set(REASONS) - {"missing_values"}
    by_type = collections.Counter(q.type for q in questions if q.answerable)
    assert all(by_type[t] > 0 for t in CATEGORIES if t not in ("title", "abstract"))


# --------------------------------------------------------------------------------------------------
# Known failure modes of earlier implementations
# --------------------------------------------------------------------------------------------------
def test_pooled_statistics_use_exactly_the_selected_rows() -> None:
    """No uninitialised element may enter a statistic: pooled arrays hold exactly the matching rows."""
    view = RepoView(repo(118))
    paths = view.paths[:7]
    column = next(v.column for v in view.spec.variables if v.type == "continuous")
    condition = {
        "column": column,
        "op": "gt",
        "value": float(np.median(view.table(paths[0]).column(column).values)),
    }
    pooled = view.pooled(paths, [column], [condition])[column]
    expected = [x for p in paths for x in view.table(p).column(column).values.tolist() if x > condition["value"]]
    assert pooled.tolist() == expected
    assert stats.univariate("mean", pooled) == pytest.approx(sum(expected) / len(expected), rel=1e-12)


def test_every_path_condition_applies() -> None:
    view = RepoView(repo(118))
    names = view.placeholders[:2]
    first = {"variable": names[0], "op": "eq", "value": view.rendered(names[0])[0]}
    second = {"variable": names[1], "op": "eq", "value": view.rendered(names[1])[0]}
    both = view.select([first, second])
    assert np.array_equal(both, view.select([first]) & view.select([second]))
    assert both.sum() < view.select([second]).sum() or both.sum() == view.select([first]).sum()


def _seq_spec(width: int) -> Repository:
    spec = repo(118).spec
    template = replace(spec.template, seq_width=width)
    return Repository(replace(spec, template=template, seq_count=12))


def test_path_values_are_never_matched_as_substrings() -> None:
    r = _seq_spec(1)  # run numbers 1..12 rendered without padding: "1" is a prefix of "10", "11", "12"
    if "seq_number" not in r.spec.template.placeholders:
        pytest.fail("seed 118 is expected to use seq_number in its paths")
    view = RepoView(r)
    mask = view.select([{"variable": "seq_number", "op": "eq", "value": "1"}])
    selected = view.selected_paths(mask)
    assert selected
    k = view.placeholders.index("seq_number")
    for path in selected:
        number = r.tree.file_index(path.split("/"))
        assert number is not None and r.tree.placeholder_values(number)["seq_number"] == 1
    tens = view.select([{"variable": "seq_number", "op": "eq", "value": "10"}])
    assert not np.any(mask & tens)
    assert int(mask.sum()) == int(np.sum(view.digits[:, k] == 0))


def test_dates_are_compared_in_the_paths_format() -> None:
    # A repository whose top folders are dates alone.
    spec = next(repo(s).spec for s in range(1, 500) if repo(s).spec.template.components[0] == ("date",))
    for date_format in ("%d%b%Y", "%Y%m%d", "%Y-%m-%d"):
        r = Repository(replace(spec, template=replace(spec.template, date_format=date_format)))
        view = RepoView(r)
        value = view.rendered("date")[1]
        selected = view.selected_paths(view.select([{"variable": "date", "op": "eq", "value": value}]))
        assert selected and all(value in p.split("/")[0] for p in selected)
        iso = spec.dates[1]
        assert all(r.tree.placeholder_values(r.tree.file_index(p.split("/")) or 0)["date"] == iso for p in selected)


def test_integer_median_is_not_truncated() -> None:
    assert stats.univariate("median", np.array([1, 2, 3, 4], dtype=np.int64)) == 2.5
    questions = [q for s in range(1, 41) for q in default_questions(s)]
    medians = [
        q
        for q in questions
        if q.answerable
        and q.query.get("statistic") == "median"
        and isinstance(q.answer, float)
        and not float(q.answer).is_integer()
    ]
    assert medians, "expected some non-integer medians"
    integer_columns = {
        (q.seed, q.query["column"])
        for q in questions
        if q.query.get("statistic") == "median"
        and q.unanswerable_reason != "not_measured"
        and repo(q.seed).spec.variable(q.query["column"]).type == "integer"
    }
    assert integer_columns, "expected medians of integer columns"


def test_chi_square_is_the_test_of_independence() -> None:
    a = ["x"] * 30 + ["y"] * 10
    b = ["u"] * 20 + ["v"] * 10 + ["u"] * 2 + ["v"] * 8
    statistic, p = stats.chi2(a, b)
    table = np.array([[20, 10], [2, 8]])
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
    assert statistic == pytest.approx(float(((table - expected) ** 2 / expected).sum()), rel=1e-12)
    assert p == pytest.approx(float(sps.chi2.sf(statistic, 1)), rel=1e-9)
    goodness_of_fit = float(sps.chisquare(table.ravel()).statistic)
    assert statistic != pytest.approx(goodness_of_fit)


def test_row_conditions_are_inclusive_where_stated() -> None:
    view = RepoView(repo(1))
    table = view.table(view.paths[0])
    column = next(c for c in table.columns if c.type == "continuous")
    value = float(column.values[0])
    assert row_mask(table, [{"column": column.name, "op": "between", "low": value, "high": value}])[0]
    assert row_mask(table, [{"column": column.name, "op": "ge", "value": value}])[0]
    assert not row_mask(table, [{"column": column.name, "op": "gt", "value": value}])[0]


def test_answers_match_a_direct_recomputation() -> None:
    """Re-derive a sample of answers from the tables with plain Python, outside the generator."""
    checked = 0
    for seed in (1, 5, 118):
        r = repo(seed)
        for q in default_questions(seed):
            if not q.answerable or q.type not in ("count_rows", "univariate_single_file"):
                continue
            table = r.table(q.query["path"])
            rows = [
                i
                for i in range(table.n_rows)
                if all(_meets(table.column(c["column"]).values[i], c) for c in q.query["row_conditions"])
            ]
            if q.type == "count_rows":
                assert q.answer == len(rows)
            elif q.query["statistic"] == "mean":
                values = [float(table.column(q.query["column"]).values[i]) for i in rows]
                assert q.answer == pytest.approx(sum(values) / len(values), rel=1e-12)
            checked += 1
    assert checked >= 5


def _meets(value: object, condition: dict[str, object]) -> bool:
    op = condition["op"]
    if op == "eq":
        return value == condition["value"]
    if op == "in":
        return value in condition["values"]  # type: ignore[operator]
    x = float(value)  # type: ignore[arg-type]
    if op == "between":
        return float(condition["low"]) <= x <= float(condition["high"])  # type: ignore[arg-type]
    threshold = float(condition["value"])  # type: ignore[arg-type]
    return {"gt": x > threshold, "lt": x < threshold, "ge": x >= threshold, "le": x <= threshold}[str(op)]


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------
def _qa(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sgfs", "qa", *args], capture_output=True, text=True, timeout=300)


def test_cli_writes_jsonl_deterministically(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _qa("2,3", "--out", str(first), "--per-type", "2").returncode == 0
    assert _qa("2,3", "--out", str(second), "--per-type", "2").returncode == 0
    assert first.read_bytes() == second.read_bytes()
    records = [json.loads(line) for line in first.read_text().splitlines()]
    assert len(records) == 2 * (4 + 7 * 2)
    assert [r["seed"] for r in records] == [2] * 18 + [3] * 18


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x-3", "--out", "OUT"], "invalid seed 'x'"),
        (["5-1", "--out", "OUT"], "the end is below the start"),
        (["1", "--out", "OUT", "--unanswerable", "1.5"], "not within [0, 1]"),
        (["1", "--out", "OUT", "--per-type", "-1"], "--per-type"),
        (["1", "--out", "/nonexistent/dir/q.jsonl"], "does not exist"),
        (["1"], "Missing option '--out'"),
    ],
)
def test_cli_errors(tmp_path: Path, args: list[str], message: str) -> None:
    args = [str(tmp_path / "q.jsonl") if a == "OUT" else a for a in args]
    result = _qa(*args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert not (tmp_path / "q.jsonl").exists()
