"""``sgfs agent abstain|random|oracle``: reference agents that follow the `sgfs eval` protocol."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from qa.model import NOT_POSSIBLE, Answer
from sgfs.cli.options import examples, key_option
from sgfs.errors import SgfsError


def _question_id(given: str | None) -> str:
    question_id = given or os.environ.get("SGFS_QUESTION_ID")
    if not question_id:
        raise SgfsError("no question id: run under `sgfs eval` (SGFS_QUESTION_ID) or pass --id")
    return question_id


def _answer(value: Answer) -> None:
    """Writes {"answer": value} to SGFS_ANSWER_FILE when set (exact values, no rounding) and prints it."""
    line = json.dumps({"answer": value}, ensure_ascii=False)
    target = os.environ.get("SGFS_ANSWER_FILE")
    if target:
        Path(target).write_text(line + "\n", encoding="utf-8")
    click.echo(line)


_lookup_options: list[Callable[[Any], Any]] = [
    click.option("--id", "question_id", metavar="ID", help="Question id (default: $SGFS_QUESTION_ID)."),
    click.option("--questions", "questions_file", metavar="FILE", help="Look questions up here, not by seed."),
    click.option("--per-type", type=click.IntRange(0, 1000), default=5, show_default=True, help="As given to qa."),
    click.option("--unanswerable", type=float, default=0.28, show_default=True, help="As given to sgfs qa."),
    functools.partial(key_option, help="As given to sgfs qa / eval (universe key)."),
]


def _with_lookup(function: Any) -> Any:
    for option in reversed(_lookup_options):
        function = option(function)
    return function


AGENT_HELP = "Reference agents for `sgfs eval --agent` (protocol: docs/eval.md).\n\n" + examples(
    "sgfs eval 1-5 --agent 'sgfs agent abstain' --out runs/floor",
    "sgfs eval --questions q.jsonl --agent 'sgfs agent oracle --questions ./q.jsonl' --out runs/ceiling",
)
ABSTAIN_HELP = 'Always answers "not possible": scores exactly the unanswerable share.\n\n' + examples(
    "sgfs eval 1-5 --agent 'sgfs agent abstain' --out runs/floor",
)
RANDOM_HELP = "A random choice or number of the right kind, seeded by the question id.\n\n" + examples(
    "sgfs agent random --id 118-prefix-1",
    "sgfs eval 1-5 --agent 'sgfs agent random' --out runs/chance",
)
ORACLE_HELP = "Reads the question's evidence files through the mount (cwd), then gives the true answer.\n\n" + examples(
    "sgfs eval --questions q.jsonl --agent 'sgfs agent oracle --questions ./q.jsonl' --out runs/ceiling",
    "sgfs eval 1-5 --key universe.key --agent 'sgfs agent oracle --key universe.key' --out runs/sealed",
)


@click.group("agent", help=AGENT_HELP)
def agent_command() -> None:
    pass


@agent_command.command("abstain", help=ABSTAIN_HELP)
def abstain_command() -> None:
    _answer(NOT_POSSIBLE)


@agent_command.command("random", help=RANDOM_HELP)
@_with_lookup
def random_command(
    question_id: str | None, questions_file: str | None, per_type: int, unanswerable: float, key_file: str | None
) -> None:
    from sgfs.eval.agents import find_question, random_answer

    question = find_question(_question_id(question_id), questions_file, per_type, unanswerable, key_file)
    _answer(random_answer(question))


@agent_command.command("oracle", help=ORACLE_HELP)
@_with_lookup
def oracle_command(
    question_id: str | None, questions_file: str | None, per_type: int, unanswerable: float, key_file: str | None
) -> None:
    from sgfs.eval.agents import find_question, oracle_answer

    record = find_question(_question_id(question_id), questions_file, per_type, unanswerable, key_file)
    repo = Path(os.environ.get("SGFS_REPO") or ".")
    try:
        _answer(oracle_answer(record, repo))
    except OSError as exc:
        raise SgfsError(f"cannot read evidence in {repo}: {exc.strerror or exc}", exit_code=1) from None
