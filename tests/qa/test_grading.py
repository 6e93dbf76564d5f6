"""Grading (qa.grading, qa.metrics) and ``sgfs grade``: every rule, every answer kind, the metrics, the
command line end to end. Question records follow docs/questions.md and are written here by hand."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qa.answers import committed_numbers, numbers, prepare
from qa.grading import (
    ANSWER_KINDS,
    AnswerRecord,
    GradedQuestion,
    GradingInputError,
    JsonValue,
    continuous_correct,
    extract_answer,
    grade,
    grade_answers,
    parse_answers,
    parse_question,
    parse_questions,
    round_sig,
)
from qa.metrics import krippendorff_alpha_nominal, paraphrase_agreement, summarize

# ------------------------------------------------------------------------------------ question records

PARAPHRASES = ["p1 {path}", "p2 {path}", "p3 {path}"]
EXTENSIONS = ["csv", "json", "jsonl", "xlsx", "txt", "log"]


def record(
    qid: str,
    qtype: str,
    category: str,
    answer: Any,
    kind: str,
    *,
    choices: list[str] | None = None,
    sig_figs: int | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A full question record as `sgfs qa` writes it (docs/questions.md)."""
    return {
        "id": qid,
        "seed": 7,
        "category": category,
        "type": qtype,
        "question": f"question {qid} about {{path}}",
        "variables": {"path": "kato/run-001.csv"},
        "answer": "not possible" if reason else answer,
        "answer_kind": kind,
        "choices": choices,
        "sig_figs": sig_figs,
        "answerable": reason is None,
        "unanswerable_reason": reason,
        "evidence": ["kato/run-001.csv"],
        "query": {"type": qtype},
        "paraphrases": PARAPHRASES,
    }


RM, FM, DT, US, BS = (
    "Repository Metadata",
    "File Metadata",
    "Directory Traversal",
    "Univariate Statistics",
    "Bivariate Statistics",
)
TITLE = "Glass transition temperature under varying alloy: a longitudinal study"
SENTENCE = "Photovoltaic materials remains difficult to characterise quantitatively."


def q(obj: dict[str, Any]) -> GradedQuestion:
    return parse_question(json.loads(json.dumps(obj), parse_float=Decimal, parse_int=Decimal), "test:1")


def verdict(question: dict[str, Any], answer: JsonValue) -> bool:
    return grade(q(question), answer).correct


README_YES = record("7-readme-1", "readme", RM, "yes", "yes_no", choices=["yes", "no"])
README_NO = record("7-readme-2", "readme", RM, "no", "yes_no", choices=["yes", "no"])
EXT_JSON = record("7-extension-1", "extension", FM, "json", "categorical", choices=EXTENSIONS)
EXT_CSV = record("7-extension-2", "extension", FM, "csv", "categorical", choices=EXTENSIONS)
TITLE_Q = record("7-title-1", "title", RM, TITLE, "categorical", choices=[TITLE])
ABSTRACT_Q = record("7-abstract-1", "abstract", RM, SENTENCE, "categorical", choices=[SENTENCE])
COUNT = record("7-count_rows-1", "count_rows", FM, 163, "integer")
BIG_COUNT = record("7-prefix-1", "prefix", DT, 1234, "integer")
NEG_INT = record("7-condition-1", "condition", DT, -5, "integer")


def cont(answer: float | int, sig_figs: int, qid: str = "7-univariate_single_file-1") -> dict[str, Any]:
    return record(qid, "univariate_single_file", US, answer, "continuous", sig_figs=sig_figs)


# ------------------------------------------------------------------------------------ answer parsing


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ('{"answer": "163"}', "163"),
        ('{"answer": 163}', Decimal(163)),
        ('{"answer": 1.2350}', Decimal("1.2350")),
        ('I counted the rows.\n```json\n{"answer": "yes"}\n```\n', "yes"),
        ('First guess {"answer": 1}, then on reflection {"answer": 2}.', Decimal(2)),
        ('Final: {"reasoning": "it has {braces}", "answer": "no"} done', "no"),
        ('{"result": {"answer": "csv"}, "note": "x"}', "csv"),
        ('{"answer": "outer", "meta": {"answer": "inner"}}', "inner"),  # the key written last
        ('{"answer": null}', None),
        ('{"answer": ["a", 1]}', ["a", Decimal(1)]),
        ('{"answer": NaN}', "NaN"),
        ("{'answer': 5}", "{'answer': 5}"),
        ('{"answer": 5', Decimal(5)),  # the value is complete JSON even if the object is not
        ('"answer": 5', '"answer": 5'),  # not a key of an object
        ('{"answer": 1e99999999999999999999}', "1e99999999999999999999"),  # beyond Decimal: kept as text
        ('{"value": 5} and {"other": 6}', '{"value": 5} and {"other": 6}'),
        ("plain text 42 rows", "plain text 42 rows"),
        ("I computed 3 values; the answer is 0.52", "0.52"),
        ("**Final answer:** 0.52. Computed over 160 rows.", "0.52"),
        ("**Final answer**: yes", "yes"),
        ("Answer:\n\n  **12**\n", "12"),
        ("Answer - csv files", "csv files"),
        ("answer: 1\nlater, the answer is 2!", "2"),
        ("We answered: 5", "We answered: 5"),  # "answered" is no marker
        ("Therefore $\\boxed{0.52}$.", "0.52"),
        ("\\boxed{\\text{not possible}} then Answer: 3", "\\text{not possible}"),
        ('\\boxed{1} and {"answer": 2}', Decimal(2)),  # JSON first, then boxed, then markers
        ("\\boxed{unclosed", "\\boxed{unclosed"),
        ("", ""),
        ("{" * 5000, "{" * 5000),
    ],
)
def test_extract_answer(response: str, expected: JsonValue) -> None:
    assert extract_answer(response) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("163", ["163"]),
        ("163 rows", ["163"]),
        ("10cm", ["10"]),
        ("about 1,234 files", ["1234"]),
        ("1,234,567.5", ["1234567.5"]),
        ("1,2345", ["1", "2345"]),
        ("-0.5", ["-0.5"]),
        ("x=-3", ["-3"]),
        ("\u22122.5", ["-2.5"]),
        ("6.02e23", ["6.02E+23"]),
        ("1.5E-7 mol", ["1.5E-7"]),
        ("1.2 \u00d7 10^-3", ["0.0012"]),
        ("$1.2 \\times 10^{-3}$", ["0.0012"]),
        ("10^18", ["1E+18"]),
        (".5", ["0.5"]),
        ("5. Done", ["5"]),
        ("0.5-0.6", ["0.5", "0.6"]),  # a range: two numbers, the hyphen is no minus
        ("2023-04-01", ["2023", "4", "1"]),
        # digits inside identifiers, paths and file names are never numbers
        ("vo2 x1 x_1 R^2 HEK293 run-003 run_003 v.2 2b3 3a_x", []),
        ("run-003.csv 0.json a/3 3/4 DRossi/HEK293-combo/0.json 293-combo", []),
        ("no digits", []),
        ("nan inf infinity", []),
        ("\u0663", []),  # Arabic-Indic three: ASCII digits only
    ],
)
def test_numbers(text: str, expected: list[str]) -> None:
    assert [str(n.value) for n in numbers(prepare(text))] == expected


