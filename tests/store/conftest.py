"""Fixtures of the store's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sgfs.store.synthpool import SynthesisPool


@pytest.fixture(scope="module")
def pool() -> Iterator[SynthesisPool]:
    """Two synthesis workers, shared by a module's tests and closed after them."""
    workers = SynthesisPool(2)
    yield workers
    workers.close()
