"""Looking at one repository without mounting: tree, ls, cat, digest, spec."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from generators import PathNotFound, Repository
from generators.spec import from_json
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
    write_stdout,
)
from sgfs.errors import SgfsError
from sgfs.store.repositories import load_key, load_spec_file, open_repository, repository_factory

TREE_HELP = f"Print every file path of a repository, one per line, sorted.\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs tree 118 | head -3",
    "sgfs tree 118 | wc -l                 # how many files",
    "sgfs tree 3 | grep -x README.md       # not every repository has a README",
    "sgfs spec 118 > spec.json && sgfs tree spec.json | head",
)
LS_HELP = f"List a directory of a repository (directories end with /).\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs ls 118                           # the top level",
    "sgfs ls 118 kato_04Apr2023            # one directory",
)
CAT_HELP = f"Write the bytes of one file of a repository to stdout.\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs cat 3 README.md",
    'sgfs cat 118 "$(sgfs tree 118 | head -1)" > first.xlsx',
)
DIGEST_HELP = f"Print the SHA-256 of a whole repository (paths and bytes).\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs digest 118",
    "sgfs digest spec.json                 # the same digest as the seed the file was written from",
)
SPEC_HELP = f"Print the privileged spec of a repository as JSON.\n\n{SOURCE_HELP}\n\n" + examples(
    "sgfs spec 118 > spec.json",
    "sgfs spec spec.json --check           # validate an edited spec file",
)


Opener = Callable[[], Repository]


def _repository_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that choose how SOURCE opens (spec packs, key, world, mess), handed to ``command`` as ``opener``:
    a function that opens the repository when called (``spec --check`` reads the file without it)."""

    @functools.wraps(command)
    def run(
        source: str,
        specs: str | None,
        fallback: str | None,
        key_file: str | None,
        counterfactual: bool,
        mess: int,
        **rest: Any,
    ) -> None:
        def opener() -> Repository:
            key = load_key(key_file)
            world = world_of(counterfactual, mess)
            return open_repository(source, repository_factory(specs, fallback, key, world), key, world)

        command(source=source, opener=opener, **rest)

    return specs_options(key_option(world_option(mess_option(run))))


def _missing(source: str, path: str) -> SgfsError:
    return SgfsError(f"no such file or directory in repository {source}: {path}")


@click.command("tree", context_settings=SEED_CONTEXT, help=TREE_HELP)
@source_argument
@_repository_options
def tree_command(source: str, opener: Opener) -> None:
    repo = opener()
    write_stdout("".join(f"{p}\n" for p in repo.file_paths()))


@click.command("ls", context_settings=SEED_CONTEXT, help=LS_HELP)
@source_argument
@click.argument("path", default="")
@_repository_options
def ls_command(source: str, path: str, opener: Opener) -> None:
    repo = opener()
    try:
        node = repo.lookup(path)
        if not node.is_dir:
            write_stdout(f"{node.path}\n")
            return
        entries = repo.list(path)
    except PathNotFound:
        raise _missing(source, path) from None
    write_stdout("".join(entry.name + ("/" if entry.is_dir else "") + "\n" for entry in entries))


@click.command("cat", context_settings=SEED_CONTEXT, help=CAT_HELP)
@source_argument
@click.argument("path")
@_repository_options
def cat_command(source: str, path: str, opener: Opener) -> None:
    repo = opener()
    try:
        if repo.lookup(path).is_dir:
            raise SgfsError(f"is a directory in repository {source}: {path}")
        content = repo.read(path)
    except PathNotFound:
        raise _missing(source, path) from None
    write_stdout(content)


@click.command("digest", context_settings=SEED_CONTEXT, help=DIGEST_HELP)
@source_argument
@_repository_options
def digest_command(source: str, opener: Opener) -> None:
    write_stdout(opener().digest() + "\n")


@click.command("spec", context_settings=SEED_CONTEXT, help=SPEC_HELP)
@source_argument
@click.option("--check", is_flag=True, help="Only validate SEED as a spec file; print 'ok' when it is valid.")
@_repository_options
def spec_command(source: str, check: bool, opener: Opener) -> None:
    if check:
        repo: Repository = load_spec_file(source)
        write_stdout(f"ok: {repo.spec.project.title}\n")
        return
    spec = opener().spec
    text = spec.to_json()
    assert from_json(text) == spec  # the round trip is part of the contract
    write_stdout(text)
