"""Reference agents (`sgfs agent abstain|prior|random|oracle|literal`): the floor, the prior floor, chance, the
ceiling that checks the audit, and the agent that takes an ambiguous question's first other reading.

``random`` and ``oracle`` look the question up by id in the privileged record: regenerated from the seed
(ids are ``<seed>-<type>-<k>``; generation is deterministic; in a keyed universe with ``--key FILE``, in the
counterfactual world with ``--counterfactual``) or read from
``--questions FILE``. ``prior`` reads nothing of the question but its id: the type in it picks the answer from a
prior table (``qa.prior``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path

from generators.spec import World
from qa.model import CATEGORIES, NOT_POSSIBLE, TWIN_SUFFIX, Answer, Question
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
    # An ambiguous twin's id is its full twin's with "-ambig" after it: only generation with twins makes it.
    options = Options(
        per_type=per_type,
        unanswerable=unanswerable,
        ambiguous=question_id.endswith(TWIN_SUFFIX),
        counterfactual=world is not None and world.counterfactual,
    )
    factory = keyed_procedural(load_key(key_file, warn=False), world)
    for record in generated_records([factory(int(seed_text))], options):
        if record.id == question_id:
            return record.question
    raise SgfsError(f"no question {question_id} among seed {seed_text}'s (wrong --per-type or --unanswerable?)")


def read_evidence(question: Question, repo: Path) -> None:
    """Reads every evidence file of ``question`` through the mount, so that the audit sees it."""
    for relative in question.evidence:
        with open(repo / relative, "rb") as handle:
            while handle.read(1 << 20):
                pass


def oracle_answer(question: Question, repo: Path, ask: Callable[[str], str] | None = None) -> Answer:
    """Reads every evidence file through the mount (so the audit sees it), then gives the recorded answer. On an
    ambiguous twin with a clarification channel (``ask``) it asks which reading is meant and answers the reading
    the reply names (``reading_answer``)."""
    read_evidence(question, repo)
    ambiguity = question.ambiguity
    if ambiguity is None or ask is None:
        return question.answer
    return reading_answer(question, ask(clarifying_question(question)))


def clarifying_question(question: Question) -> str:
    """The oracle's one question about a twin: which reading of its open words is meant."""
    ambiguity = question.ambiguity
    assert ambiguity is not None
    return f"Which reading of '{ambiguity.open}' do you mean?"


def reading_answer(question: Question, reply: str) -> Answer:
    """The answer of the reading of the twin ``question`` that ``reply`` names: the intended reading or a decoy's,
    whichever's words appear first in the reply (the longest of those at one place). A reply that names none (a
    refusal) leaves the oracle with the intended answer: it is the ceiling."""
    ambiguity = question.ambiguity
    assert ambiguity is not None
    text = reply.lower()
    readings = [(ambiguity.intended, question.answer), *((d.reading, d.answer) for d in ambiguity.decoy_answers)]
    named = [(text.find(words.lower()), -len(words), answer) for words, answer in readings if words.lower() in text]
    if not named:
        return question.answer
    return min(named, key=lambda found: (found[0], found[1]))[2]


def literal_answer(question: Question, repo: Path) -> Answer:
    """Reads the evidence like the oracle, then answers an ambiguous twin under its first other reading without
    asking (the first decoy's answer): what an agent that silently commits to the wrong reading scores. The true
    answer on every question with nothing open."""
    read_evidence(question, repo)
    ambiguity = question.ambiguity
    return question.answer if ambiguity is None else ambiguity.decoy_answers[0].answer


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
    """The seed and question type named by an id ``<seed>-<type>-<k>`` (or an ambiguous twin's,
    ``<seed>-<type>-<k>-ambig``); an SgfsError for anything else."""
    seed_text, _, rest = question_id.removesuffix(TWIN_SUFFIX).partition("-")
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
