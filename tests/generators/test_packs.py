"""Spec packs: format, integrity, hostile content, resume, `sgfs specs`, and `--specs PACK` on every command.

The LLM backends have their own tests (test_llm_openai.py, test_llm_vllm.py); here packs are built with the
procedural backend or filled by hand.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

import generators
from generators import build_spec, packs
from generators.llm.base import ChatRequest, Completion, Sampling
from generators.llm.pipeline import BuildOptions, build, build_metadata, open_for_build
from generators.llm.procedural import ProceduralBackend
from generators.packs import PackError, PackRepositories, SeedNotInPack, SpecPack, spec_digest
from tests.helpers.commands import SGFS, cli, one_line_error, sgfs, wait_until
from tests.helpers.mounts import mounted

TITLED_SEED = 11  # README present and showing the title; 25 files


def procedural_pack(path: Path, seeds: str) -> Path:
    result = cli("specs", "build", seeds, "--backend", "procedural", "--out", path, "--quiet")
    assert result.returncode == 0, result.stderr
    return path


def tamper(path: Path, sql: str, *args: object) -> None:
    """Change a pack behind sgfs's back, as a hostile or careless sender could."""
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


def hostile_spec_text(seed: int, edit: str) -> str:
    data = build_spec(seed).to_dict()
    if edit == "expression":
        dependent = next(i for i, v in enumerate(data["variables"]) if v["role"] == "dependent")
        data["variables"][dependent]["expression"] = "__import__('os').system('touch pwned')"
    elif edit == "traversal":
        data["path_variables"][0]["values"][0] = "../../etc"
    elif edit == "na":
        independent = next(
            i for i, v in enumerate(data["variables"]) if v["role"] == "independent" and v["type"] == "categorical"
        )
        data["variables"][independent]["categories"][0] = "NA"
    elif edit == "size":
        data["params"]["rows_max"] = 100_000
        data["params"]["rows_mean"] = 90_000.0
    return json.dumps(data, indent=2) + "\n"


def put_raw(path: Path, seed: int, text: str) -> None:
    """Store ``text`` as seed's spec with a correct digest: integrity passes, validation must refuse it."""
    tamper(path, "UPDATE specs SET spec = ?, digest = ? WHERE seed = ?", text, spec_digest(text), seed)


# -- the pack format ---------------------------------------------------------------------------------
def test_round_trip_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "p.sgfspack"
    with SpecPack.create(path, {"backend": "manual", "model": "m"}) as pack:
        for seed in (5, 3, 2**63 - 1):
            pack.put(build_spec(seed), "added", attempts=2, prompt_tokens=10, completion_tokens=20, note="n")
    with SpecPack.open(path) as pack:
        assert pack.seeds() == [3, 5, 2**63 - 1]
        assert len(pack) == 3 and 5 in pack and 4 not in pack
        assert pack.spec(5) == build_spec(5)
        entry = pack.entry(5)
        assert (entry.status, entry.attempts, entry.prompt_tokens, entry.completion_tokens) == ("added", 2, 10, 20)
        assert pack.metadata["backend"] == "manual" and pack.metadata["format"] == "sgfs-spec-pack"
        assert pack.verify() == []
        with pytest.raises(SeedNotInPack):
            pack.spec(4)
        with pytest.raises(PackError, match="read-only"):
            pack.put(build_spec(4), "added")
    with pytest.raises(PackError, match="already exists"):
        SpecPack.create(path, {})


