"""What ``sgfs eval`` and ``sgfs report`` do at the end with the records of a run: JUnit, the report, the gate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from qa.result_record import ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval.gate import Gate, check_gate
from sgfs.eval.results import LoadedRuns, RunInfo, check_same_universe, load_results, write_error
from sgfs.eval.summary import RunSummary, summarize_records


@dataclass(frozen=True)
class Baseline:
    """``--baseline DIR``: its name as given, and its records."""

    name: str
    runs: LoadedRuns

    @classmethod
    def load(cls, name: str | None) -> Baseline | None:
        return None if name is None else cls(name, load_results([name]))

    def check_universe(self, runs: Sequence[RunInfo]) -> None:
        """Refuses a baseline made with another universe key (or with one where the run has none, or the reverse)."""
        for theirs in self.runs.runs[:1]:
            for mine in runs[:1]:
                check_same_universe(mine, theirs, "a run and a baseline")

    def compare(self, records: Sequence[ResultRecord]) -> Comparison:
        """Both runs restricted to the items (id, variant) they share; an SgfsError when they share none."""
        mine = {record.key for record in records}
        shared = mine & {record.key for record in self.runs.records}
        if not shared:
            raise SgfsError(f"the baseline {self.name} shares no question with this run: nothing to compare")
        return Comparison(
            self.name,
            [r for r in records if r.key in shared],
            [r for r in self.runs.records if r.key in shared],
            len(records),
            len(self.runs.records),
        )


@dataclass(frozen=True)
class Comparison:
    """A run and its baseline on the items both hold (``mine`` and ``theirs``, same keys), and their totals."""

    name: str
    mine: list[ResultRecord]
    theirs: list[ResultRecord]
    run_total: int
    baseline_total: int

    def line(self) -> str:
        return (
            f"compared with the baseline {self.name} on the {len(self.mine)} items both runs hold "
            f"(of {self.run_total} in this run, {self.baseline_total} in the baseline)"
        )


def finish(
    records: Sequence[ResultRecord],
    summary: RunSummary,
    runs: Sequence[RunInfo],
    baseline: Baseline | None,
    gate: Gate,
    junit_file: str | None,
    report_dir: Path | None,
) -> None:
    """Writes ``junit_file`` and the report in ``report_dir`` (each when given), then applies the gate: an
    SgfsError with exit code 1 when it fails. ``summary`` is that of ``records``; ``runs`` what the report says
    of the runs they come from. The baseline is compared on the items both runs hold (said on stderr)."""
    if baseline is not None:
        baseline.check_universe(runs)
    comparison = None if baseline is None else baseline.compare(records)
    if comparison is not None:
        click.echo(f"sgfs: {comparison.line()}", err=True)
    if junit_file is not None:
        from sgfs.eval.junit import write_junit

        try:
            write_junit(Path(junit_file), records)
        except OSError as exc:
            raise write_error(junit_file, exc) from None
    if report_dir is not None:
        from sgfs.eval.report import write_report

        write_report(report_dir, records, summary, runs, comparison)
    if comparison is None:
        reason = check_gate(summary, gate, None)
    else:  # the drop is measured on the shared items; the minimum accuracy on the whole run
        reason = check_gate(summary, Gate(gate.min_accuracy), None) or check_gate(
            summarize_records(comparison.mine), Gate(None, gate.max_drop), summarize_records(comparison.theirs)
        )
    if reason is not None:
        raise SgfsError(reason, exit_code=1)
