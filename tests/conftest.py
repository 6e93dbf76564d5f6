"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import os

import pytest

from generators.spec import EXTENSIONS


@pytest.fixture(autouse=True, scope="session")
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Mounts and commands of the tests keep their disk cache in a temporary folder, never the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache-home"))


@pytest.fixture(params=EXTENSIONS)
def extension(request: pytest.FixtureRequest) -> str:
    return str(request.param)
