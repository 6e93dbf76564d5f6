"""The command line without FUSE: tree, ls, cat, export, digest, spec, and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import repo


def sgfs(*args: str, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run([sys.executable, "-m", "sgfs", *args], capture_output=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


def test_tree_lists_every_file_sorted() -> None:
    out = sgfs("tree", "118", check=True).stdout.decode().splitlines()
    assert out == repo(118).file_paths() == sorted(out)


def test_ls_and_cat() -> None:
    r = repo(1)
    top = sgfs("ls", "1", check=True).stdout.decode().splitlines()
    assert top == [e.name + ("/" if e.is_dir else "") for e in r.list("")]
    path = r.tree.file_paths[0]
    assert sgfs("cat", "1", path, check=True).stdout == r.read(path)
    assert sgfs("ls", "1", path, check=True).stdout.decode().strip() == path


def test_export_writes_the_same_bytes(tmp_path: Path) -> None:
    target = tmp_path / "out"
    sgfs("export", "2", str(target), check=True)
    r = repo(2)
    written = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert written == r.file_paths()
    for path in written:
        assert (target / path).read_bytes() == r.read(path)
    again = sgfs("export", "2", str(target))
    assert again.returncode == 2 and b"not empty" in again.stderr
    sgfs("export", "2", str(target), "--force", check=True)


def test_digest_and_spec_round_trip(tmp_path: Path) -> None:
    assert sgfs("digest", "2", check=True).stdout.decode().strip() == repo(2).digest()
    spec_text = sgfs("spec", "2", check=True).stdout.decode()
    assert json.loads(spec_text)["seed"] == 2
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec_text)
    assert sgfs("spec", str(spec_file), "--check", check=True).stdout.startswith(b"ok")
    assert sgfs("digest", str(spec_file), check=True).stdout.decode().strip() == repo(2).digest()
    assert sgfs("tree", str(spec_file), check=True).stdout.decode().splitlines() == repo(2).file_paths()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tree", "-1"], "invalid seed '-1'"),
        (["tree", "9223372036854775808"], "must be below 2^63"),
        (["tree", "abc"], "invalid seed 'abc'"),
        (["tree", "1.5"], "invalid seed"),
        (["ls", "118", "no/such/dir"], "no such file or directory in repository 118"),
        (["cat", "118", "README.mdx"], "no such file or directory"),
        (["cat", "1", ""], "is a directory"),
        (["spec", "/nonexistent/spec.json", "--check"], "cannot read spec file"),
        (["tree"], "Missing argument"),
        (["frobnicate"], "No such command"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(args: list[str], message: str) -> None:
    result = sgfs(*args)
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("sgfs: error: ") and message in lines[0]
    assert b"Traceback" not in result.stderr


def test_hostile_spec_file_is_refused(tmp_path: Path) -> None:
    data = repo(118).spec.to_dict()
    dependent = next(v for v in data["variables"] if v["role"] == "dependent")
    dependent["expression"] = "__import__('os').system('touch pwned')"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = sgfs("tree", str(bad))
    assert result.returncode == 2
    assert b"invalid spec file" in result.stderr and b"attribute access" in result.stderr
    assert not Path("pwned").exists()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert b"not valid JSON" in sgfs("spec", str(broken), "--check").stderr


def test_cat_to_a_closed_pipe_is_quiet() -> None:
    r = repo(19)
    path = max(r.tree.file_paths[:50], key=lambda p: len(r.read(p)))
    command = f"{sys.executable} -m sgfs cat 19 {path} | head -c 10"
    result = subprocess.run(command, shell=True, capture_output=True, timeout=60)
    assert len(result.stdout) == 10
    assert b"Traceback" not in result.stderr
