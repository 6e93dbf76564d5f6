"""Versioned prompt files (``prompts/<version>/{system,user,repair}.md``) and the messages made from them.

A prompt change is a new version directory, never an edit of an old one: a pack records the version and the
digest of the files it was built with, and a resumed build refuses a pack made with other prompts.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import cache
from importlib import resources
from string import Template

import xxhash

from generators.builders.procedural import build_spec
from generators.designs import designs
from generators.llm.base import Message
from generators.llm.draft import draft_of
from generators.spec import SPECIAL_PLACEHOLDERS, Spec

PROMPT_VERSION = "v2"  # v2: the subdomain's study design is part of the user message
PROMPT_FILES = ("system.md", "user.md", "repair.md")
EXAMPLE_SEED = 118  # the procedural draft of this seed shows the model the expected JSON


@cache
def prompt_texts(version: str = PROMPT_VERSION) -> dict[str, str]:
    folder = resources.files("generators.llm") / "prompts" / version
    if not folder.is_dir():
        raise ValueError(f"unknown prompt version {version!r}")
    return {name: (folder / name).read_text("utf-8") for name in PROMPT_FILES}


def prompt_digest(version: str = PROMPT_VERSION) -> str:
    h = xxhash.xxh3_128()
    for name, text in sorted(prompt_texts(version).items()):
        h.update(f"{name}\0{text}\0".encode())
    return h.hexdigest()


@cache
def _example() -> str:
    return json.dumps(draft_of(build_spec(EXAMPLE_SEED)), ensure_ascii=False, separators=(",", ":"))


def _design_text(base: Spec) -> str:
    """The subdomain's study design as compact JSON (``{}`` for a context without one); prompts without a
    ``$design`` field (v1) ignore it."""
    design = designs().get((base.context.field, base.context.subdomain))
    if design is None:
        return "{}"
    return json.dumps(asdict(design), ensure_ascii=False, separators=(",", ":"))


def first_messages(base: Spec, version: str = PROMPT_VERSION) -> tuple[Message, ...]:
    """System and user messages asking for the draft of ``base.seed`` in ``base``'s context."""
    texts = prompt_texts(version)
    used = set(base.template.placeholders)
    specials = [name for name in SPECIAL_PLACEHOLDERS if name in used]
    user = Template(texts["user.md"]).substitute(
        seed=base.seed,
        field=base.context.field,
        domain=base.context.domain,
        subdomain=base.context.subdomain,
        description=base.context.description,
        extension=base.extension,
        specials=", ".join(specials) if specials else "none",
        example=_example(),
        design=_design_text(base),
    )
    return ({"role": "system", "content": texts["system.md"]}, {"role": "user", "content": user})


def repair_messages(answer: str, error: str, version: str = PROMPT_VERSION) -> tuple[Message, ...]:
    """The model's rejected answer and the validation message, to append to the conversation."""
    repair = Template(prompt_texts(version)["repair.md"]).substitute(error=error)
    return ({"role": "assistant", "content": answer}, {"role": "user", "content": repair})
