"""Arguments shared by several subcommands."""

from __future__ import annotations

import click

source_argument = click.argument("source", metavar="SEED")
SOURCE_HELP = "SEED is an integer in [0, 2^63) or the path of a spec JSON file written by `sgfs spec`."
# A negative seed such as -1 must reach the seed parser (and its clear error), not be read as an option.
SEED_CONTEXT = {"ignore_unknown_options": True}