def test_not_a_pack_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sgfspack"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(PackError, match="not an sgfs spec pack"):
        SpecPack.open(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(PackError, match="table 'meta'"):
        SpecPack.open(other)
    with pytest.raises(PackError, match="no such pack"):
        SpecPack.open(tmp_path / "missing")


def test_digest_mismatch_is_detected(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-3")
    text = build_spec(2).to_json().replace(build_spec(2).project.title, "Edited by hand")
    tamper(path, "UPDATE specs SET spec = ? WHERE seed = 2", text)
    with SpecPack.open(path) as pack, pytest.raises(PackError, match="seed 2: digest mismatch"):
        pack.spec(2)
    result = cli("specs", "verify", path)
    assert result.returncode == 1
    assert "seed 2: digest mismatch" in result.stderr and "1 of 3 specs refused" in result.stderr


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("expression", "variables[{i}].expression"),
        ("traversal", "path_variables[0].values[0]"),
        ("na", "categories: 'NA' would read back as a missing value"),
        ("size", "params.rows_max"),
    ],
)
def test_hostile_specs_are_refused_with_seed_and_field(tmp_path: Path, edit: str, field: str) -> None:
    seed = 12  # every kind of column, for the edits to reach
    path = procedural_pack(tmp_path / "p.sgfspack", "11-13")
    put_raw(path, seed, hostile_spec_text(seed, edit))
    with SpecPack.open(path) as pack, pytest.raises(PackError) as caught:
        pack.spec(seed)
    message = str(caught.value)
    assert f"seed {seed}: refused: " in message
    assert field.split("{")[0] in message, message
    # Every command that reads the spec refuses it the same way, as one line.
    for command in (("digest", seed), ("cat", seed, "README.md"), ("tree", seed)):
        line = one_line_error(cli(*command, "--specs", path))
        assert f"seed {seed}: refused" in line
    assert not Path("pwned").exists()
    # Other seeds of the pack still work; verify names the bad one.
    assert cli("digest", 11, "--specs", path).stdout.strip() == generators.repository(11).digest()
    assert f"seed {seed}: refused" in cli("specs", "verify", path).stderr


