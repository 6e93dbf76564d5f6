"""`sgfs qa --out FILE` when FILE cannot be written (full disk, a file for a directory): one line on stderr, exit
code 1, no partial file left."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from tests.helpers.commands import SGFS


def no_file_growth() -> None:
    """In the child: no file may grow (writes fail with EFBIG, as on a full disk; Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_questions_that_cannot_be_written(tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    command = [*SGFS, "qa", "1", "--per-type", "1", "--out", str(out), "--quiet"]
    full = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, preexec_fn=no_file_growth)
    assert (full.returncode, full.stderr) == (1, f"sgfs: error: cannot write {out}: File too large\n")
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone
    (tmp_path / "file").write_text("")
    inside_a_file = tmp_path / "file" / "q.jsonl"
    command = [*SGFS, "qa", "1", "--per-type", "1", "--out", str(inside_a_file)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert (result.returncode, result.stderr) == (1, f"sgfs: error: cannot write {inside_a_file}: Not a directory\n")
