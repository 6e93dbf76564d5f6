"""Errors the command line reports as one line on stderr with a non-zero exit code."""

from __future__ import annotations


class SgfsError(Exception):
    """A user-facing failure: bad seed, path, option or input file."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
