"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import functools
import os
from dataclasses import replace

import pytest

import generators
from generators import Repository
from generators.spec import EXTENSIONS


@pytest.fixture(autouse=True, scope="session")
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Mounts and commands of the tests keep their disk cache in a temporary folder, never the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache-home"))


@functools.cache
def repo(seed: int) -> Repository:
    """Repository ``seed``, built once per test session."""
    return generators.repository(seed)


@functools.cache
def seeds_by_extension(limit: int = 200) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {ext: [] for ext in EXTENSIONS}
    for seed in range(1, limit):
        found[repo(seed).spec.extension].append(seed)
    return found


def with_extension(seed: int, extension: str) -> Repository:
    """Repository ``seed`` re-encoded in another format (same tables, other bytes)."""
    return Repository(replace(repo(seed).spec, extension=extension))


@pytest.fixture(params=EXTENSIONS)
def extension(request: pytest.FixtureRequest) -> str:
    return str(request.param)
