"""``sgfs agent abstain|prior|random|oracle|literal``: reference agents that follow the `sgfs eval` protocol."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from qa.model import NOT_POSSIBLE, Answer, Question
from sgfs.cli.options import examples, key_option, mess_option, world_of, world_option, write_stdout
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
    world_option,
    mess_option,
]


def _with_question(function: Callable[[Question], None]) -> Any:
    """The command with the lookup options; it is called with the question record they find."""

    def command(
        question_id: str | None,
        questions_file: str | None,
        per_type: int,
        unanswerable: float,
        key_file: str | None,
        counterfactual: bool,
        mess: int,
    ) -> None:
        from sgfs.eval.agents import find_question

        world = world_of(counterfactual, mess)
        function(find_question(_question_id(question_id), questions_file, per_type, unanswerable, key_file, world))

    command.__name__, command.__doc__ = function.__name__, function.__doc__
    wrapped: Any = command
    for option in reversed(_lookup_options):
        wrapped = option(wrapped)
    return wrapped


AGENT_HELP = (
    "Reference agents for `sgfs eval --agent` (protocol: docs/eval.md): abstain and prior are the floors an agent "
    "must beat (abstaining; guessing each question type's most common answer without reading anything), random "
    "is chance, oracle the ceiling; literal answers an ambiguous twin under another reading than the intended one "
    "without asking (sgfs eval --ambiguous).\n\n"
) + examples(
    "sgfs eval 1-5 --agent 'sgfs agent abstain' --out runs/floor",
    "sgfs eval 1-5 --agent 'sgfs agent prior' --out runs/prior",
    "sgfs eval --questions q.jsonl --agent 'sgfs agent oracle --questions ./q.jsonl' --out runs/ceiling",
)
ABSTAIN_HELP = 'Always answers "not possible": scores exactly the unanswerable share.\n\n' + examples(
    "sgfs eval 1-5 --agent 'sgfs agent abstain' --out runs/floor",
)
PRIOR_HELP = (
    "Answers each question with its type's most common answer in a prior table, reading nothing but the question "
    "id: the floor of a guesser. The table is the one shipped with sgfs (learned on reserved seeds no evaluation "
    "uses) unless --table FILE is given; a question whose seed the table was learned on is refused.\n\n"
    "With --learn SEEDS --out FILE it learns a table instead: it generates the questions of SEEDS as `sgfs qa` "
    "does (--per-type, --unanswerable, --key as given to qa) and writes each type's most common answer to FILE "
    "(replacing it atomically; '-' for stdout). Evaluate with such a table only seeds outside SEEDS.\n\n"
) + examples(
    "sgfs agent prior --id 118-bivariate_hypothesis-1",
    "sgfs eval 1-5 --agent 'sgfs agent prior' --out runs/prior",
    "sgfs agent prior --learn 5000-5099 --per-type 1 --out prior-1.json",
    "sgfs eval 1-5 --per-type 1 --agent 'sgfs agent prior --table ./prior-1.json' --out runs/prior-1",
)
RANDOM_HELP = "A random choice or number of the right kind, seeded by the question id.\n\n" + examples(
    "sgfs agent random --id 118-prefix-1",
    "sgfs eval 1-5 --agent 'sgfs agent random' --out runs/chance",
)
ORACLE_HELP = (
    "Reads the question's evidence files through the mount (cwd), then gives the true answer. On an ambiguous twin "
    "with a clarification channel ($SGFS_ASK, sgfs eval --ambiguous) it first asks which reading is meant, and "
    "answers the reading the reply names.\n\n"
) + examples(
    "sgfs eval --questions q.jsonl --agent 'sgfs agent oracle --questions ./q.jsonl' --out runs/ceiling",
    "sgfs eval 1-5 --key universe.key --agent 'sgfs agent oracle --key universe.key' --out runs/sealed",
    "sgfs eval 1-5 --counterfactual --agent 'sgfs agent oracle --counterfactual' --out runs/counterfactual",
    "sgfs eval 1-5 --ambiguous --agent 'sgfs agent oracle' --out runs/ask-ceiling",
)
LITERAL_HELP = (
    "Reads the question's evidence files like the oracle and gives the true answer, except on an ambiguous twin "
    "(sgfs qa --ambiguous): there it takes the first other reading without asking and gives its answer, the "
    "wrong target. Its wrong-target rate on the ambig condition is 1.\n\n"
) + examples(
    "sgfs eval 1-5 --ambiguous --agent 'sgfs agent literal' --out runs/literal",
    "sgfs eval --questions q.jsonl --ambiguous --agent 'sgfs agent literal --questions ./q.jsonl' --out runs/literal",
)
ASK_TIMEOUT_S = 60.0


@click.group("agent", help=AGENT_HELP)
def agent_command() -> None:
    pass


@agent_command.command("abstain", help=ABSTAIN_HELP)
def abstain_command() -> None:
    _answer(NOT_POSSIBLE)


@agent_command.command("random", help=RANDOM_HELP)
@_with_question
def random_command(question: Question) -> None:
    from sgfs.eval.agents import random_answer

    _answer(random_answer(question))


@agent_command.command("oracle", help=ORACLE_HELP)
@_with_question
def oracle_command(record: Question) -> None:
    from sgfs.eval.agents import oracle_answer

    channel = os.environ.get("SGFS_ASK")
    ask = None if not channel else functools.partial(_ask, channel)
    _answer_from_evidence(lambda repo: oracle_answer(record, repo, ask))


@agent_command.command("literal", help=LITERAL_HELP)
@_with_question
def literal_command(record: Question) -> None:
    from sgfs.eval.agents import literal_answer

    _answer_from_evidence(lambda repo: literal_answer(record, repo))


def _answer_from_evidence(answer: Callable[[Path], Answer]) -> None:
    """Print the answer ``answer`` gives after reading the evidence in the repository ($SGFS_REPO, else the
    working directory); evidence that cannot be read is one line and exit 1."""
    repo = Path(os.environ.get("SGFS_REPO") or ".")
    try:
        _answer(answer(repo))
    except OSError as exc:
        raise SgfsError(f"cannot read evidence in {repo}: {exc.strerror or exc}", exit_code=1) from None


def _ask(command: str, question: str) -> str:
    """The reply of the clarification channel ``command`` ($SGFS_ASK) to ``question``."""
    try:
        done = subprocess.run(
            [command, question], capture_output=True, timeout=ASK_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SgfsError(f"cannot ask through $SGFS_ASK ({command}): {exc}", exit_code=1) from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        raise SgfsError(f"$SGFS_ASK failed (exit {done.returncode}): {said}", exit_code=1)
    return done.stdout.decode("utf-8", "replace").strip()


@agent_command.command("prior", help=PRIOR_HELP)
@click.option("--id", "question_id", metavar="ID", help="Question id (default: $SGFS_QUESTION_ID).")
@click.option("--table", "table_file", metavar="FILE", help="Answer from this prior table, not the shipped one.")
@click.option("--learn", "learn_seeds", metavar="SEEDS", help="Learn a table from these seeds (e.g. 5000-5099).")
@click.option("--out", metavar="FILE", help="With --learn: where the table goes ('-' for stdout).")
@click.option("--per-type", type=click.IntRange(0, 1000), help="With --learn: as given to sgfs qa [default: 5].")
@click.option(
    "--unanswerable", type=click.FloatRange(0.0, 1.0), help="With --learn: as given to sgfs qa [default: 0.28]."
)
@click.option("--quiet", "-q", is_flag=True, help="With --learn: no progress bar.")
@functools.partial(key_option, help="With --learn: the universe key, as given to sgfs qa.")
def prior_command(
    question_id: str | None,
    table_file: str | None,
    learn_seeds: str | None,
    out: str | None,
    per_type: int | None,
    unanswerable: float | None,
    quiet: bool,
    key_file: str | None,
) -> None:
    if learn_seeds is None:
        learning_only = {"--out": out, "--per-type": per_type, "--unanswerable": unanswerable, "--key": key_file}
        given = [name for name, value in learning_only.items() if value is not None] + ["--quiet"] * quiet
        if given:
            raise SgfsError(f"{given[0]} only applies with --learn SEEDS")
        _answer_from_prior(_question_id(question_id), table_file)
        return
    for name, value in (("--id", question_id), ("--table", table_file)):
        if value is not None:
            raise SgfsError(f"{name} does not apply with --learn (it learns a table; it answers nothing)")
    if out is None:
        raise SgfsError("--learn needs --out FILE (or --out - for stdout)")
    _learn_prior(learn_seeds, out, per_type, unanswerable, quiet, key_file)


def _answer_from_prior(question_id: str, table_file: str | None) -> None:
    from qa.prior import PriorError, default_table, read_table
    from sgfs.eval.agents import prior_answer

    try:
        table = default_table() if table_file is None else read_table(table_file)
    except PriorError as exc:
        raise SgfsError(str(exc)) from None
    _answer(prior_answer(question_id, table))


def _learn_prior(
    seeds: str, out: str, per_type: int | None, unanswerable: float | None, quiet: bool, key_file: str | None
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from qa.generate import Options  # scipy is heavy: only the commands that need it import it
    from qa.prior import learn_seeds, table_text, write_table
    from sgfs.store.repositories import keyed_procedural, load_key, parse_seed_list

    seed_list = parse_seed_list(seeds)
    if out != "-":
        _check_writable(out)
    factory = keyed_procedural(load_key(key_file))
    defaults = Options()
    options = Options(
        per_type=defaults.per_type if per_type is None else per_type,
        unanswerable=defaults.unanswerable if unanswerable is None else unanswerable,
    )
    columns = (TextColumn("questions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=quiet or not sys.stderr.isatty(), transient=True) as progress:
        task = progress.add_task("prior", total=len(seed_list))
        table, count = learn_seeds(factory, seed_list, options, lambda: progress.advance(task))
    if out == "-":
        write_stdout(table_text(table))
    else:
        try:
            write_table(table, out)
        except OSError as exc:
            raise SgfsError(f"cannot write {out}: {exc.strerror or exc}", exit_code=1) from None
    where = "standard output" if out == "-" else out
    click.echo(
        f"learned the most common answer of {len(table.answers)} question types from {count} questions of "
        f"{len(seed_list)} seed{'' if len(seed_list) == 1 else 's'} (--per-type {options.per_type}, "
        f"--unanswerable {options.unanswerable}) into {where}",
        err=True,
    )


def _check_writable(out: str) -> None:
    """Fails before any question is generated when ``--out`` cannot be written."""
    target = Path(out)
    if target.is_dir():
        raise SgfsError(f"--out {out} is a directory")
    parent = target.parent
    if not parent.is_dir():
        raise SgfsError(f"--out {out}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SgfsError(f"--out {out}: directory {parent} is not writable")
