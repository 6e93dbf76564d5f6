"""``sgfs qa SEEDS --out FILE``: questions with exact ground truth, one JSON object per line."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from sgfs.cli.options import examples, key_option, mess_option, specs_options, world_of, world_option
from sgfs.errors import SgfsError
from sgfs.store.repositories import RepositoryFactory, load_key, parse_seed_list, repository_factory

if TYPE_CHECKING:
    from qa.generate import Options


def _unit_interval(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"{value} is not within [0, 1]")
    return value


QA_HELP = "Generate the questions of the repositories SEEDS (e.g. 1-50 or 3,118).\n\n" + examples(
    "sgfs qa 1-50 --out questions.jsonl",
    "sgfs qa 118 --per-type 1 --out - | head -1     # one JSON object per line",
    "sgfs qa 1-20 --unanswerable 0.5 --specs llm.sgfspack --out hard.jsonl",
    "sgfs qa 1-20 --key universe.key --out sealed.jsonl   # the keyed universe's questions",
    "sgfs qa 1-20 --ambiguous --out twins.jsonl   # each question's ambiguous twin after it",
)


@click.command("qa", help=QA_HELP, context_settings={"ignore_unknown_options": True})
@click.argument("seeds")
@click.option("--out", "out", required=True, help="Output JSONL file ('-' for stdout).")
@click.option(
    "--per-type",
    type=click.IntRange(0, 1000),
    default=5,
    show_default=True,
    help="Samples of each of the seven sampled question types per repository.",
)
@click.option(
    "--unanswerable",
    type=float,
    default=0.28,
    show_default=True,
    callback=_unit_interval,
    help="Target share of unanswerable questions.",
)
@click.option(
    "--ambiguous",
    is_flag=True,
    help="After each answerable question that has one, write its ambiguous twin (docs/questions.md).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@specs_options
@key_option
@world_option
@mess_option
def qa_command(
    seeds: str,
    out: str,
    per_type: int,
    unanswerable: float,
    ambiguous: bool,
    quiet: bool,
    specs: str | None,
    fallback: str | None,
    key_file: str | None,
    counterfactual: bool,
    mess: int,
) -> None:
    from qa.generate import Options  # scipy is heavy: only the commands that need it import it

    seed_list = parse_seed_list(seeds)
    factory = repository_factory(specs, fallback, load_key(key_file), world_of(counterfactual, mess))
    options = Options(per_type=per_type, unanswerable=unanswerable, ambiguous=ambiguous, counterfactual=counterfactual)
    if out == "-":
        _write(seed_list, factory, options, sys.stdout, quiet=True)
        return
    target = Path(out)
    if target.is_dir():
        raise SgfsError(f"--out {out} is a directory")
    if not target.parent.exists():
        raise SgfsError(f"--out {out}: directory {target.parent} does not exist")
    # Write to a temporary file beside the target and rename: an interrupted run leaves no partial file.
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise _write_error(out, exc) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            count = _write(seed_list, factory, options, stream, quiet=quiet)
        os.replace(temporary, target)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a file size limit...
            raise _write_error(out, exc) from None
        raise
    click.echo(f"wrote {count} questions for {len(seed_list)} repositories to {out}", err=True)


def _write_error(out: str, exc: OSError) -> SgfsError:
    return SgfsError(f"cannot write {out}: {exc.strerror or exc}", exit_code=1)


def _write(seed_list: list[int], factory: RepositoryFactory, options: Options, stream: TextIO, quiet: bool) -> int:
    from qa.generate import generate
    from qa.records import question_line

    count = 0
    columns = (TextColumn("questions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=quiet or not sys.stderr.isatty(), transient=True) as progress:
        task = progress.add_task("qa", total=len(seed_list))
        for seed in seed_list:
            repository = factory(seed)
            for question in generate(repository, options):
                stream.write(question_line(question) + "\n")
                count += 1
            progress.advance(task)
    return count
