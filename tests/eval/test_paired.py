"""The statistics that respect a run's design (sgfs.eval.stats): clustered intervals, the paired comparison with
a baseline (cluster bootstrap, McNemar's exact test), pass@k; and the floors and repeats of a summary."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from qa.result_record import ResultRecord
from sgfs.eval.stats import clustered_proportion, mcnemar_exact, paired_comparison, pass_at_k, wilson
from sgfs.eval.summary import summarize_records
from tests.helpers.commands import one_line_error, sgfs


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k([n], [c], k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))
    assert pass_at_k([3, 3, 2], [1, 0, 2], 2) == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert pass_at_k([2], [1], 3) is None  # nobody tried three times


def test_clustered_interval_is_wilson_for_single_items_and_wider_for_clusters() -> None:
    single = clustered_proportion([True, False, True, True], ["a", "b", "c", "d"])
    assert single.interval == pytest.approx(wilson(3, 4)) and single.design_effect == 1.0
    # Four wordings of each of two questions, perfectly correlated: as wide as two independent items.
    four = clustered_proportion([True] * 4 + [False] * 4, ["a"] * 4 + ["b"] * 4)
    assert four.design_effect == pytest.approx(4.0) and four.effective_n == pytest.approx(2.0)
    naive = wilson(4, 8) or (0.0, 0.0)
    assert four.interval is not None and four.interval[0] < naive[0] and four.interval[1] > naive[1]
    perfect = clustered_proportion([True] * 12, [q for q in "abc" for _ in range(4)])
    assert perfect.interval == pytest.approx(wilson(3, 3))  # all right: each question counts once
    assert clustered_proportion([], []).interval is None


def test_mcnemar_exact_is_the_two_sided_binomial_test() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 0) == pytest.approx(0.25)
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(5, 5) == pytest.approx(1.0)


def test_paired_comparison_is_deterministic_and_pairs_by_question() -> None:
    mine = [True] * 15 + [False] * 5
    theirs = [False] * 10 + [True] * 10
    ids = [f"q{i}" for i in range(20)]
    first = paired_comparison(mine, theirs, ids)
    assert first is not None and first == paired_comparison(mine, theirs, ids)  # seeded
    assert first.difference == pytest.approx(0.25) and first.improved == 10 and first.worsened == 5
    assert first.mcnemar_p == pytest.approx(mcnemar_exact(10, 5))
    low, high = first.interval
    assert low < 0.25 < high
    # The same pairs as four wordings of five questions: no McNemar (pairs are not independent), wider interval.
    grouped = paired_comparison(mine, theirs, [f"q{i // 4}" for i in range(20)])
    assert grouped is not None and grouped.mcnemar_p is None and grouped.clusters == 5
    assert grouped.interval[1] - grouped.interval[0] > high - low
    # Paired data: a constant gap on identical items gives a degenerate interval (an unpaired one would not).
    same = paired_comparison([True, False] * 10, [True, False] * 10, ids)
    assert same is not None and same.interval == (0.0, 0.0)


def _record(qid: str, variant: str, repeat: int, correct: bool, answerable: bool = True) -> ResultRecord:
    return ResultRecord.from_json({
        "id": qid, "variant": variant, "repeat": repeat, "seed": 1, "type": "prefix", "category": "c",
        "answerable": answerable, "correct": correct, "answer": "1", "truth": 2,
        "floors": {"abstain": not answerable, "prior": False},
    })  # fmt: skip


def test_summary_repeats_pass_at_k_and_floors() -> None:
    records = [
        _record("1-a-1", "template", 1, True),
        _record("1-a-1", "template", 2, False),
        _record("1-a-1", "template", 3, True),
        _record("1-b-1", "template", 1, True, answerable=False),
        _record("1-b-1", "template", 2, True, answerable=False),
        _record("1-b-1", "template", 3, True, answerable=False),
    ]
    summary = summarize_records(records, 3).to_json()
    assert summary["repeats"] == 3 and summary["pass_all_k"] == 0.5
    assert summary["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1) / 2) and summary["pass_at_k"]["3"] == 1.0
    assert summary["per_question"] == {"1-a-1": pytest.approx(2 / 3), "1-b-1": 1.0}
    assert summary["run_to_run_sd"] == pytest.approx((1 / 12) ** 0.5)  # accuracies 1, 0.5, 1; ddof 1
    assert summary["floors"]["abstain"]["accuracy"] == 0.5 and summary["floors"]["prior"]["accuracy"] == 0.0
    assert summary["accuracy_interval"]["questions"] == 2
    assert summarize_records(records[:1]).to_json()["run_to_run_sd"] is None
    old = ResultRecord.from_json({"id": "q", "type": "t", "category": "c", "answerable": True, "correct": True})
    assert old.repeat == 1 and old.unit == ("q", "template", 1, None)
    floors = summarize_records([old]).floors
    assert floors["prior"]["accuracy"] is None and "not recorded" in floors["prior"]["reason"]


def test_prior_floor_is_not_applicable_on_training_seeds() -> None:
    from qa.prior import default_table

    seed = default_table().seeds[0]
    record = ResultRecord.from_json({
        "id": f"{seed}-prefix-1", "seed": seed, "type": "prefix", "category": "c", "answerable": True,
        "correct": False, "floors": {"abstain": False, "prior": None},
    })  # fmt: skip
    prior = summarize_records([record]).floors["prior"]
    assert prior["accuracy"] is None and "not applicable" in prior["reason"]


def _run_dir(path: Path, fmt: int | None, records: list[ResultRecord]) -> Path:
    path.mkdir()
    meta: dict[str, object] = {"agent": "x", "run_digest": "d", "variant": "template", "sgfs_version": "0"}
    if fmt is not None:
        meta["question_format"] = fmt
    (path / "run.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    return path


def test_report_baseline_is_paired_and_refuses_other_question_formats(tmp_path: Path) -> None:
    mine = [_record(f"1-q-{i}", "template", 1, i % 3 != 0) for i in range(9)]
    theirs = [_record(f"1-q-{i}", "template", 1, i % 2 == 0) for i in range(10)]
    a = _run_dir(tmp_path / "a", 2, mine)
    b = _run_dir(tmp_path / "b", 2, theirs)
    old = _run_dir(tmp_path / "old", None, theirs)  # made before run.json recorded it: format 1
    result = sgfs("report", a, "--baseline", b, "--out", tmp_path / "r")
    assert result.returncode == 0, result.stderr
    assert "on the 9 items both runs hold" in result.stderr and "paired 95 % interval" in result.stderr
    assert "McNemar p =" in result.stderr
    text = (tmp_path / "r" / "report.md").read_text()
    assert "Unpaired, not compared: 0 items of this run and 1 of the baseline" in text
    assert "McNemar's exact test p =" in text and "bootstrap over the 9 question ids" in text
    error = one_line_error(sgfs("report", a, "--baseline", old, "--out", tmp_path / "r2"))
    assert "question format" in error and "never compared" in error
    assert "question format" in one_line_error(sgfs("report", a, old, "--out", tmp_path / "r3"))
