"""The result record (qa.result_record): one builder for both harnesses, the key order of results.jsonl, and
reading records back, those of other harnesses included."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from qa.model import Question
from qa.result_record import EVAL_KEYS, PRIORS, RECORD_KEYS, EvalDetails, ResultRecord, ResultRecordError

QUESTION = Question(
    id="7-prefix-1",
    seed=7,
    category="Directory Traversal",
    type="prefix",
    question="How many files ...?",
    variables={},
    answer=5,
    answer_kind="integer",
    choices=None,
    sig_figs=None,
    answerable=True,
    unanswerable_reason=None,
    evidence=["a/1.csv", "a/2.csv", "b/1.csv"],
    query={"type": "prefix"},
)
# The order `sgfs eval` writes (docs/eval.md).
EVAL_ORDER = [
    "id", "variant", "repeat", "seed", "type", "category", "answer_kind", "answerable", "prior", "answer", "truth",
    "extracted", "correct", "abstained", "status", "exit_code", "stderr_tail", "time_s", "usage", "tool_calls",
    "evidence_files", "files_read", "bytes_read", "dirs_listed", "reads_outside", "evidence_read",
    "evidence_recall", "floors",
]  # fmt: skip


def record(files_read: list[str] | None, details: EvalDetails | None = None) -> ResultRecord:
    return ResultRecord.of(
        QUESTION, "paraphrase_1", answer="5", correct=True, abstained=False, status="ok", time_s=1.25,
        usage={"input_tokens": 10}, tool_calls=3, files_read=files_read, details=details,
    )  # fmt: skip


DETAILS = EvalDetails("5", 0, "", 3, 1200, ["."], [])


def test_evidence_read_is_taken_from_the_files_read() -> None:
    seen = record(["b/1.csv", "a/2.csv", "c.txt"])
    assert seen.evidence_read == ["a/2.csv", "b/1.csv"] and seen.evidence_recall == pytest.approx(2 / 3)
    unseen = record(None)
    assert unseen.evidence_read is None and unseen.evidence_recall is None
    assert record([]).evidence_recall == 0.0


def test_keys_of_both_harnesses() -> None:
    assert list(record(["a/1.csv"], DETAILS).to_json()) == EVAL_ORDER
    assert set(record(["a/1.csv"]).to_json()) == set(RECORD_KEYS)  # converted from an Inspect log
    assert set(EVAL_ORDER) == set(RECORD_KEYS) | set(EVAL_KEYS)


@pytest.mark.parametrize("details", [DETAILS, None])
def test_a_record_reads_back_as_written(details: EvalDetails | None) -> None:
    written = record(["a/1.csv"], details)
    assert ResultRecord.from_json(json.loads(json.dumps(written.to_json()))) == written


def test_records_of_other_harnesses_need_five_keys() -> None:
    minimal = ResultRecord.from_json({"id": "q1", "type": "t", "category": "c", "answerable": 0, "correct": 1})
    assert minimal.key == ("q1", "template") and minimal.correct is True and minimal.answerable is False
    assert minimal.details is None and minimal.abstained is None and minimal.status is None
    item = minimal.item_result()
    assert item.correct and not item.abstained and item.answer_kind == "" and not item.missing
    with pytest.raises(ResultRecordError, match=r"^record q1 lacks category, correct$"):
        ResultRecord.from_json({"id": "q1", "type": "t", "answerable": True})
    with pytest.raises(ResultRecordError, match=r"^record q1 has an invalid 'time_s'$"):
        ResultRecord.from_json({"id": "q1", "type": "t", "category": "c", "answerable": True, "correct": True,
                                "time_s": "slow"})  # fmt: skip


@pytest.mark.parametrize("prior", [*PRIORS, None])
def test_the_record_carries_the_questions_prior(prior: str | None) -> None:
    question = replace(QUESTION, prior=prior)
    written = ResultRecord.of(
        question, "template", answer="5", correct=True, abstained=False, status="ok", time_s=None, usage=None,
        tool_calls=None, files_read=None,
    )  # fmt: skip
    assert written.prior == prior and written.to_json()["prior"] == prior
    assert ResultRecord.from_json(json.loads(json.dumps(written.to_json()))) == written


def test_prior_is_optional_on_read_and_checked() -> None:
    minimal = {"id": "q1", "type": "t", "category": "c", "answerable": True, "correct": True}
    assert ResultRecord.from_json(minimal).prior is None  # a record of an older sgfs, or of another harness
    assert ResultRecord.from_json({**minimal, "prior": None}).prior is None
    assert ResultRecord.from_json({**minimal, "prior": "violating"}).prior == "violating"
    for bad in ("expected", 1, True, ["consistent"]):
        with pytest.raises(ResultRecordError, match=r"^record q1 has an invalid 'prior'$"):
            ResultRecord.from_json({**minimal, "prior": bad})
