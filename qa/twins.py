"""Ambiguous twins of answerable questions (``sgfs qa --ambiguous``; docs/questions.md, "Ambiguous twins").

A twin asks its full question with one decision left open, in the two families of Ambig-DS:

objective (the statistic is left open)
  ``statistic``: "the typical value" where the full twin asks for the mean or the median, "the spread" where it
  asks for the sample standard deviation or the sample variance; ``correlation``: "the correlation
  coefficient" where it asks for Pearson's r or Spearman's rho.
target (the quantity is left open)
  ``file``: a file named by its file name alone where two to ``MAX_READINGS`` data files of the repository carry
  that name in different directories (a ``count_rows`` or ``univariate_single_file`` question).

Every reading is a query of the full twin's shape, so each answer is exact by construction and the independent
solver checks it from the files (tests/qa/test_twins_solver.py). The twin keeps the full twin's query and answer
(the intended reading); ``ambiguity.decoy_answers`` holds every other reading with its answer. A twin is made
only where each reading is defined and no two readings are graded alike (the decoy's answer graded against the
intended one and the other way round): otherwise the decision would not matter. No randomness is drawn, so the
full questions are the same with or without ``--ambiguous``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import posixpath
from collections import Counter
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from qa import stats
from qa.clarify import as_truth
from qa.grading import GradedQuestion, grade, parse_question
from qa.model import DECISIONS, TWIN_SUFFIX, Ambiguity, Answer, Decoy, Question
from qa.view import row_mask
from qa.wording import BIVARIATE_TEMPLATED, STAT_TEMPLATED, Draft, templated

if TYPE_CHECKING:
    from qa.generate import Generator

MAX_READINGS = 4  # a file name shared by more files is a search, not a reading
# The statistic a twin leaves open, and the statistic of the other reading, for each statistic of a full twin.
OPEN_STATISTIC = {"mean": ("typical", "median"), "median": ("typical", "mean"), "std": ("spread", "variance"),
                  "variance": ("spread", "std")}  # fmt: skip
OPEN_CORRELATION = {"pearson": "spearman", "spearman": "pearson"}
# The words of each open decision that the clarification quotes (the wording adds what the readings are).
OPEN_WORDS = {"typical": "the typical value", "spread": "the spread", "correlation": "the correlation coefficient"}
# Readings closer than this (relative to the larger) are told apart by the grader but hardly by a reader's choice.
MIN_RELATIVE_GAP = 0.01
# Words of which one puts a clarifying question in the oracle's scope (qa.clarify.in_scope), per open decision.
KEYWORDS: dict[str, list[str]] = {
    "typical": ["typical", "typical value", "mean", "median", "average", "central", "statistic", "measure"],
    "spread": ["spread", "standard deviation", "sd", "std", "variance", "variability", "dispersion", "statistic"],
    "correlation": ["correlation", "coefficient", "pearson", "spearman", "rank", "linear", "statistic", "measure"],
    "file": ["file", "files", "path", "paths", "directory", "folder", "which one", "location"],
}


def twin_id(full_id: str) -> str:
    return f"{full_id}{TWIN_SUFFIX}"


def _graded(question: Question) -> GradedQuestion:
    """The question as the grader reads its record: numbers exactly as written."""
    exact = json.loads(json.dumps(question.to_dict()), parse_float=Decimal, parse_int=Decimal)
    return parse_question(exact, question.id)


def _distinct(question: Question, decoys: list[Decoy]) -> bool:
    """No reading is graded correct under another (an agent's answer tells which reading it took), and continuous
    readings differ by at least ``MIN_RELATIVE_GAP``."""
    graded = _graded(question)
    truth = as_truth(question.answer)
    for decoy in decoys:
        if question.answer_kind == "continuous":
            a, b = float(question.answer), float(decoy.answer)
            if abs(a - b) < MIN_RELATIVE_GAP * max(abs(a), abs(b)):
                return False
        if grade(graded, as_truth(decoy.answer)).correct:
            return False
        if grade(dataclasses.replace(graded, answer=as_truth(decoy.answer)), truth).correct:
            return False
    return True


def _defined(statistic: str, values: np.ndarray[Any, Any]) -> float | None:
    if values.size < stats.MIN_ROWS[statistic]:
        return None
    value = stats.univariate(statistic, values.astype(np.float64))
    return value if math.isfinite(value) else None


def _statistic_twin(g: Generator, question: Question, draft: Draft) -> tuple[str, str, list[Decoy], Draft] | None:
    query = question.query
    if query.get("statistic") not in OPEN_STATISTIC:
        return None
    statistic = query["statistic"]
    opened, other = OPEN_STATISTIC[statistic]
    values = g.view.pooled(question.evidence, [query["column"]], query["row_conditions"])[query["column"]]
    answer = _defined(other, values)
    if answer is None:
        return None
    decoy = Decoy(f"the {STAT_TEMPLATED[other]}", answer, {**query, "statistic": other})
    return opened, f"the {STAT_TEMPLATED[statistic]}", [decoy], dataclasses.replace(draft, statistic=opened)


def _correlation_twin(g: Generator, question: Question, draft: Draft) -> tuple[str, str, list[Decoy], Draft] | None:
    query = question.query
    if query.get("statistic") not in OPEN_CORRELATION:
        return None
    other = OPEN_CORRELATION[query["statistic"]]
    a, b = query["columns"]
    pooled = g.view.pooled(question.evidence, [a, b], query["row_conditions"])
    x, y = pooled[a].astype(np.float64), pooled[b].astype(np.float64)
    if x.size < stats.MIN_ROWS[other] or stats.is_constant(x) or stats.is_constant(y):
        return None
    value, _ = stats.pearson(x, y) if other == "pearson" else stats.spearman(x, y)
    if not math.isfinite(value):
        return None
    decoy = Decoy(BIVARIATE_TEMPLATED[other], value, {**query, "statistic": other})
    intended = BIVARIATE_TEMPLATED[query["statistic"]]
    return "correlation", intended, [decoy], dataclasses.replace(draft, statistic="correlation")


def _file_answer(g: Generator, question: Question, path: str) -> Answer | None:
    """The full question's answer with ``path`` as its file; None where it is not defined there."""
    query = question.query
    table = g.view.table(path)
    if question.type == "count_rows":
        count = int(row_mask(table, query["row_conditions"]).sum())
        return count or None  # an empty selection is "not possible": not a reading with an answer
    if query["column"] not in {column.name for column in table.columns}:
        return None
    values = g.view.pooled([path], [query["column"]], query["row_conditions"])[query["column"]]
    return _defined(query["statistic"], values)


def _file_twin(g: Generator, question: Question) -> tuple[str, str, list[Decoy]] | None:
    if question.type not in ("count_rows", "univariate_single_file") or question.query.get("first_run"):
        return None
    if g.mess is not None:
        return None  # a messy repository keeps superseded copies of files (old/, _v2): more readings than these
    path = question.query["path"]
    name = posixpath.basename(path)
    same = [p for p in g.view.paths if posixpath.basename(p) == name]
    if not 2 <= len(same) <= MAX_READINGS:
        return None
    decoys: list[Decoy] = []
    for other in same:
        if other == path:
            continue
        answer = _file_answer(g, question, other)
        if answer is None:
            return None
        decoys.append(Decoy(f"`{other}`", answer, {**question.query, "path": other}))
    return name, f"`{path}`", decoys


def _clarification(decision: str, opened: str, intended: str) -> str:
    if decision == "file":
        return f"The file meant is {intended} (its path from the repository root)."
    return f'By "{opened}" the question means {intended}.'


def twin_of(g: Generator, question: Question, draft: Draft) -> Question | None:
    """The ambiguous twin of an answerable ``question`` (built from ``draft``), or None where none is made."""
    if not question.answerable:
        return None
    said = question.question[len(templated(draft)) :]  # a messy repository's reading convention, kept as it was
    made = _statistic_twin(g, question, draft) or _correlation_twin(g, question, draft)
    if made is not None:
        opened, intended, decoys, open_draft = made
        decision = "correlation" if opened == "correlation" else "statistic"
        words = OPEN_WORDS[opened]
        text = templated(open_draft) + said
        paraphrases = [p + said for p in g.paraphraser.paraphrase(open_draft)]
        variables = question.variables
    else:
        found = _file_twin(g, question)
        if found is None:
            return None
        name, intended, decoys = found
        decision, opened, words = "file", "file", f"the file `{name}`"
        shown = f"`{name}`"
        text = question.question.replace("{path}", shown)
        paraphrases = [p.replace("{path}", shown) for p in question.paraphrases]
        variables = {k: v for k, v in question.variables.items() if k != "path"}
    if not _distinct(question, decoys):
        return None
    ambiguity = Ambiguity(
        kind=DECISIONS[decision],
        decision=decision,
        full_id=question.id,
        open=words,
        intended=intended,
        clarification=_clarification(decision, words, intended),
        keywords=sorted(set(KEYWORDS[opened] + ([name.lower()] if decision == "file" else []))),
        decoy_answers=decoys,
    )
    return dataclasses.replace(
        question,
        id=twin_id(question.id),
        question=text,
        paraphrases=paraphrases,
        variables=variables,
        ambiguity=ambiguity,
    )


def decision_counts(questions: list[Question]) -> Counter[str]:
    """How many twins leave each decision open (for summaries and tests)."""
    return Counter(q.ambiguity.decision for q in questions if q.ambiguity is not None)
