"""The scorer: the deterministic grader of ``sgfs grade`` on the model's final completion, and its metrics. On a
sample of an ambiguous run (its metadata names a ``condition``) the score also records the clarification
exchange and whether the answer took an unintended reading (``qa.clarify.wrong_target``)."""

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

from qa.clarify import CONDITIONS, calibration, wrong_target
from qa.grading import extract_answer, grade
from qa.records import QuestionRecord
from sgfs.agents.inspect_task.tools import ASK_KEY, exchange_of


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


def _by_condition(scores: list[SampleScore], key: str, prefix: str) -> dict[str, float]:
    """The mean of the boolean score metadata ``key`` per condition, as ``PREFIX_CONDITION`` (null values and
    conditions without any value left out)."""
    out: dict[str, float] = {}
    for condition in CONDITIONS:
        values = [
            bool(_meta(item, key))
            for item in scores
            if _meta(item, "condition") == condition and _meta(item, key) is not None
        ]
        if values:
            out[f"{prefix}_{condition}"] = sum(values) / len(values)
    return out


@metric
def condition_accuracy() -> Metric:
    """Accuracy per condition of an ambiguous run (``accuracy_full``, ``accuracy_ambig``, ``accuracy_ask``)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _by_condition(scores, "correct", "accuracy")

    return compute


@metric
def ask_rate() -> Metric:
    """The share of samples that asked a clarifying question, per condition (``ask_rate_full`` is over-asking),
    and ``ask_calibration``: the harmonic mean of ``ask_rate_ask`` and 1 - ``ask_rate_full`` (docs/eval.md),
    when both conditions ran."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rates = _by_condition(scores, "asked", "ask_rate")
        found = calibration(rates.get("ask_rate_ask"), rates.get("ask_rate_full"))
        if found is not None:
            rates["ask_calibration"] = found
        return rates

    return compute


@metric
def wrong_target_rate() -> Metric:
    """The share of answers graded correct under an unintended reading of the twin, per condition (ambig, ask:
    the full twin has none)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _by_condition(scores, "wrong_target", "wrong_target_rate")

    return compute


SCORER_METRICS: list[Metric] = [
    accuracy(),
    stderr(),
    category_accuracy(),
    type_accuracy(),
    abstention_precision(),
    abstention_recall(),
]
# Added to the task's metrics when it runs twin pairs in conditions.
AMBIGUITY_METRICS: list[Metric] = [condition_accuracy(), ask_rate(), wrong_target_rate()]


@scorer(metrics=SCORER_METRICS)
def infinite_science_scorer() -> Scorer:
    """Grades ``state.output.completion`` against the question record in the sample's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        # The record as a questions file holds it, read by the loader of `sgfs eval`.
        record = QuestionRecord.from_line(json.dumps(state.metadata["record"]), f"sample {state.sample_id}")
        question = record.graded
        completion = state.output.completion if state.output else ""
        extracted = extract_answer(completion)
        verdict = grade(question, extracted)
        metadata: dict[str, Any] = {
            "correct": verdict.correct,
            "abstained": verdict.abstained,
            "answerable": question.answerable,
            "category": question.category,
            "type": question.type,
            "extracted": verdict.extracted,
            "no_answer": not completion.strip(),
        }
        condition = state.metadata.get("condition")
        if condition is not None:
            exchange = exchange_of(state.store.get(ASK_KEY))
            metadata |= {
                "condition": condition,
                "pair": state.metadata.get("pair"),
                "asked": exchange.asked,
                "ask_text": exchange.ask_text,
                "ask_reply": exchange.ask_reply,
                # as sgfs eval: an empty completion took no reading
                "wrong_target": wrong_target(question, record.question.ambiguity, extracted)
                if completion.strip()
                else None,
            }
        return Score(
            value=CORRECT if verdict.correct else INCORRECT,
            answer=verdict.parsed,
            explanation=f"expected {json.dumps(record.question.answer)}; read {json.dumps(verdict.extracted)}",
            metadata=metadata,
        )

    return score
