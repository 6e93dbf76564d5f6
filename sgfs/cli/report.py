"""``sgfs report DIR [DIR ...] [--baseline DIR] --out REPORT``: merge runs (shards) into one report; gate."""

from __future__ import annotations

from pathlib import Path

import click

from sgfs.cli.options import examples
from sgfs.errors import SgfsError

REPORT_HELP = f"""Write REPORT/report.md, REPORT/report.html and PNG plots from one or more run directories of
`sgfs eval` or Inspect AI logs (.eval/.json) of the sgfs/infinite_science task. The shards of one run merge into
one report; records of different runs, or a record given twice, are refused. --baseline compares the questions
both runs hold. Exit 1 when a gate fails or the report cannot be written, 2 on bad input.

{
    examples(
        "sgfs report runs/shard1 runs/shard2 --out report",
        "sgfs report runs/b --baseline runs/a --max-drop 0.05 --junit junit.xml --out report",
        "sgfs report logs/run.eval --out report        # an Inspect AI log of sgfs/infinite_science",
    )
}
"""


@click.command("report", help=REPORT_HELP)
@click.argument("dirs", nargs=-1, required=True, metavar="DIR [DIR ...]")
@click.option("--out", "out", required=True, metavar="REPORT", help="Directory for the report.")
@click.option("--baseline", metavar="DIR", help="An earlier run, compared on the questions both hold.")
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
    from sgfs.eval.finish import Baseline, finish
    from sgfs.eval.gate import Gate
    from sgfs.eval.results import load_results
    from sgfs.eval.summary import summarize_records

    if max_drop is not None and baseline is None:
        raise SgfsError("--max-drop needs --baseline DIR")
    loaded = load_results(list(dirs))
    base = Baseline.load(baseline)
    summary = summarize_records(loaded.records)
    gate = Gate(min_accuracy, max_drop)
    finish(loaded.records, summary, loaded.runs, base, gate, junit_file, Path(out))
    click.echo(f"wrote {Path(out) / 'report.html'} ({len(loaded.records)} items)", err=True)
