"""``sgfs agent prior``: the prior-only reference agent, learning its table, and its run under `sgfs eval`."""

from __future__ import annotations

import json
import os
import shlex
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from qa.grading import grade
from qa.model import NOT_POSSIBLE
from qa.prior import TRAINING_SEEDS, PriorTable, default_table, learn, read_table, write_table
from qa.records import parse_question_lines
from sgfs.eval.protocol import reference_agent
from sgfs.eval.results import read_json_lines
from sgfs.mount.control import mount_table
from tests.helpers.commands import cli, one_line_error, sgfs
from tests.helpers.mounts import require_fuse

TABLE = PriorTable({"readme": "yes", "count_rows": 48, "bivariate_statistic": -0.03125}, (5, 6), 1, 0.28)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "prior.json"
    write_table(TABLE, path)
    return path


@pytest.fixture(autouse=True)
def no_eval_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SGFS_QUESTION_ID", "SGFS_ANSWER_FILE"):
        monkeypatch.delenv(name, raising=False)


def answer_of(*args: object) -> object:
    result = cli("agent", "prior", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["answer"]


def test_prior_answers_with_its_types_answer(table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = default_table()
    assert answer_of("--id", "118-bivariate_hypothesis-2") == shipped.answer("bivariate_hypothesis")
    assert answer_of("--id", "3-extension-1") == shipped.answer("extension")
    assert answer_of("--id", "3-count_rows-4", "--table", table) == 48
    assert answer_of("--id", "3-bivariate_statistic-1", "--table", table) == -0.03125
    assert answer_of("--id", "3-prefix-1", "--table", table) == NOT_POSSIBLE  # a type the table never saw
    answer_file = tmp_path / "answer"
    monkeypatch.setenv("SGFS_QUESTION_ID", "4-readme-1")  # as `sgfs eval` runs it
    monkeypatch.setenv("SGFS_ANSWER_FILE", str(answer_file))
    result = sgfs("agent", "prior", "--table", table)
    assert result.returncode == 0, result.stderr
    assert json.loads(answer_file.read_text()) == json.loads(result.stdout) == {"answer": "yes"}


def test_prior_refuses_training_seeds_and_bad_input(table: Path, tmp_path: Path) -> None:
    refused = one_line_error(sgfs("agent", "prior", "--id", f"{TRAINING_SEEDS[3]}-readme-1"))
    assert f"learned on seed(s) {TRAINING_SEEDS[3]}" in refused
    assert "learned on seed(s) 6" in one_line_error(sgfs("agent", "prior", "--id", "6-readme-1", "--table", table))
    assert "SGFS_QUESTION_ID" in one_line_error(sgfs("agent", "prior"))
    assert "<seed>-<type>-<k>" in one_line_error(sgfs("agent", "prior", "--id", "x-readme-1"))
    assert "<seed>-<type>-<k>" in one_line_error(sgfs("agent", "prior", "--id", "3-readme"))
    assert "unknown question type 'foo'" in one_line_error(sgfs("agent", "prior", "--id", "3-foo-1"))
    assert "--per-type only applies with --learn" in one_line_error(sgfs("agent", "prior", "--id", "3-readme-1",
                                                                          "--per-type", 1))  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert "not JSON" in one_line_error(sgfs("agent", "prior", "--id", "3-readme-1", "--table", bad))
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**TABLE.to_dict(), "question_format": 1}))
    assert "question format 1" in one_line_error(sgfs("agent", "prior", "--id", "3-readme-1", "--table", old))
    missing = one_line_error(sgfs("agent", "prior", "--id", "3-readme-1", "--table", tmp_path / "absent.json"))
    assert "cannot read the prior table" in missing


