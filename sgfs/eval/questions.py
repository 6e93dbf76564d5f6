"""The items of a run: questions (generated from seeds or read from a file) times variants, sharded; with
``--ambiguous``, the twin pairs in their conditions (docs/eval.md, "Ambiguity and clarification")."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from generators.keys import Key
from generators.spec import World
from qa.clarify import CONDITIONS
from qa.records import (
    AskedQuestion,
    QuestionRecord,
    QuestionsError,
    QuestionSource,
    check_generated_for,
    expand_variants,
    generated_records,
    load_asked_questions,
    read_question_file,
    variants_of,
)
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural


def load_questions(
    source: QuestionSource,
    variant: str,
    on_repository: Callable[[], None] | None = None,
    key: Key | None = None,
    world: World | None = None,
) -> list[AskedQuestion]:
    """Every (question, variant) pair of the run, in order (generated in ``key``'s universe when given);
    unusable questions are an SgfsError."""
    try:
        counterfactual = world is not None and world.counterfactual
        mess = 0 if world is None else world.mess
        return load_asked_questions(source, variant, keyed_procedural(key, world), on_repository, counterfactual, mess)
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


@dataclass(frozen=True)
class PlannedItem:
    """One (question, variant) of a run, in a condition of ``--ambiguous`` (None without it)."""

    asked: AskedQuestion
    condition: str | None = None

    @property
    def id(self) -> str:
        return self.asked.id

    @property
    def pair(self) -> str:
        """What keeps items together in one shard: the twin pair (the full twin's id) in a condition, else the
        question id."""
        ambiguity = self.asked.question.ambiguity
        return ambiguity.full_id if self.condition is not None and ambiguity is not None else self.asked.id


def parse_conditions(text: str | None) -> tuple[str, ...]:
    """``--conditions`` (comma-separated names of ``qa.clarify.CONDITIONS``), in the order of CONDITIONS; all three
    when not given."""
    if text is None:
        return CONDITIONS
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in CONDITIONS]
    if unknown or not names:
        raise SgfsError(f"invalid --conditions {text!r}: expected names among {', '.join(CONDITIONS)}, e.g. full,ask")
    return tuple(name for name in CONDITIONS if name in names)


def load_twin_items(
    source: QuestionSource,
    variant: str,
    conditions: Sequence[str],
    on_repository: Callable[[], None] | None = None,
    key: Key | None = None,
    world: World | None = None,
) -> list[PlannedItem]:
    """The items of ``--ambiguous``: for each ambiguous twin (in order) and variant, its full twin in ``full`` and
    the twin in ``ambig`` and ``ask`` (those of ``conditions``). The questions are read from the file (which must
    hold twins, each with its full twin) or generated with twins; anything else is an SgfsError."""
    try:
        variants = variants_of(variant)
        counterfactual = world is not None and world.counterfactual
        mess = 0 if world is None else world.mess
        if source.questions_file is not None:
            records = read_question_file(source.questions_file)
            check_generated_for(records, source.questions_file, counterfactual, mess)
            where = source.questions_file
        else:
            from qa.generate import Options

            options = Options(per_type=source.per_type, unanswerable=source.unanswerable, ambiguous=True)
            factory = keyed_procedural(key, world)
            records = generated_records(map(factory, source.seeds), options, on_repository)
            where = "the generated questions"
        return twin_items(records, variants, conditions, where)
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


def twin_items(
    records: Sequence[QuestionRecord], variants: Sequence[str], conditions: Sequence[str], where: str
) -> list[PlannedItem]:
    """See ``load_twin_items``; ``where`` names the questions in messages."""
    by_id = {record.id: record for record in records}
    twins = [record for record in records if record.question.ambiguity is not None]
    if not twins:
        raise QuestionsError(
            f"{where} hold no ambiguous twins (no record has 'ambiguity'): make them with sgfs qa --ambiguous"
        )
    items: list[PlannedItem] = []
    for twin in twins:
        ambiguity = twin.question.ambiguity
        assert ambiguity is not None
        full = by_id.get(ambiguity.full_id)
        if full is None:
            raise QuestionsError(f"{where}: the full twin {ambiguity.full_id} of {twin.id} is missing")
        if full.question.ambiguity is not None:
            raise QuestionsError(f"{where}: the full twin {full.id} of {twin.id} is itself ambiguous")
        pair = {"full": expand_variants([full], variants), "twin": expand_variants([twin], variants)}
        for index in range(len(variants)):
            for condition in conditions:
                asked = pair["full" if condition == "full" else "twin"][index]
                items.append(PlannedItem(asked, condition))
    return items


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 1 <= int(index) <= int(count):
        raise SgfsError(f"invalid --shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return int(index), int(count)


def shard_of(question_id: str, count: int) -> int:
    """The shard (1-based) of a question: a stable hash of its id, so all variants stay together and the
    split does not depend on which other questions are in the set."""
    digest = hashlib.sha256(question_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


Item = TypeVar("Item", AskedQuestion, PlannedItem)


def select_shard(items: list[Item], shard: tuple[int, int] | None) -> list[Item]:
    """The items of shard ``shard`` (index, count): by question id, or by twin pair in a condition."""
    if shard is None:
        return items
    index, count = shard
    return [item for item in items if shard_of(_shard_key(item), count) == index]


def _shard_key(item: AskedQuestion | PlannedItem) -> str:
    return item.pair if isinstance(item, PlannedItem) else item.id


def digest(items: Sequence[AskedQuestion | PlannedItem]) -> str:
    """Identifies the questions of a run: their records (canonical JSON), variants and conditions, in order (the
    digest of a run without conditions is what it was before they existed)."""
    hasher = hashlib.sha256()
    for item in items:
        asked, condition = (item.asked, item.condition) if isinstance(item, PlannedItem) else (item, None)
        hasher.update(json.dumps(asked.question.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        hasher.update(
            f"\t{asked.variant}\n".encode() if condition is None else f"\t{asked.variant}\t{condition}\n".encode()
        )
    return hasher.hexdigest()