def test_numbers_with_an_unrepresentable_exponent() -> None:
    (found,) = numbers("1e-99999999999999999999")
    assert found.value is None and found.written == "1e-99999999999999999999"


@pytest.mark.parametrize(
    ("text", "committed"),
    [
        ("0.52", ["0.52"]),
        ("0.52 (n = 160)", ["0.52"]),  # a remark after the value
        ("0.52 (95% CI 0.48-0.56)", ["0.52"]),
        ("0.52 or 0.61", ["0.52", "0.61"]),
        ("[0.52, 0.61]", ["0.52", "0.61"]),
        ("between 0.5 and 0.6", ["0.5", "0.6"]),
        ("0.52, i.e. 0.520", ["0.52"]),  # the same value twice
        ("The mean of vo2 across the 160 rows is 0.52.", ["0.52"]),
        ("R^2 = 0.52", ["0.52"]),
        ("r = 0.52, p = 0.003", ["0.003"]),  # the last assertion counts
        ("the mean is 0.52 or 0.61", ["0.52", "0.61"]),
        ("Out of 300 rows, 12 match", ["300", "12"]),
        ("(about 2.5)", ["2.5"]),  # parentheses before any value are no remark
    ],
)
def test_committed_numbers(text: str, committed: list[str]) -> None:
    assert [n.written for n in committed_numbers(prepare(text))] == committed


# --------------------------------------------------------------------------------------- categorical


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("json", True),
        ("JSON", True),
        (" The data files are .JSON files. ", True),
        ("jsonl", False),  # "json" is not found inside "jsonl"; jsonl is another choice
        ("JSONL files", False),
        ("json or csv", False),
        ("json (not jsonl)", True),  # a remark in parentheses after the choice is no answer
        ("jsonl (not json)", False),
        ("xlsx", False),
        ("jsonish", False),
        ("not possible", False),
        ("json, although it may be not possible to tell", False),
        ("", False),
        (Decimal(1), False),
    ],
)
def test_categorical_extension(answer: JsonValue, correct: bool) -> None:
    assert verdict(EXT_JSON, answer) is correct


def test_categorical_csv_and_jsonl() -> None:
    jsonl = record("7-extension-3", "extension", FM, "jsonl", "categorical", choices=EXTENSIONS)
    assert verdict(EXT_CSV, "csv") and verdict(EXT_CSV, "*.csv") and not verdict(EXT_CSV, "csvs")
    assert verdict(jsonl, "jsonl") and verdict(jsonl, "JSON Lines (.jsonl)") is False  # "json" found too
    assert verdict(jsonl, "newline-delimited, extension jsonl")


@pytest.mark.parametrize(
    ("answer", "yes", "no"),
    [
        ("yes", True, False),
        ("Yes.", True, False),
        ("YES, it does", True, False),
        ("no", False, True),
        ("No, there is none.", False, True),
        ("I do not know", False, False),  # "no" is not found inside "not" or "know"
        ("nothing to say", False, False),
        ("yes and no", False, False),
        ("eyes", False, False),
        ("not possible", False, False),
        ("no, not possible", False, False),  # hedged between a choice and the abstention
        ("true", False, False),
        (True, False, False),
    ],
)
def test_yes_no(answer: JsonValue, yes: bool, no: bool) -> None:
    assert verdict(README_YES, answer) is yes
    assert verdict(README_NO, answer) is no


def test_yes_no_without_choices_defaults_to_yes_and_no() -> None:
    question = dict(README_NO, choices=None)
    assert verdict(question, "No") and not verdict(question, "yes") and not verdict(question, "yes no")


def test_single_choice_title_and_sentence() -> None:
    assert verdict(TITLE_Q, TITLE)
    assert verdict(TITLE_Q, "  glass transition TEMPERATURE under\nvarying   alloy: a longitudinal study ")
    assert verdict(TITLE_Q, f'The title is "{TITLE}".')
    assert not verdict(TITLE_Q, "Glass transition temperature under varying alloy")
    assert not verdict(TITLE_Q, "not possible")
    assert verdict(ABSTRACT_Q, SENTENCE)
    assert verdict(ABSTRACT_Q, SENTENCE.rstrip("."))  # the final full stop may be dropped
    assert not verdict(ABSTRACT_Q, "Photovoltaic materials remains difficult.")


def test_single_choice_whose_text_contains_not_possible() -> None:
    title = "Why cold fusion is not possible"
    question = record("7-title-2", "title", RM, title, "categorical", choices=[title])
    assert verdict(question, title)
    assert grade(q(question), title).abstained is False
    assert not verdict(question, "not possible")


