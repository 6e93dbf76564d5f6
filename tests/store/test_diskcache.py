"""The disk cache (sgfs.store.diskcache): entries and the size index bound to their repository and path, never
serving damage, bounded in bytes, safe under concurrent writers and readers."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import generators
from sgfs.store.diskcache import INDEX_NAME, DiskCache, default_cache_dir, read_through, repository_key
from sgfs.store.source import MIB, MountSource
from tests.helpers import at_hand, data_files, entry_files, repo, small_csv_with_readme


def test_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "sgfs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "sgfs"


def test_round_trip_and_keys(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, 64 * MIB)
    key = repository_key(3, repo(3).spec)
    assert cache.size(key, "a.csv") is None and cache.content(key, "a.csv") is None
    assert cache.put(key, "a.csv", b"x,y\n1,2\n") > 0
    assert cache.size(key, "a.csv") == 8 and cache.content(key, "a.csv") == b"x,y\n1,2\n"
    assert cache.content(key, "b.csv") is None
    # The key changes with the seed and with the spec (a pack's repository of the same seed differs).
    other = repo(4).spec
    assert repository_key(4, repo(3).spec) != key != repository_key(3, other)
    assert cache.content(repository_key(3, other), "a.csv") is None


@pytest.mark.parametrize("damage", ["flip_content", "flip_header", "truncate", "truncate_header", "empty"])
def test_damaged_entries_are_never_served(tmp_path: Path, damage: str) -> None:
    cache = DiskCache(tmp_path, 64 * MIB)
    data = bytes(range(256)) * 40
    cache.put("k", "f", data)
    (entry,) = entry_files(cache)
    raw = bytearray(entry.read_bytes())
    if damage == "flip_content":
        raw[-100] ^= 1
    elif damage == "flip_header":
        raw[10] ^= 1
    elif damage == "truncate":
        raw = raw[:-1]
    elif damage == "truncate_header":
        raw = raw[:20]
    else:
        raw = bytearray()
    entry.write_bytes(bytes(raw))
    assert cache.content("k", "f") is None
    assert not entry.exists(), "a bad entry is removed"
    cache.put("k", "f", data)  # and regenerated
    assert cache.content("k", "f") == data


def test_damaged_entry_through_the_source_is_regenerated(tmp_path: Path) -> None:
    seed = small_csv_with_readme()
    path = data_files(repo(seed))[0]
    expected = repo(seed).read(path)
    MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB)).read(f"/{seed}/{path}", 1 << 30, 0)
    cache = DiskCache(tmp_path, 64 * MIB)
    for entry in entry_files(cache):
        raw = bytearray(entry.read_bytes())
        raw[-1] ^= 0xFF
        entry.write_bytes(bytes(raw))
    fresh = MountSource([seed], disk=cache)
    assert fresh.read(f"/{seed}/{path}", 1 << 30, 0) == expected
    assert fresh.cache_info().generated == 1, "regenerated, not served from the damaged entry"


def test_reads_at_hand_come_from_the_disk_cache_and_never_serve_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read(..., wait=False)`` (what the request loop's thread answers itself) reads a small file the disk
    cache holds, without synthesis; a damaged entry is not served (``read`` then regenerates it); a file over
    INLINE_DISK_READ, or one whose size is not known yet, is left to ``read``."""
    from sgfs.store import source as source_module

    seed = small_csv_with_readme()
    r = repo(seed)
    filler = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    for path in r.file_paths():
        filler.read(f"/{seed}/{path}", 1 << 30, 0)
    fresh = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    first, second = data_files(r)[:2]
    assert at_hand(fresh.read, f"/{seed}/{first}", 1 << 30, 0) is None  # nothing known of it yet
    for path in r.file_paths():
        assert fresh.stat(f"/{seed}/{path}").size == len(r.read(path))  # from the size index
        assert at_hand(fresh.read, f"/{seed}/{path}", 1 << 30, 2) == r.read(path)[2:]
    assert fresh.cache_info().generated == 0
    damaged = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    damaged.stat(f"/{seed}/{first}")
    entry = DiskCache(tmp_path, 64 * MIB)._entry_path(repository_key(seed, r.spec), first)
    raw = bytearray(entry.read_bytes())
    raw[-1] ^= 0xFF
    entry.write_bytes(bytes(raw))
    assert at_hand(damaged.read, f"/{seed}/{first}", 1 << 30, 0) is None
    assert damaged.read(f"/{seed}/{first}", 1 << 30, 0) == r.read(first)
    assert damaged.cache_info().generated == 1
    monkeypatch.setattr(source_module, "INLINE_DISK_READ", 0)
    damaged.stat(f"/{seed}/{second}")
    assert at_hand(damaged.read, f"/{seed}/{second}", 1 << 30, 0) is None


