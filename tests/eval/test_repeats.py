"""`sgfs eval --repeats K` end to end on a real mount: records carry `repeat`, summary.json has pass@k and the
floors, the report shows them; resume works per (id, variant, repeat); mixing question formats is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators.spec import GENERATOR_VERSION
from qa.model import QUESTION_FORMAT
from tests.eval.test_eval import agent_path, questions, records_of, run_eval  # noqa: F401
from tests.helpers.commands import one_line_error, sgfs
from tests.helpers.mounts import require_fuse

ABSTAIN = "sgfs agent abstain"


@pytest.mark.parametrize("bad", ["0", "101", "-1", "x"])
def test_bad_repeats_is_one_line_exit_2(tmp_path: Path, questions: Path, bad: str) -> None:  # noqa: F811
    result = sgfs("eval", "--questions", questions, "--agent", ABSTAIN, "--out", tmp_path / "r", "--repeats", bad)
    assert "repeats" in one_line_error(result)
    assert not (tmp_path / "r").exists()


@pytest.mark.fuse
def test_repeats_records_summary_report_and_resume(tmp_path: Path, questions: Path) -> None:  # noqa: F811
    require_fuse()
    out = tmp_path / "run"
    agent = f"sgfs agent random --questions {questions}"
    result = run_eval("--questions", questions, "--agent", agent, "--out", out, "--repeats", 3, "-j", 4)
    assert result.returncode == 0, result.stderr
    ids = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
    records = records_of(out)
    assert sorted((r["id"], r["repeat"]) for r in records) == sorted((i, k) for i in ids for k in (1, 2, 3))
    assert all(r["truth"] is not None and set(r["floors"]) == {"abstain", "prior"} for r in records)
    assert all(r["floors"]["abstain"] == (not r["answerable"]) for r in records)
    run = json.loads((out / "run.json").read_text())
    assert run["repeats"] == 3 and run["question_format"] == QUESTION_FORMAT and run["questions"] == len(ids)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["repeats"] == 3 and set(summary["pass_at_k"]) == {"1", "2", "3"}
    assert summary["pass_at_k"]["1"] == pytest.approx(summary["accuracy"])
    assert summary["pass_all_k"] is not None and summary["run_to_run_sd"] is not None
    assert set(summary["per_question"]) == set(ids)
    assert summary["accuracy_interval"]["questions"] == len(ids) and summary["accuracy_interval"]["n"] == 3 * len(ids)
    unanswerable = sum(not r["answerable"] for r in records) / len(records)
    assert summary["floors"]["abstain"]["accuracy"] == pytest.approx(unanswerable)
    assert summary["floors"]["prior"]["accuracy"] is not None
    assert "pass@3" in result.stderr and "floors: abstain" in result.stderr
    text = (out / "report" / "report.md").read_text()
    for heading in ("### Answerable and unanswerable questions", "### By wording (variant)", "## Floors",
                    "## Repeats", "## Wrong answers"):  # fmt: skip
        assert heading in text, heading
    assert "pass@3" in text and "- sandbox: " in text and "- key fingerprint: none" in text
    assert f"- question format: {QUESTION_FORMAT}" in text
    assert f"- generator version: {GENERATOR_VERSION}; world: plain" in text
    wrong = [r for r in records if not r["correct"]]
    section = text.split("## Wrong answers")[1]
    assert all(r["id"] in section for r in wrong) and section.count("\n| ") >= min(len(wrong), 50) + 1
    assert "<h2>Floors</h2>" in (out / "report" / "report.html").read_text()

    # Resume runs only the missing (id, variant, repeat) units; another --repeats or question format is refused.
    lines = (out / "results.jsonl").read_text().splitlines()
    dropped = json.loads(lines[-1])
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    again = run_eval("--questions", questions, "--agent", agent, "--out", out, "--repeats", 3, "--resume",
                     "--no-report")  # fmt: skip
    assert again.returncode == 0, again.stderr
    after = records_of(out)
    assert len(after) == len(records) and after[-1]["id"] == dropped["id"] and after[-1]["repeat"] == dropped["repeat"]
    refused = one_line_error(
        sgfs("eval", "--questions", questions, "--agent", agent, "--out", out, "--repeats", 2, "--resume")
    )
    assert "--repeats 3" in refused
    old = tmp_path / "old"
    old.mkdir()
    meta = json.loads((out / "run.json").read_text())
    del meta["question_format"]  # a run made before the format was recorded: format 1
    (old / "run.json").write_text(json.dumps(meta))
    (old / "results.jsonl").write_text((out / "results.jsonl").read_text())
    refused = one_line_error(
        sgfs("eval", "--questions", questions, "--agent", agent, "--out", old, "--repeats", 3, "--resume")
    )
    assert "question format 1" in refused
    refused = one_line_error(
        sgfs("eval", "--questions", questions, "--agent", ABSTAIN, "--out", tmp_path / "new", "--baseline", old)
    )
    assert "question format" in refused and not (tmp_path / "new").exists()

    # A baseline with the same repeats is compared pair by pair, with a paired interval, and recorded.
    base = tmp_path / "abstain"
    result = run_eval("--questions", questions, "--agent", ABSTAIN, "--out", base, "--repeats", 3, "-j", 4,
                      "--no-report")  # fmt: skip
    assert result.returncode == 0, result.stderr
    compared = run_eval("--questions", questions, "--agent", agent, "--out", tmp_path / "cmp", "--repeats", 3,
                        "-j", 4, "--baseline", base)  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert f"on the {3 * len(ids)} items both runs hold" in compared.stderr
    paired = json.loads((tmp_path / "cmp" / "summary.json").read_text())["baseline"]
    assert paired["paired_items"] == 3 * len(ids) and paired["questions"] == len(ids)
    assert paired["mcnemar_p"] is None  # three repeats of each question: pairs are not independent
    assert paired["interval"][0] <= paired["difference"] <= paired["interval"][1]
    assert "McNemar's test not given" in (tmp_path / "cmp" / "report" / "report.md").read_text()