# ------------------------------------------------------------------------------------------- integer


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("163", True),
        ("163.0", True),
        (" 163 ", True),
        ("163 rows", True),
        ("There are 163 data rows.", True),
        ("+163", True),
        ("1.63e2", True),
        (Decimal(163), True),
        (Decimal("163.0"), True),
        ("163.5", False),  # the whole first number is read: 163.5 is not 163
        ("164", False),
        ("16 3", False),
        ("1630", False),
        ("rows: one hundred sixty-three", False),
        ("file run-003.csv has 163 rows", True),  # digits in a file name are no number
        ("Out of 300 rows, 163 match", False),  # two values: a hedge
        ("163 or 164", False),
        ("163, not possible to be sure", False),
        ("", False),
        (None, False),
    ],
)
def test_integer(answer: JsonValue, correct: bool) -> None:
    assert verdict(COUNT, answer) is correct


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("1,234", True),
        ("1234", True),
        ("1,234 files", True),
        ("1 234", True),  # a space thousands separator (issue 23)
        ("1\u2009234 files", True),  # a thin space
        ("1\u202f234", True),  # a narrow no-break space
        ("12 34", False),
        ("1.234", False),
        ("12,34", False),
    ],
)
def test_integer_thousands_separators(answer: str, correct: bool) -> None:
    assert verdict(BIG_COUNT, answer) is correct


def test_integer_negative_and_units() -> None:
    assert verdict(NEG_INT, "-5") and verdict(NEG_INT, "\u22125") and not verdict(NEG_INT, "5")
    ten = record("7-count_rows-9", "count_rows", FM, 10, "integer")
    assert verdict(ten, "10cm") and verdict(ten, "10 rows") and not verdict(ten, "100cm")


# ---------------------------------------------------------------------------------------- continuous


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("1.23", True),  # rounded
        ("1.234", True),  # full precision
        ("1.2340", True),
        ("1.235", True),  # the paper's example: within one unit of the truth
        ("1.24", True),  # the last digit off by one
        ("1.22", True),
        ("1.21", False),  # two units off
        ("1.25", False),
        ("1.2", False),  # fewer figures, more than one unit away
        ("1.3", False),
        ("-1.23", False),
        ("12.3", False),
        ("approximately 1.23 units", True),
        ('{"answer": 1.23}', True),
        (Decimal("1.23"), True),
        ("not possible", False),
        ("", False),
    ],
)
def test_continuous_three_figures(answer: JsonValue, correct: bool) -> None:
    value = extract_answer(answer) if isinstance(answer, str) else answer
    assert verdict(cont(1.234, 3), value) is correct


@pytest.mark.parametrize(
    ("truth", "sig_figs", "answer", "correct"),
    [
        (22.542, 3, "22.5", True),  # the case: correctly rounded was graded wrong
        (22.542, 3, "22.54", True),
        (22.542, 3, "22.6", True),
        (22.542, 3, "22.4", True),
        (22.542, 3, "22.7", False),
        (22.542, 3, "22.3", False),
        (4.512406, 2, "4.5", True),
        (4.512406, 2, "4.6", True),
        (4.512406, 2, "4.4", True),
        (4.512406, 2, "5.4", False),
        (4.512406, 2, "4.9", False),
        (4.512406, 2, "4.7", False),
        (4.512406, 2, "4.3", False),
        (1.234, 2, "1.2", True),
        (1.234, 2, "1.3", True),
        (1.234, 2, "1.1", True),
        (1.234, 2, "1", False),
        (1.234, 2, "1.4", False),
        (0.0469316, 3, "0.0469", True),
        (0.0469316, 3, "0.047", True),
        (0.0469316, 3, "0.046", False),
        (0.0469316, 3, "0.47", False),
        (-0.024732544278541903, 2, "-0.025", True),
        (-0.024732544278541903, 2, "-0.024", True),  # truncated
        (-0.024732544278541903, 2, "-0.026", True),
        (-0.024732544278541903, 2, "-0.023", False),
        (-0.024732544278541903, 2, "-0.02", False),
        (-0.024732544278541903, 2, "0.025", False),
        (-0.024732544278541903, 2, "-0.03", False),
        (0.0, 3, "0", True),  # a zero truth: the unit is that of a truth of 1 (0.01 here)
        (0.0, 3, "0.00", True),
        (0.0, 3, "-0.0", True),
        (0.0, 3, "1e-17", True),  # floating-point noise around zero
        (0.0, 3, "0.02", False),
        (168637.60270000002, 4, "168600", True),
        (168637.60270000002, 4, "168,638", True),
        (168637.60270000002, 4, "1.686e5", True),
        (168637.60270000002, 4, "168700", True),
        (168637.60270000002, 4, "168500", True),
        (168637.60270000002, 4, "168400", False),
        (168637.60270000002, 4, "168800", False),
        (6.02214076e23, 3, "6.02e23", True),
        (6.02214076e23, 3, "6.03E+23", True),
        (6.02214076e23, 3, "6.0E+23", False),
        (6.02214076e23, 3, "6.1e23", False),
        (1.5e-300, 2, "1.5e-300", True),
        (1.5e-300, 2, "1.6e-300", True),
        (1.5e-300, 2, "1.7e-300", False),
        (1.5e-300, 2, "2e-300", False),
        (9.96, 2, "10", True),  # the carry: 9.96 -> 10 at two figures
        (9.96, 2, "9.9", True),
        (9.96, 2, "9.8", False),
        (9.96, 2, "11", False),
        (9.96, 3, "10", False),  # at three figures 10 is four units away
        (9.96, 3, "9.96", True),
        (261, 2, "261", True),
        (261, 2, "260", True),
        (261, 2, "270", True),
        (261, 2, "250", True),
        (261, 2, "280", False),
        (261, 2, "300", False),
        (0.2860907533912841, 2, "0.29", True),
        (0.2860907533912841, 2, "0.28", True),
        (0.2860907533912841, 2, "0.3", True),  # within one unit of 0.29
        (0.2860907533912841, 2, "0.27", False),
        (0.2860907533912841, 2, "0.2", False),
        (1.0, 4, "1e-99999999999999999999", False),
        (1.0, 4, "1e99999999999999999", False),
        (1.0, 4, "0." + "0" * 5000 + "1", False),
        (1.0, 4, "1." + "0" * 5000 + "1", True),
    ],
)
def test_continuous_boundaries(truth: float, sig_figs: int, answer: str, correct: bool) -> None:
    assert verdict(cont(truth, sig_figs), answer) is correct


