"""``--mess`` from the command line (tree, cat, spec, digest, qa, export, mount) and its clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators import build_spec
from generators.repository import Repository
from generators.spec import GENERATOR_VERSION, World
from sgfs.errors import SgfsError
from sgfs.eval.results import RunInfo, check_same_format
from tests.helpers.commands import cli, one_line_error, sgfs
from tests.helpers.mounts import files_under, mounted

SEED = 12
LEVEL = 3


def messy() -> Repository:
    return Repository(build_spec(SEED, world=World(mess=LEVEL)))


def test_tree_cat_spec_and_digest_follow_the_level(tmp_path: Path) -> None:
    repo = messy()
    assert cli("tree", SEED, "--mess", LEVEL).stdout.splitlines() == repo.file_paths()
    assert cli("tree", SEED, "--mess", 0).stdout == cli("tree", SEED).stdout
    codebook = sgfs("cat", SEED, "CODEBOOK.md", "--mess", LEVEL)
    assert codebook.returncode == 0 and codebook.stdout.startswith("# Codebook")
    assert json.loads(cli("spec", SEED, "--mess", LEVEL).stdout)["mess"] == LEVEL
    assert cli("digest", SEED, "--mess", LEVEL).stdout.strip() == repo.digest()
    # A spec file carries its level: it reproduces the messy repository without the option, and refuses it.
    spec_file = tmp_path / "messy.json"
    spec_file.write_text(cli("spec", SEED, "--mess", LEVEL).stdout)
    assert cli("digest", spec_file).stdout.strip() == repo.digest()
    assert "applies to seeds" in one_line_error(cli("digest", spec_file, "--mess", 1))


@pytest.mark.parametrize("level", ["4", "-1", "two"])
def test_a_bad_level_is_one_line(level: str) -> None:
    result = cli("tree", SEED, "--mess", level)
    assert result.returncode == 2 and "--mess" in one_line_error(result)


def test_the_level_is_refused_with_a_pack(tmp_path: Path) -> None:
    pack = tmp_path / "p.sgfspack"
    assert cli("specs", "build", "1-2", "--backend", "procedural", "--out", pack).returncode == 0
    result = cli("tree", 1, "--specs", pack, "--mess", 2)
    assert result.returncode == 2 and "not to a spec pack" in one_line_error(result)


def test_qa_records_the_level_and_states_the_convention() -> None:
    records = [json.loads(line) for line in cli("qa", "1-4", "--mess", 2, "--out", "-").stdout.splitlines()]
    assert records and all(r["mess"] == 2 for r in records)
    rows = [r for r in records if r["type"] in ("count_rows", "univariate_condition")]
    assert rows and all("CODEBOOK.md" in r["question"] for r in rows)
    assert all("CODEBOOK.md" not in r["question"] for r in records if r["type"] in ("readme", "title"))
    clean = [json.loads(line) for line in cli("qa", "1-4", "--out", "-").stdout.splitlines()]
    assert all(r["mess"] == 0 and "CODEBOOK" not in r["question"] for r in clean)


def test_export_writes_every_messy_file(tmp_path: Path) -> None:
    out = tmp_path / "export"
    assert cli("export", SEED, out, "--mess", LEVEL, "--quiet").returncode == 0
    repo = messy()
    assert files_under(out) == repo.file_paths()
    for path in repo.file_paths()[:5]:
        assert (out / path).read_bytes() == repo.read(path)


@pytest.mark.fuse
def test_a_messy_mount_serves_the_messy_repository(tmp_path: Path) -> None:
    repo = messy()
    with mounted(tmp_path / "mnt", "--seeds", str(SEED), "--mess", str(LEVEL), "--no-disk-cache") as mnt:
        root = mnt / str(SEED)
        assert files_under(root) == repo.file_paths()
        for path in [*repo.file_paths()[:4], "CODEBOOK.md"]:
            assert (root / path).read_bytes() == repo.read(path)
            assert (root / path).stat().st_size == len(repo.read(path))


def test_eval_refuses_questions_of_another_level(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(cli("qa", "1", "--out", "-", "--mess", 2).stdout)
    common = ("eval", "--questions", questions, "--agent", "sgfs agent abstain", "--no-sandbox", "-q")
    line = one_line_error(cli(*common, "--out", tmp_path / "run1"))
    assert "--mess 2" in line
    line = one_line_error(cli(*common, "--mess", 1, "--out", tmp_path / "run2"))
    assert "--mess 2" in line


def test_runs_of_other_levels_are_never_compared() -> None:
    meta = {"agent": "a", "run_digest": "d", "generator_version": GENERATOR_VERSION, "mess": 2}
    first = RunInfo.of("A", meta)
    assert first.mess == 2 and RunInfo.of("C", {"agent": "a"}).mess == 0  # run.json written before it was recorded
    with pytest.raises(SgfsError, match="messiness"):
        check_same_format(first, RunInfo.of("B", {**meta, "mess": 0}))
    check_same_format(first, RunInfo.of("D", dict(meta)))


@pytest.mark.fuse
def test_eval_of_a_messy_world_records_and_reports_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    oracle = "sgfs agent oracle --per-type 1 --mess 2"  # it regenerates the question at that level
    result = cli("eval", "1-2", "--per-type", "1", "--agent", oracle, "--out", out, "--mess", 2, "-q")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "run.json").read_text())["mess"] == 2
    assert json.loads((out / "summary.json").read_text())["accuracy"] == 1.0
    assert "mess level: 2" in (out / "report" / "report.md").read_text()
    resumed = cli("eval", "1-2", "--per-type", "1", "--agent", oracle, "--out", out, "--resume", "-q")
    assert resumed.returncode == 2 and "--mess 2" in one_line_error(resumed)
