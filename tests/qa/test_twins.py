"""Ambiguous twins (``sgfs qa --ambiguous``): every reading's answer is checked by the independent solver.

The solver (tests/helpers/solver) sees only the exported files and a query: each twin's intended reading (its own
query) and each decoy reading (``ambiguity.decoy_answers[i].query``) is solved from the files and compared with
the record. Decoys must differ from the intended answer as the question asks for it (at its significant figures),
the full twin must be in the file beside its twin with the same query and answer, and no wording of the twin may
state the decision the full twin states. Seeds: ``SGFS_TWIN_SEEDS`` (e.g. ``9101-9140``) or the six below, one
per file format.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.solver.solve import NOT_POSSIBLE, solve

DEFAULT_SEEDS = [1, 2, 3, 5, 6, 8]  # txt, log, json, csv, xlsx, jsonl (small trees, see test_solver.SEEDS)
REL_TOL = 1e-9
ABS_TOL = 1e-12
WORKERS = max(1, min(2, os.cpu_count() or 1))


def _seeds() -> list[int]:
    given = os.environ.get("SGFS_TWIN_SEEDS")
    if not given:
        return DEFAULT_SEEDS
    low, _, high = given.partition("-")
    return list(range(int(low), int(high or low) + 1))


def _sgfs(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "sgfs", *args], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"sgfs {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def twins_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict[int, Path]]:
    base = tmp_path_factory.mktemp("twins")
    seeds = _seeds()
    out = base / "twins.jsonl"
    repos = {seed: base / f"repo-{seed}" for seed in seeds}
    with ThreadPoolExecutor(WORKERS) as pool:
        exports = [pool.submit(_sgfs, "export", str(seed), str(repos[seed])) for seed in seeds]
        _sgfs("qa", ",".join(map(str, seeds)), "--ambiguous", "--out", str(out), "-q")
        for job in exports:
            job.result()
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
    return records, repos


def _rounded(value: float, figures: int) -> float:
    return float(f"{value:.{figures - 1}e}")


def _same(kind: str, a: Any, b: Any) -> bool:
    if kind == "continuous":
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return bool(a == b)


def _solved(record: dict[str, Any], query: dict[str, Any], repo: Path) -> Any:
    answer, reason = solve({**record, "query": query}, repo)
    assert reason is None and answer != NOT_POSSIBLE, f"{record['id']}: a reading the solver cannot answer ({reason})"
    return answer


def _variants(record: dict[str, Any]) -> list[str]:
    return [record["question"], *record["paraphrases"]]


def test_every_reading_of_every_twin_is_exact(twins_corpus: tuple[list[dict[str, Any]], dict[int, Path]]) -> None:
    records, repos = twins_corpus
    by_id = {r["id"]: r for r in records}
    twins = [r for r in records if "ambiguity" in r]
    decisions = Counter(t["ambiguity"]["decision"] for t in twins)
    print(f"{len(twins)} twins over {len(repos)} repositories: {dict(decisions)}")
    # Both families, each of their decisions, over the default seeds.
    assert {"file", "statistic", "correlation"} <= set(decisions), decisions
    decoys = 0
    for twin in twins:
        ambiguity, kind = twin["ambiguity"], twin["answer_kind"]
        full = by_id[ambiguity["full_id"]]
        assert twin["id"] == f"{full['id']}-ambig" and "ambiguity" not in full
        assert (twin["query"], twin["answer"], twin["answerable"]) == (full["query"], full["answer"], True)
        assert twin["question"] != full["question"]
        repo = repos[twin["seed"]]
        assert _same(kind, _solved(twin, twin["query"], repo), twin["answer"]), twin["id"]
        for decoy in ambiguity["decoy_answers"]:
            decoys += 1
            got = _solved(twin, decoy["query"], repo)
            assert _same(kind, got, decoy["answer"]), f"{twin['id']} {decoy['reading']}: solver {got!r}"
            assert {k: v for k, v in decoy["query"].items() if k not in ("statistic", "path")} == {
                k: v for k, v in twin["query"].items() if k not in ("statistic", "path")
            }, "a decoy reading changes only the open decision"
            if kind == "continuous":
                figures = twin["sig_figs"]
                assert _rounded(decoy["answer"], figures) != _rounded(twin["answer"], figures), twin["id"]
            else:
                assert decoy["answer"] != twin["answer"], twin["id"]
        # The twin's wording leaves the decision open in every variant: no reading is named.
        readings = [ambiguity["intended"], *(d["reading"] for d in ambiguity["decoy_answers"])]
        for text in _variants(twin):
            assert ambiguity["open"].split("`")[0].removeprefix("the ").strip() in text
            for reading in readings:
                assert reading.strip("`") not in text, (twin["id"], reading)
        if ambiguity["decision"] == "file":
            assert "path" not in twin["variables"]
    assert decoys >= len(twins)


def test_twins_leave_full_questions_unchanged() -> None:
    plain = _sgfs("qa", "3,5", "--per-type", "2", "--out", "-")
    with_twins = _sgfs("qa", "3,5", "--per-type", "2", "--ambiguous", "--out", "-")
    kept = [line for line in with_twins.splitlines() if '"ambiguity"' not in line]
    assert kept == plain.splitlines()
    assert len(with_twins.splitlines()) > len(kept)
