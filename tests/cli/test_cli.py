"""The command line without FUSE: tree, ls, cat, export, digest, spec, and their errors; every command's help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.helpers import repo


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


def command_paths() -> list[tuple[str, ...]]:
    """Every command of ``sgfs --help``, and the commands of each group (``specs build``...), as argv prefixes."""
    from sgfs.cli import cli

    found: list[tuple[str, ...]] = [()]

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        for name, command in sorted(group.commands.items()):
            found.append((*prefix, name))
            if isinstance(command, click.Group):
                walk(command, (*prefix, name))

    walk(cli, ())
    return found


@pytest.mark.parametrize("path", command_paths(), ids=lambda path: " ".join(("sgfs", *path)))
def test_every_help_has_examples_kept_line_by_line(path: tuple[str, ...]) -> None:
    from sgfs.cli import cli

    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="sgfs", terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    block = result.output.split("Example", 1)[1].split("\n\n", 1)[0].splitlines()
    # The heading alone on its line and the examples under it, one a line: click's \b kept them as written.
    assert block[0] in (":", "s:"), block
    examples = block[1:]
    assert examples and all(line.startswith("  ") and line.strip() for line in examples), block
    assert any(line.lstrip().startswith("sgfs ") for line in examples), block


def test_docs_cli_table_lists_every_command() -> None:
    """docs/cli.md has a row for every command (the table the docs promise)."""
    table = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| `sgfs ")]
    for path in command_paths()[1:]:
        if len(path) == 1:  # every command of `sgfs --help` starts a row
            assert any(row.startswith((f"| `sgfs {path[0]} ", f"| `sgfs {path[0]}`")) for row in rows), path
    widths = {line.count("|") - line.count("\\|") for line in table.splitlines() if line.startswith("|")}
    assert widths == {3}, widths  # one table, two columns, every row whole


def one_error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode != 0
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sgfs: error: "), lines
    return lines[0]


def unwritable_paths(tmp_path: Path) -> list[Path]:
    """Paths no process can create, root included: below a regular file, and in /proc."""
    regular = tmp_path / "a-file"
    regular.write_text("not a directory\n")
    return [regular / "out", Path("/proc/sgfs-test-output/out")]


def test_export_to_an_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    for target in unwritable_paths(tmp_path):
        line = one_error_line(sgfs("export", "2", str(target), "-q"))
        assert line.startswith(f"sgfs: error: cannot write under {target}: "), line


def test_specs_to_an_unwritable_pack_is_one_line(tmp_path: Path) -> None:
    spec_file = tmp_path / "s.json"
    spec_file.write_text(repo(2).spec.to_json())
    for target in unwritable_paths(tmp_path):
        pack = str(target / "p.sgfspack")
        line = one_error_line(sgfs("specs", "build", "1-2", "--backend", "procedural", "--out", pack, "-q"))
        assert pack in line, line
        assert pack in one_error_line(sgfs("specs", "add", pack, str(spec_file)))
        assert not target.exists()


@pytest.mark.parametrize(
    "args",
    [["tree", "118"], ["tree", "285"], ["ls", "118"], ["cat", "3", "README.md"], ["spec", "118"], ["digest", "3"]],
)
def test_a_full_disk_on_stdout_is_one_line(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        result = subprocess.run([sys.executable, "-m", "sgfs", *args], stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert one_error_line(result) == "sgfs: error: cannot write to standard output: No space left on device"
    assert result.returncode == 1
