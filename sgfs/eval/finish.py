"""What ``sgfs eval`` and ``sgfs report`` do at the end with the records of a run: JUnit, the report, the gate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import click

from qa.result_record import ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval.gate import Gate, check_gate
from sgfs.eval.results import (
    LoadedRuns,
    RunInfo,
    check_same_format,
    check_same_universe,
    load_results,
    write_error,
    write_json,
)
from sgfs.eval.stats import PairedComparison, paired_comparison
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
        """Refuses a baseline made with another universe key (or with one where the run has none, or the reverse),
        or whose questions are of another question format."""
        for theirs in self.runs.runs[:1]:
            for mine in runs[:1]:
                check_same_universe(mine, theirs, "a run and a baseline")
                check_same_format(mine, theirs, "a run and a baseline")

    def compare(self, records: Sequence[ResultRecord]) -> Comparison:
        """Both runs restricted to the items (id, variant, repeat) they share, paired in the run's order; an
        SgfsError when they share none."""
        theirs = {record.unit: record for record in self.runs.records}
        mine = [r for r in records if r.unit in theirs]
        if not mine:
            raise SgfsError(f"the baseline {self.name} shares no question with this run: nothing to compare")
        paired = [theirs[r.unit] for r in mine]
        return Comparison(
            self.name,
            mine,
            paired,
            len(records),
            len(self.runs.records),
            paired_comparison([bool(r.correct) for r in mine], [bool(r.correct) for r in paired], [r.id for r in mine]),
        )


@dataclass(frozen=True)
class Comparison:
    """A run and its baseline on the items both hold (``mine[i]`` and ``theirs[i]`` the same (id, variant,
    repeat)), their totals, and the paired comparison of their accuracies."""

    name: str
    mine: list[ResultRecord]
    theirs: list[ResultRecord]
    run_total: int
    baseline_total: int
    paired: PairedComparison | None = None

    @property
    def run_only(self) -> int:
        """Items of the run the baseline lacks (not compared)."""
        return self.run_total - len(self.mine)

    @property
    def baseline_only(self) -> int:
        """Items of the baseline the run lacks (not compared)."""
        return self.baseline_total - len(self.theirs)

    def line(self) -> str:
        text = (
            f"compared with the baseline {self.name} on the {len(self.mine)} items both runs hold "
            f"(of {self.run_total} in this run, {self.baseline_total} in the baseline)"
        )
        paired = self.paired
        if paired is None:
            return text
        mcnemar = "" if paired.mcnemar_p is None else f", McNemar p = {paired.mcnemar_p:.3g}"
        return (
            f"{text}: accuracy {100 * paired.difference:+.1f} points (paired 95 % interval "
            f"{100 * paired.interval[0]:+.1f} to {100 * paired.interval[1]:+.1f}{mcnemar})"
        )

    def to_json(self) -> dict[str, object]:
        """What summary.json says of the comparison (``baseline``)."""
        return {
            "name": self.name,
            "paired_items": len(self.mine),
            "unpaired_run_items": self.run_only,
            "unpaired_baseline_items": self.baseline_only,
            **(self.paired.to_json() if self.paired is not None else {}),
        }


def finish(
    records: Sequence[ResultRecord],
    summary: RunSummary,
    runs: Sequence[RunInfo],
    baseline: Baseline | None,
    gate: Gate,
    junit_file: str | None,
    report_dir: Path | None,
    summary_file: Path | None = None,
) -> None:
    """Writes ``junit_file`` and the report in ``report_dir`` (each when given), then applies the gate: an
    SgfsError with exit code 1 when it fails. ``summary`` is that of ``records``; ``runs`` what the report says
    of the runs they come from. The baseline is compared on the items both runs hold (said on stderr), and the
    paired comparison is added to ``summary_file`` (summary.json of ``sgfs eval``) when given."""
    if baseline is not None:
        baseline.check_universe(runs)
    comparison = None if baseline is None else baseline.compare(records)
    if comparison is not None:
        click.echo(f"sgfs: {comparison.line()}", err=True)
        summary = replace(summary, baseline=comparison.to_json())
    if summary_file is not None:
        write_json(summary_file, summary.to_json())
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
