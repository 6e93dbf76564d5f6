"""Question records as the harnesses read them (qa.records): the typed record gives back exactly the line
`sgfs qa` wrote, bad lines are one-line errors, and variants expand in order."""

from __future__ import annotations

import functools
import json
from decimal import Decimal
from pathlib import Path

import pytest

from qa.generate import Options
from qa.grading import VARIANTS, parse_question
from qa.records import (
    AskedQuestion,
    QuestionRecord,
    QuestionsError,
    expand_variants,
    find_in_file,
    generated_records,
    parse_question_lines,
    question_line,
    read_question_file,
    variants_of,
)
from tests.helpers import repo


@functools.cache
def lines(seed: int) -> tuple[str, ...]:
    return tuple(question_line(record.question) for record in generated_records([repo(seed)], Options(per_type=2)))


@pytest.mark.parametrize("seed", [1, 34, 118])
def test_a_record_is_the_line_it_was_read_from(seed: int) -> None:
    for number, line in enumerate(lines(seed), 1):
        record = QuestionRecord.from_line(line, f"q:{number}")
        assert question_line(record.question) == line
        assert record.question.to_dict() == json.loads(line)
        exact = json.loads(line, parse_float=Decimal, parse_int=Decimal)
        assert record.graded == parse_question(exact, "q")  # the grader's view, numbers as written


def test_bad_lines_are_one_line_errors(tmp_path: Path) -> None:
    good = json.loads(lines(1)[0])
    cases = [
        ("{not json", "q:1: not a JSON object (Expecting property name"),
        ("[1, 2]", "q:1: not a JSON object"),
        (json.dumps(good | {"answerable": "yes"}), '"answerable" must be true or false'),
        (json.dumps(good | {"seed": True}), "q:1: question record lacks a valid 'seed'"),
        (json.dumps({k: v for k, v in good.items() if k != "question"}), "lacks a valid 'question'"),
        (json.dumps(good | {"evidence": ["a", 1]}), "lacks a valid 'evidence'"),
        (json.dumps(good | {"variables": {"path": 3}}), "lacks a valid 'variables'"),
        (json.dumps(good | {"paraphrases": "p"}), "lacks a valid 'paraphrases'"),
    ]
    for line, message in cases:
        with pytest.raises(QuestionsError) as raised:
            parse_question_lines([line], "q")
        assert message in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(QuestionsError, match=r"^q:3: duplicate question id 1-readme-1$"):
        parse_question_lines([lines(1)[0], "", lines(1)[0]], "q")
    with pytest.raises(QuestionsError, match=r"^no questions in q$"):
        parse_question_lines(["", "  "], "q")
    with pytest.raises(QuestionsError, match=r"^cannot read questions file .*nope.jsonl: No such file or directory$"):
        read_question_file(str(tmp_path / "nope.jsonl"))


def test_optional_keys_may_be_absent(tmp_path: Path) -> None:
    minimal = {k: v for k, v in json.loads(lines(1)[0]).items() if k not in ("query", "paraphrases")}
    path = tmp_path / "q.jsonl"
    path.write_text("\ufeff" + json.dumps(minimal | {"note": "ignored"}) + "\r\n", encoding="utf-8")
    (record,) = read_question_file(str(path))
    assert record.question.paraphrases == [] and record.question.query == {}
    with pytest.raises(QuestionsError, match=r"^question 1-readme-1 has no paraphrase_1$"):
        expand_variants([record], VARIANTS)


def test_variants_expand_in_order_and_fill_placeholders() -> None:
    records = parse_question_lines(lines(34), "q")
    asked = expand_variants(records, variants_of("all"))
    assert [a.key for a in asked] == [(r.id, v) for r in records for v in VARIANTS]
    assert variants_of("paraphrase_2") == ("paraphrase_2",)
    with pytest.raises(QuestionsError, match=r"variant must be one of template, .*, all, got 'paraphrase_9'"):
        variants_of("paraphrase_9")
    record = next(r for r in records if r.question.variables)
    for variant in VARIANTS:
        item = AskedQuestion(record, variant)
        text = item.text()
        assert "{path}" not in text and record.question.variables["path"] in text
        assert item.sample_id == (record.id if variant == "template" else f"{record.id}:{variant}")
    assert AskedQuestion(record, "paraphrase_3").text().startswith(record.question.paraphrases[2][:5])


def test_find_in_file_checks_only_the_line_it_finds(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join([*lines(1)[:3], json.dumps({"id": "x-broken"})]) + "\n")
    found = find_in_file(str(path), json.loads(lines(1)[2])["id"])
    assert found is not None and question_line(found.question) == lines(1)[2]
    assert find_in_file(str(path), "nothing") is None
    with pytest.raises(QuestionsError, match=r"q\.jsonl:4: missing key \"type\""):
        find_in_file(str(path), "x-broken")