@settings(deadline=None, max_examples=300)
@given(
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**12), max_value=10**12, places=9).filter(
        lambda d: not d.is_zero()
    ),
    st.integers(min_value=2, max_value=4),
)
def test_continuous_rule_properties(truth: Decimal, figures: int) -> None:
    """Rounded either way, truncated and exact answers are right; two units away from the truth is wrong."""
    unit = Decimal((0, (1,), truth.adjusted() - figures + 1))
    for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN):
        assert continuous_correct(truth.quantize(unit, rounding=rounding), truth, figures)
    assert continuous_correct(truth, truth, figures)
    assert not continuous_correct(truth + 2 * unit, truth, figures)
    assert not continuous_correct(truth - 2 * unit, truth, figures)


@pytest.mark.parametrize(
    ("value", "figures", "expected"),
    [
        ("1.234", 2, "1.2"),
        ("1.25", 2, "1.2"),
        ("1.35", 2, "1.4"),
        ("-1.25", 2, "-1.2"),
        ("9.96", 2, "10"),
        ("0", 1, "0"),
        ("-0.0", 3, "0"),
        ("0.000123456", 3, "0.000123"),
        ("123456", 1, "100000"),
        ("150", 1, "200"),
        ("250", 1, "200"),
        ("1e-300", 2, "1e-300"),
    ],
)
def test_round_sig(value: str, figures: int, expected: str) -> None:
    assert round_sig(Decimal(value), figures) == Decimal(expected)


def test_round_sig_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        round_sig(Decimal(1), 0)
    with pytest.raises(ValueError):
        round_sig(Decimal("NaN"), 2)


@settings(deadline=None)
@given(
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30, places=12),
    st.integers(min_value=1, max_value=6),
)
def test_round_sig_matches_decimal_formatting(value: Decimal, figures: int) -> None:
    """Decimal's own e-format also rounds half to even: an independent reference."""
    assert round_sig(value, figures) == Decimal(format(value, f".{figures - 1}e"))


# ---------------------------------------------------------------------------------------- abstention


UNANSWERABLE = {
    "integer": record("7-count_rows-2", "count_rows", FM, None, "integer", reason="no_file"),
    "continuous": record(
        "7-univariate_condition-1", "univariate_condition", US, None, "continuous", sig_figs=3, reason="no_row"
    ),
    "yes_no": record(
        "7-bivariate_hypothesis-1",
        "bivariate_hypothesis",
        BS,
        None,
        "yes_no",
        choices=["yes", "no"],
        reason="constant_input",
    ),
    "categorical": record("7-title-3", "title", RM, None, "categorical", choices=[TITLE], reason="title_not_in_readme"),
}


@pytest.mark.parametrize("kind", sorted(UNANSWERABLE))
@pytest.mark.parametrize(
    ("answer", "abstained"),
    [
        ("not possible", True),
        ("Not Possible", True),
        ("NOT POSSIBLE.", True),
        ("not   possible", True),
        ('{"answer": "not possible"}', True),
        ("It is not possible to answer this from the data.", True),
        ("impossible", False),
        ("cannot be determined", False),
        ("notpossible", False),
        ("0", False),
        ("yes", False),
        ("", False),
    ],
)
def test_abstention_on_unanswerable(kind: str, answer: str, abstained: bool) -> None:
    result = grade(q(UNANSWERABLE[kind]), extract_answer(answer))
    assert result.abstained is abstained
    assert result.correct is abstained  # correct exactly when abstaining


@pytest.mark.parametrize("kind", sorted(UNANSWERABLE))
def test_abstention_with_a_number_or_choice_is_no_abstention(kind: str) -> None:
    answer = {
        "integer": "0 rows, so not possible",
        "continuous": "about 2.5 (not possible to be exact)",
        "yes_no": "no - not possible",
        "categorical": f"{TITLE}? not possible",
    }[kind]
    result = grade(q(UNANSWERABLE[kind]), answer)
    assert not result.abstained and not result.correct


@pytest.mark.parametrize("kind", sorted(UNANSWERABLE))
@pytest.mark.parametrize(
    "answer",
    [
        "not possible: run-003.csv does not exist",
        "Not possible - no row has dose 5 in HEK293-combo/0.json",
        "not possible (about 2.5)",
        f"not possible; maybe {TITLE}, or yes, 3 rows",
        "**Answer:** Not possible. The file has no rows where vo2 > 3.",
    ],
)
def test_abstention_is_decided_the_same_way_for_every_kind(kind: str, answer: str) -> None:
    """What follows "not possible" is its explanation, whatever values it names."""
    result = grade(q(UNANSWERABLE[kind]), extract_answer(answer))
    assert result.abstained and result.correct


@pytest.mark.parametrize("question", [README_YES, EXT_JSON, TITLE_Q, COUNT, cont(1.234, 3)], ids=lambda d: d["id"])
def test_abstention_on_answerable_is_wrong(question: dict[str, Any]) -> None:
    result = grade(q(question), "not possible")
    assert result.abstained and not result.correct


# -------------------------------------------------------------------------------- parsing questions


def lines_of(*objects: Any) -> list[str]:
    return [o if isinstance(o, str) else json.dumps(o) for o in objects]


