"""Fixtures shared by the tests of ``sgfs eval``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sgfs_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with an `sgfs` that is this interpreter's sgfs, for agent command lines and scripts."""
    directory = tmp_path_factory.mktemp("bin")
    wrapper = directory / "sgfs"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m sgfs "$@"\n')
    wrapper.chmod(0o755)
    return directory
