"""Questions as Inspect samples: one per question and wording, the question record in the metadata. The
questions come from the loader ``sgfs eval`` uses (``qa.records``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from inspect_ai.dataset import Sample

from generators.keys import Key
from qa.records import AskedQuestion, QuestionsError, QuestionSource, load_asked_questions
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural


def load_questions(source: QuestionSource, variant: str, key: Key | None = None) -> list[AskedQuestion]:
    """Every (question, variant) pair of the task, in order (in ``key``'s universe when given); unusable questions
    are an SgfsError."""
    try:
        return load_asked_questions(source, variant, keyed_procedural(key))
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


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