def test_parse_questions_and_errors() -> None:
    questions = parse_questions(lines_of(README_YES, "", COUNT, cont(1.5, 2)), "q.jsonl")
    assert [x.id for x in questions] == [README_YES["id"], COUNT["id"], "7-univariate_single_file-1"]
    assert questions[1].answer == 163 and questions[2].answer == Decimal("1.5")
    bad: list[tuple[list[str], str]] = [
        (lines_of("not json"), "q.jsonl:1: not valid JSON"),
        (lines_of(README_YES, "[1, 2]"), "q.jsonl:2: expected a JSON object, got an array"),
        (lines_of({k: v for k, v in COUNT.items() if k != "id"}), 'q.jsonl:1: missing key "id"'),
        (lines_of(dict(COUNT, id=5)), '"id" must be a non-empty string, got a number'),
        (lines_of(dict(COUNT, answer_kind="free")), '"answer_kind" must be one of'),
        (lines_of(dict(COUNT, answer="163")), "must be an integer"),
        (lines_of(dict(COUNT, answer=163.5)), "must be an integer"),
        (lines_of(dict(COUNT, answerable="yes")), '"answerable" must be true or false'),
        (lines_of(cont(1.5, 2) | {"sig_figs": None}), 'needs "sig_figs"'),
        (lines_of(cont(1.5, 2) | {"sig_figs": 0}), '"sig_figs" must be null or a positive integer'),
        (lines_of(cont(1.5, 2) | {"answer": "1.5"}), "must be a finite number"),
        ([json.dumps(cont(1.5, 2)).replace("1.5", "NaN", 1)], "must be a finite number"),
        (lines_of(README_YES | {"answer": "maybe"}), 'must be "yes" or "no"'),
        (lines_of(EXT_JSON | {"choices": "csv"}), '"choices" must be null or a list'),
        (lines_of(COUNT, COUNT), "q.jsonl:2: duplicate question id"),
    ]
    for given_lines, message in bad:
        with pytest.raises(GradingInputError, match=message.replace("(", r"\(")):
            parse_questions(given_lines, "q.jsonl")


def test_parse_answers_and_errors() -> None:
    answers = parse_answers(
        lines_of(
            {"id": "a", "answer": 3},
            {"id": "b", "response": 'so {"answer": "yes"}', "variant": "paraphrase_2"},
            {"id": "c", "answer": "x", "response": "ignored"},
        ),
        "a.jsonl",
    )
    assert [(a.id, a.variant, a.answer, a.from_response) for a in answers] == [
        ("a", "template", Decimal(3), False),
        ("b", "paraphrase_2", "yes", True),
        ("c", "template", "x", False),
    ]
    bad = [
        ("{oops", "a.jsonl:2: not valid JSON"),  # line 1 is blank
        ('"just a string"', "expected a JSON object, got a string"),
        ('{"answer": 1}', 'missing key "id"'),
        ('{"id": 1, "answer": 1}', '"id" must be a non-empty string'),
        ('{"id": "a"}', 'needs an "answer" or a "response" key'),
        ('{"id": "a", "response": 5}', '"response" must be a string, got a number'),
        ('{"id": "a", "answer": 1, "variant": "paraphrase_4"}', '"variant" must be one of'),
        ('{"id": "a", "answer": 1, "variant": 1}', '"variant" must be one of'),
    ]
    for line, message in bad:
        with pytest.raises(GradingInputError, match=message):
            parse_answers(["", line], "a.jsonl")


# ------------------------------------------------------------------------------------------- metrics


def small_set() -> tuple[list[GradedQuestion], list[AnswerRecord]]:
    """Six questions, five answers (one missing), one duplicate, one unknown id:

    readme (yes)        -> "yes"           correct
    extension (json)    -> "jsonl"         wrong
    count_rows (163)    -> "not possible"  wrong, abstained (answerable)
    count_rows unansw.  -> "not possible"  correct, abstained
    univariate unansw.  -> "12.5"          wrong
    hypothesis unansw.  -> (missing)       wrong
    """
    questions = [
        q(x)
        for x in (
            README_YES,
            EXT_JSON,
            COUNT,
            UNANSWERABLE["integer"],
            UNANSWERABLE["continuous"],
            UNANSWERABLE["yes_no"],
        )
    ]
    answers = parse_answers(
        lines_of(
            {"id": README_YES["id"], "answer": "yes"},
            {"id": EXT_JSON["id"], "response": 'It is {"answer": "jsonl"}'},
            {"id": COUNT["id"], "answer": "not possible"},
            {"id": UNANSWERABLE["integer"]["id"], "answer": "Not possible."},
            {"id": UNANSWERABLE["integer"]["id"], "answer": "7"},  # duplicate: ignored
            {"id": UNANSWERABLE["continuous"]["id"], "answer": 12.5},
            {"id": "999-readme-1", "answer": "yes"},  # unknown
        ),
        "a.jsonl",
    )
    return questions, answers


def test_metrics_on_a_small_set() -> None:
    questions, answers = small_set()
    run = grade_answers(questions, answers)
    assert [item.correct for item in run.items] == [True, False, False, True, False, False]
    assert run.missing == [UNANSWERABLE["yes_no"]["id"]]
    assert run.duplicates == [UNANSWERABLE["integer"]["id"]]
    assert run.unknown == ["999-readme-1"]
    s = summarize(run)
    assert (s["n"], s["correct"]) == (6, 2) and s["accuracy"] == pytest.approx(2 / 6)
    assert s["by_category"] == {
        BS: {"n": 1, "correct": 0, "accuracy": 0.0},
        FM: {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)},
        RM: {"n": 1, "correct": 1, "accuracy": 1.0},
        US: {"n": 1, "correct": 0, "accuracy": 0.0},
    }
    assert s["by_type"]["count_rows"] == {"n": 2, "correct": 1, "accuracy": 0.5}
    assert s["by_answerable"] == {
        "answerable": {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)},
        "unanswerable": {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)},
    }
    # Two abstentions, one of them on an unanswerable question; three unanswerable items.
    assert (s["abstentions"], s["correct_abstentions"], s["unanswerable"]) == (2, 1, 3)
    assert s["abstention_precision"] == 0.5
    assert s["abstention_recall"] == pytest.approx(1 / 3)
    assert s["missing"] == [UNANSWERABLE["yes_no"]["id"]] and s["missing_items"] == 1
    assert "krippendorff_alpha" not in s
    assert s["variants"] == ["template"]


def test_abstention_metrics_undefined() -> None:
    run = grade_answers([q(COUNT)], parse_answers(lines_of({"id": COUNT["id"], "answer": 163}), "a"))
    s = summarize(run)
    assert s["accuracy"] == 1.0
    assert s["abstention_precision"] is None and s["abstention_recall"] is None
    assert s["by_answerable"]["unanswerable"] == {"n": 0, "correct": 0, "accuracy": None}


