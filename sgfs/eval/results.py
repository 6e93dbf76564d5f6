"""Result records (one JSON line per graded item, docs/eval.md), their file, the run's metadata, the summary."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from qa.grading import VARIANTS, GradingRun, ItemResult
from qa.metrics import summarize
from sgfs.errors import SgfsError

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
RUN = "run.json"
STATUSES = ("ok", "timeout", "crash", "no_answer")
# The keys every record has; a converter from another harness (e.g. Inspect AI logs) writes the same.
RECORD_KEYS = (
    "id",
    "variant",
    "seed",
    "type",
    "category",
    "answer_kind",
    "answerable",
    "answer",
    "correct",
    "abstained",
    "status",
    "time_s",
    "usage",
    "tool_calls",
    "files_read",
    "evidence_read",
    "evidence_recall",
)


def record_key(record: dict[str, Any]) -> tuple[str, str]:
    return (str(record["id"]), str(record.get("variant", "template")))


class ResultsWriter:
    """Appends records to DIR/results.jsonl, each flushed and fsynced: a kill loses only questions in flight."""

    def __init__(self, path: Path) -> None:
        self._handle: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def read_records(path: Path, repair: bool = False) -> list[dict[str, Any]]:
    """The records of a results file. A last line cut short by a kill is dropped (and, with ``repair``,
    cut off the file so appending continues cleanly); any other bad line is an SgfsError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SgfsError(f"cannot read {path}: {exc.strerror or exc}") from None
    # Records are written whole, newline last: an unterminated last line is what a kill mid-write leaves.
    good_end = data.rfind(b"\n") + 1
    records: list[dict[str, Any]] = []
    for number, line in enumerate(data[:good_end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or "id" not in record:
            raise SgfsError(f"{path}:{number}: not a result record")
        records.append(record)
    if repair and good_end < len(data):
        with open(path, "r+b") as handle:
            handle.truncate(good_end)
    return records


def read_run(directory: Path) -> dict[str, Any] | None:
    path = directory / RUN
    try:
        meta = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SgfsError(f"cannot read {path}: {exc}") from None
    if not isinstance(meta, dict):
        raise SgfsError(f"{path} is not a run description")
    return meta


def write_json(path: Path, value: Any) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _item(record: dict[str, Any]) -> ItemResult:
    return ItemResult(
        id=str(record["id"]),
        variant=str(record.get("variant", "template")),
        type=str(record["type"]),
        category=str(record["category"]),
        answer_kind=str(record.get("answer_kind", "")),
        answerable=bool(record["answerable"]),
        correct=bool(record["correct"]),
        abstained=bool(record.get("abstained", False)),
        missing=False,
        parsed=record.get("answer") if isinstance(record.get("answer"), str) else None,
        extracted=None,
        expected="",
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _total(records: list[dict[str, Any]], get: Any) -> int | None:
    values = [v for v in map(get, records) if isinstance(v, int)]
    return sum(values) if values else None


def summarize_records(records: list[dict[str, Any]], missing: list[str] | None = None) -> dict[str, Any]:
    """The grader's summary (qa.metrics.summarize) over the records, plus the harness's keys."""
    seen = {str(r.get("variant", "template")) for r in records}
    variants = [v for v in VARIANTS if v in seen] or ["template"]
    summary = summarize(GradingRun([_item(r) for r in records], variants, list(missing or [])))
    audited = [r for r in records if r.get("evidence_read") is not None]
    with_evidence = [r for r in audited if r.get("evidence_recall") is not None]
    correct_with_evidence = [r for r in with_evidence if r["correct"] and r["answerable"]]
    summary.update(
        {
            "statuses": {s: sum(r.get("status") == s for r in records) for s in STATUSES},
            "audited": len(audited),
            "evidence_recall_mean": _mean([float(r["evidence_recall"]) for r in with_evidence]),
            "evidence_recall_mean_answerable": _mean(
                [float(r["evidence_recall"]) for r in with_evidence if r["answerable"]]
            ),
            "correct_without_evidence": _mean([float(not r["evidence_read"]) for r in correct_with_evidence]),
            "correct_without_evidence_n": sum(not r["evidence_read"] for r in correct_with_evidence),
            "abstained_after_evidence": sum(
                bool(r["answerable"] and r.get("abstained") and r["evidence_recall"] == 1.0) for r in with_evidence
            ),
            "reads_outside_repository": sum(bool(r.get("reads_outside")) for r in audited),
            "input_tokens": _total(records, lambda r: (r.get("usage") or {}).get("input_tokens")),
            "output_tokens": _total(records, lambda r: (r.get("usage") or {}).get("output_tokens")),
            "tool_calls": _total(records, lambda r: r.get("tool_calls")),
            "time_s_total": sum(float(r.get("time_s") or 0.0) for r in records),
            "time_s_mean": _mean([float(r.get("time_s") or 0.0) for r in records]),
        }
    )
    return summary


@dataclass
class LoadedRuns:
    """Records merged from one or more run directories (shards), and each directory's run.json."""

    records: list[dict[str, Any]]
    runs: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)


def load_results(directories: list[str | Path]) -> LoadedRuns:
    """The one loader of the report and the gate: every record of every DIR (a run directory of ``sgfs eval``, or
    an Inspect AI log file of the ``sgfs/infinite_science`` task), the first of duplicates kept."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    runs: list[dict[str, Any]] = []
    duplicates: list[str] = []
    for entry in directories:
        directory = Path(entry)
        if directory.is_file() and directory.suffix in INSPECT_LOG_SUFFIXES:
            inspect_records, meta = _inspect_log(directory)
            runs.append({"dir": str(directory), **meta})
            for record in inspect_records:
                key = record_key(record)
                if key in merged:
                    duplicates.append(key[0])
                    continue
                merged[key] = record
            continue
        if not directory.exists():
            raise SgfsError(f"{directory}: no such run directory or Inspect log")
        if not (directory / RESULTS).is_file():
            raise SgfsError(f"{directory} holds no {RESULTS} (not a run directory of sgfs eval nor an Inspect log)")
        runs.append({"dir": str(directory), **(read_run(directory) or {})})
        for record in read_records(directory / RESULTS):
            missing = [k for k in ("id", "type", "category", "answerable", "correct") if k not in record]
            if missing:
                raise SgfsError(f"{directory / RESULTS}: record {record.get('id')} lacks {', '.join(missing)}")
            key = record_key(record)
            if key in merged:
                duplicates.append(key[0])
                continue
            merged[key] = record
    return LoadedRuns(list(merged.values()), runs, duplicates)


# Inspect AI writes .eval logs by default and .json ones on request.
INSPECT_LOG_SUFFIXES = (".eval", ".json")


def _inspect_log(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records of an Inspect log in the format of ``results.jsonl``, and what the report says of the run."""
    try:
        from inspect_ai.log import read_eval_log

        from sgfs.inspect_task.results import records_from_log
    except ImportError:
        needs = "needs the inspect extra: pip install 'sgfs[inspect]'"
        raise SgfsError(f"reading the Inspect log {path} {needs}") from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # any unreadable log: Inspect raises many kinds
        raise SgfsError(f"cannot read Inspect log {path}: {' '.join(str(exc).split())[:200]}") from None
    records = records_from_log(log)
    for record in records:  # a sample that errored before scoring counts as wrong, like a crashed agent
        record["correct"] = bool(record.get("correct"))
        record["abstained"] = bool(record.get("abstained"))
    meta = {"agent": f"inspect_ai {log.eval.task} on {log.eval.model}", "harness": "inspect_ai"}
    return records, meta
