"""Reference agents (`sgfs agent abstain|random|oracle`): the floor, chance, and the ceiling that checks the audit.

``random`` and ``oracle`` look the question up by id in the privileged record: regenerated from the seed
(ids are ``<seed>-<type>-<k>``; generation is deterministic) or read from ``--questions FILE``.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from qa.model import NOT_POSSIBLE
from sgfs.errors import SgfsError


def find_question(question_id: str, questions_file: str | None, per_type: int, unanswerable: float) -> dict[str, Any]:
    if questions_file is not None:
        from sgfs.eval.questions import read_lines

        for line in read_lines(questions_file):
            if line.strip():
                record = json.loads(line)
                if isinstance(record, dict) and record.get("id") == question_id:
                    return record
        raise SgfsError(f"question {question_id} is not in {questions_file}")
    seed_text = question_id.split("-", 1)[0]
    if not seed_text.isdigit():
        raise SgfsError(f"question id {question_id!r} does not start with a seed")
    from sgfs.eval.questions import generate_lines

    for line in generate_lines([int(seed_text)], per_type, unanswerable):
        record = json.loads(line)
        if record["id"] == question_id:
            return dict(record)
    raise SgfsError(f"no question {question_id} among seed {seed_text}'s (wrong --per-type or --unanswerable?)")


def oracle_answer(record: dict[str, Any], repo: Path) -> Any:
    """Reads every evidence file through the mount (so the audit sees it), then gives the recorded answer."""
    for relative in record.get("evidence", []):
        with open(repo / relative, "rb") as handle:
            while handle.read(1 << 20):
                pass
    return record["answer"]


def random_answer(record: dict[str, Any]) -> Any:
    """A guess of the right shape, seeded by the question id: a choice, a yes/no, or a number."""
    rng = random.Random(int.from_bytes(hashlib.sha256(record["id"].encode("utf-8")).digest()[:8], "big"))
    kind = record.get("answer_kind")
    choices = record.get("choices") or []
    if kind == "yes_no":
        return rng.choice(["yes", "no"])
    if kind == "categorical":
        # A single "choice" is the exact text sought (a title): guessing it would be the oracle, not chance.
        return rng.choice(choices) if len(choices) > 1 else NOT_POSSIBLE
    if kind == "integer":
        return rng.randint(0, 200)
    return round(rng.uniform(-1.0, 1.0) * 10 ** rng.randint(0, 3), 4)
