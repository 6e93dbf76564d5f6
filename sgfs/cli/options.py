"""Arguments shared by several subcommands."""

from __future__ import annotations

import click

source_argument = click.argument("source", metavar="SEED")
SOURCE_HELP = "SEED is an integer in [0, 2^63) or the path of a spec JSON file written by `sgfs spec`."
# A negative seed such as -1 must reach the seed parser (and its clear error), not be read as an option.
SEED_CONTEXT = {"ignore_unknown_options": True}

SPECS_HELP = "Read specs from this spec pack (see `sgfs specs`) instead of the procedural builder."
FALLBACK_HELP = "With --specs: seeds outside the pack get the procedural spec instead of an error."


def specs_options(command: click.decorators.FC) -> click.decorators.FC:
    """``--specs PACK`` and ``--fallback procedural`` for every command that reads a spec."""
    command = click.option("--fallback", type=click.Choice(["procedural"]), default=None, help=FALLBACK_HELP)(command)
    return click.option("--specs", "specs", metavar="PACK", default=None, help=SPECS_HELP)(command)
