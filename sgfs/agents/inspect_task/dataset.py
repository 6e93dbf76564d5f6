"""Questions as Inspect samples: one per question and wording, the question record in the metadata. The
questions come from the loader ``sgfs eval`` uses (``qa.records``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from inspect_ai.dataset import Sample

from generators.keys import Key
from generators.spec import World
from qa.records import AskedQuestion, QuestionsError, QuestionSource, load_asked_questions
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural


def load_questions(
    source: QuestionSource, variant: str, key: Key | None = None, world: World | None = None
) -> list[AskedQuestion]:
    """Every (question, variant) pair of the task, in order (in ``key``'s universe and in ``world`` when given);
    unusable questions (a questions file of another world among them) are an SgfsError."""
    counterfactual = world is not None and world.counterfactual
    try:
        return load_asked_questions(source, variant, keyed_procedural(key, world), counterfactual=counterfactual)
    except QuestionsError as exc:
        message = str(exc).replace("add --counterfactual", "add -T counterfactual=true")
        raise SgfsError(message.replace("drop --counterfactual", "drop -T counterfactual=true")) from None


def to_samples(asked: Sequence[AskedQuestion]) -> list[Sample]:
    samples = []
    for item in asked:
        question = item.question
        samples.append(
            Sample(
                id=item.sample_id,
                input=item.text(),
                target=json.dumps(question.answer),
                metadata={
                    "question_id": question.id,
                    "seed": question.seed,
                    "category": question.category,
                    "type": question.type,
                    "variant": item.variant,
                    "answerable": question.answerable,
                    "record": question.to_dict(),
                },
            )
        )
    return samples
