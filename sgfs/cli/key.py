"""``sgfs key new FILE`` and ``sgfs key fingerprint FILE``: universe keys (docs/eval.md, "Keyed universes")."""

from __future__ import annotations

import click

from generators.keys import Key, KeyFileError
from sgfs.cli.options import examples, write_stdout
from sgfs.errors import SgfsError
from sgfs.store.repositories import load_key

KEY_HELP = (
    "Universe keys. With `--key FILE` (mount, export, cat, tree, digest, spec, qa, eval, mcp, agent) every "
    "repository and question is a function of (key, seed): reproducible with the key, unpredictable without "
    "it, even with sgfs installed. Without a key: the open universe anyone can compute.\n\n"
    + examples(
        "sgfs key new universe.key            # a fresh 256-bit key, mode 0600; prints its fingerprint",
        "sgfs eval 1-20 --key universe.key --agent ./agent.sh --out runs/sealed",
        "sgfs key fingerprint universe.key    # the name run.json records",
    )
)


@click.group("key", help=KEY_HELP)
def key_group() -> None:
    pass


NEW_HELP = "Write a fresh 256-bit key to FILE (mode 0600, never overwritten); print its fingerprint.\n\n" + examples(
    "sgfs key new universe.key", "sgfs qa 1-20 --key universe.key --out sealed.jsonl"
)
FINGERPRINT_HELP = "Print the fingerprint of the key in FILE (safe to publish; the key is not).\n\n" + examples(
    "sgfs key fingerprint universe.key    # as run.json records it"
)


@key_group.command("new", help=NEW_HELP)
@click.argument("path", metavar="FILE")
def new_command(path: str) -> None:
    try:
        key = Key.new(path)
    except KeyFileError as exc:
        raise SgfsError(str(exc)) from None
    write_stdout(f"{key.fingerprint}\n")
    click.echo(f"wrote a new key to {path} (fingerprint {key.fingerprint}); keep it secret until published", err=True)


@key_group.command("fingerprint", help=FINGERPRINT_HELP)
@click.argument("path", metavar="FILE")
def fingerprint_command(path: str) -> None:
    key = load_key(path)
    assert key is not None
    write_stdout(f"{key.fingerprint}\n")
