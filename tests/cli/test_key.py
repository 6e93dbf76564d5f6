"""``sgfs key`` and ``--key FILE``: keyed universes from the command line, and the attack that must fail."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from generators.paths import README_NAME
from tests.helpers.commands import SGFS, cli, one_line_error, sgfs

SEEDS = (1, 2, 3, 118)


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "universe.key"
    result = cli("key", "new", path)
    assert result.returncode == 0, result.stderr
    return path


def cat_bytes(seed: int, path: str, *options: object) -> bytes | None:
    """``sgfs cat`` in a child process, its bytes as written (None when it fails)."""
    result = subprocess.run([*SGFS, "cat", str(seed), path, *map(str, options)], capture_output=True, check=False)
    return result.stdout if result.returncode == 0 else None


def _secret_forms(key: Path) -> list[str]:
    text = key.read_text().strip()
    return [text, text[:16], text[-16:], text.upper()]


def test_key_new_writes_a_private_key_and_prints_its_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "k"
    result = sgfs("key", "new", path)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = path.read_text()
    assert len(secret) == 65 and secret.endswith("\n") and int(secret, 16) >= 0 and secret == secret.lower()
    fingerprint = result.stdout.strip()
    assert len(fingerprint) == 16 and fingerprint not in secret
    assert secret.strip() not in result.stdout + result.stderr
    assert sgfs("key", "fingerprint", path).stdout.strip() == fingerprint
    # Never overwritten.
    line = one_line_error(sgfs("key", "new", path))
    assert "already exists" in line and path.read_text() == secret
    # Two keys are two keys.
    assert cli("key", "new", tmp_path / "k2").stdout.strip() != fingerprint


@pytest.mark.parametrize("content", [None, b"", b"not a key\n", b"0" * 63 + b"\n", b"Z" * 64, b"0" * 2000])
def test_bad_key_files_are_one_line_exit_2(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "bad.key"
    if content is not None:
        path.write_bytes(content)
    for args in (("digest", 3), ("cat", 3, "README.md"), ("qa", 3, "--out", "-"), ("spec", 3), ("tree", 3)):
        one_line_error(sgfs(*args, "--key", path))
    one_line_error(sgfs("key", "fingerprint", path))
    one_line_error(sgfs("mount", tmp_path / "mnt", "--key", path))


def test_a_directory_or_unreadable_key_file_is_one_line(tmp_path: Path, key: Path) -> None:
    one_line_error(sgfs("digest", 3, "--key", tmp_path))
    if os.geteuid() != 0:  # root reads any file
        key.chmod(0)
        one_line_error(sgfs("digest", 3, "--key", key))


def test_a_key_others_can_read_is_used_with_a_warning(key: Path) -> None:
    key.chmod(0o644)
    result = sgfs("digest", 3, "--key", key)
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "warning" in lines[0] and "readable by others" in lines[0]
    key.chmod(0o600)
    assert sgfs("digest", 3, "--key", key).stderr == ""


def test_same_key_and_seed_give_the_same_bytes_across_processes(key: Path) -> None:
    for seed in (2, 118):
        first = sgfs("digest", seed, "--key", key)
        second = sgfs("digest", seed, "--key", key)
        assert first.returncode == 0 and first.stdout == second.stdout == cli("digest", seed, "--key", key).stdout
        questions = [sgfs("qa", seed, "--per-type", 1, "--out", "-", "--key", key).stdout for _ in range(2)]
        assert questions[0] == questions[1] and questions[0]
        tree = sgfs("tree", seed, "--key", key).stdout.splitlines()
        data = next(p for p in tree if p != README_NAME)
        keyed = cat_bytes(seed, data, "--key", key)
        assert keyed and keyed == cat_bytes(seed, data, "--key", key) != cat_bytes(seed, data)


def test_no_key_is_the_open_universe(key: Path) -> None:
    """The same command without --key is today's output (the golden digests in tests/generators pin it)."""
    golden = json.loads((Path(__file__).parents[1] / "generators" / "golden_digests.json").read_text())
    digests = golden["digests"]
    seed, digest = next((int(s), d) for s, d in digests.items() if s.isdigit())
    assert cli("digest", seed).stdout.strip() == digest
    assert cli("digest", seed, "--key", key).stdout.strip() != digest


def test_the_attack_without_the_key_reproduces_nothing(tmp_path: Path, key: Path) -> None:
    """An agent with sgfs installed and the seed, but not the key: nothing it can compute matches."""
    other = tmp_path / "guess.key"
    cli("key", "new", other)
    for seed in SEEDS:
        keyed_digest = cli("digest", seed, "--key", key).stdout
        keyed_tree = cli("tree", seed, "--key", key).stdout
        keyed_qa = cli("qa", seed, "--per-type", 2, "--out", "-", "--key", key).stdout
        keyed_spec = cli("spec", seed, "--key", key).stdout
        for attempt in ((), ("--key", other)):
            assert cli("digest", seed, *attempt).stdout != keyed_digest
            assert cli("spec", seed, *attempt).stdout != keyed_spec
            guessed_qa = cli("qa", seed, "--per-type", 2, "--out", "-", *attempt).stdout
            assert guessed_qa != keyed_qa
            keyed_answers = [json.loads(line)["answer"] for line in keyed_qa.splitlines()]
            guessed_answers = [json.loads(line)["answer"] for line in guessed_qa.splitlines()]
            assert keyed_answers != guessed_answers
            path = next(p for p in keyed_tree.splitlines() if p != README_NAME)
            keyed_bytes = cat_bytes(seed, path, "--key", key)
            assert keyed_bytes and cat_bytes(seed, path, *attempt) != keyed_bytes  # None: no such file there


def test_the_key_never_appears_in_output(tmp_path: Path, key: Path) -> None:
    outputs = [
        cli("spec", 5, "--key", key).stdout,
        cli("qa", 5, "--per-type", 1, "--out", "-", "--key", key).stdout,
        cli("tree", 5, "--key", key).stdout,
        cli("key", "fingerprint", key).stdout,
    ]
    for output in outputs:
        for form in _secret_forms(key):
            assert form not in output
    spec = json.loads(outputs[0])
    assert len(spec["universe"]) == 64 and spec["universe"] != key.read_text().strip()


def test_a_keyed_spec_file_reproduces_its_repository(tmp_path: Path, key: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(cli("spec", 118, "--key", key).stdout)
    keyed = cli("digest", 118, "--key", key).stdout
    assert cli("digest", spec).stdout == keyed  # the spec holds its salt
    assert cli("digest", spec, "--key", key).stdout == keyed


def test_export_and_packs_take_the_key(tmp_path: Path, key: Path) -> None:
    out = tmp_path / "repo"
    assert cli("export", 3, out, "--quiet", "--key", key).returncode == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(
        cli("tree", 3, "--key", key).stdout.splitlines()
    )
    pack = tmp_path / "p.sgfspack"
    assert cli("specs", "build", "2-3", "--backend", "procedural", "--out", pack, "--quiet").returncode == 0
    assert cli("digest", 3, "--specs", pack).stdout == cli("digest", 3).stdout
    keyed = cli("digest", 3, "--specs", pack, "--key", key).stdout
    assert keyed != cli("digest", 3).stdout and keyed == cli("digest", 3, "--specs", pack, "--key", key).stdout
