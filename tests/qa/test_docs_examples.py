"""The examples of docs/questions.md are real records: each quoted text is what ``sgfs qa`` asks today."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from generators import build_spec
from generators.repository import Repository
from generators.spec import World
from qa.generate import generate
from qa.model import REASONS, Question

DOC = Path(__file__).resolve().parents[2] / "docs" / "questions.md"
# "**label** (`id`)" then a blank line and "> text"; "- `reason` (`id`): text (`{variables}`)"
TYPE_EXAMPLE = re.compile(r"^\*\*[^*]+\*\* \(`(?P<id>[^`]+)`\)\n\n> (?P<text>.+)$", re.MULTILINE)
REASON_EXAMPLE = re.compile(
    r"^- `(?P<reason>[a-z_]+)` \(`(?P<id>[0-9]+-[a-z_]+-[0-9]+)`\): (?P<text>.+)$", re.MULTILINE
)


# Reasons that only a messy repository gives: their example is a record of `sgfs qa --mess 2`.
MESSY_REASONS = {"missing_values": 2}


@cache
def _questions(seed: int, mess: int = 0) -> dict[str, Question]:
    return {q.id: q for q in generate(Repository(build_spec(seed, world=World(mess=mess))))}


def _record(qid: str, mess: int = 0) -> Question:
    return _questions(int(qid.split("-")[0]), mess)[qid]


def _examples() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## Example of each type") :]


def test_type_examples_are_current_records() -> None:
    found = TYPE_EXAMPLE.findall(_examples())
    assert len(found) >= 13  # eleven types and the two forms with scientific reasons
    for qid, text in found:
        assert _record(qid).question == text, qid


def test_one_current_example_per_reason() -> None:
    found = {m["reason"]: m for m in REASON_EXAMPLE.finditer(_examples())}
    assert set(found) == set(REASONS)
    for reason, match in found.items():
        record = _record(match["id"], MESSY_REASONS.get(reason, 0))
        assert record.unanswerable_reason == reason
        assert match["text"].startswith(record.question), match["id"]
