"""The disk cache never serves a keyed repository's files for the open universe's, nor the reverse."""

from __future__ import annotations

from pathlib import Path

import generators
from generators import Repository, build_spec
from generators.keys import Key
from sgfs.store.diskcache import DiskCache, read_through, repository_key
from sgfs.store.repositories import keyed_procedural, procedural_repository

KEY = Key(b"\x11" * 32)
OTHER = Key(b"\x12" * 32)


def test_keyed_and_open_repositories_have_distinct_cache_keys() -> None:
    seed = 3
    keys = {
        repository_key(seed, build_spec(seed)),
        repository_key(seed, build_spec(seed, universe=KEY.salt(seed))),
        repository_key(seed, build_spec(seed, universe=OTHER.salt(seed))),
    }
    assert len(keys) == 3
    assert repository_key(seed, build_spec(seed)) == repository_key(seed, generators.repository(seed).spec)


def test_read_through_never_crosses_universes(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, 1 << 30)
    seed = 3
    plain = procedural_repository(seed)
    keyed = keyed_procedural(KEY)(seed)
    assert keyed.spec.universe == KEY.salt(seed)
    # Warm the cache with the open universe, then read the keyed repository's paths (and the reverse).
    for path in plain.file_paths()[:5]:
        assert read_through(cache, plain, path) == plain.read(path)
    for path in keyed.file_paths()[:5]:
        assert read_through(cache, keyed, path) == keyed.read(path)
    for path in plain.file_paths()[:5]:
        assert read_through(cache, plain, path) == plain.read(path)
    shared = sorted(set(plain.file_paths()) & set(keyed.file_paths()))
    for path in shared[:5]:
        assert read_through(cache, keyed, path) == keyed.read(path) != plain.read(path)
    other = Repository(build_spec(seed, universe=OTHER.salt(seed)))
    for path in other.file_paths()[:3]:
        assert read_through(cache, other, path) == other.read(path)