# -------------------------------------------------------------------------------- Krippendorff's alpha


def test_alpha_hand_computed_binary() -> None:
    # Units (1,1), (1,0), (0,0), (0,0): o11 = 2, o10 = o01 = 1, o00 = 4; n1 = 3, n0 = 5, n = 8.
    # alpha = 1 - (n - 1)(o01 + o10) / (2 n0 n1) = 1 - 7 * 2 / 30 = 8/15.
    assert krippendorff_alpha_nominal([(1, 1), (1, 0), (0, 0), (0, 0)]) == pytest.approx(8 / 15)
    # (1,0), (0,1): n0 = n1 = 2, n = 4, disagreement 4: alpha = 1 - 3 * 4 / (2 * 4) = -1/2.
    assert krippendorff_alpha_nominal([(1, 0), (0, 1)]) == pytest.approx(-0.5)
    # (1,1), (0,0), (1,0): n1 = n0 = 3, n = 6, disagreement 2: 1 - 5 * 2 / 18 = 4/9.
    assert krippendorff_alpha_nominal([(1, 1), (0, 0), (1, 0)]) == pytest.approx(4 / 9)
    assert krippendorff_alpha_nominal([(1, 1), (0, 0)]) == 1.0
    # Undefined: one value only, or nothing pairable.
    assert krippendorff_alpha_nominal([(1, 1), (1, 1)]) is None
    assert krippendorff_alpha_nominal([(1,), (0,)]) is None
    assert krippendorff_alpha_nominal([]) is None


def test_alpha_krippendorff_2011_example() -> None:
    """The reliability data of Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011):
    4 coders, 12 units, missing values; nominal alpha = 0.743 (exactly 1 - 0.25 * 10 / 9.728...)."""
    rows = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[v for v in column if v is not None] for column in zip(*rows, strict=True)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_paraphrase_agreement_pairs_template_with_each_paraphrase() -> None:
    questions = [q(README_YES), q(README_NO), q(COUNT)]
    answers = parse_answers(
        lines_of(
            {"id": README_YES["id"], "answer": "yes"},  # template correct
            {"id": README_YES["id"], "variant": "paraphrase_1", "answer": "yes"},  # correct: (1,1)
            {"id": README_YES["id"], "variant": "paraphrase_2", "answer": "no"},  # wrong: (1,0)
            {"id": README_NO["id"], "answer": "yes"},  # template wrong
            {"id": README_NO["id"], "variant": "paraphrase_1", "answer": "yes"},  # wrong: (0,0)
            {"id": COUNT["id"], "answer": "12"},  # template wrong
            {"id": COUNT["id"], "variant": "paraphrase_1", "answer": "0"},  # wrong: (0,0)
        ),
        "a",
    )
    run = grade_answers(questions, answers)
    assert run.variants == ["template", "paraphrase_1", "paraphrase_2"]
    # 3 questions x 3 variants; paraphrase_2 missing for two questions (counted wrong, left out of alpha).
    assert len(run.items) == 9 and sum(item.missing for item in run.items) == 2
    s = summarize(run)
    assert s["krippendorff_units"] == 4
    assert s["krippendorff_alpha"] == pytest.approx(8 / 15)  # units (1,1), (0,0), (0,0), (1,0)
    # paraphrase_1 alone: (1,1), (0,0), (0,0): perfect agreement; paraphrase_2 alone: one unit (1,0),
    # n0 = n1 = 1, n = 2: alpha = 1 - 1 * 2 / 2 = 0.
    assert s["krippendorff_alpha_by_variant"] == {"paraphrase_1": 1.0, "paraphrase_2": 0.0}
    assert paraphrase_agreement(run.items)["krippendorff_alpha"] == s["krippendorff_alpha"]
    assert s["by_variant"]["template"] == {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)}
    assert list(s["by_variant"]) == ["template", "paraphrase_1", "paraphrase_2"]


# ---------------------------------------------------------------------------------- never crashes

JSON_JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.text()
    | st.integers().map(Decimal)
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["not possible", "yes", "no", "json", "jsonl", "163", "1,234", "1e-999999999999"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
NUMBERISH = st.from_regex(r"[-+\u2212]?[0-9,]{0,25}(\.[0-9]{0,5})?([eE][-+]?[0-9]{0,25})?", fullmatch=True)
TEXT_JUNK = st.one_of(
    st.text(),
    NUMBERISH,
    st.lists(
        st.sampled_from(
            [
                "{",
                "}",
                '"answer"',
                ":",
                " ",
                "not possible",
                "1.5",
                "NaN",
                "[",
                "]",
                '"',
                "yes",
                "1e99999999999999999999",
                "json",
            ]
        ),
        max_size=30,
    ).map("".join),
    JSON_JUNK.map(lambda value: "reasoning\n```json\n" + json.dumps({"answer": value}, default=str) + "\n```"),
)
ALL_KIND_QUESTIONS = [
    q(x)
    for x in (
        README_YES,
        EXT_JSON,
        TITLE_Q,
        COUNT,
        NEG_INT,
        cont(1.234, 3),
        cont(0.0, 2),
        cont(-2.5e-8, 4),
        *UNANSWERABLE.values(),
    )
]


def test_every_answer_kind_is_covered() -> None:
    assert {x.answer_kind for x in ALL_KIND_QUESTIONS} == set(ANSWER_KINDS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=TEXT_JUNK, value=JSON_JUNK)
def test_grading_never_crashes(response: str, value: JsonValue) -> None:
    for question in ALL_KIND_QUESTIONS:
        for answer in (extract_answer(response), value):
            result = grade(question, answer)
            assert isinstance(result.correct, bool) and isinstance(result.abstained, bool)
            assert not (result.correct and result.abstained and question.answerable)
            json.dumps(result.extracted)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=st.one_of(st.text(), TEXT_JUNK, JSON_JUNK.map(lambda v: json.dumps(v, default=str))))
