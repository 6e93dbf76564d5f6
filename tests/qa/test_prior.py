"""The prior-only policy's table (qa.prior): learning, reading and writing it, and the table shipped with sgfs."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from generators import repository
from qa.generate import Options, generate
from qa.model import CATEGORIES, NOT_POSSIBLE, QUESTION_FORMAT, Answer, Question
from qa.prior import (
    TRAINING_SEEDS,
    PriorError,
    PriorTable,
    default_table,
    learn,
    learn_seeds,
    read_table,
    table_text,
    write_table,
)


def question(qtype: str, answer: Answer, seed: int = 7, k: int = 1) -> Question:
    return Question(
        id=f"{seed}-{qtype}-{k}",
        seed=seed,
        category=CATEGORIES[qtype],
        type=qtype,
        question="?",
        variables={},
        answer=answer,
        answer_kind="yes_no" if answer in ("yes", "no") else "numeric",
        choices=None,
        sig_figs=None,
        answerable=answer != NOT_POSSIBLE,
        unanswerable_reason=None,
        evidence=[],
        query={},
    )


def test_learn_takes_each_types_majority() -> None:
    questions = [
        question("bivariate_hypothesis", "no"),
        question("bivariate_hypothesis", "yes"),
        question("bivariate_hypothesis", "No "),  # the same answer as "no", as people would read it
        question("count_rows", 12),
        question("count_rows", 12.0),  # numbers compared by value
        question("count_rows", NOT_POSSIBLE),
        question("extension", "CSV"),
        question("extension", "csv"),
        question("extension", "json"),
    ]
    table = learn(questions, [7, 8], per_type=3, unanswerable=0.5)
    assert table.answers == {"bivariate_hypothesis": "no", "count_rows": 12, "extension": "CSV"}  # first seen
    assert (table.seeds, table.per_type, table.unanswerable) == ((7, 8), 3, 0.5)
    assert table.answer("count_rows") == 12
    assert table.answer("prefix") == NOT_POSSIBLE  # a type never seen in training
    assert table.answer("no-such-type") == NOT_POSSIBLE


def test_learn_breaks_ties_by_sorted_text_whatever_the_order() -> None:
    tied = [question("readme", "yes"), question("readme", "no"), question("prefix", NOT_POSSIBLE)]
    tied += [question("prefix", 3)]
    for order in (tied, tied[::-1]):
        table = learn(order, [7], per_type=1, unanswerable=0.28)
        assert table.answers == {"readme": "no", "prefix": 3}  # "no" < "yes"; "3.0" < "not possible"
    assert list(learn(tied[::-1], [7], 1, 0.28).answers) == ["readme", "prefix"]  # types in their fixed order
    assert learn([], [7], 1, 0.28).answers == {}


def test_table_round_trip(tmp_path: Path) -> None:
    table = PriorTable({"readme": "no", "count_rows": 48, "univariate_condition": -0.03125}, (3, 1), 2, 0.5)
    path = tmp_path / "prior.json"
    write_table(table, path)
    assert read_table(path) == table
    assert json.loads(path.read_text()) == json.loads(table_text(table))
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    replaced = PriorTable({"readme": "yes"}, (9,), 1, 0.28)
    write_table(replaced, path)  # an existing table is replaced
    assert read_table(path) == replaced
    assert [p.name for p in tmp_path.iterdir()] == ["prior.json"]  # no temporary file left behind
    with pytest.raises(OSError):
        write_table(table, tmp_path / "missing" / "prior.json")


def good_table() -> dict[str, Any]:
    return {"question_format": QUESTION_FORMAT, "seeds": [1, 2], "per_type": 5, "unanswerable": 0.28,
            "answers": {"readme": "no", "prefix": 22}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question_format": QUESTION_FORMAT - 1}, "question format"),
        ({"question_format": None}, "question format"),
        ({"answers": None}, "not a prior table"),
        ({"answers": {"readme": True}}, "not a prior table"),
        ({"answers": {"readme": None}}, "not a prior table"),
        ({"answers": {"readme": ["no"]}}, "not a prior table"),
        ({"seeds": [1, "2"]}, "not a prior table"),
        ({"seeds": 1}, "not a prior table"),
        ({"per_type": True}, "not a prior table"),
        ({"per_type": -1}, "not a prior table"),
        ({"per_type": 1.5}, "not a prior table"),
        ({"unanswerable": 1.5}, "not a prior table"),
        ({"unanswerable": "0.28"}, "not a prior table"),
        ({"unanswerable": None}, "not a prior table"),
    ],
)
def test_from_dict_rejects_bad_and_old_tables(change: dict[str, Any], message: str) -> None:
    assert PriorTable.from_dict(good_table(), "t") == PriorTable({"readme": "no", "prefix": 22}, (1, 2), 5, 0.28)
    with pytest.raises(PriorError, match=message):
        PriorTable.from_dict({**good_table(), **change}, "t.json")


def test_read_table_errors_are_one_line(tmp_path: Path) -> None:
    for content, message in (("[]", "expected a JSON object"), ("{", "not JSON")):
        path = tmp_path / "t.json"
        path.write_text(content)
        with pytest.raises(PriorError, match=message) as caught:
            read_table(path)
        assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    with pytest.raises(PriorError, match="cannot read the prior table"):
        read_table(tmp_path / "absent.json")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**good_table(), "question_format": 1}))
    with pytest.raises(PriorError, match="learn it again with `sgfs agent prior --learn`"):
        read_table(old)


def test_check_unseen_refuses_training_seeds() -> None:
    table = PriorTable({"readme": "no"}, tuple(range(100, 110)), 5, 0.28)
    table.check_unseen([1, 2, 99, 110])
    with pytest.raises(PriorError, match=r"seed\(s\) 105, which"):
        table.check_unseen([1, 105])
    with pytest.raises(PriorError, match=r"seed\(s\) 100, 101, 102, 103, 104 \.\.\."):
        table.check_unseen(range(0, 1000))


def test_learn_seeds_is_learn_over_the_generated_questions() -> None:
    options = Options(per_type=1, unanswerable=0.5)
    called: list[int] = []
    table, count = learn_seeds(repository, [2, 1], options, lambda: called.append(1))
    questions = [q for seed in (2, 1) for q in generate(repository(seed), options)]
    assert table == learn(questions, [2, 1], 1, 0.5) and count == len(questions) and len(called) == 2


def test_shipped_table_is_learned_on_reserved_seeds() -> None:
    shipped = default_table()
    assert shipped.seeds == TRAINING_SEEDS and min(TRAINING_SEEDS) > 1_000_000
    assert (shipped.per_type, shipped.unanswerable) == (Options().per_type, Options().unanswerable)
    assert set(shipped.answers) <= set(CATEGORIES)


def test_shipped_table_is_current() -> None:
    """Fails after any change to question generation until `python scripts/learn_prior.py` renews the table."""
    options = Options()
    questions = [q for seed in TRAINING_SEEDS for q in generate(repository(seed), options)]
    assert learn(questions, TRAINING_SEEDS, options.per_type, options.unanswerable) == default_table(), (
        "the shipped prior table is stale: run python scripts/learn_prior.py"
    )
