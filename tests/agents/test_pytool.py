"""The sandboxed Python tool: each limit (a loop, an allocation, a socket, a write), output truncation, the
environment, and the local copy of a repository it runs in (the attacks on the seal: test_pytool_sealed.py)."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgfs.agents.pytool import PythonLimits, Workspaces, materialise, run_python, run_shell
from sgfs.store.source import MountSource
from tests.helpers import repo

SEED = 34  # csv, 15 files, with a README
FILE = "quinn_aggregation=SKUstore/forecast_model=ARIMA/horizon_wk=4.csv"
FAST = PythonLimits(timeout_s=20)


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    spaces = Workspaces()
    try:
        yield spaces.path(SEED)
    finally:
        spaces.close()


def test_materialised_repository_is_the_repository(tmp_path: Path) -> None:
    target = materialise(MountSource([]), SEED, tmp_path / "copy")
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == sorted(repo(SEED).file_paths())
    for path in files:
        assert (target / path).read_bytes() == repo(SEED).read(path)
        assert (target / path).stat().st_mode & 0o777 == 0o444
    assert target.stat().st_mode & 0o777 == 0o555


def test_workspaces_are_shared_and_removed() -> None:
    spaces = Workspaces()
    first = spaces.path(SEED)
    assert spaces.path(SEED) == first and (first / "README.md").is_file()
    spaces.close()
    assert not first.exists()


def test_runs_code_in_the_repository(workspace: Path) -> None:
    code = (
        "import hashlib, os, pandas as pd\n"
        f"print(os.getcwd()); print(hashlib.sha256(open({FILE!r}, 'rb').read()).hexdigest())\n"
        f"print(len(pd.read_csv({FILE!r})))"
    )
    result = run_python(code, workspace, FAST)
    assert result.exit_code == 0 and not result.timed_out, result.output
    cwd, digest, rows = result.output.split()
    assert cwd == str(workspace)
    data = repo(SEED).read(FILE)
    assert digest == hashlib.sha256(data).hexdigest() and int(rows) == data.count(b"\n") - 1
    assert result.files_opened == [FILE]  # the audit of what the code read
    failed = run_python("raise ValueError('boom')", workspace, FAST)
    assert failed.exit_code == 1 and "ValueError: boom" in failed.output and "[exit code 1]" in failed.for_model()
    assert "bootstrap" not in failed.output  # the traceback starts at the model's code


def test_files_opened_are_recorded(workspace: Path) -> None:
    code = (
        "import glob, os\n"
        "os.chdir('quinn_aggregation=SKUstore')\n"
        "for path in sorted(glob.glob('*/horizon_wk=*.csv'))[:2] + ['../README.md', 'missing.csv', '.']:\n"
        "    try:\n"
        "        open(path).read(1)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    result = run_python(code, workspace, FAST)
    first_two = sorted(p for p in repo(SEED).file_paths() if p.startswith("quinn_aggregation=SKUstore/"))[:2]
    assert result.exit_code == 0, result.output
    assert result.files_opened == sorted(["README.md", *first_two])  # not a missing file, not a directory
    assert run_shell("cat README.md", workspace, FAST).files_opened == []  # a command is not audited


def test_loop_hits_the_wall_clock_limit(workspace: Path) -> None:
    marker = "sgfs-pytool-loop-marker"
    code = f"import subprocess\nsubprocess.Popen(['sleep', '300', '{marker}'])\nwhile True:\n    pass"
    result = run_python(code, workspace, PythonLimits(timeout_s=1.5))
    assert result.timed_out and result.exit_code is None
    assert "time limit: killed after 1.5 s" in result.for_model()
    # the whole process group went with it: no child left behind
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                assert marker.encode() not in (entry / "cmdline").read_bytes()
            except OSError:
                continue


def test_allocation_over_the_memory_limit_fails(workspace: Path) -> None:
    big = run_python("x = bytearray(400 * 2**20)\nprint('allocated')", workspace, PythonLimits(memory_mb=256))
    assert big.exit_code == 1 and "MemoryError" in big.output and "allocated" not in big.output
    small = run_python("x = bytearray(400 * 2**20)\nprint('allocated')", workspace, PythonLimits(memory_mb=1024))
    assert small.exit_code == 0 and small.output.strip() == "allocated"


def test_no_network(workspace: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\nprint('connected')"
        control = run_python(code, workspace, PythonLimits(timeout_s=20, isolate=False))
        assert control.output.strip() == "connected", control.output  # the same code reaches the host
        result = run_python(code, workspace, FAST)
        assert result.network_isolated and result.sealed
        assert result.exit_code == 1 and "connected" not in result.output
        assert "Connection refused" in result.output  # the sandbox's own loopback: nothing listens there


def test_writes_are_refused(workspace: Path) -> None:
    code = (
        "import os, tempfile\n"
        "for path in ('new.csv', 'README.md'):\n"
        "    try:\n"
        "        open(path, 'a').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        "with tempfile.NamedTemporaryFile() as scratch:\n"
        "    scratch.write(b'scratch is writable')\n"
        "print('scratch ok')\n"
    )
    result = run_python(code, workspace, FAST)
    lines = result.output.splitlines()
    assert lines[0].startswith("refused new.csv") and lines[1].startswith("refused README.md"), result.output
    assert lines[2] == "scratch ok"
    assert not (workspace / "new.csv").exists()
    assert (workspace / "README.md").read_bytes() == repo(SEED).read("README.md")
    assert result.read_only == "mounts" and result.capabilities_dropped
    # Beside the repository lies the sandbox's private /tmp: a write there never reaches the host.
    outside = run_python(f"open({str(workspace.parent / 'x')!r}, 'w').write('x')", workspace, FAST)
    assert outside.exit_code == 0 and not (workspace.parent / "x").exists()
    system = run_python("open('/usr/x', 'w')", workspace, FAST)
    assert "Read-only file system" in system.output


def test_output_is_truncated(workspace: Path) -> None:
    code = "print('first line'); print('x' * 100000); print('last line')"
    result = run_python(code, workspace, PythonLimits(output_bytes=1000))
    assert result.truncated and result.output_bytes == len("first line\n") + 100001 + len("last line\n")
    assert result.output.startswith("first line\n") and result.output.rstrip().endswith("last line")
    assert len(result.output) < 1200
    assert "output truncated: 100022 bytes written, the first and last 500 shown" in result.for_model()
    short = run_python("print('hi')", workspace, PythonLimits(output_bytes=1000))
    assert short.output == "hi\n" and not short.truncated and short.for_model() == "hi"


def test_environment_is_not_inherited(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGFS_TEST_SECRET", "hunter2")
    result = run_python("import os; print(sorted(os.environ))", workspace, FAST)
    assert "SGFS_TEST_SECRET" not in result.output and "TMPDIR" in result.output
    assert run_python("", workspace, FAST).for_model() == "[no output]"
    assert os.environ["SGFS_TEST_SECRET"] == "hunter2"


def test_shell_commands_run_under_the_same_limits(workspace: Path) -> None:
    listing = run_shell("ls; echo done > new.txt", workspace, FAST)
    assert listing.output.splitlines()[0] == "README.md" and "new.txt" in listing.output
    assert listing.exit_code != 0 and not (workspace / "new.txt").exists()
    assert run_shell("sleep 30", workspace, PythonLimits(timeout_s=1)).timed_out
    python = run_shell("python3 -c 'import sys; print(sys.flags.isolated)'", workspace, FAST)
    assert python.exit_code == 0, python.output