@pytest.mark.parametrize("damage", ["flip_size", "flip_check", "truncate", "garbage"])
def test_size_index_damage_is_never_believed(tmp_path: Path, damage: str) -> None:
    """Sizes come from one index per repository; a damaged record is skipped (the entry's own header, or a miss,
    answers instead), never served as a size."""
    writer = DiskCache(tmp_path, 64 * MIB)
    for i in range(5):
        writer.put("k", f"f{i}", b"x" * (100 + i))
    index = writer.root / "k" / INDEX_NAME
    raw = bytearray(index.read_bytes())
    assert len(raw) == 5 * 24
    assert {i: DiskCache(tmp_path, 64 * MIB).size("k", f"f{i}") for i in range(5)} == {i: 100 + i for i in range(5)}
    if damage == "flip_size":
        raw[24 + 8] ^= 0x40  # f1's size
    elif damage == "flip_check":
        raw[24 + 16] ^= 1
    elif damage == "truncate":
        raw = raw[:-5]
    else:
        raw += b"junk that is not a record......"
    index.write_bytes(bytes(raw))
    for entry in entry_files(writer):  # without entries, a skipped record must be a miss, not a wrong size
        entry.unlink()
    reader = DiskCache(tmp_path, 64 * MIB)
    sizes = {i: reader.size("k", f"f{i}") for i in range(5)}
    damaged = {"flip_size": 1, "flip_check": 1, "truncate": 4}.get(damage)
    assert sizes == {i: (None if i == damaged else 100 + i) for i in range(5)}


def test_size_index_serves_sizes_without_opening_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = DiskCache(tmp_path, 64 * MIB)
    for i in range(50):
        writer.put("k", f"d/f{i}", b"y" * i)
    reader = DiskCache(tmp_path, 64 * MIB)
    monkeypatch.setattr(reader, "_read", lambda *a, **k: pytest.fail("an entry was opened for its size"))
    assert [reader.size("k", f"d/f{i}") for i in range(50)] == list(range(50))
    monkeypatch.undo()
    assert reader.size("other", "d/f1") is None  # indexes are per repository


def test_bounded_in_bytes(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, 200_000)
    for i in range(100):
        cache.put("k", f"f{i}", os.urandom(20_000))
    assert cache.usage() <= 200_000
    assert cache.content("k", "f99") is not None, "the newest entries stay"
    # A file larger than a quarter of the budget keeps only its size.
    cache.put("k", "big", b"x" * 60_000)
    assert cache.size("k", "big") == 60_000 and cache.content("k", "big") is None


def test_concurrent_writers_and_readers(tmp_path: Path) -> None:
    payloads = {f"f{i}": os.urandom(5000 + i) for i in range(20)}
    errors: list[str] = []

    def work(n: int) -> None:
        cache = DiskCache(tmp_path, 64 * MIB)  # as separate mounts would
        for _ in range(5):
            for name, data in payloads.items():
                cache.put("k", name, data)
                got = cache.content("k", name)
                if got is not None and got != data:
                    errors.append(name)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not [p for p in tmp_path.rglob(".tmp-*")], "no temporary file is left behind"


def test_swapped_or_copied_entries_are_never_served(tmp_path: Path) -> None:
    """Every entry carries its key (generator version, repository, path) inside its checksummed header: an entry
    file swapped with another's, or copied over it, is refused and regenerated, never served as the other path."""
    seed = small_csv_with_readme()
    truth = generators.repository(seed)
    first, second = data_files(truth)[:2]
    expected = {first: truth.read(first), second: truth.read(second)}
    assert expected[first] != expected[second]
    cache = DiskCache(tmp_path, 64 * MIB)
    for path in (first, second):
        read_through(cache, truth, path)
    key = repository_key(seed, truth.spec)
    a, b = (cache._entry_path(key, path) for path in (first, second))
    raw_a, raw_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(raw_b)
    b.write_bytes(raw_a)
    fresh = DiskCache(tmp_path, 64 * MIB)
    assert fresh.content(key, first) is None and fresh.content(key, second) is None
    for path in (first, second):
        assert read_through(fresh, truth, path) == expected[path]
        assert read_through(fresh, truth, path) == expected[path]  # regenerated, and stored under its own key
    # Copied into another repository's folder (same path): refused there too.
    other = repository_key(seed + 1, generators.repository(seed + 1).spec)
    (fresh.root / other).mkdir()
    (fresh.root / other / a.name).write_bytes(a.read_bytes())
    assert fresh.content(other, first) is None
    # A size index copied from another repository is not believed either.
    (fresh.root / other / INDEX_NAME).write_bytes((fresh.root / key / INDEX_NAME).read_bytes())
    assert DiskCache(tmp_path, 64 * MIB).index_sizes(other, [first, second]) == [None, None]
    assert DiskCache(tmp_path, 64 * MIB).index_sizes(key, [first, second]) == [
        len(expected[first]),
        len(expected[second]),
    ]