def test_learn_writes_a_table(tmp_path: Path) -> None:
    out = tmp_path / "learned.json"
    out.write_text("an older table")  # replaced
    result = sgfs("agent", "prior", "--learn", "2,1", "--per-type", 1, "--unanswerable", 0.5, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"learned the most common answer of 11 question types from 22 questions of 2 seeds (--per-type 1, "
        f"--unanswerable 0.5) into {out}"
    ]
    learned = read_table(out)
    assert (learned.seeds, learned.per_type, learned.unanswerable) == ((2, 1), 1, 0.5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learned.json"]
    # The table learned is learn() over the questions `sgfs qa` writes for those seeds.
    questions = sgfs("qa", "2,1", "--per-type", 1, "--unanswerable", 0.5, "--out", "-")
    records = parse_question_lines(questions.stdout.splitlines(), "qa")
    assert learned == learn([r.question for r in records], (2, 1), 1, 0.5)
    stdout = sgfs("agent", "prior", "--learn", 1, "--per-type", 1, "--out", "-")
    assert stdout.returncode == 0 and PriorTable.from_dict(json.loads(stdout.stdout), "-").seeds == (1,)
    assert "of 1 seed " in stdout.stderr
    answer = answer_of("--id", "3-readme-1", "--table", out)
    assert answer == learned.answer("readme")


def test_learn_refuses_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    assert "invalid seed" in one_line_error(sgfs("agent", "prior", "--learn", "1-x", "--out", out))
    assert "end is below the start" in one_line_error(sgfs("agent", "prior", "--learn", "5-2", "--out", out))
    assert "needs --out" in one_line_error(sgfs("agent", "prior", "--learn", "1"))
    assert "is a directory" in one_line_error(sgfs("agent", "prior", "--learn", "1", "--out", tmp_path))
    nowhere = one_line_error(sgfs("agent", "prior", "--learn", "1", "--out", tmp_path / "missing" / "t.json"))
    assert "does not exist" in nowhere
    assert "--id does not apply" in one_line_error(
        sgfs("agent", "prior", "--learn", "1", "--out", out, "--id", "3-readme-1")
    )
    assert "--table does not apply" in one_line_error(
        sgfs("agent", "prior", "--learn", "1", "--out", out, "--table", out)
    )
    assert "--unanswerable" in sgfs("agent", "prior", "--learn", "1", "--out", out, "--unanswerable", 2).stderr
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "not writable" in one_line_error(sgfs("agent", "prior", "--learn", "1", "--out", locked / "t.json"))
    assert not out.exists()


def test_prior_runs_as_a_reference_agent_but_learning_does_not() -> None:
    assert reference_agent("sgfs agent prior") == [sys.executable, "-m", "sgfs", "agent", "prior"]
    assert reference_agent("sgfs agent prior --table ./t.json") is not None
    assert reference_agent("sgfs agent prior --learn 1-5 --out t.json") is None
    assert reference_agent("sgfs agent prior --out=t.json") is None


# -- under `sgfs eval` -----------------------------------------------------------------------------------
@pytest.fixture
def eval_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An `sgfs` on PATH that is this interpreter's, and a private TMPDIR for the runs' mounts."""
    directory = tmp_path / "bin"
    directory.mkdir()
    wrapper = directory / "sgfs"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m sgfs "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", str(directory) + os.pathsep + os.environ.get("PATH", ""))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    return tmp_path / "tmp"


def left_mounts(private: Path) -> list[str]:
    return [point for point, kind in mount_table().items() if kind == "fuse.sgfs" and point.startswith(str(private))]


@pytest.mark.fuse
def test_eval_scores_the_prior_agent_as_its_tables_answers_grade(tmp_path: Path, eval_environment: Path) -> None:
    require_fuse()
    questions = sgfs("qa", 1, "--per-type", 1, "--out", "-")
    assert questions.returncode == 0, questions.stderr
    records = parse_question_lines(questions.stdout.splitlines(), "qa")
    shipped = default_table()
    expected = {
        r.id: grade(r.graded, json.loads(json.dumps(shipped.answer(r.question.type)), parse_float=Decimal)).correct
        for r in records
    }
    out = tmp_path / "run"
    result = sgfs("eval", 1, "--per-type", 1, "--agent", "sgfs agent prior", "--out", out, "-j", 4, "--no-report",
                  "--quiet", timeout=300)  # fmt: skip
    assert not left_mounts(eval_environment), "a private mount was left behind"
    assert result.returncode == 0, result.stderr
    results = read_json_lines(out / "results.jsonl")
    assert {r["id"]: r["correct"] for r in results} == expected
    assert all(r["status"] == "ok" and r["files_read"] == [] for r in results)  # it reads nothing
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"] == pytest.approx(sum(expected.values()) / len(expected))

    # A table learned on the evaluated seed is refused on every question: each item a crash that says why.
    own = tmp_path / "own.json"
    write_table(PriorTable({"readme": "no"}, (1,), 1, 0.28), own)
    refused = tmp_path / "refused"
    agent = f"sgfs agent prior --table {own}"
    result = sgfs("eval", 1, "--per-type", 1, "--agent", agent, "--out", refused, "-j", 4, "--no-report", "--quiet",
                  timeout=300)  # fmt: skip
    assert not left_mounts(eval_environment), "a private mount was left behind"
    results = read_json_lines(refused / "results.jsonl")
    assert len(results) == len(records) and all(r["status"] == "crash" for r in results)
    assert all("learned on seed(s) 1" in str(r["stderr_tail"]) for r in results)
