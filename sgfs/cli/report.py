"""``sgfs report DIR [DIR ...] [--baseline DIR] --out REPORT``: merge runs (shards) into one report; gate."""

from __future__ import annotations

from pathlib import Path

import click

from sgfs.errors import SgfsError


@click.command("report", help="Write REPORT/report.md, REPORT/report.html and PNG plots from one or more run "
               "directories of `sgfs eval` or Inspect AI logs (.eval/.json) of the sgfs/infinite_science task "
               "(shards merge into one report). Exit 1 when a gate fails.")  # fmt: skip
@click.argument("dirs", nargs=-1, required=True, metavar="DIR [DIR ...]")
@click.option("--out", "out", required=True, metavar="REPORT", help="Directory for the report.")
@click.option("--baseline", metavar="DIR", help="An earlier run: per-type differences and flipped questions.")
@click.option("--min-accuracy", type=click.FloatRange(0, 1), help="Gate: exit 1 below this accuracy.")
@click.option("--max-drop", type=click.FloatRange(0, 1), help="Gate: exit 1 when accuracy drops more than this.")
@click.option("--junit", "junit_file", metavar="FILE", help="Write JUnit XML, one test case per question.")
def report_command(
    dirs: tuple[str, ...],
    out: str,
    baseline: str | None,
    min_accuracy: float | None,
    max_drop: float | None,
    junit_file: str | None,
) -> None:
    from sgfs.cli.eval import finish
    from sgfs.eval.results import load_results

    if max_drop is not None and baseline is None:
        raise SgfsError("--max-drop needs --baseline DIR")
    loaded = load_results(list(dirs))
    base = load_results([baseline]) if baseline is not None else None
    paths = [Path(d) for d in dirs]
    finish(loaded.records, paths, baseline, base, min_accuracy, max_drop, junit_file, Path(out), loaded.runs)
    click.echo(f"wrote {Path(out) / 'report.html'} ({len(loaded.records)} items)", err=True)
