"""The clarification oracle (qa.clarify) and the twin's record (qa.records): scope, one question per item,
wrong-target grading, and malformed ``ambiguity`` objects refused with one line."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from generators import repository
from qa.clarify import EMPTY, NOTHING_OPEN, ONE_QUESTION, REFUSAL, Oracle, in_scope, reply, wrong_target
from qa.generate import Options, generate
from qa.model import Question
from qa.records import QuestionRecord, QuestionsError, question_line


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    return generate(repository(3), Options(per_type=3, ambiguous=True))


def _twin(questions: list[Question], decision: str) -> Question:
    return next(q for q in questions if q.ambiguity is not None and q.ambiguity.decision == decision)


def test_in_scope_questions_get_the_clarification(questions: list[Question]) -> None:
    twin = _twin(questions, "statistic")
    assert twin.ambiguity is not None
    for asked in ("Which statistic do you mean?", "By SPREAD, do you mean the standard deviation or the variance?"):
        assert reply(twin.ambiguity, asked) == twin.ambiguity.clarification
    # Out of scope: words of the question that are not about the open decision.
    for asked in ("How many rows are there?", "What is the answer?", "spreadsheet format?"):
        assert not in_scope(twin.ambiguity, asked)
        assert reply(twin.ambiguity, asked) == REFUSAL
    file_twin = _twin(questions, "file")
    assert file_twin.ambiguity is not None
    name = file_twin.ambiguity.open.split("`")[1]
    assert reply(file_twin.ambiguity, f"There are several {name}: which one?") == file_twin.ambiguity.clarification
    assert file_twin.ambiguity.intended in file_twin.ambiguity.clarification


def test_full_items_have_nothing_open() -> None:
    assert reply(None, "Which statistic do you mean?") == NOTHING_OPEN
    assert reply(None, "   ") == EMPTY


def test_one_question_per_item(questions: list[Question]) -> None:
    twin = _twin(questions, "correlation")
    oracle = Oracle(twin.ambiguity)
    assert not oracle.exchange.asked
    assert oracle.ask("") == EMPTY and not oracle.exchange.asked  # an empty question does not use it up
    assert oracle.ask("Pearson or Spearman correlation?") == twin.ambiguity.clarification  # type: ignore[union-attr]
    assert oracle.ask("Pearson or Spearman correlation?") == ONE_QUESTION
    exchange = oracle.exchange
    assert exchange.asked and exchange.ask_text == "Pearson or Spearman correlation?"
    assert exchange.ask_reply == twin.ambiguity.clarification  # type: ignore[union-attr]


def test_concurrent_askers_get_one_answer(questions: list[Question]) -> None:
    oracle = Oracle(_twin(questions, "statistic").ambiguity)
    replies: list[str] = []
    threads = [threading.Thread(target=lambda: replies.append(oracle.ask("which statistic?"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(replies).count(ONE_QUESTION) == 7


def _record(question: Question) -> QuestionRecord:
    return QuestionRecord.from_line(question_line(question), "test:1")


def test_wrong_target_is_a_decoy_reading(questions: list[Question]) -> None:
    for twin in (q for q in questions if q.ambiguity is not None):
        assert twin.ambiguity is not None
        graded = _record(twin).graded
        decoy = twin.ambiguity.decoy_answers[0].answer
        assert wrong_target(graded, twin.ambiguity, json.loads(json.dumps(decoy))) is True, twin.id
        assert wrong_target(graded, twin.ambiguity, json.loads(json.dumps(twin.answer))) is False, twin.id
        assert wrong_target(graded, twin.ambiguity, "not possible") is False
        assert wrong_target(graded, None, decoy) is None


def test_twin_records_round_trip(questions: list[Question]) -> None:
    for question in questions:
        line = question_line(question)
        assert ('"ambiguity"' in line) == (question.ambiguity is not None)
        assert _record(question).question == question


def _broken(questions: list[Question], change: dict[str, Any]) -> str:
    obj = json.loads(question_line(_twin(questions, "statistic")))
    obj["ambiguity"].update(change)
    return json.dumps(obj)


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "scope"},
        {"kind": "target"},  # a statistic left open is an objective ambiguity
        {"decision": "unit"},
        {"full_id": ""},
        {"keywords": []},
        {"decoy_answers": []},
        {"decoy_answers": [{"reading": "x", "answer": True, "query": {}}]},
        {"decoy_answers": [{"reading": "x", "answer": 1.0}]},
        {"clarification": None},
    ],
)
def test_malformed_ambiguity_is_one_line(questions: list[Question], change: dict[str, Any]) -> None:
    with pytest.raises(QuestionsError) as info:
        QuestionRecord.from_line(_broken(questions, change), "q.jsonl:7")
    assert str(info.value) == "q.jsonl:7: question record lacks a valid 'ambiguity'"
