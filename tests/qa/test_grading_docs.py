"""docs/grading.md's example tables are a test table: every example of every table marked *(tested)* is graded
here, so that the rules page and the grader cannot drift apart (issue 23).

The page's tables: the final answers of responses (``| response | final answer |``), the example questions
(``| question | kind | truth | choices or figures |``), the examples graded against them (``| question | final
answer | verdict |``, in several sections) and the continuous table (``| truth *T* | *s* | *u* | answer | correct
| why |``). Every code span of an answer cell is one example."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from qa.grading import GradedQuestion, JsonValue, extract_answer, figure_unit, grade, parse_question

DOC = Path(__file__).resolve().parents[2] / "docs" / "grading.md"
TEXT = DOC.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ markdown


def split_cells(row: str) -> list[str]:
    """The cells of a table row, splitting on ``|`` outside code spans."""
    cells: list[str] = []
    current: list[str] = []
    at = 0
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    while at < len(body):
        char = body[at]
        if char == "`":
            run = len(body[at:]) - len(body[at:].lstrip("`"))
            close = _closing_run(body, at + run, run)
            end = len(body) if close < 0 else close + run
            current.append(body[at:end])
            at = end
            continue
        if char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        at += 1
    cells.append("".join(current).strip())
    return cells


def _closing_run(text: str, start: int, run: int) -> int:
    """Where the next run of exactly ``run`` backticks begins, or -1."""
    for found in re.finditer(r"`+", text[start:]):
        if len(found.group()) == run:
            return start + found.start()
    return -1


def code_spans(cell: str) -> list[str]:
    """The contents of a cell's code spans (CommonMark: one space each side is stripped when both are there)."""
    spans: list[str] = []
    at = 0
    while True:
        start = cell.find("`", at)
        if start < 0:
            return spans
        run = len(cell[start:]) - len(cell[start:].lstrip("`"))
        close = _closing_run(cell, start + run, run)
        if close < 0:
            return spans
        content = cell[start + run : close]
        if len(content) >= 2 and content[0] == " " and content[-1] == " " and content.strip():
            content = content[1:-1]
        spans.append(content)
        at = close + run


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of the page: its header cells and its rows of cells."""
    found: list[tuple[list[str], list[list[str]]]] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2:
            header = split_cells(block[0])
            found.append((header, [split_cells(row) for row in block[2:]]))
        block = []
    return found


def tables_with(header: list[str]) -> list[list[list[str]]]:
    return [rows for head, rows in tables(TEXT) if head == header]


# ------------------------------------------------------------------------------------- substitutions


def _stands_for(token: str) -> str:
    found = re.search(rf"`{token}` stands for `([^`]+)`", TEXT)
    assert found is not None, f"docs/grading.md must say what {token} stands for"
    return found.group(1)


TITLE = _stands_for("TITLE")
ABSTRACT = _stands_for("ABSTRACT")
SUBSTITUTIONS = {
    "TITLE_LOWER": TITLE.lower(),
    "ABSTRACT_NO_STOP": ABSTRACT.rstrip("."),
    "TITLE": TITLE,
    "ABSTRACT": ABSTRACT,
}


def substitute(text: str) -> str:
    for token, value in SUBSTITUTIONS.items():  # longer tokens first
        text = re.sub(rf"\b{token}\b", value.replace("\\", "\\\\"), text)
    return text


# ----------------------------------------------------------------------------------------- questions


def _record(name: str, kind_cell: str, truth_cell: str, extra_cell: str) -> GradedQuestion:
    kind_match = re.fullmatch(r"(\w+)(?: \((\w+)\))?", kind_cell)
    assert kind_match is not None, kind_cell
    kind, qtype = kind_match.group(1), kind_match.group(2) or name.replace(" ", "_")
    answerable = truth_cell != "not possible"
    truth: Any = "not possible"
    if answerable:
        (written,) = code_spans(truth_cell)
        written = substitute(written)
        truth = Decimal(written) if kind in ("integer", "continuous") else written
    figures = re.fullmatch(r"(\d+) figures", extra_cell)
    choices = [substitute(c) for c in code_spans(extra_cell)] or None
    obj = {
        "id": name,
        "type": qtype,
        "category": "Docs",
        "answer_kind": kind,
        "answer": truth,
        "choices": choices,
        "sig_figs": Decimal(figures.group(1)) if figures else None,
        "answerable": answerable,
    }
    return parse_question(obj, f"docs question {name}")


QUESTION_TABLES = tables_with(["question", "kind", "truth", "choices or figures"])
QUESTIONS = {row[0]: _record(*row) for rows in QUESTION_TABLES for row in rows}


# ------------------------------------------------------------------------------------------ examples


@dataclass(frozen=True)
class Example:
    question: str
    answer: str
    correct: bool
    abstained: bool
    verdict: str


def _verdict(cell: str) -> tuple[bool, bool]:
    if cell.startswith("abstains (correct)"):
        return True, True
    if cell.startswith("abstains (wrong)"):
        return False, True
    if cell.startswith("correct"):
        return True, False
    assert cell.startswith("wrong"), f"unknown verdict {cell!r}"
    return False, False


EXAMPLES = [
    Example(row[0], substitute(answer), *_verdict(row[2]), row[2])
    for rows in tables_with(["question", "final answer", "verdict"])
    for row in rows
    for answer in code_spans(row[1])
]


def test_the_page_has_its_tables() -> None:
    assert len(QUESTION_TABLES) == 1 and len(QUESTIONS) >= 15
    assert len(tables_with(["question", "final answer", "verdict"])) >= 3
    assert len(EXAMPLES) >= 120
    kinds = {QUESTIONS[e.question].answer_kind for e in EXAMPLES}
    assert kinds == {"categorical", "integer", "continuous", "yes_no"}
    assert {e.question for e in EXAMPLES} == set(QUESTIONS), "every example question is used"
    verdicts = {(e.correct, e.abstained) for e in EXAMPLES}
    assert verdicts == {(True, False), (False, False), (True, True), (False, True)}


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.question}: {e.answer[:60]}" for e in EXAMPLES])
def test_example(example: Example) -> None:
    assert example.question in QUESTIONS, f"{example.question} is not among the example questions"
    question = QUESTIONS[example.question]
    result = grade(question, extract_answer(example.answer))
    got = (result.correct, result.abstained)
    assert got == (example.correct, example.abstained), (
        f"docs/grading.md says {example.answer!r} to {example.question!r} is {example.verdict!r}; "
        f"graded correct={got[0]} abstained={got[1]} (extracted {result.extracted!r})"
    )


# ------------------------------------------------------------------------------------- final answers

EXTRACTIONS = [
    (code_spans(row[0])[0].replace("\\n", "\n"), row[1])
    for rows in tables_with(["response", "final answer"])
    for row in rows
]


def _expected_final(cell: str) -> JsonValue:
    (span,) = code_spans(cell)[:1]
    return Decimal(span) if cell.startswith("number") else span


def test_the_page_has_its_final_answer_table() -> None:
    assert len(EXTRACTIONS) >= 10


@pytest.mark.parametrize(("response", "cell"), EXTRACTIONS, ids=[r[:50] for r, _ in EXTRACTIONS])
def test_final_answer(response: str, cell: str) -> None:
    expected = _expected_final(cell)
    found = extract_answer(response)
    assert found == expected and type(found) is type(expected), (response, found, cell)


# ---------------------------------------------------------------------------------------- continuous

CONTINUOUS = [
    (Decimal(row[0].replace("−", "-")), int(row[1]), Decimal(row[2]), answer, row[4] == "yes")
    for rows in tables_with(["truth *T*", "*s*", "*u*", "answer", "correct", "why"])
    for row in rows
    for answer in code_spans(row[3])
]


def test_the_page_has_its_continuous_table() -> None:
    assert len(CONTINUOUS) >= 60
    assert {correct for *_, correct in CONTINUOUS} == {True, False}


@pytest.mark.parametrize(
    ("truth", "figures", "unit", "answer", "correct"),
    CONTINUOUS,
    ids=[f"{t}/{s}: {a}" for t, s, _, a, _ in CONTINUOUS],
)
def test_continuous(truth: Decimal, figures: int, unit: Decimal, answer: str, correct: bool) -> None:
    assert figure_unit(truth, figures) == unit
    obj = {
        "id": "docs-continuous",
        "type": "univariate_single_file",
        "category": "Docs",
        "answer_kind": "continuous",
        "answer": truth,
        "choices": None,
        "sig_figs": Decimal(figures),
        "answerable": True,
    }
    question = parse_question(obj, "docs continuous table")
    assert grade(question, extract_answer(answer)).correct is correct


def test_code_spans_and_cells() -> None:
    """The small markdown reader above: code spans of any fence, pipes outside spans only."""
    assert code_spans("`a`, `` b`c ``, plain") == ["a", "b`c"]
    assert split_cells("| `x|y` | z |") == ["`x|y`", "z"]
