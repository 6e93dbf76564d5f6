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
from qa.records import AskedQuestion, QuestionsError, QuestionSource, load_asked_questions, twin_conditions
from qa.records import parse_conditions as qa_parse_conditions
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
    try:
        return qa_parse_conditions(text, "--conditions")
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


def load_twin_items(
    source: QuestionSource,
    variant: str,
    conditions: Sequence[str],
    on_repository: Callable[[], None] | None = None,
    key: Key | None = None,
    world: World | None = None,
) -> list[PlannedItem]:
    """The items of ``--ambiguous``: for each ambiguous twin (in order) and variant, its full twin in ``full`` and
    the twin in ``ambig`` and ``ask`` (those of ``conditions``; ``qa.records.twin_conditions``). The questions
    are read from the file (which must hold twins, each with its full twin) or generated with twins; anything else
    is an SgfsError."""
    try:
        counterfactual = world is not None and world.counterfactual
        mess = 0 if world is None else world.mess
        factory = keyed_procedural(key, world)
        asked = load_asked_questions(source, variant, factory, on_repository, counterfactual, mess, ambiguous=True)
        where = source.questions_file or "the generated questions"
        return [PlannedItem(item, condition) for item, condition in twin_conditions(asked, conditions, where)]
    except QuestionsError as exc:
        raise SgfsError(str(exc)) from None


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
