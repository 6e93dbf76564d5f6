"""The prior-only policy: each question type's most common answer, learned from training seeds (docs/eval.md).

An agent that reads nothing can still score by answering every question with its type's most common answer
("no" to every hypothesis test, "csv" to every extension question). ``learn`` finds those answers over the
questions of seeds it is told; ``PriorTable.answer`` gives them back. The table shipped with sgfs
(``default_table``) is learned from reserved seeds no evaluation uses, with the default generation options; it
is what ``sgfs agent prior`` answers from unless told another table, and what reports print as the prior floor
beside the abstain floor. A benchmark whose prior floor is well above its abstain floor rewards guessing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qa.model import FIXED_TYPES, NOT_POSSIBLE, QUESTION_FORMAT, SAMPLED_TYPES, Answer, Question

if TYPE_CHECKING:
    from generators import Repository
    from qa.generate import Options

# Seeds the shipped table is learned from: far above any seed range used for evaluation in the docs and tests.
TRAINING_SEEDS = tuple(range(1_000_000_001, 1_000_000_041))


class PriorError(ValueError):
    """A prior table that cannot be used (unreadable, another question format, or learned on an evaluated seed)."""


@dataclass(frozen=True)
class PriorTable:
    """Per question type, the most common answer among the training questions."""

    answers: dict[str, Answer]
    seeds: tuple[int, ...]
    per_type: int
    unanswerable: float
    question_format: int = QUESTION_FORMAT

    def answer(self, qtype: str) -> Answer:
        """The type's most common answer; ``not possible`` for a type never seen in training."""
        return self.answers.get(qtype, NOT_POSSIBLE)

    def check_unseen(self, seeds: Iterable[int]) -> None:
        """Refuse to stand in for a floor on seeds the table was learned from."""
        overlap = sorted(set(seeds) & set(self.seeds))
        if overlap:
            shown = ", ".join(str(s) for s in overlap[:5]) + (" ..." if len(overlap) > 5 else "")
            raise PriorError(f"the prior table was learned on seed(s) {shown}, which are being evaluated")

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_format": self.question_format,
            "seeds": list(self.seeds),
            "per_type": self.per_type,
            "unanswerable": self.unanswerable,
            "answers": dict(self.answers),
        }

    @classmethod
    def from_dict(cls, data: Any, source: str) -> PriorTable:
        if not isinstance(data, dict):
            raise PriorError(f"{source}: not a prior table (expected a JSON object)")
        version = data.get("question_format")
        if version != QUESTION_FORMAT:
            raise PriorError(
                f"{source}: prior table of question format {version!r}; this sgfs asks format {QUESTION_FORMAT} "
                "(learn it again with `sgfs agent prior --learn`)"
            )
        answers, seeds = data.get("answers"), data.get("seeds")
        valid_answers = isinstance(answers, dict) and all(
            isinstance(k, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
            for k, v in answers.items()
        )
        valid_seeds = isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
        per_type, unanswerable = data.get("per_type"), data.get("unanswerable")
        valid_per_type = isinstance(per_type, int) and not isinstance(per_type, bool) and per_type >= 0
        share = -1.0
        if isinstance(unanswerable, int | float) and not isinstance(unanswerable, bool):
            share = float(unanswerable)
        if not (valid_answers and valid_seeds and valid_per_type and 0 <= share <= 1):
            raise PriorError(f"{source}: not a prior table (needs answers, seeds, per_type and unanswerable)")
        assert isinstance(answers, dict) and isinstance(seeds, list) and isinstance(per_type, int)
        return cls(dict(answers), tuple(seeds), per_type, share, QUESTION_FORMAT)


def _key(answer: Answer) -> str:
    """Answers compared as people would: text case-folded and trimmed, numbers by value."""
    if isinstance(answer, str):
        return answer.strip().casefold()
    return repr(float(answer))


def learn(questions: Iterable[Question], seeds: Sequence[int], per_type: int, unanswerable: float) -> PriorTable:
    """Each type's most common answer among ``questions`` (ties: the answer whose text sorts first)."""
    counts: dict[str, Counter[str]] = {}
    first: dict[tuple[str, str], Answer] = {}
    for question in questions:
        key = _key(question.answer)
        counts.setdefault(question.type, Counter())[key] += 1
        first.setdefault((question.type, key), question.answer)
    answers: dict[str, Answer] = {}
    for qtype in (*FIXED_TYPES, *SAMPLED_TYPES):
        if qtype in counts:
            best = min(counts[qtype].items(), key=lambda item: (-item[1], item[0]))[0]
            answers[qtype] = first[(qtype, best)]
    return PriorTable(answers, tuple(seeds), per_type, unanswerable)


def learn_seeds(
    factory: Callable[[int], Repository],
    seeds: Sequence[int],
    options: Options,
    on_repository: Callable[[], None] | None = None,
) -> tuple[PriorTable, int]:
    """The table learned from the questions ``sgfs qa`` generates for ``seeds`` (each repository made by
    ``factory``; ``on_repository`` called after each), and how many questions that was."""
    from qa.generate import generate  # scipy is heavy: imported only when questions are generated

    questions: list[Question] = []
    for seed in seeds:
        questions += generate(factory(seed), options)
        if on_repository is not None:
            on_repository()
    return learn(questions, seeds, options.per_type, options.unanswerable), len(questions)


def read_table(path: str | Path) -> PriorTable:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriorError(f"{path}: cannot read the prior table ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PriorError(f"{path}: not JSON ({exc})") from None
    return PriorTable.from_dict(data, str(path))


def table_text(table: PriorTable) -> str:
    """The JSON text ``write_table`` writes."""
    return json.dumps(table.to_dict(), indent=1, ensure_ascii=False) + "\n"


def write_table(table: PriorTable, path: str | Path) -> None:
    """Writes the table to ``path`` through a temporary file beside it and a rename, so that an interrupted
    write leaves the old file (or none), never part of one; an existing file is replaced. OSError on failure."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            os.fchmod(stream.fileno(), 0o644)  # not mkstemp's 0600: a table holds nothing secret
            stream.write(table_text(table))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def default_table() -> PriorTable:
    """The table shipped with sgfs: learned on ``TRAINING_SEEDS`` with the default options (scripts/learn_prior.py
    writes it; a test checks that learning again gives the same table)."""
    source = "the shipped prior table"
    try:
        data = json.loads(resources.files("qa").joinpath("data/prior.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriorError(f"cannot read {source} ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PriorError(f"{source} is not JSON ({exc})") from None
    return PriorTable.from_dict(data, source)
