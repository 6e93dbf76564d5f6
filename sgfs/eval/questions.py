"""The items of a run: questions (generated from seeds or read from a file) times variants, sharded."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from qa.grading import VARIANTS, GradedQuestion, GradingInputError, parse_question
from sgfs.errors import SgfsError

VARIANT_CHOICES = (*VARIANTS, "all")


@dataclass(frozen=True)
class Item:
    """One (question, variant) pair to put to the agent."""

    record: dict[str, Any]  # the question record as `sgfs qa` writes it (privileged: never shown to agents)
    graded: GradedQuestion
    variant: str

    @property
    def id(self) -> str:
        return self.graded.id

    @property
    def key(self) -> tuple[str, str]:
        return (self.graded.id, self.variant)

    @property
    def seed(self) -> int:
        return int(self.record["seed"])

    def text(self) -> str:
        """The question as asked in this variant, ``{name}`` placeholders filled (paths relative to the repo)."""
        if self.variant == "template":
            text = str(self.record["question"])
        else:
            text = str(self.record["paraphrases"][int(self.variant.rsplit("_", 1)[1]) - 1])
        for name, value in self.record.get("variables", {}).items():
            text = text.replace("{" + name + "}", str(value))
        return text


def generate_lines(
    seeds: list[int], per_type: int, unanswerable: float, on_seed: Callable[[], None] | None = None
) -> list[str]:
    """The JSON lines `sgfs qa` would write for ``seeds``; ``on_seed`` is called after each repository."""
    from generators import Repository, SpecError, build_spec
    from qa.generate import Options, generate

    options = Options(per_type=per_type, unanswerable=unanswerable)
    lines = []
    for seed in seeds:
        try:
            repository = Repository(build_spec(seed))
        except SpecError as exc:
            raise SgfsError(f"seed {seed}: generated spec is invalid: {exc}", exit_code=1) from None
        lines += [json.dumps(q.to_dict(), ensure_ascii=False) for q in generate(repository, options)]
        if on_seed is not None:
            on_seed()
    return lines


def read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return [line.rstrip("\r\n") for line in handle]
    except (OSError, UnicodeDecodeError) as exc:
        raise SgfsError(f"cannot read questions file {path}: {getattr(exc, 'strerror', None) or exc}") from None


def parse_records(lines: list[str], source: str) -> list[tuple[dict[str, Any], GradedQuestion]]:
    """Question records and their graded form; a line that is not a usable question is an SgfsError."""
    out: list[tuple[dict[str, Any], GradedQuestion]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            exact = json.loads(line, parse_float=Decimal, parse_int=Decimal)
            plain = json.loads(line)
        except ValueError as exc:
            raise SgfsError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(plain, dict):
            raise SgfsError(f"{where}: not a JSON object")
        try:
            graded = parse_question(exact, where)
        except GradingInputError as exc:
            raise SgfsError(str(exc)) from None
        for key, kind in (("seed", int), ("question", str), ("evidence", list), ("variables", dict)):
            if not isinstance(plain.get(key), kind) or isinstance(plain.get(key), bool):
                raise SgfsError(f"{where}: question record lacks a valid {key!r}")
        if graded.id in seen:
            raise SgfsError(f"{where}: duplicate question id {graded.id}")
        seen.add(graded.id)
        out.append((plain, graded))
    if not out:
        raise SgfsError(f"no questions in {source}")
    return out


def make_items(records: list[tuple[dict[str, Any], GradedQuestion]], variant: str) -> list[Item]:
    variants = VARIANTS if variant == "all" else (variant,)
    items = []
    for record, graded in records:
        for name in variants:
            if name != "template" and len(record.get("paraphrases") or ()) < int(name.rsplit("_", 1)[1]):
                raise SgfsError(f"question {graded.id} has no {name}")
            items.append(Item(record, graded, name))
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


def select_shard(items: list[Item], shard: tuple[int, int] | None) -> list[Item]:
    if shard is None:
        return items
    index, count = shard
    return [item for item in items if shard_of(item.id, count) == index]


def digest(items: list[Item]) -> str:
    """Identifies the questions of a run: their records (canonical JSON) and variants, in order."""
    hasher = hashlib.sha256()
    for item in items:
        hasher.update(json.dumps(item.record, sort_keys=True, ensure_ascii=False).encode("utf-8"))
        hasher.update(f"\t{item.variant}\n".encode())
    return hasher.hexdigest()