def test_reading_any_line_raises_only_an_input_error(line: str) -> None:
    """Arbitrary lines in an answers or questions file: a graded record or one GradingInputError, nothing else."""
    for parse in (parse_answers, parse_questions):
        try:
            parse([line], "f.jsonl")
        except GradingInputError as exc:
            assert str(exc).startswith("f.jsonl:1: ")


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "7-readme-1", "answer": 1e99999999999999999999}',
        '{"id": "7-readme-1", "answer": -1E-1000000000000000000, "note": 1e1000000000000000000}',
        '{"id": "7-readme-1", "response": "x", "extra": [1e99999999999999999999]}',
        '{"id": "7-readme-1", "response": "{\\"answer\\": 1e99999999999999999999}"}',
    ],
)
def test_huge_exponents_anywhere_are_graded(line: str) -> None:
    """A JSON number beyond Decimal's range once crashed the whole run (decimal.InvalidOperation)."""
    (answer,) = parse_answers([line], "a.jsonl")
    for question in ALL_KIND_QUESTIONS:
        result = grade(question, answer.answer)
        assert isinstance(result.correct, bool) and isinstance(result.abstained, bool)
    assert not grade(q(cont(1.234, 3)), answer.answer).correct


TEN_MB = 10 * 1024 * 1024
HOSTILE = {
    "braces": "{" * TEN_MB,
    "latex fractions": "\\frac{a}{b}" * (TEN_MB // 11),
    "digits": "7" * TEN_MB,
    "numbers": "1 2 " * (TEN_MB // 4),
    "same number": "1," * (TEN_MB // 2),
    "answer keys": '{"answer": ' * (TEN_MB // 11),
    "unterminated answer": '{"answer": "' + "x" * TEN_MB,
    "deep answer": '{"answer": ' + "[" * TEN_MB,
    "choices": "yes no jsonl " * (TEN_MB // 13),
    "abstentions": "not possible " * (TEN_MB // 13),
    "markers": "Answer: 1\n" * (TEN_MB // 10),
    "boxes": "\\boxed{" * (TEN_MB // 7),
    "powers": "1 x 10^" * (TEN_MB // 7),
    "unicode": "\u00e9\u2212\ufb01 " * (TEN_MB // 4),
    "parentheses": "1 " + "(" * (TEN_MB // 2) + ")" * (TEN_MB // 2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_ten_megabyte_response_is_graded_in_under_a_second(name: str) -> None:
    """The issue asks for this bound: grading is linear, so one agent's output cannot stall a CI job."""
    response = HOSTILE[name]
    for question in (q(README_YES), q(TITLE_Q), q(EXT_JSON), q(COUNT), q(cont(1.234, 3))):
        start = time.perf_counter()
        result = grade(question, extract_answer(response))
        elapsed = time.perf_counter() - start
        assert elapsed < 1.0, f"{name}: {elapsed:.2f} s for {question.type}"
        assert isinstance(result.correct, bool)


# ----------------------------------------------------------------------------------- command line


def sgfs(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sgfs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin.decode() if stdin is not None else None,
    )


def sgfs_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The same entry point as ``python -m sgfs`` without a new interpreter (its startup is slow)."""
    from sgfs.cli import main

    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_jsonl(path: Path, *objects: Any) -> Path:
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objects))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    questions = [
        README_YES,
        EXT_JSON,
        COUNT,
        UNANSWERABLE["integer"],
        UNANSWERABLE["continuous"],
        UNANSWERABLE["yes_no"],
    ]
    qfile = write_jsonl(tmp_path / "questions.jsonl", *questions)
    answers = [
        {"id": README_YES["id"], "response": 'Checked the root.\n```json\n{"answer": "yes"}\n```'},
        {"id": EXT_JSON["id"], "answer": "jsonl"},
        {"id": COUNT["id"], "answer": "not possible"},
        {"id": UNANSWERABLE["integer"]["id"], "answer": "Not possible."},
        {"id": UNANSWERABLE["integer"]["id"], "answer": "7"},
        {"id": UNANSWERABLE["continuous"]["id"], "answer": 12.5},
        {"id": "999-readme-1", "answer": "yes"},
    ]
    afile = write_jsonl(tmp_path / "answers.jsonl", *answers)
    return qfile, afile


def test_cli_json_summary_and_out(files: tuple[Path, Path], tmp_path: Path) -> None:
    qfile, afile = files
    out = tmp_path / "results.jsonl"
    result = sgfs("grade", "--questions", str(qfile), "--answers", str(afile), "--json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    for key in (
        "n",
        "accuracy",
        "by_category",
        "by_type",
        "by_answerable",
        "abstention_precision",
        "abstention_recall",
        "missing",
        "unknown",
        "duplicates",
    ):
        assert key in summary
    assert summary["n"] == 6 and summary["accuracy"] == pytest.approx(2 / 6)
    assert summary["abstention_precision"] == 0.5 and summary["abstention_recall"] == pytest.approx(1 / 3)
    assert summary["missing"] == [UNANSWERABLE["yes_no"]["id"]]
    assert summary["unknown"] == ["999-readme-1"]
    assert summary["duplicates"] == [UNANSWERABLE["integer"]["id"]]
    assert "krippendorff_alpha" not in summary
    warnings = result.stderr.splitlines()
    assert len(warnings) == 3 and all(line.startswith("sgfs: warning: ") for line in warnings)
    assert any("missing: 1 answer" in w and UNANSWERABLE["yes_no"]["id"] in w for w in warnings)
    assert any("duplicates: 1 id" in w for w in warnings)
    assert any("unknown: 1 answer id" in w and "999-readme-1" in w for w in warnings)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [json.loads(line)["id"] for line in qfile.read_text().splitlines()]
    assert set(rows[0]) >= {"id", "type", "category", "answerable", "variant", "correct", "parsed", "abstained"}
    assert rows[0]["parsed"] == "yes" and rows[0]["correct"] is True
    assert rows[5]["missing"] is True and rows[5]["parsed"] is None


def test_cli_table_and_paraphrases(tmp_path: Path) -> None:
    qfile = write_jsonl(tmp_path / "q.jsonl", README_YES, README_NO, COUNT)
    afile = write_jsonl(
        tmp_path / "a.jsonl",
        {"id": README_YES["id"], "answer": "yes"},
        {"id": README_YES["id"], "variant": "paraphrase_1", "answer": "yes"},
        {"id": README_NO["id"], "variant": "template", "answer": "yes"},
        {"id": README_NO["id"], "variant": "paraphrase_1", "answer": "yes"},
        {"id": COUNT["id"], "answer": 163},
        {"id": COUNT["id"], "variant": "paraphrase_1", "answer": "12"},
    )
    text = sgfs("grade", "--questions", str(qfile), "--answers", str(afile))
    assert text.returncode == 0 and text.stderr == ""
    assert "graded 6 answers to 3 questions" in text.stdout
    assert "Krippendorff's alpha" in text.stdout and "abstention precision" in text.stdout
    as_json = sgfs("grade", "--questions", str(qfile), "--answers", str(afile), "--json")
    summary = json.loads(as_json.stdout)
    # Units (1,1), (0,0), (1,0): alpha = 4/9.
    assert summary["krippendorff_alpha"] == pytest.approx(4 / 9)
    assert summary["variants"] == ["template", "paraphrase_1"]
    piped = sgfs("grade", "--questions", str(qfile), "--answers", "-", "--json", stdin=afile.read_bytes())
    assert json.loads(piped.stdout) == summary


def _run_cli(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], subprocess_run: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``sgfs ARGS``, in a subprocess or in this process."""
    if subprocess_run:
        result = sgfs(*args)
        return result.returncode, result.stdout, result.stderr
    return sgfs_in_process(capsys, *args)


@pytest.mark.parametrize(
    ("content", "message", "subprocess_run"),
    [
        ('{"id": "x"}\n', 'questions.jsonl:1: missing key "type"', True),
        (json.dumps(COUNT) + "\n" + json.dumps(COUNT) + "\n", "questions.jsonl:2: duplicate", False),
        ("\n", "no questions in", False),
        (b'{"id": "\xff"}\n', "questions.jsonl:1: not valid UTF-8", False),
    ],
)
def test_cli_malformed_questions_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes,
    message: str,
    subprocess_run: bool,
) -> None:
    """A questions file is the reference: any malformed line is one error line, exit 2, nothing graded."""
    qfile = write_jsonl(tmp_path / "questions.jsonl", README_YES)
    afile = write_jsonl(tmp_path / "answers.jsonl", {"id": README_YES["id"], "answer": "yes"})
    if isinstance(content, bytes):
        qfile.write_bytes(content)
    else:
        qfile.write_text(content)
    args = ("grade", "--questions", str(qfile), "--answers", str(afile))
    code, out, err = _run_cli(capsys, args, subprocess_run)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sgfs: error: ") and message in lines[0], err


@pytest.mark.parametrize(
    ("content", "message", "subprocess_run"),
    [
        ("not json\n", "answers.jsonl:1: not valid JSON", True),
        ("\n\n[1]\n", "answers.jsonl:3: expected a JSON object, got an array", False),
        ('{"answer": "yes"}\n', 'answers.jsonl:1: missing key "id"', False),
        ('{"id": "7-readme-1", "response": ["yes"]}\n', '"response" must be a string', False),
        ('{"id": "7-readme-1", "answer": 1, "variant": "p9"}\n', '"variant" must be one of', False),
        (b'{"id": "\xff"}\n', "answers.jsonl:1: not valid UTF-8", False),
    ],
)
def test_cli_malformed_answer_lines(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes,
    message: str,
    subprocess_run: bool,
) -> None:
    """Changed by issue 23: a malformed answers line is reported (file:line: reason) and not graded, and the
    other lines are graded (exit 0); only a file with no readable answer line at all is an error (exit 2)."""
    qfile = write_jsonl(tmp_path / "questions.jsonl", README_YES, COUNT)
    afile = tmp_path / "answers.jsonl"
    good = (json.dumps({"id": COUNT["id"], "answer": 163}) + "\n").encode()
    bad = content if isinstance(content, bytes) else content.encode()
    afile.write_bytes(bad + good)
    args = ("grade", "--questions", str(qfile), "--answers", str(afile), "--json")
    code, out, err = _run_cli(capsys, args, subprocess_run)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["answers"] == 1 and summary["correct"] == 1 and summary["missing"] == [README_YES["id"]]
    assert len(summary["invalid"]) == 1 and message in summary["invalid"][0]
    warnings = [line for line in err.splitlines() if "line not graded" in line]
    assert len(warnings) == 1 and warnings[0].startswith("sgfs: warning: ") and message in warnings[0], err

    afile.write_bytes(bad)  # nothing readable: an error, after the line's own report
    code, out, err = _run_cli(capsys, args, subprocess_run)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and message in lines[0], err
    assert lines[1].startswith("sgfs: error: no answer could be read from ") and "1 invalid line" in lines[1]


def test_cli_missing_files_and_options(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    qfile, afile = files
    missing = sgfs("grade", "--questions", str(tmp_path / "nope.jsonl"), "--answers", str(afile))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("sgfs: error: cannot read questions file") and missing.stderr.count("\n") == 1
    for args, message in [
        (["--questions", str(qfile), "--answers", str(tmp_path / "nope.jsonl")], "cannot read answers file"),
        (["--questions", str(qfile), "--answers", str(tmp_path)], "cannot read answers file"),
        (["--questions", "-", "--answers", str(afile)], "--questions must name a file"),
        (["--answers", str(afile)], "Missing option '--questions'"),
    ]:
        code, _, err = sgfs_in_process(capsys, "grade", *args)
        assert code == 2, err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sgfs: error: ") and message in lines[0], err
    code, _, err = sgfs_in_process(
        capsys,
        "grade",
        "--questions",
        str(qfile),
        "--answers",
        str(afile),
        "--out",
        str(tmp_path / "no" / "dir" / "r.jsonl"),
    )
    assert code == 1 and "cannot write" in err
