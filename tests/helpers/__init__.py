"""Helpers shared by the test modules (none imports another test module): repositories built once per session,
the ``sgfs`` command line in and out of process, and real mounts that are always undone."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import generators
from generators import Repository
from generators.paths import README_NAME
from generators.spec import EXTENSIONS
from sgfs.store.diskcache import INDEX_NAME, DiskCache
from sgfs.store.source import WouldWait


@functools.cache
def repo(seed: int) -> Repository:
    """Repository ``seed``, built once per test session."""
    return generators.repository(seed)


def with_extension(seed: int, extension: str) -> Repository:
    """Repository ``seed`` re-encoded in another format (same tables, other bytes)."""
    return Repository(replace(repo(seed).spec, extension=extension))


@functools.cache
def small_seeds(max_files: int = 40, per_extension: int = 2) -> dict[str, list[int]]:
    """A few seeds per extension whose repositories have at most ``max_files`` files."""
    found: dict[str, list[int]] = {ext: [] for ext in EXTENSIONS}
    for seed in range(1, 2000):
        r = repo(seed)
        bucket = found[r.spec.extension]
        if len(bucket) < per_extension and len(r.file_paths()) <= max_files:
            bucket.append(seed)
        if all(len(b) == per_extension for b in found.values()):
            return found
    raise AssertionError(f"not enough small repositories: {found}")


@functools.cache
def small_csv_with_readme(max_files: int = 40) -> int:
    """A small csv repository whose README is its first file in sorted order (tests that look at one top file)."""
    for seed in range(1, 2000):
        r = repo(seed)
        paths = r.file_paths()
        if r.spec.extension == "csv" and len(paths) <= max_files and paths[0] == README_NAME:
            return seed
    raise AssertionError("no small csv repository with a README first")


class FailingRepository(Repository):
    """Repository whose files named in ``broken`` fail to synthesise."""

    broken: frozenset[str] = frozenset()

    def read(self, path: str) -> bytes:
        if path in self.broken:
            raise RuntimeError(f"injected failure for {path}")
        return super().read(path)


def at_hand(operation: Callable[..., Any], *args: Any) -> Any:
    """``operation(*args, wait=False)``, or None where its answer is not at hand (it raised WouldWait)."""
    try:
        return operation(*args, wait=False)
    except WouldWait:
        return None


def data_files(r: Repository) -> list[str]:
    """Every file but the README, which the repository holds: never synthesised, never stored on disk."""
    return [p for p in r.file_paths() if p != README_NAME]


def entry_files(cache: DiskCache) -> list[Path]:
    return sorted(p for p in cache.root.rglob("*") if p.is_file() and p.name != INDEX_NAME)
