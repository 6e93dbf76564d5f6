"""The summary of a run (``summary.json``, docs/eval.md): the grader's summary over the records, plus the
harness's keys. Built once per run and shared by the one-line result, the report and the gate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from qa.grading import VARIANTS, GradingRun
from qa.metrics import summarize
from qa.result_record import STATUSES, ResultRecord


@dataclass(frozen=True)
class RunSummary:
    """``grading``: every key of ``sgfs grade --json`` (``qa.metrics.summarize``); the rest: the harness's."""

    grading: dict[str, Any]
    statuses: dict[str, int]
    audited: int
    evidence_recall_mean: float | None
    evidence_recall_mean_answerable: float | None
    correct_without_evidence: float | None
    correct_without_evidence_n: int
    abstained_after_evidence: int
    reads_outside_repository: int
    input_tokens: int | None
    output_tokens: int | None
    tool_calls: int | None
    time_s_total: float
    time_s_mean: float | None
    questions_digest: str | None = None  # set by `sgfs eval` (as in run.json)

    @property
    def n(self) -> int:
        return int(self.grading["n"])

    @property
    def correct(self) -> int:
        return int(self.grading["correct"])

    @property
    def accuracy(self) -> float | None:
        accuracy = self.grading["accuracy"]
        return None if accuracy is None else float(accuracy)

    def to_json(self) -> dict[str, Any]:
        """``summary.json``: the grader's keys, then the harness's, then ``questions_digest`` when set."""
        harness = {
            "statuses": dict(self.statuses),
            "audited": self.audited,
            "evidence_recall_mean": self.evidence_recall_mean,
            "evidence_recall_mean_answerable": self.evidence_recall_mean_answerable,
            "correct_without_evidence": self.correct_without_evidence,
            "correct_without_evidence_n": self.correct_without_evidence_n,
            "abstained_after_evidence": self.abstained_after_evidence,
            "reads_outside_repository": self.reads_outside_repository,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": self.tool_calls,
            "time_s_total": self.time_s_total,
            "time_s_mean": self.time_s_mean,
        }
        digest = {} if self.questions_digest is None else {"questions_digest": self.questions_digest}
        return {**self.grading, **harness, **digest}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _total(records: Sequence[ResultRecord], get: Callable[[ResultRecord], int | None]) -> int | None:
    values = [value for value in map(get, records) if value is not None]
    return sum(values) if values else None


def _tokens(name: str) -> Callable[[ResultRecord], int | None]:
    return lambda record: (record.usage or {}).get(name)


def summarize_records(records: Sequence[ResultRecord]) -> RunSummary:
    """The grader's summary (qa.metrics.summarize) over the records, plus the harness's keys."""
    seen = {record.variant for record in records}
    variants = [v for v in VARIANTS if v in seen] or ["template"]
    grading = summarize(GradingRun([record.item_result() for record in records], variants, []))
    audited = [r for r in records if r.evidence_read is not None]
    with_evidence = [(r, r.evidence_recall) for r in audited if r.evidence_recall is not None]
    correct_with_evidence = [r for r, _ in with_evidence if r.correct and r.answerable]
    times = [r.time_s or 0.0 for r in records]
    return RunSummary(
        grading=grading,
        statuses={status: sum(r.status == status for r in records) for status in STATUSES},
        audited=len(audited),
        evidence_recall_mean=_mean([recall for _, recall in with_evidence]),
        evidence_recall_mean_answerable=_mean([recall for r, recall in with_evidence if r.answerable]),
        correct_without_evidence=_mean([float(not r.evidence_read) for r in correct_with_evidence]),
        correct_without_evidence_n=sum(not r.evidence_read for r in correct_with_evidence),
        abstained_after_evidence=sum(
            bool(r.answerable and r.abstained and recall == 1.0) for r, recall in with_evidence
        ),
        reads_outside_repository=sum(bool(r.reads_outside) for r in audited),
        input_tokens=_total(records, _tokens("input_tokens")),
        output_tokens=_total(records, _tokens("output_tokens")),
        tool_calls=_total(records, lambda record: record.tool_calls),
        time_s_total=sum(times),
        time_s_mean=_mean(times),
    )
