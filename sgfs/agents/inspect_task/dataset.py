"""Questions as Inspect samples: one per question and wording, the question record in the metadata. The
questions come from the loader ``sgfs eval`` uses (``qa.records``).

With ``ambiguous``, the samples are the twin pairs (``sgfs qa --ambiguous``) in each condition of
``qa.clarify.CONDITIONS``: ``full`` asks the full twin, ``ambig`` and ``ask`` the ambiguous twin; the sample id
ends with ``@CONDITION`` and the metadata names the ``condition`` and the ``pair`` (the full twin's id).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from inspect_ai.dataset import Sample

from generators.keys import Key
from generators.spec import World
from qa.records import AskedQuestion, QuestionsError, QuestionSource, load_asked_questions, twin_conditions
from qa.records import parse_conditions as qa_parse_conditions
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural


def load_questions(
    source: QuestionSource,
    variant: str,
    key: Key | None = None,
    world: World | None = None,
    ambiguous: bool = False,
) -> list[AskedQuestion]:
    """Every (question, variant) pair of the task, in order (in ``key``'s universe and in ``world`` when given;
    generated questions with their ambiguous twins with ``ambiguous``); unusable questions (a questions file of
    another world among them) are an SgfsError."""
    counterfactual = world is not None and world.counterfactual
    try:
        return load_asked_questions(
            source, variant, keyed_procedural(key, world), counterfactual=counterfactual, ambiguous=ambiguous
        )
    except QuestionsError as exc:
        message = str(exc).replace("add --counterfactual", "add -T counterfactual=true")
        raise SgfsError(message.replace("drop --counterfactual", "drop -T counterfactual=true")) from None


def parse_conditions(text: str) -> tuple[str, ...]:
    """The conditions a comma list names (``full,ambig,ask``), in the order of ``CONDITIONS``; an SgfsError
    when one is unknown or none is named."""
    try:
        return qa_parse_conditions(text, "conditions")
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


def _sample(item: AskedQuestion, condition: str | None = None, pair: str | None = None) -> Sample:
    question = item.question
    metadata = {
        "question_id": question.id,
        "seed": question.seed,
        "category": question.category,
        "type": question.type,
        "variant": item.variant,
        "answerable": question.answerable,
        "record": question.to_dict(),
    }
    if condition is not None:
        metadata |= {"condition": condition, "pair": pair}
    return Sample(
        id=item.sample_id if condition is None else f"{item.sample_id}@{condition}",
        input=item.text(),
        target=json.dumps(question.answer),
        metadata=metadata,
    )


def to_samples(asked: Sequence[AskedQuestion]) -> list[Sample]:
    return [_sample(item) for item in asked]


def condition_samples(asked: Sequence[AskedQuestion], conditions: Sequence[str]) -> list[Sample]:
    """The twin pairs among ``asked`` in each of ``conditions`` (``qa.records.twin_conditions``): for each
    ambiguous twin and wording, the full twin's sample in ``full`` and the twin's in ``ambig`` and ``ask``.
    Questions without a twin are left out; a twin whose full twin is missing, or no twin at all, is an
    SgfsError."""
    try:
        pairs = twin_conditions(asked, conditions, "the questions")
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None
    return [_sample(item, condition, _pair(item)) for item, condition in pairs]


def _pair(item: AskedQuestion) -> str:
    """The twin pair of an item: the full twin's id (an item of the full twin is its own pair's)."""
    ambiguity = item.question.ambiguity
    return item.id if ambiguity is None else ambiguity.full_id
