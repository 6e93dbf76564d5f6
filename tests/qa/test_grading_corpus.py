"""The response corpus (issue 7): responses written in the styles agents produce, each with the decision the
grading rules (docs/grading.md) require. Every case is graded end to end: the question record is parsed as
`sgfs grade` parses it, the response reduced to its final answer, and the grade compared with the expected one.

tests/qa/data/grading_corpus.jsonl holds one case per line: name, style, question (the record keys the grader
reads), response, correct, abstained, and why (the rule that decides it)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from qa.grading import extract_answer, grade, parse_question

CORPUS = Path(__file__).parent / "data" / "grading_corpus.jsonl"
KINDS = {"categorical", "integer", "continuous", "yes_no"}
# Presentation styles: each must appear for every answer kind.
STYLES_EVERY_KIND = {
    "reasoning_line",
    "json_fence",
    "json_multi",
    "json_bare",
    "bold",
    "latex",
    "table",
    "trailing_sentence",
    "abstention",
    "hedge",
    "identifier",
    "remark",
    "precedence",
    "whole_response",
    "long_reasoning",
    "empty",
}
# Styles about numbers (integer and/or continuous only) or about choices.
STYLES_SPECIFIC = {
    "assertion": {"integer", "continuous"},
    "thousands": {"integer", "continuous"},
    "unicode_minus": {"integer", "continuous"},
    "scientific": {"integer", "continuous"},
    "robustness": {"integer", "continuous"},
    "carry": {"continuous"},
    "rounding": {"continuous"},
    "off_by_one": {"continuous"},
    "two_units": {"continuous"},
    "fewer_figures": {"continuous"},
    "percent": {"continuous"},
    "yes_no_trap": {"yes_no"},
    "categorical_trap": {"categorical"},
}


def load_corpus() -> list[dict[str, Any]]:
    # Numbers as Decimal, as `sgfs grade` decodes question lines.
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line, parse_float=Decimal, parse_int=Decimal) for line in lines if line.strip()]


CASES = load_corpus()


@pytest.mark.parametrize("case", CASES, ids=[str(case["name"]) for case in CASES])
def test_corpus_case(case: dict[str, Any]) -> None:
    question = parse_question(case["question"], f"corpus case {case['name']}")
    value = extract_answer(case["response"])
    result = grade(question, value)
    expected = (case["correct"], case["abstained"])
    assert (result.correct, result.abstained) == expected, (
        f"{case['name']}: expected correct={expected[0]} abstained={expected[1]} ({case['why']}); "
        f"graded correct={result.correct} abstained={result.abstained}, parsed {result.parsed!r}"
    )


def test_corpus_records_are_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(CASES) >= 200
    assert len(set(names)) == len(names), "duplicate case names"
    keys = {"name", "style", "question", "response", "correct", "abstained", "why"}
    for case in CASES:
        assert set(case) == keys, case["name"]
        assert isinstance(case["correct"], bool) and isinstance(case["abstained"], bool), case["name"]
        assert case["why"].strip(), case["name"]
        if case["correct"] and case["abstained"]:
            assert not case["question"]["answerable"], f"{case['name']}: abstaining is never right when answerable"


def test_corpus_covers_every_kind_and_style() -> None:
    kinds_by_style: dict[str, set[str]] = defaultdict(set)
    for case in CASES:
        kinds_by_style[case["style"]].add(case["question"]["answer_kind"])
    assert {case["question"]["answer_kind"] for case in CASES} == KINDS
    for style in STYLES_EVERY_KIND:
        assert kinds_by_style[style] == KINDS, f"style {style} misses {KINDS - kinds_by_style[style]}"
    for style, kinds in STYLES_SPECIFIC.items():
        assert kinds <= kinds_by_style[style], f"style {style} misses {kinds - kinds_by_style[style]}"
    assert set(kinds_by_style) == STYLES_EVERY_KIND | set(STYLES_SPECIFIC), "a style is not in the lists above"


def test_corpus_is_balanced() -> None:
    """Both outcomes for every kind, on answerable and unanswerable questions alike."""
    outcomes = Counter((c["question"]["answer_kind"], c["question"]["answerable"], c["correct"]) for c in CASES)
    for kind in KINDS:
        for answerable in (True, False):
            for correct in (True, False):
                assert outcomes[(kind, answerable, correct)] >= 3, (kind, answerable, correct)
    wrong = sum(not c["correct"] for c in CASES)
    assert 0.35 <= wrong / len(CASES) <= 0.65
