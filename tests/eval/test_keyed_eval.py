"""``sgfs eval --key``: keyed questions on a keyed private mount, the fingerprint in run.json, the key nowhere,
and runs of different universes never compared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from generators.keys import Key
from tests.helpers.commands import cli, one_line_error, sgfs
from tests.helpers.mounts import mounted, require_fuse

SEEDS = "2,3"


def _key(path: Path) -> Path:
    assert cli("key", "new", path).returncode == 0
    return path


def _secret_forms(key: Path) -> list[str]:
    text = key.read_text().strip()
    return [text, text[:16], text[-16:]]


def _run(out: Path, key: Path | None, *extra: object) -> tuple[int, str]:
    keyed = () if key is None else ("--key", key)
    agent = "sgfs agent oracle --per-type 1" + ("" if key is None else f" --key {key}")
    common = ("--per-type", 1, "--no-report", "-q", "--no-sandbox")
    result = sgfs("eval", SEEDS, "--agent", agent, "--out", out, *common, *keyed, *extra, timeout=300)
    return result.returncode, result.stderr


@pytest.fixture(scope="module")
def keyed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    require_fuse()
    root = tmp_path_factory.mktemp("keyed")
    key = _key(root / "universe.key")
    code, err = _run(root / "run", key)
    assert code == 0, err
    return root / "run", key


@pytest.mark.fuse
def test_keyed_oracle_is_perfect_and_run_json_has_the_fingerprint(keyed_run: tuple[Path, Path]) -> None:
    out, key = keyed_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"] == 1.0
    meta = json.loads((out / "run.json").read_text())
    assert meta["key_fingerprint"] == Key.load(key).fingerprint
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    for form in _secret_forms(key):
        assert form not in written
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["correct"] for r in records)


@pytest.mark.fuse
def test_open_universe_answers_are_wrong_in_the_keyed_universe(tmp_path: Path, keyed_run: tuple[Path, Path]) -> None:
    """An agent that computes the answers without the key (the oracle of the open universe) is not perfect."""
    _, key = keyed_run
    result = sgfs(
        "eval", SEEDS, "--per-type", 1, "--key", key, "--agent", "sgfs agent oracle --per-type 1",
        "--out", tmp_path / "cheat", "--no-report", "-q", "--no-sandbox", timeout=300,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert json.loads((tmp_path / "cheat" / "summary.json").read_text())["accuracy"] < 1.0


@pytest.mark.fuse
def test_a_user_mount_with_the_same_key(tmp_path: Path, keyed_run: tuple[Path, Path]) -> None:
    _, key = keyed_run
    audit = tmp_path / "audit.jsonl"
    with mounted(tmp_path / "mnt", "--key", key, "--audit", audit) as mnt:
        code, err = _run(tmp_path / "user", key, "--mount", mnt, "--audit", audit)
    assert code == 0, err
    assert json.loads((tmp_path / "user" / "summary.json").read_text())["accuracy"] == 1.0


@pytest.mark.fuse
def test_report_and_baseline_refuse_other_universes(tmp_path: Path, keyed_run: tuple[Path, Path]) -> None:
    out, _ = keyed_run
    # A shard-like copy of the run made with another key: never put together with it.
    other = tmp_path / "other"
    shutil.copytree(out, other)
    meta = json.loads((other / "run.json").read_text())
    meta["key_fingerprint"] = "0123456789abcdef"
    (other / "run.json").write_text(json.dumps(meta))
    line = one_line_error(sgfs("report", out, other, "--out", tmp_path / "r1"))
    assert "different universes" in line
    line = one_line_error(sgfs("report", out, "--baseline", other, "--out", tmp_path / "r2"))
    assert "different universes" in line
    # sgfs eval refuses a baseline of another universe before running any agent.
    line = one_line_error(
        sgfs("eval", SEEDS, "--per-type", 1, "--agent", "sgfs agent abstain", "--out", tmp_path / "new",
             "--baseline", out, "--no-report", "-q", "--no-sandbox")
    )  # fmt: skip
    assert "different universes" in line and not (tmp_path / "new").exists()
    # The same universe is fine.
    assert sgfs("report", out, "--baseline", out, "--out", tmp_path / "r3").returncode == 0


def test_eval_refuses_a_bad_key_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("nope\n")
    line = one_line_error(
        sgfs("eval", SEEDS, "--agent", "sgfs agent abstain", "--out", tmp_path / "o", "--key", bad, "-q")
    )
    assert "invalid key file" in line
