"""The items of a run: questions (generated from seeds or read from a file) times variants, sharded."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from generators.keys import Key
from generators.spec import World
from qa.records import AskedQuestion, QuestionsError, QuestionSource, load_asked_questions
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


def select_shard(items: list[AskedQuestion], shard: tuple[int, int] | None) -> list[AskedQuestion]:
    if shard is None:
        return items
    index, count = shard
    return [item for item in items if shard_of(item.id, count) == index]


def digest(items: list[AskedQuestion]) -> str:
    """Identifies the questions of a run: their records (canonical JSON) and variants, in order."""
    hasher = hashlib.sha256()
    for item in items:
        hasher.update(json.dumps(item.question.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        hasher.update(f"\t{item.variant}\n".encode())
    return hasher.hexdigest()
