"""The ``sgfs`` command line as a user meets it: in a child process, or the same ``main`` in this one."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import time

from sgfs.cli import main

SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]


def sgfs(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The ``sgfs`` command line in a child process: exit code and stderr exactly as a user sees them."""
    command = [*SGFS, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """The same ``main`` in this process: no interpreter start-up, for the many calls that need no child."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sgfs: error: "), result.stderr
    return lines[0]


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
