"""``sgfs export SEED DIR``: write a repository to a local directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from sgfs.cli.options import (
    SEED_CONTEXT,
    SOURCE_HELP,
    examples,
    key_option,
    mess_option,
    source_argument,
    specs_options,
    world_of,
    world_option,
)
from sgfs.errors import SgfsError
from sgfs.store.diskcache import DEFAULT_DISK_CACHE_MB, DiskCache, read_through
from sgfs.store.repositories import load_key, open_repository, repository_factory

EXPORT_HELP = f"Write every file of a repository under DIR.\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs export 118 ./repo118",
    "sgfs export 118 ./repo118 --force -q  # into a directory that is not empty, no progress bar",
    "sgfs export 288 ./repo288 --cache-dir ~/.cache/sgfs   # fill the disk cache a mount reads",
)


@click.command("export", context_settings=SEED_CONTEXT, help=EXPORT_HELP)
@source_argument
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Write into DIR even if it is not empty (overwriting same-named files).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@specs_options
@key_option
@world_option
@mess_option
@click.option(
    "--cache-dir",
    metavar="DIR",
    default=None,
    help="Read files from, and keep them in, this disk cache (the one `sgfs mount --cache-dir` uses).",
)
def export_command(
    source: str,
    directory: Path,
    force: bool,
    quiet: bool,
    specs: str | None,
    fallback: str | None,
    key_file: str | None,
    counterfactual: bool,
    mess: int,
    cache_dir: str | None,
) -> None:
    key, world = load_key(key_file), world_of(counterfactual, mess)
    repo = open_repository(source, repository_factory(specs, fallback, key, world), key, world)
    cache = DiskCache(Path(cache_dir), DEFAULT_DISK_CACHE_MB << 20) if cache_dir else None
    paths = repo.file_paths()
    columns = (TextColumn("export"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    show = not quiet and sys.stderr.isatty()
    try:
        if directory.exists() and any(directory.iterdir()) and not force:
            raise SgfsError(f"{directory} is not empty (use --force to write into it)")
        directory.mkdir(parents=True, exist_ok=True)
        with Progress(*columns, disable=not show, transient=True) as progress:
            task = progress.add_task("export", total=len(paths))
            for path in paths:
                target = directory / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(read_through(cache, repo, path))
                os.chmod(target, 0o644)
                progress.advance(task)
    except OSError as exc:  # a read-only or full disk, a file in the way...: one line, whatever the call
        where = f" ({exc.filename})" if exc.filename and Path(exc.filename) != directory else ""
        raise SgfsError(f"cannot write under {directory}: {exc.strerror or exc}{where}", exit_code=1) from None
    click.echo(f"exported {len(paths)} files of repository {source} to {directory}", err=True)
