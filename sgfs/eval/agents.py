"""Reference agents (`sgfs agent abstain|prior|random|oracle`): the floor, the prior floor, chance, and the
ceiling that checks the audit.

``random`` and ``oracle`` look the question up by id in the privileged record: regenerated from the seed
(ids are ``<seed>-<type>-<k>``; generation is deterministic; in a keyed universe with ``--key FILE``, in the
counterfactual world with ``--counterfactual``) or read from
``--questions FILE``. ``prior`` reads nothing of the question but its id: the type in it picks the answer from a
prior table (``qa.prior``).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from generators.spec import World
from qa.model import CATEGORIES, NOT_POSSIBLE, Answer, Question
from qa.prior import PriorError, PriorTable
from qa.records import QuestionsError, find_in_file, generated_records
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural, load_key


def find_question(
    question_id: str,
    questions_file: str | None,
    per_type: int,
    unanswerable: float,
    key_file: str | None = None,
    world: World | None = None,
) -> Question:
    try:
        if questions_file is not None:
            return _in_file(question_id, questions_file)
        return _regenerated(question_id, per_type, unanswerable, key_file, world)
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


def _in_file(question_id: str, questions_file: str) -> Question:
    record = find_in_file(questions_file, question_id)
    if record is None:
        raise SgfsError(f"question {question_id} is not in {questions_file}")
    return record.question


def _regenerated(
    question_id: str, per_type: int, unanswerable: float, key_file: str | None, world: World | None
) -> Question:
    from qa.generate import Options

    seed_text = question_id.split("-", 1)[0]
    if not seed_text.isdigit():
        raise SgfsError(f"question id {question_id!r} does not start with a seed")
    options = Options(per_type=per_type, unanswerable=unanswerable)
    factory = keyed_procedural(load_key(key_file, warn=False), world)
    for record in generated_records([factory(int(seed_text))], options):
        if record.id == question_id:
            return record.question
    raise SgfsError(f"no question {question_id} among seed {seed_text}'s (wrong --per-type or --unanswerable?)")


def oracle_answer(question: Question, repo: Path) -> Answer:
    """Reads every evidence file through the mount (so the audit sees it), then gives the recorded answer."""
    for relative in question.evidence:
        with open(repo / relative, "rb") as handle:
            while handle.read(1 << 20):
                pass
    return question.answer


def random_answer(question: Question) -> Answer:
    """A guess of the right shape, seeded by the question id: a choice, a yes/no, or a number."""
    rng = random.Random(int.from_bytes(hashlib.sha256(question.id.encode("utf-8")).digest()[:8], "big"))
    kind = question.answer_kind
    choices = question.choices or []
    if kind == "yes_no":
        return rng.choice(["yes", "no"])
    if kind == "categorical":
        # A single "choice" is the exact text sought (a title): guessing it would be the oracle, not chance.
        return rng.choice(choices) if len(choices) > 1 else NOT_POSSIBLE
    if kind == "integer":
        return rng.randint(0, 200)
    return round(rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(0, 3), 4)


def seed_and_type(question_id: str) -> tuple[int, str]:
    """The seed and question type named by an id ``<seed>-<type>-<k>``; an SgfsError for anything else."""
    seed_text, _, rest = question_id.partition("-")
    qtype, _, number = rest.rpartition("-")
    if not (seed_text.isdigit() and number.isdigit() and qtype):
        raise SgfsError(f"question id {question_id!r} is not of the form <seed>-<type>-<k>")
    if qtype not in CATEGORIES:
        raise SgfsError(f"question id {question_id!r}: unknown question type {qtype!r}")
    return int(seed_text), qtype


def prior_answer(question_id: str, table: PriorTable) -> Answer:
    """The type's most common answer in ``table``; an SgfsError when the table was learned on the question's seed
    (its floor would be learned on the very questions it is scored on)."""
    seed, qtype = seed_and_type(question_id)
    try:
        table.check_unseen([seed])
    except PriorError as exc:
        raise SgfsError(str(exc)) from None
    return table.answer(qtype)