def test_spec_filed_under_another_seed_is_refused(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-2")
    put_raw(path, 1, build_spec(2).to_json())
    with SpecPack.open(path) as pack, pytest.raises(PackError, match="seed 1: refused: seed: the spec says 2"):
        pack.spec(1)


def test_bad_status_and_counts_are_refused(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-2")
    tamper(path, "UPDATE specs SET status = 'trusted' WHERE seed = 1")
    tamper(path, "UPDATE specs SET attempts = -3 WHERE seed = 2")
    problems = SpecPack.open(path).verify()
    assert len(problems) == 2
    assert "seed 1: status 'trusted'" in problems[0] and "seed 2: attempts" in problems[1]


# -- building: procedural identity and resume --------------------------------------------------------
def test_procedural_pack_gives_identical_repositories(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-12")
    verified = cli("specs", "verify", path)
    assert verified.returncode == 0 and verified.stdout.startswith("ok: 12 specs")
    for seed in (1, 6, 12):
        with_pack = cli("digest", seed, "--specs", path)
        without = cli("digest", seed)
        assert with_pack.returncode == 0, with_pack.stderr
        assert with_pack.stdout == without.stdout
    assert cli("spec", 6, "--specs", path).stdout == cli("spec", 6).stdout
    assert cli("tree", 6, "--specs", path).stdout == cli("tree", 6).stdout
    with SpecPack.open(path) as pack:
        assert {e.status for e in pack.entries()} == {"generated"}
        assert pack.metadata["backend"] == "procedural" and pack.metadata["prompt_version"] == "v2"


class Interrupting(ProceduralBackend):
    """Procedural answers that stop the build (like a kill) after ``calls`` batches."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.seen: list[int] = []

    def complete(self, requests: list[ChatRequest], sampling: Sampling) -> list[Completion]:  # type: ignore[override]
        if self.calls == 0:
            raise KeyboardInterrupt
        self.calls -= 1
        self.seen += [r.key for r in requests]
        return super().complete(requests, sampling)


def test_interrupted_build_resumes_without_redoing_seeds(tmp_path: Path) -> None:
    path = tmp_path / "p.sgfspack"
    options = BuildOptions(batch_size=4)
    first = Interrupting(calls=2)
    pack = open_for_build(path, build_metadata(first, options, "test"))
    with pytest.raises(KeyboardInterrupt):
        build(list(range(1, 21)), first, pack, options)
    pack.close()
    assert SpecPack.open(path).seeds() == list(range(1, 9))  # two committed batches
    second = Interrupting(calls=100)
    pack = open_for_build(path, build_metadata(second, options, "test"))
    report = build(list(range(1, 21)), second, pack, options)
    pack.close()
    assert second.seen == list(range(9, 21))
    assert (report.resumed, report.built) == (8, 12)
    assert SpecPack.open(path).seeds() == list(range(1, 21))
    # The command line resumes too, and reports what was already there.
    result = cli("specs", "build", "1-22", "--backend", "procedural", "--out", path, "--quiet", "--batch-size", "4")
    assert result.returncode == 0 and "2 specs built" in result.stderr and "20 already there" in result.stderr


def test_killed_build_resumes(tmp_path: Path) -> None:
    """A real SIGKILL mid-build: the pack stays sound, and a rerun adds only the missing seeds."""
    path = tmp_path / "k.sgfspack"
    command = [*SGFS, "specs", "build", "1-2000", "--backend", "procedural", "--batch-size", "1", "--out", str(path)]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def some_done() -> bool:
            try:
                with SpecPack.open(path) as pack:
                    return len(pack) >= 10
            except PackError:  # not created yet, or locked by the writer for a moment
                return False

        assert wait_until(some_done, 60)
    finally:
        child.kill()
        child.wait()
    with SpecPack.open(path) as pack:
        assert pack.verify() == []
        done = pack.seeds()
    assert 10 <= len(done) < 2000 and done == list(range(1, len(done) + 1))
    result = cli("specs", "build", f"1-{len(done) + 5}", "--backend", "procedural", "--out", path, "--quiet")
    assert result.returncode == 0 and "5 specs built" in result.stderr and f"{len(done)} already there" in result.stderr


def test_write_killed_inside_a_transaction_is_rolled_back(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-3")
    killed_writer = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA cache_size = 1')\n"  # spill pages to the file before the commit
        "db.execute('BEGIN IMMEDIATE')\n"
        "for i in range(300):\n"
        "    db.execute('INSERT INTO specs VALUES (?, ?, ?, ?, 0, 0, 0, ?)', (100 + i, 'added', 'x' * 4000, 'd', ''))\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", killed_writer, str(path)], check=True)
    assert path.with_name(path.name + "-journal").exists()
    with SpecPack.open(path) as pack:  # read-only, yet sees the last committed state
        assert pack.seeds() == [1, 2, 3] and pack.verify() == []


def test_resume_refuses_other_settings(tmp_path: Path) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-2")
    result = cli("specs", "build", "1-4", "--backend", "procedural", "--out", path, "--temperature", "0.2")
    line = one_line_error(result)
    assert "cannot resume" in line and "sampling" in line


# -- hand-written specs and --specs on every command -------------------------------------------------
def test_edited_title_follows_into_readme_and_questions(tmp_path: Path) -> None:
    seed = TITLED_SEED
    original = build_spec(seed)
    assert original.readme.show_title
    spec_file = tmp_path / "edited.json"
    spec_file.write_text(cli("spec", seed).stdout.replace(original.project.title, "A Crafted Title For Testing"))
    pack = tmp_path / "p.sgfspack"
    added = cli("specs", "add", pack, spec_file)
    assert added.returncode == 0, added.stderr
    readme = sgfs("cat", seed, "README.md", "--specs", pack).stdout  # a child process: cat writes bytes
    assert readme.startswith("# A Crafted Title For Testing\n")
    assert original.project.title not in readme

    def title_answer(*options: object) -> str:
        result = cli("qa", seed, "--out", "-", "--per-type", "0", *options)
        assert result.returncode == 0, result.stderr
        questions = [json.loads(line) for line in result.stdout.splitlines()]
        return str(next(q for q in questions if q["type"] == "title")["answer"])

    assert title_answer("--specs", pack) == "A Crafted Title For Testing"
    assert title_answer() == original.project.title
    export = tmp_path / "export"
    assert cli("export", seed, export, "--specs", pack, "--quiet").returncode == 0
    assert (export / "README.md").read_text().startswith("# A Crafted Title For Testing\n")
    shown = cli("specs", "show", pack, seed)
    assert json.loads(shown.stdout)["project"]["title"] == "A Crafted Title For Testing"
    assert "added" in shown.stderr
    listing = cli("specs", "ls", pack).stdout
    assert f"{seed}\tadded\t" in listing and "A Crafted Title For Testing" in listing


def test_seeds_outside_the_pack(tmp_path: Path) -> None:
    pack = procedural_pack(tmp_path / "p.sgfspack", "1-3")
    line = one_line_error(cli("tree", 9, "--specs", pack))
    assert "seed 9 is not in pack" in line and "--fallback procedural" in line
    assert one_line_error(cli("qa", "2-9", "--out", "-", "--specs", pack))
    fallback = cli("digest", 9, "--specs", pack, "--fallback", "procedural")
    assert fallback.stdout.strip() == generators.repository(9).digest()
    assert "only applies with --specs" in one_line_error(cli("digest", 9, "--fallback", "procedural"))
    repositories = PackRepositories(SpecPack.open(pack))
    with pytest.raises(SeedNotInPack):
        repositories(9)


def test_add_refuses_invalid_specs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(hostile_spec_text(12, "expression"))
    pack = tmp_path / "p.sgfspack"
    line = one_line_error(cli("specs", "add", pack, bad))
    assert "bad.json" in line and "expression" in line
    assert not pack.exists() or SpecPack.open(pack).seeds() == []
    big = tmp_path / "big.json"
    big.write_text(hostile_spec_text(12, "size"))
    assert "params.rows_max" in one_line_error(cli("specs", "add", pack, big))


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_text("no")
    assert "not an sgfs spec pack" in one_line_error(cli("digest", 1, "--specs", junk))
    assert "no such pack" in one_line_error(cli("specs", "ls", tmp_path / "none"))
    pack = procedural_pack(tmp_path / "p.sgfspack", "1")
    assert "seed 2 is not in pack" in one_line_error(cli("specs", "show", pack, 2))
    assert "needs a model" in one_line_error(cli("specs", "build", "1", "--backend", "openai", "--out", tmp_path / "x"))
    bad_option = cli(
        "specs", "build", "1", "--backend", "vllm", "--model", "m", "--out", tmp_path / "y", "--engine-option", "x"
    )
    assert "KEY=VALUE" in one_line_error(bad_option)


def test_edited_spec_with_changed_structure(tmp_path: Path) -> None:
    """A crafted repository: another extension and README flags, served exactly as the spec says."""
    spec = replace(build_spec(3), extension="csv")
    spec = replace(spec, readme=replace(spec.readme, present=True, show_title=True, show_abstract=True))
    spec_file = tmp_path / "s.json"
    spec_file.write_text(spec.to_json())
    pack = tmp_path / "p.sgfspack"
    assert cli("specs", "add", pack, spec_file).returncode == 0
    tree = cli("tree", 3, "--specs", pack).stdout.splitlines()
    assert "README.md" in tree and all(p.endswith(".csv") for p in tree if p != "README.md")
    assert cli("digest", 3, "--specs", pack).stdout.strip() == generators.Repository(spec).digest()


@pytest.mark.fuse
def test_mount_serves_the_pack(tmp_path: Path) -> None:
    seed = TITLED_SEED
    spec_file = tmp_path / "edited.json"
    spec_file.write_text(cli("spec", seed).stdout.replace(build_spec(seed).project.title, "Mounted Pack Title"))
    pack = tmp_path / "p.sgfspack"
    assert cli("specs", "add", pack, spec_file).returncode == 0
    with mounted(tmp_path / "mnt", "--specs", pack) as mnt:
        assert sorted(p.name for p in mnt.iterdir()) == [str(seed)]  # the root lists the pack's seeds
        assert (mnt / str(seed) / "README.md").read_text().startswith("# Mounted Pack Title\n")
        assert not (mnt / "12").exists()  # outside the pack, no fallback: ENOENT
    with mounted(tmp_path / "mnt2", "--specs", pack, "--fallback", "procedural", "--seeds", "12") as mnt:
        assert [p.name for p in mnt.iterdir()] == ["12"]
        repo = generators.repository(12)
        path = repo.file_paths()[0]
        assert (mnt / "12" / path).read_bytes() == repo.read(path)


@pytest.mark.fuse
def test_mount_refuses_a_hostile_pack(tmp_path: Path) -> None:
    pack = procedural_pack(tmp_path / "p.sgfspack", "3-4")
    put_raw(pack, 4, hostile_spec_text(4, "traversal"))
    (tmp_path / "mnt").mkdir()
    line = one_line_error(cli("mount", tmp_path / "mnt", "--specs", pack))
    assert "seed 4: refused: path_variables[0].values[0]" in line


def test_a_pack_that_cannot_be_created_is_a_pack_error(tmp_path: Path) -> None:
    """A folder that is a regular file: one PackError, not the OSError of cleaning up after sqlite."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PackError, match="cannot create the pack"):
        SpecPack.create(blocker / "specs.sgfspack", {})


# -- hostile pack files: refused at open, one line, never a hang or a traceback ----------------------------
RECURSIVE_VIEW = (
    "CREATE VIEW specs AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"
    " SELECT x AS seed, 'added' AS status, '' AS spec, '' AS digest, 0 AS attempts, 0 AS prompt_tokens,"
    " 0 AS completion_tokens, '' AS note FROM n"
)
SCHEMA_EDITS = {
    "recursive view": ("DROP TABLE specs", RECURSIVE_VIEW),
    "extra column": ("ALTER TABLE specs ADD COLUMN extra TEXT",),
    "other type": (
        "ALTER TABLE specs RENAME TO old",
        "CREATE TABLE specs (seed INTEGER PRIMARY KEY, status TEXT NOT NULL, spec BLOB NOT NULL, digest TEXT NOT"
        " NULL, attempts INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,"
        " note TEXT NOT NULL)",
        "INSERT INTO specs SELECT * FROM old",
        "DROP TABLE old",
    ),
    "trigger": ("CREATE TRIGGER t AFTER UPDATE ON meta BEGIN DELETE FROM specs; END",),
    "extra view": ("CREATE VIEW v AS SELECT * FROM specs",),
    "extra index": ("CREATE INDEX i ON specs (status)",),
    "meta view": ("DROP TABLE meta", "CREATE VIEW meta AS SELECT 'format' AS key, '1' AS value"),
}


def edited_pack(tmp_path: Path, *statements: str) -> Path:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-2")
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("edit", list(SCHEMA_EDITS))
def test_a_pack_that_is_not_plain_tables_of_the_schema_is_refused_at_open(tmp_path: Path, edit: str) -> None:
    path = edited_pack(tmp_path, *SCHEMA_EDITS[edit])
    with pytest.raises(PackError, match="not an sgfs spec pack"):
        SpecPack.open(path)
    with pytest.raises(PackError, match="not an sgfs spec pack"):
        SpecPack.open(path, writable=True)


def test_a_recursive_view_hangs_no_command(tmp_path: Path) -> None:
    """Once `specs verify`, `cat` and `mount` ran the view forever; now each refuses the pack in one line."""
    path = edited_pack(tmp_path, *SCHEMA_EDITS["recursive view"])
    (tmp_path / "mnt").mkdir()
    for command in (
        ("specs", "verify", path),
        ("specs", "ls", path),
        ("cat", 1, "README.md", "--specs", path),
        ("mount", tmp_path / "mnt", "--specs", path),
    ):
        line = one_line_error(sgfs(*command, timeout=60))
        assert "view 'specs'" in line or "table 'specs'" in line, line


def test_size_limits_are_checked_before_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1-3")
    monkeypatch.setattr(packs, "MAX_PACK_BYTES", path.stat().st_size - 1)
    with pytest.raises(PackError, match="larger than"):
        SpecPack.open(path)
    monkeypatch.undo()
    monkeypatch.setattr(packs, "MAX_PACK_SPECS", 2)
    with pytest.raises(PackError, match="3 specs exceed 2"):
        SpecPack.open(path)
    monkeypatch.undo()
    tamper(path, "UPDATE specs SET note = ? WHERE seed = 2", "n" * (packs.MAX_NOTE_BYTES + 1))
    with pytest.raises(PackError, match="a note exceeds"):
        SpecPack.open(path)
    tamper(path, "UPDATE specs SET note = '' WHERE seed = 2")
    tamper(path, "INSERT INTO meta VALUES ('big', ?)", json.dumps("m" * packs.MAX_META_BYTES))
    with pytest.raises(PackError, match="metadata exceeds"):
        SpecPack.open(path)
    tamper(path, "DELETE FROM meta WHERE key = 'big'")
    # A stored spec past the limit is refused from its length, before its text is fetched or parsed.
    text = "x" * (packs.MAX_SPEC_BYTES + 1)
    put_raw(path, 3, text)
    with SpecPack.open(path) as pack:
        with pytest.raises(PackError, match="seed 3: the stored spec is not text or is larger"):
            pack.spec(3)
        assert pack.spec(1) == build_spec(1)
    tamper(path, "UPDATE specs SET spec = CAST(spec AS BLOB) WHERE seed = 1")
    with SpecPack.open(path) as pack, pytest.raises(PackError, match="seed 1: the stored spec is not text"):
        pack.spec(1)


def test_reads_are_read_only_and_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = procedural_pack(tmp_path / "p.sgfspack", "1")
    with SpecPack.open(path) as pack:
        with pytest.raises(PackError, match="cannot read the pack"):
            pack._query("DELETE FROM specs")
        assert pack.seeds() == [1]
        assert pack._db.execute("PRAGMA query_only").fetchone() == (1,)
        monkeypatch.setattr(packs, "MAX_QUERY_SECONDS", 0.2)
        endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT COUNT(*) FROM n"
        started = time.monotonic()
        with pytest.raises(PackError, match=r"took longer than 0\.2 s"):
            pack._query(endless)
        assert time.monotonic() - started < 10
        assert pack.seeds() == [1], "the next read is bounded afresh"


HOSTILE_SPEC_TEXTS: dict[str, Callable[[str], str]] = {
    "5001-digit integer": lambda t: t.replace('"format_version": 1', '"format_version": ' + "1" * 5001, 1),
    "nesting 100000 deep": lambda t: "[" * 100_000 + "]" * 100_000,
    "nesting 5000 deep": lambda t: t.replace('"seq_count": ', '"seq_count": ' + "[" * 5000 + "]" * 5000 + ', "x": ', 1),
    "NaN": lambda t: t.replace('"rows_mean": ', '"rows_mean": NaN, "y": ', 1),
    "Infinity": lambda t: t.replace('"rows_sd": ', '"rows_sd": Infinity, "y": ', 1),
    "wrong type": lambda t: t.replace('"variables": [', '"variables": {"a": [', 1),
    "huge string": lambda t: t.replace('"abstract": "', '"abstract": "' + "a" * (2 << 20), 1),
    "not utf-8 text": lambda t: t.replace('"plan": "', '"plan": "\udcff', 1),
    "not an object": lambda t: "[1, 2, 3]",
}


@pytest.mark.parametrize("label", list(HOSTILE_SPEC_TEXTS))
def test_hostile_inputs_are_one_line_refusals_of_the_real_cli(tmp_path: Path, label: str) -> None:
    """Every input a pack or a spec file can carry: the real `sgfs` in a child exits 2 with one line."""
    seed = 2
    hostile = HOSTILE_SPEC_TEXTS[label](build_spec(seed).to_json())
    pack = procedural_pack(tmp_path / "p.sgfspack", "1-2")
    stored = hostile.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if label == "not utf-8 text":
        tamper(
            pack,
            "UPDATE specs SET spec = CAST(? AS TEXT), digest = ? WHERE seed = 2",
            hostile.encode("utf-8", "surrogatepass"),
            spec_digest(stored),
        )
    else:
        put_raw(pack, seed, hostile)
    assert f"seed {seed}" in one_line_error(sgfs("digest", seed, "--specs", pack))
    spec_file = tmp_path / "s.json"
    spec_file.write_bytes(hostile.encode("utf-8", "surrogatepass"))
    assert "spec file" in one_line_error(sgfs("tree", spec_file))
    assert "spec file" in one_line_error(sgfs("specs", "add", tmp_path / "q.sgfspack", spec_file))


@pytest.mark.parametrize(
    "value", ["1" * 5001, "[" * 100_000 + "]" * 100_000, '"' + "x" * (1 << 17) + '"'], ids=["digits", "deep", "huge"]
)
def test_hostile_metadata_is_a_one_line_refusal(tmp_path: Path, value: str) -> None:
    pack = procedural_pack(tmp_path / "p.sgfspack", "1")
    tamper(pack, "INSERT INTO meta VALUES ('hostile', ?)", value)
    assert "p.sgfspack" in one_line_error(sgfs("specs", "ls", pack))
    with pytest.raises(PackError):
        SpecPack.open(pack)
