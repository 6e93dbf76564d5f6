"""Outputs that cannot be written (a full disk, a file size limit, a path that is no directory) end `sgfs eval` and
`sgfs report` with one line on stderr and exit code 1, never a traceback. The tests run as any user (root too):
the failures come from /dev/full and RLIMIT_FSIZE, not from permissions."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest

from qa.generate import Options
from qa.records import QuestionRecord, generated_records, question_line
from qa.result_record import ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval.results import ResultsWriter, write_json
from tests.helpers import repo
from tests.helpers.commands import SGFS

FULL = Path("/dev/full")  # every write fails with ENOSPC, as on a full disk


def no_file_growth() -> None:
    """In the child: no file may grow (writes fail with EFBIG; Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def sgfs_without_disk(*args: object) -> subprocess.CompletedProcess[str]:
    command = [*SGFS, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, preexec_fn=no_file_growth)


@pytest.fixture(scope="module")
def questions() -> list[QuestionRecord]:
    return generated_records([repo(1)], Options(per_type=1))


@pytest.fixture(scope="module")
def records(questions: list[QuestionRecord]) -> list[ResultRecord]:
    """Records as `sgfs eval` writes them, of an agent that abstained on every question."""
    return [
        ResultRecord.of(
            record.question, "template", answer="not possible", correct=not record.question.answerable,
            abstained=True, status="ok", time_s=0.5, usage=None, tool_calls=None, files_read=None,
        )
        for record in questions
    ]  # fmt: skip


def write_run(directory: Path, records: list[ResultRecord]) -> Path:
    directory.mkdir()
    lines = [json.dumps(record.to_json(), ensure_ascii=False) + "\n" for record in records]
    (directory / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    return directory


def assert_one_line(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stderr == f"sgfs: error: {message}\n"


def test_eval_that_cannot_write_its_run_directory(tmp_path: Path, questions: list[QuestionRecord]) -> None:
    questions_file = tmp_path / "q.jsonl"
    questions_file.write_text("".join(question_line(record.question) + "\n" for record in questions))
    out = tmp_path / "run"
    result = sgfs_without_disk("eval", "--questions", questions_file, "--agent", "true", "--out", out, "--quiet")
    assert_one_line(result, f"cannot write {out / 'run.json'}: File too large")
    assert list(out.iterdir()) == []  # no temporary file left behind


def test_report_that_cannot_be_written(tmp_path: Path, records: list[ResultRecord]) -> None:
    run = write_run(tmp_path / "run", records)
    (tmp_path / "file").write_text("")
    not_a_directory = tmp_path / "file" / "report"
    result = sgfs_without_disk("report", run, "--out", not_a_directory)
    assert_one_line(result, f"cannot write the report in {not_a_directory}: Not a directory")
    result = sgfs_without_disk("report", run, "--out", tmp_path / "report", "--junit", FULL)
    assert_one_line(result, f"cannot write {FULL}: No space left on device")


def test_results_and_summary_on_a_full_disk(records: list[ResultRecord]) -> None:
    writer = ResultsWriter(FULL)
    with pytest.raises(SgfsError, match=r"^cannot write /dev/full: No space left on device$") as raised:
        writer.write(records[0])
    assert raised.value.exit_code == 1
    with pytest.raises(SgfsError, match=r"^cannot write /dev/full: No space left on device$"):
        writer.close()  # what the failed write left in the buffer
    with pytest.raises(SgfsError, match=r"^cannot write /dev/full/summary\.json: Not a directory$"):
        write_json(FULL / "summary.json", {"n": 1})
