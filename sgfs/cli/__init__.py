"""The ``sgfs`` command line: one click group, one file per subcommand.

Every failure the user can cause (bad seed, path, option, input file, an output that cannot be written) ends
as one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import sys

import click

from sgfs.cli.agent import agent_command
from sgfs.cli.browse import cat_command, digest_command, ls_command, spec_command, tree_command
from sgfs.cli.eval import eval_command
from sgfs.cli.export import export_command
from sgfs.cli.grade import grade_command
from sgfs.cli.key import key_group
from sgfs.cli.mcp import mcp_command
from sgfs.cli.mount import mount_command, unmount_command
from sgfs.cli.options import drop_stdout, examples, flush_stdout
from sgfs.cli.qa import qa_command
from sgfs.cli.report import report_command
from sgfs.cli.specs import specs_group
from sgfs.errors import SgfsError

CLI_HELP = "Infinite, procedurally generated scientific data repositories.\n\n" + examples(
    "sgfs tree 118 | head                  # a repository's files, without mounting",
    "sgfs mount /mnt/sgfs --seeds 1-100,118 && ls /mnt/sgfs/118",
    "sgfs qa 1-50 --out questions.jsonl",
    "sgfs COMMAND --help                   # each command's options and examples",
)


@click.group(help=CLI_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sgfs", prog_name="sgfs")
def cli() -> None:
    pass


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
    key_group,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="sgfs", standalone_mode=False)
        flush_stdout()
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
        drop_stdout()
        sys.exit(0)
    except OSError as exc:
        # A write that failed (a read-only or full disk, a file where a directory should be...), wherever it was.
        _fail(describe_os_error(exc), 1)


def describe_os_error(exc: OSError) -> str:
    """``exc`` as "PATH: reason" (or the reason alone when no path is known)."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _fail(message: str, code: int) -> None:
    try:  # what the command wrote before it failed, if it still can be
        sys.stdout.flush()
    except OSError:
        drop_stdout()
    message = " ".join(message.split())  # one line, whatever the exception carried
    print(f"sgfs: error: {message}", file=sys.stderr)
    sys.exit(code)
