"""The scorer: the deterministic grader of ``sgfs grade`` on the model's final completion, and its metrics."""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from qa.grading import extract_answer, grade
from qa.records import QuestionRecord


def _meta(item: SampleScore, key: str) -> Any:
    return (item.score.metadata or {}).get(key)


def _accuracy_by(scores: list[SampleScore], key: str) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for item in scores:
        groups.setdefault(str(_meta(item, key)), []).append(item.score.as_float())
    return {name: sum(values) / len(values) for name, values in sorted(groups.items())}


@metric
def category_accuracy() -> Metric:
    """Accuracy per question category."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _accuracy_by(scores, "category")

    return compute


@metric
def type_accuracy() -> Metric:
    """Accuracy per question type."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _accuracy_by(scores, "type")

    return compute


@metric
def abstention_precision() -> Metric:
    """Of the answers that abstained ("not possible"), the share given to unanswerable questions (NaN: none)."""

    def compute(scores: list[SampleScore]) -> float:
        abstained = [item for item in scores if _meta(item, "abstained")]
        right = sum(1 for item in abstained if not _meta(item, "answerable"))
        return right / len(abstained) if abstained else float("nan")

    return compute


@metric
def abstention_recall() -> Metric:
    """Of the unanswerable questions, the share abstained on (NaN: none)."""

    def compute(scores: list[SampleScore]) -> float:
        unanswerable = [item for item in scores if not _meta(item, "answerable")]
        right = sum(1 for item in unanswerable if _meta(item, "abstained"))
        return right / len(unanswerable) if unanswerable else float("nan")

    return compute


@scorer(
    metrics=[
        accuracy(),
        stderr(),
        category_accuracy(),
        type_accuracy(),
        abstention_precision(),
        abstention_recall(),
    ]
)
def infinite_science_scorer() -> Scorer:
    """Grades ``state.output.completion`` against the question record in the sample's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        # The record as a questions file holds it, read by the loader of `sgfs eval`.
        record = QuestionRecord.from_line(json.dumps(state.metadata["record"]), f"sample {state.sample_id}")
        question = record.graded
        completion = state.output.completion if state.output else ""
        verdict = grade(question, extract_answer(completion))
        return Score(
            value=CORRECT if verdict.correct else INCORRECT,
            answer=verdict.parsed,
            explanation=f"expected {json.dumps(record.question.answer)}; read {json.dumps(verdict.extracted)}",
            metadata={
                "correct": verdict.correct,
                "abstained": verdict.abstained,
                "answerable": question.answerable,
                "category": question.category,
                "type": question.type,
                "extracted": verdict.extracted,
                "no_answer": not completion.strip(),
            },
        )

    return score
