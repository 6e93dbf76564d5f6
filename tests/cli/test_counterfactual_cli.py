"""``--counterfactual`` from the command line (spec, digest, cat, qa, mount, eval) and the generator version that
specs, questions and runs record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import generators
from generators.builders.procedural import build_spec
from generators.repository import Repository
from generators.spec import GENERATOR_VERSION, World
from sgfs.errors import SgfsError
from sgfs.eval.results import RunInfo, check_same_format
from tests.helpers.commands import cli, one_line_error
from tests.helpers.mounts import mounted

SEED = 3
WORLD = World(counterfactual=True)


def test_spec_records_the_flips_and_the_generator_version() -> None:
    plain = json.loads(cli("spec", SEED).stdout)
    world = json.loads(cli("spec", SEED, "--counterfactual").stdout)
    assert plain["generator_version"] == world["generator_version"] == GENERATOR_VERSION
    assert plain["counterfactual"] == [] and world["counterfactual"]
    for flip in world["counterfactual"]:
        assert set(flip) == {"outcome", "cause", "expected"} and flip["expected"] in (1, -1)
    assert plain["project"] == world["project"]  # the repository reads as usual


def test_digest_and_bytes_follow_the_world(tmp_path: Path) -> None:
    plain = cli("digest", SEED).stdout.strip()
    world = cli("digest", SEED, "--counterfactual").stdout.strip()
    assert plain == generators.repository(SEED).digest()
    assert world == Repository(build_spec(SEED, world=WORLD)).digest() != plain
    # A spec file of the counterfactual world reproduces it without the flag, and refuses the flag.
    spec_file = tmp_path / "world.json"
    spec_file.write_text(cli("spec", SEED, "--counterfactual").stdout)
    assert cli("digest", spec_file).stdout.strip() == world
    line = one_line_error(cli("digest", spec_file, "--counterfactual"))
    assert "applies to seeds" in line


def test_the_flag_is_refused_with_a_pack(tmp_path: Path) -> None:
    pack = tmp_path / "p.sgfspack"
    assert cli("specs", "build", "1-2", "--backend", "procedural", "--out", pack).returncode == 0
    for command in (("digest", 1), ("tree", 1), ("qa", "1", "--out", "-")):
        result = cli(*command, "--specs", pack, "--counterfactual")
        assert result.returncode == 2 and "not to a spec pack" in one_line_error(result)


def test_qa_marks_questions_of_the_counterfactual_world(tmp_path: Path) -> None:
    lines = cli("qa", "1-6", "--out", "-", "--counterfactual").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert records and all(r["counterfactual"] is True for r in records)
    assert all(r["generator_version"] == GENERATOR_VERSION for r in records)
    priors = {r["prior"] for r in records}
    assert "violating" in priors and "consistent" in priors
    for record in records:
        if record["prior"] is not None:
            assert record["type"] in ("bivariate_statistic", "bivariate_hypothesis")
    plain = [json.loads(line) for line in cli("qa", "1-6", "--out", "-").stdout.splitlines()]
    assert all(r["counterfactual"] is False and r["prior"] in (None, "consistent") for r in plain)


def test_eval_refuses_questions_of_another_world_or_generator(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(cli("qa", "1", "--out", "-", "--counterfactual").stdout)
    common = ("eval", "--questions", questions, "--agent", "sgfs agent abstain", "--no-sandbox", "-q")
    line = one_line_error(cli(*common, "--out", tmp_path / "run1"))
    assert "counterfactual world" in line and "add --counterfactual" in line
    old = tmp_path / "old.jsonl"
    records = [json.loads(line) for line in questions.read_text().splitlines()]
    for record in records:
        record["generator_version"] = GENERATOR_VERSION - 1
    old.write_text("".join(json.dumps(r) + "\n" for r in records))
    line = one_line_error(cli(*common[:2], old, *common[3:], "--counterfactual", "--out", tmp_path / "run2"))
    assert f"generator version {GENERATOR_VERSION - 1}" in line and "sgfs qa" in line


def test_runs_of_other_generators_or_worlds_are_never_compared() -> None:
    meta = {"agent": "a", "run_digest": "d", "generator_version": GENERATOR_VERSION, "counterfactual": False}
    first = RunInfo.of("A", meta)
    with pytest.raises(SgfsError, match="different generators"):
        check_same_format(first, RunInfo.of("B", {**meta, "generator_version": GENERATOR_VERSION - 1}))
    with pytest.raises(SgfsError, match="different worlds"):
        check_same_format(first, RunInfo.of("B", {**meta, "counterfactual": True}))
    assert RunInfo.of("C", {"agent": "a"}).generator_version == 3  # run.json written before it was recorded
    check_same_format(first, RunInfo.of("D", dict(meta)))


@pytest.mark.fuse
def test_a_counterfactual_mount_serves_the_counterfactual_bytes(tmp_path: Path) -> None:
    repository = Repository(build_spec(SEED, world=WORLD))
    path = next(p for p in repository.file_paths() if p != "README.md")
    with mounted(tmp_path / "mnt", "--seeds", str(SEED), "--counterfactual", "--no-disk-cache") as mnt:
        assert (mnt / str(SEED) / path).read_bytes() == repository.read(path)
        assert (mnt / str(SEED) / path).read_bytes() != generators.repository(SEED).read(path)


@pytest.mark.fuse
def test_eval_in_the_counterfactual_world_records_and_reports_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    oracle = "sgfs agent oracle --per-type 1 --counterfactual"  # it regenerates the question in that world
    result = cli("eval", "1", "--per-type", "1", "--agent", oracle, "--out", out, "--counterfactual", "-q")
    assert result.returncode == 0, result.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["counterfactual"] is True and run["generator_version"] == GENERATOR_VERSION
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"] == 1.0  # the oracle's answers are the counterfactual world's, and the mount serves it
    report = (out / "report" / "report.md").read_text()
    assert f"- generator version: {GENERATOR_VERSION}; world: counterfactual (--counterfactual)" in report
    resumed = cli("eval", "1", "--per-type", "1", "--agent", oracle, "--out", out, "--resume", "-q")
    assert resumed.returncode == 2 and "another world" in one_line_error(resumed)


@pytest.mark.fuse
def test_questions_of_a_repository_with_nothing_to_turn_belong_to_the_counterfactual_run(tmp_path: Path) -> None:
    """A design may leave a repository no relation to turn around: in the counterfactual world it is the plain one,
    yet its questions belong to the --counterfactual run that made them. They were marked as the plain world's, so
    `sgfs eval --counterfactual --questions` refused a question file of `sgfs qa 1-6 --counterfactual`."""
    seed = next(s for s in range(1, 400) if not build_spec(s, world=WORLD).counterfactual)
    questions = tmp_path / "q.jsonl"
    questions.write_text(cli("qa", seed, "--per-type", 1, "--out", "-", "--counterfactual").stdout)
    records = [json.loads(line) for line in questions.read_text().splitlines()]
    assert records and all(r["counterfactual"] is True and r["prior"] != "violating" for r in records)
    out = tmp_path / "run"
    oracle = "sgfs agent oracle --per-type 1 --counterfactual"
    result = cli("eval", "--questions", questions, "--agent", oracle, "--out", out, "--counterfactual", "-q")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "run.json").read_text())["counterfactual"] is True
    assert json.loads((out / "summary.json").read_text())["accuracy"] == 1.0
