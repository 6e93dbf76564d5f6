"""Arguments shared by several subcommands."""

from __future__ import annotations

import os
import sys

import click

from generators.spec import MAX_MESS, World
from sgfs.errors import SgfsError

source_argument = click.argument("source", metavar="SEED")
SOURCE_HELP = "SEED is an integer in [0, 2^63) or the path of a spec JSON file written by `sgfs spec`."
# A negative seed such as -1 must reach the seed parser (and its clear error), not be read as an option.
SEED_CONTEXT = {"ignore_unknown_options": True}

SPECS_HELP = "Read specs from this spec pack (see `sgfs specs`) instead of the procedural builder."
FALLBACK_HELP = "With --specs: seeds outside the pack get the procedural spec instead of an error."


KEY_HELP = (
    "Universe key (`sgfs key new FILE`): repositories and questions become a function of (key, seed), "
    "reproducible with the key and unpredictable without it."
)


def key_option(command: click.decorators.FC, help: str = KEY_HELP) -> click.decorators.FC:
    """``--key FILE`` for every command that makes a repository or a question (``help`` where it says more)."""
    return click.option("--key", "key_file", metavar="FILE", default=None, help=help)(command)


COUNTERFACTUAL_HELP = (
    "Counterfactual world: some relations of the study design run against their expected direction (the spec's "
    "'counterfactual' field lists them); texts and layout read as usual."
)


def world_option(command: click.decorators.FC) -> click.decorators.FC:
    """``--counterfactual`` for every command that makes a repository or a question."""
    return click.option("--counterfactual", is_flag=True, default=False, help=COUNTERFACTUAL_HELP)(command)


MESS_HELP = (
    "Messiness LEVEL: 0 clean (the default, the same bytes as without the option); 1 missing cells, comment lines "
    "and units rows; 2 and 3 also missing-value codes, unit changes, inconsistent category spelling, superseded "
    "files and renamed columns, declared in CODEBOOK.md (docs/generation.md, 'Messy repositories')."
)


def mess_option(command: click.decorators.FC) -> click.decorators.FC:
    """``--mess LEVEL`` for every command that makes a repository or a question."""
    return click.option(
        "--mess", type=click.IntRange(0, MAX_MESS), default=0, metavar="LEVEL", show_default=True, help=MESS_HELP
    )(command)


def world_of(counterfactual: bool, mess: int = 0) -> World:
    return World(counterfactual=counterfactual, mess=mess)


def examples(*lines: str) -> str:
    """An "Examples:" paragraph for a command's help; click's \\b marker keeps its lines as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def specs_options(command: click.decorators.FC) -> click.decorators.FC:
    """``--specs PACK`` and ``--fallback procedural`` for every command that reads a spec."""
    command = click.option("--fallback", type=click.Choice(["procedural"]), default=None, help=FALLBACK_HELP)(command)
    return click.option("--specs", "specs", metavar="PACK", default=None, help=SPECS_HELP)(command)


class OutputError(SgfsError):
    """Standard output could not be written (``sgfs tree 118 > /dev/full``)."""

    exit_code = 1


def write_stdout(data: str | bytes) -> None:
    """Write ``data`` to standard output and flush it: a failure is one OutputError (a closed pipe stays a
    BrokenPipeError, which ``sgfs`` ends quietly)."""
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        drop_stdout()
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None
    flush_stdout()


def flush_stdout() -> None:
    """Write what is still buffered for standard output now, so that a failure is reported like any other
    error and not by the interpreter at exit; what cannot be written is dropped."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        drop_stdout()
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def drop_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
