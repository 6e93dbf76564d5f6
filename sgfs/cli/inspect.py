"""Looking at one repository without mounting: tree, ls, cat, digest, spec."""

from __future__ import annotations

import sys

import click

from generators import PathNotFound, Repository
from generators.spec import from_json
from sgfs.cli.options import SEED_CONTEXT, SOURCE_HELP, source_argument, specs_options
from sgfs.errors import SgfsError
from sgfs.seeds import load_spec_file, open_repository, repository_factory


def _missing(source: str, path: str) -> SgfsError:
    return SgfsError(f"no such file or directory in repository {source}: {path}")


@click.command(
    "tree",
    context_settings=SEED_CONTEXT,
    help=f"Print every file path of a repository, one per line, sorted.\n\n{SOURCE_HELP}",
)
@source_argument
@specs_options
def tree_command(source: str, specs: str | None, fallback: str | None) -> None:
    repo = open_repository(source, repository_factory(specs, fallback))
    sys.stdout.write("".join(f"{p}\n" for p in repo.file_paths()))


@click.command(
    "ls",
    context_settings=SEED_CONTEXT,
    help=f"List a directory of a repository (directories end with /).\n\n{SOURCE_HELP}",
)
@source_argument
@click.argument("path", default="")
@specs_options
def ls_command(source: str, path: str, specs: str | None, fallback: str | None) -> None:
    repo = open_repository(source, repository_factory(specs, fallback))
    try:
        node = repo.lookup(path)
        if not node.is_dir:
            click.echo(node.path)
            return
        entries = repo.list(path)
    except PathNotFound:
        raise _missing(source, path) from None
    for entry in entries:
        click.echo(entry.name + ("/" if entry.is_dir else ""))


@click.command(
    "cat",
    context_settings=SEED_CONTEXT,
    help=f"Write the bytes of one file of a repository to stdout.\n\n{SOURCE_HELP}",
)
@source_argument
@click.argument("path")
@specs_options
def cat_command(source: str, path: str, specs: str | None, fallback: str | None) -> None:
    repo = open_repository(source, repository_factory(specs, fallback))
    try:
        if repo.lookup(path).is_dir:
            raise SgfsError(f"is a directory in repository {source}: {path}")
        content = repo.read(path)
    except PathNotFound:
        raise _missing(source, path) from None
    sys.stdout.buffer.write(content)
    sys.stdout.flush()


@click.command(
    "digest",
    context_settings=SEED_CONTEXT,
    help=f"Print the SHA-256 of a whole repository (paths and bytes).\n\n{SOURCE_HELP}",
)
@source_argument
@specs_options
def digest_command(source: str, specs: str | None, fallback: str | None) -> None:
    click.echo(open_repository(source, repository_factory(specs, fallback)).digest())


@click.command(
    "spec",
    context_settings=SEED_CONTEXT,
    help=f"Print the privileged spec of a repository as JSON.\n\n{SOURCE_HELP}",
)
@source_argument
@click.option("--check", is_flag=True, help="Only validate SEED as a spec file; print 'ok' when it is valid.")
@specs_options
def spec_command(source: str, check: bool, specs: str | None, fallback: str | None) -> None:
    if check:
        repo: Repository = load_spec_file(source)
        click.echo(f"ok: {repo.spec.project.title}")
        return
    spec = open_repository(source, repository_factory(specs, fallback)).spec
    text = spec.to_json()
    assert from_json(text) == spec  # the round trip is part of the contract
    sys.stdout.write(text)
