"""What ``sgfs eval`` and ``sgfs report`` do at the end with the records of a run: JUnit, the report, the gate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qa.result_record import ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval.gate import Gate, check_gate
from sgfs.eval.results import LoadedRuns, RunInfo, load_results, write_error
from sgfs.eval.summary import RunSummary, summarize_records


@dataclass(frozen=True)
class Baseline:
    """``--baseline DIR``: its name as given, and its records."""

    name: str
    runs: LoadedRuns

    @classmethod
    def load(cls, name: str | None) -> Baseline | None:
        return None if name is None else cls(name, load_results([name]))


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
    of the runs they come from."""
    if junit_file is not None:
        from sgfs.eval.junit import write_junit

        try:
            write_junit(Path(junit_file), records)
        except OSError as exc:
            raise write_error(junit_file, exc) from None
    if report_dir is not None:
        from sgfs.eval.report import write_report

        base_runs = None if baseline is None else baseline.runs
        write_report(report_dir, records, summary, runs, base_runs, None if baseline is None else baseline.name)
    base_summary = None if baseline is None else summarize_records(baseline.runs.records)
    reason = check_gate(summary, gate, base_summary)
    if reason is not None:
        raise SgfsError(reason, exit_code=1)
