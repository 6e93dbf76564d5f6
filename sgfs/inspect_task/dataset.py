"""Questions as Inspect samples: one per question and wording, the question record in the metadata."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import Sample

from qa.grading import TEMPLATE, VARIANTS
from sgfs.errors import SgfsError

ALL_VARIANTS = "all"


def parse_variants(variant: str) -> list[str]:
    if variant == ALL_VARIANTS:
        return list(VARIANTS)
    if variant not in VARIANTS:
        raise SgfsError(f"variant must be one of {', '.join((*VARIANTS, ALL_VARIANTS))}, got {variant!r}")
    return [variant]


def render(text: str, variables: dict[str, Any]) -> str:
    """The question with its ``{path}``-style placeholders filled in (other braces left alone)."""
    for name, value in variables.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def wording(record: dict[str, Any], variant: str) -> str:
    if variant == TEMPLATE:
        return str(record["question"])
    return str(record["paraphrases"][int(variant.rpartition("_")[2]) - 1])


def sample_id(question_id: str, variant: str) -> str:
    return question_id if variant == TEMPLATE else f"{question_id}:{variant}"


def to_samples(records: Iterable[dict[str, Any]], variants: Sequence[str]) -> list[Sample]:
    samples = []
    for record in records:
        for variant in variants:
            samples.append(
                Sample(
                    id=sample_id(record["id"], variant),
                    input=render(wording(record, variant), record.get("variables") or {}),
                    target=json.dumps(record["answer"]),
                    metadata={
                        "question_id": record["id"],
                        "seed": record["seed"],
                        "category": record["category"],
                        "type": record["type"],
                        "variant": variant,
                        "answerable": record["answerable"],
                        "record": record,
                    },
                )
            )
    return samples


def generated_records(seeds: Sequence[int], per_type: int, unanswerable: float) -> list[dict[str, Any]]:
    """The questions ``sgfs qa`` writes for ``seeds``, as JSON objects."""
    from generators import Repository, SpecError, build_spec
    from qa.generate import Options, generate

    options = Options(per_type=per_type, unanswerable=unanswerable)
    records: list[dict[str, Any]] = []
    for seed in seeds:
        try:
            repository = Repository(build_spec(seed))
        except SpecError as exc:
            raise SgfsError(f"seed {seed}: generated spec is invalid: {exc}") from None
        # through JSON, exactly as a questions file holds them
        records += [json.loads(json.dumps(q.to_dict())) for q in generate(repository, options)]
    return records


def file_records(path: str) -> list[dict[str, Any]]:
    """The records of a questions file written by ``sgfs qa``."""
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SgfsError(f"cannot read questions file {path}: {exc}") from None
    records = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SgfsError(f"{path}:{number}: not JSON: {exc.msg}") from None
    if not records:
        raise SgfsError(f"no questions in {path}")
    return records
