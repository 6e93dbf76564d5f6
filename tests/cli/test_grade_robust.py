"""``sgfs grade`` on hostile input (issue 23): never a traceback, a bad answers line reported on its own line while
the others are graded, ``--out`` written atomically and safely (lone surrogates), the summary counting answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.qa.test_grading import COUNT, EXT_JSON, README_YES, UNANSWERABLE

QUESTIONS = [README_YES, EXT_JSON, COUNT, UNANSWERABLE["yes_no"]]


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from sgfs.cli import main

    code = 0
    try:
        main(["grade", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sgfs", "grade", *args], capture_output=True, text=True, timeout=120, errors="replace"
    )


def write_lines(path: Path, *lines: Any) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "q.jsonl", *QUESTIONS)


def deep(depth: int) -> str:
    return '{"id": "' + str(README_YES["id"]) + '", "answer": ' + "[" * depth + "]" * depth + "}"


def test_a_lone_surrogate_never_breaks_out_or_json(qfile: Path, tmp_path: Path) -> None:
    afile = write_lines(
        tmp_path / "a.jsonl",
        '{"id": "' + README_YES["id"] + '", "response": "yes \\ud800"}',
        '{"id": "' + COUNT["id"] + '", "answer": "163 \\udfff\\ud800"}',
        '{"id": "zz\\ud800", "answer": "yes"}',  # an unknown id with a surrogate: printed in a warning
    )
    out = tmp_path / "graded.jsonl"
    for extra in ((), ("--json",)):
        result = run_subprocess("--questions", str(qfile), "--answers", str(afile), "--out", str(out), *extra)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "zz\\ud800" in result.stderr
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [row["id"] for row in rows] == [x["id"] for x in QUESTIONS]
        assert rows[0]["parsed"] == "yes \ud800" and rows[0]["correct"] is True
        assert rows[2]["parsed"] == "163 \udfff\ud800"
    summary = json.loads(result.stdout)
    assert summary["unknown"] == ["zz\ud800"]


def test_out_is_written_atomically(
    qfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sgfs.cli.grade as grade_module

    afile = write_lines(tmp_path / "a.jsonl", {"id": README_YES["id"], "answer": "yes"})
    out = tmp_path / "graded.jsonl"
    out.write_text("previous results\n")
    real = grade_module._json_line
    calls = {"n": 0}

    def failing(obj: dict[str, Any]) -> bytes:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real(obj)

    monkeypatch.setattr(grade_module, "_json_line", failing)
    code, _, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile), "--out", str(out))
    assert code == 1 and "cannot write" in err and "No space left on device" in err
    assert out.read_text() == "previous results\n"  # untouched, no partial file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "graded.jsonl", "q.jsonl"]  # no temporary

    monkeypatch.setattr(grade_module, "_json_line", real)
    code, _, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile), "--out", str(out))
    assert code == 0, err
    assert len(out.read_text().splitlines()) == len(QUESTIONS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "graded.jsonl", "q.jsonl"]


def test_out_that_cannot_be_written(qfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = write_lines(tmp_path / "a.jsonl", {"id": README_YES["id"], "answer": "yes"})
    for target in (tmp_path, tmp_path / "missing" / "r.jsonl"):
        code, _, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile), "--out", str(target))
        lines = err.splitlines()
        assert code == 1 and lines[-1].startswith("sgfs: error: cannot write"), err
        assert all(line.startswith("sgfs: warning: ") for line in lines[:-1])


def test_a_deeply_nested_line_is_reported_and_the_others_graded(qfile: Path, tmp_path: Path) -> None:
    afile = write_lines(
        tmp_path / "a.jsonl",
        {"id": EXT_JSON["id"], "answer": "json"},
        deep(100_000),
        "{not json",
        {"id": COUNT["id"], "response": "There are 163 rows where tfp <= 0.997."},
    )
    out = tmp_path / "graded.jsonl"
    result = run_subprocess("--questions", str(qfile), "--answers", str(afile), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warnings = result.stderr.splitlines()
    assert f"sgfs: warning: {afile}:2: JSON nested too deeply (line not graded)" in warnings
    assert any(line.startswith(f"sgfs: warning: {afile}:3: not valid JSON") for line in warnings)
    first = result.stdout.splitlines()[0]
    assert first == "graded 2 answers to 4 questions (4 items; variants: template)"
    assert "invalid lines: 2" in result.stdout
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert rows[EXT_JSON["id"]]["correct"] and rows[COUNT["id"]]["correct"]
    assert rows[README_YES["id"]]["missing"]


def test_the_summary_counts_the_answers_given(qfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = write_lines(
        tmp_path / "a.jsonl",
        {"id": README_YES["id"], "answer": "yes"},
        {"id": README_YES["id"], "variant": "paraphrase_1", "answer": "yes"},
        {"id": COUNT["id"], "answer": 163},
        {"id": COUNT["id"], "answer": 164},  # a duplicate: not graded
        {"id": "unknown-1", "answer": 1},  # unknown: not graded
    )
    code, out, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile))
    assert code == 0, err
    assert out.splitlines()[0] == "graded 3 answers to 4 questions (8 items; variants: template, paraphrase_1)"
    code, out, _ = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile), "--json")
    summary = json.loads(out)
    assert (summary["answers"], summary["questions"], summary["n"], summary["missing_items"]) == (3, 4, 8, 5)
    assert summary["invalid"] == []

    one = write_lines(tmp_path / "one.jsonl", {"id": COUNT["id"], "answer": 163})
    code, out, _ = run_in_process(capsys, "--questions", str(qfile), "--answers", str(one))
    assert out.splitlines()[0] == "graded 1 answer to 4 questions (4 items; variants: template)"


def test_many_bad_lines_are_reported_briefly(qfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = write_lines(tmp_path / "a.jsonl", *(["[]"] * 50), {"id": COUNT["id"], "answer": 163})
    code, out, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile), "--json")
    assert code == 0
    lines = [line for line in err.splitlines() if "line not graded" in line]
    assert len(lines) == 20 and lines[0].endswith("a.jsonl:1: expected a JSON object, got an array (line not graded)")
    assert "sgfs: warning: 30 more invalid lines not shown (all are in --json)" in err.splitlines()
    assert len(json.loads(out)["invalid"]) == 50


def test_nothing_readable_is_an_error(qfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "a.jsonl"
    afile.write_bytes(b"\xff\xfe\n" + deep(100_000).encode() + b"\n")
    code, out, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"sgfs: warning: {afile}:1: not valid UTF-8 (line not graded)"
    assert lines[1] == f"sgfs: warning: {afile}:2: JSON nested too deeply (line not graded)"
    assert lines[2] == f"sgfs: error: no answer could be read from {afile} (2 invalid lines)"
    empty = write_lines(tmp_path / "empty.jsonl")
    code, out, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(empty))
    assert code == 0 and out.startswith("graded 0 answers to 4 questions")


def test_a_bad_questions_line_stays_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(COUNT) + "\n" + deep(100_000) + "\n")
    afile = write_lines(tmp_path / "a.jsonl", {"id": COUNT["id"], "answer": 163})
    code, out, err = run_in_process(capsys, "--questions", str(qfile), "--answers", str(afile))
    assert code == 2 and out == ""
    assert err == f"sgfs: error: {qfile}:2: JSON nested too deeply\n"


def test_a_stdout_that_cannot_encode_the_text(tmp_path: Path) -> None:
    """A pipe or terminal that is not UTF-8: escapes instead of a traceback, and --json stays valid JSON."""
    question = dict(README_YES, category="Cat\u00e9gorie")
    qfile = write_lines(tmp_path / "q.jsonl", question)
    afile = write_lines(
        tmp_path / "a.jsonl", {"id": README_YES["id"], "answer": "yes"}, '{"id": "z\\u00e9\\ud800", "answer": 1}'
    )
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    for extra in ((), ("--json",)):
        result = subprocess.run(
            [sys.executable, "-m", "sgfs", "grade", "--questions", str(qfile), "--answers", str(afile), *extra],
            capture_output=True,
            timeout=120,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert b"Traceback" not in result.stderr and b"z\\xe9\\ud800" in result.stderr
        stdout = result.stdout.decode("ascii")
        if extra:
            summary = json.loads(stdout)
            assert summary["unknown"] == ["z\u00e9\ud800"] and "Cat\u00e9gorie" in summary["by_category"]
        else:
            assert "Cat\\xe9gorie" in stdout
