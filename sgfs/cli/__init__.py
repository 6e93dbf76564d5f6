"""The ``sgfs`` command line: one click group, one file per subcommand.

Every failure the user can cause (bad seed, path, option, input file) ends as one line on stderr and a
non-zero exit code, never a traceback.
"""

from __future__ import annotations

import os
import sys

import click

from sgfs.cli.agent import agent_command
from sgfs.cli.eval import eval_command
from sgfs.cli.export import export_command
from sgfs.cli.grade import grade_command
from sgfs.cli.inspect import cat_command, digest_command, ls_command, spec_command, tree_command
from sgfs.cli.mcp import mcp_command
from sgfs.cli.mount import mount_command, unmount_command
from sgfs.cli.qa import qa_command
from sgfs.cli.report import report_command
from sgfs.cli.specs import specs_group
from sgfs.errors import SgfsError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sgfs", prog_name="sgfs")
def cli() -> None:
    """Infinite, procedurally generated scientific data repositories."""


for command in (
    tree_command,
    ls_command,
    cat_command,
    export_command,
    digest_command,
    spec_command,
    mount_command,
    unmount_command,
    qa_command,
    grade_command,
    specs_group,
    mcp_command,
    eval_command,
    agent_command,
    report_command,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="sgfs", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except SgfsError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        # The reader went away (``sgfs cat ... | head``): not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


def _fail(message: str, code: int) -> None:
    message = " ".join(message.split())  # one line, whatever the exception carried
    print(f"sgfs: error: {message}", file=sys.stderr)
    sys.exit(code)
