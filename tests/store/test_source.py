"""MountSource (sgfs.store.source) without FUSE: seeds and paths, reads, memoised sizes, concurrency, failures,
and its work with a disk cache and a synthesis pool (prefetch, sizes known without the bytes)."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

import generators
from generators import MAX_SEED, Repository
from generators.paths import README_NAME
from sgfs.store.diskcache import INDEX_NAME, DiskCache, repository_key
from sgfs.store.source import MIB, GenerationError, MountSource, Stat, seed_from_name
from sgfs.store.synthpool import SynthesisPool
from tests.helpers import FailingRepository, data_files, repo, small_csv_with_readme, small_seeds


def test_second_source_starts_warm_from_disk(tmp_path: Path) -> None:
    seed = small_seeds()["xlsx"][0]
    paths = repo(seed).file_paths()
    first = MountSource([seed], disk=DiskCache(tmp_path, 256 * MIB))
    sizes = {p: first.stat(f"/{seed}/{p}").size for p in paths}
    second = MountSource([seed], disk=DiskCache(tmp_path, 256 * MIB))
    assert {p: second.stat(f"/{seed}/{p}").size for p in paths} == sizes
    assert all(second.read(f"/{seed}/{p}", 1 << 30, 0) == repo(seed).read(p) for p in paths)
    assert second.cache_info().generated == 0


def test_listing_prefetches_sizes_in_the_pool(pool: SynthesisPool, tmp_path: Path) -> None:
    for ext in ("csv", "xlsx", "json"):
        seed = small_seeds()[ext][0]
        r = repo(seed)
        # Without a disk cache the prefetched bytes are kept in memory (a budget that holds them all);
        # with one, they go to disk and the memory budget (1 MiB) holds.
        for disk, budget in ((None, 256 * MIB), (DiskCache(tmp_path / ext, 256 * MIB), 1 * MIB)):
            source = MountSource([seed], pool=pool, disk=disk, cache_bytes=budget)
            source.listdir(f"/{seed}")
            for path in r.file_paths():
                assert source.stat(f"/{seed}/{path}").size == len(r.read(path))
                assert source.read(f"/{seed}/{path}", 1 << 30, 0) == r.read(path)
            info = source.cache_info()
            # Every data file synthesised exactly once; the README comes with the repository.
            assert info.generated == len(data_files(r)), "every file synthesised exactly once"
            assert info.content_bytes <= budget, "the memory budget holds with the pool"


def test_prefetch_batches_are_spread_over_the_workers_and_leave_the_readme(pool: SynthesisPool) -> None:
    """A listing's files go to the pool in batches of at most PREFETCH_BATCH, as even as the workers allow (a
    small repository's sizes all arrive in about half the time), never with the README, read in process."""
    from sgfs.store.source import PREFETCH_BATCH

    asked: list[list[str]] = []
    real = pool.measure

    def measure(repo_key: str, spec: Any, paths: Any, keep: bool = True) -> Any:
        asked.append(list(paths))
        return real(repo_key, spec, paths, keep)

    for seed in (285, small_csv_with_readme()):
        r = repo(seed)
        asked.clear()
        source = MountSource([seed], pool=pool)
        pool.measure = measure  # type: ignore[method-assign]
        try:
            source.listdir(f"/{seed}")
        finally:
            del pool.measure  # type: ignore[method-assign]
        files = [p for p in r.file_paths() if p != "README.md"][:256]
        assert sorted(p for batch in asked for p in batch) == sorted(files)
        sizes = [len(batch) for batch in asked]
        assert max(sizes) <= PREFETCH_BATCH and max(sizes) - min(sizes[:-1] or sizes) <= 1
        if len(files) <= 2 * PREFETCH_BATCH:
            assert len(asked) == pool.workers  # one even batch per worker
        assert all(source.stat(f"/{seed}/{p}").size == len(r.read(p)) for p in r.file_paths())


def test_sizes_the_pool_measured_stay_on_disk_without_the_bytes(pool: SynthesisPool, tmp_path: Path) -> None:
    """Sizes always: a prefetch's measured sizes go to the disk cache's index at once, so a mount that ends
    before its files are assembled (here: no encode ever runs) leaves them to the next mount."""
    seed = small_csv_with_readme()
    r = repo(seed)

    def no_encode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the pool is closing")

    source = MountSource([seed], pool=pool, disk=DiskCache(tmp_path, 64 * MIB))
    pool.encode = no_encode  # type: ignore[method-assign, assignment]
    try:
        source.listdir(f"/{seed}")
        for path in r.file_paths():
            assert source.stat(f"/{seed}/{path}").size == len(r.read(path))
    finally:
        del pool.encode  # type: ignore[method-assign]
    key = repository_key(seed, r.spec)
    fresh = DiskCache(tmp_path, 64 * MIB)
    files = [p for p in r.file_paths() if p != "README.md"]
    assert fresh.index_sizes(key, files) == [len(r.read(p)) for p in files]
    assert all(fresh.content(key, p) is None for p in files)  # sizes only: no entry was written
    index = fresh.root / key / INDEX_NAME
    before = index.stat().st_size
    fresh.note_sizes(key, [(p, len(r.read(p))) for p in files])  # known already: nothing appended
    assert index.stat().st_size == before


def test_prefetch_picks_own_files_then_the_subtree_in_path_order_once() -> None:
    from sgfs.store.source import _PrefetchCandidates

    paths = sorted(["a/x.csv", "a/b/1.csv", "a/b/2.csv", "a/c/3.csv", "a-b/4.csv", "a0/5.csv", "z.csv"])
    candidates = _PrefetchCandidates(paths, [p == "a/b/2.csv" for p in paths])  # a size already known: never picked
    assert candidates.take(["a/x.csv", "gone.csv"], "a", 2) == ["a/x.csv", "a/b/1.csv"]
    assert candidates.take([], "a", 10) == ["a/c/3.csv"]  # "a-b" and "a0" are not below "a"
    assert candidates.take(["a/x.csv"], "a", 10) == []
    assert candidates.take([], "", 10) == ["a-b/4.csv", "a0/5.csv", "z.csv"]
    assert candidates.take(["z.csv"], "", 10) == []


def test_a_second_source_asks_the_pool_nothing_for_sizes_on_disk(tmp_path: Path) -> None:
    seed = small_csv_with_readme()
    r = repo(seed)
    first = MountSource([seed], disk=DiskCache(tmp_path, 256 * MIB))
    for path in r.file_paths():
        first.stat(f"/{seed}/{path}")

    class NoPool:
        def submit(self, *args: object) -> None:
            raise AssertionError("a size the disk cache holds was asked of the pool")

    second = MountSource([seed], disk=DiskCache(tmp_path, 256 * MIB), pool=NoPool())  # type: ignore[arg-type]
    walked = [""]
    for folder in walked:
        entries = second.listdir(f"/{seed}/{folder}")
        stats = second.stats_without_synthesis(f"/{seed}/{folder}", entries)
        for (name, is_dir), stat in zip(entries, stats, strict=True):
            child = f"{folder}/{name}" if folder else name
            assert stat is not None and stat.is_dir == is_dir
            if is_dir:
                walked.append(child)
            else:
                assert stat.size == len(r.read(child))
    assert second.cache_info().generated == 0


def test_reads_racing_a_prefetch_synthesise_once(pool: SynthesisPool) -> None:
    seed = small_seeds()["txt"][0]
    r = repo(seed)
    source = MountSource([seed], pool=pool)
    barrier = threading.Barrier(8)
    results: dict[str, bytes] = {}

    def reader(k: int) -> None:
        barrier.wait()
        if k == 0:
            source.listdir(f"/{seed}")
        for path in r.file_paths():
            results[path] = source.read(f"/{seed}/{path}", 1 << 30, 0)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {p: r.read(p) for p in r.file_paths()}
    assert source.cache_info().generated == len(data_files(r))


def test_stat_without_synthesis_never_synthesises(tmp_path: Path) -> None:
    seed = small_csv_with_readme()
    r = repo(seed)
    folder = next(e.name for e in r.list("") if e.is_dir)
    path = r.file_paths()[-1]
    source = MountSource([seed])
    assert source.stat_without_synthesis(f"/{seed}/{folder}") == source.stat(f"/{seed}/{folder}")
    assert source.stat_without_synthesis(f"/{seed}/{path}") is None
    assert source.cache_info().generated == 0
    size = source.stat(f"/{seed}/{path}").size
    assert source.stat_without_synthesis(f"/{seed}/{path}") == source.stat(f"/{seed}/{path}")
    # A size the disk cache holds counts as known, without synthesis.
    DiskCache(tmp_path, 64 * MIB).put(repository_key(seed, r.spec), path, r.read(path))
    fresh = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    peeked = fresh.stat_without_synthesis(f"/{seed}/{path}")
    assert peeked is not None and peeked.size == size and fresh.cache_info().generated == 0
    with pytest.raises(FileNotFoundError):
        fresh.stat_without_synthesis(f"/{seed}/nope.csv")


def test_seed_names() -> None:
    assert seed_from_name("0") == 0
    assert seed_from_name("118") == 118
    assert seed_from_name(str(MAX_SEED)) == MAX_SEED
    for bad in ("", "abc", "-1", "+1", "007", "00", "1.0", " 1", "٣", str(MAX_SEED + 1)):
        assert seed_from_name(bad) is None, bad


def test_source_root_and_lookup() -> None:
    source = MountSource([5, 118, 5, 3])
    assert source.listdir("/") == [("5", True), ("118", True), ("3", True)]
    assert source.stat("/") == Stat(True, 0, 2 + 3)
    r = repo(118)
    top = r.list("")
    assert source.listdir("/118") == [(e.name, e.is_dir) for e in top]
    assert source.stat("/118") == Stat(True, 0, 2 + sum(e.is_dir for e in top))
    # Unlisted seeds resolve too; anything that is not a canonical seed does not.
    assert source.stat("/123456789").is_dir
    assert source.stat(f"/{MAX_SEED}").is_dir
    for bad in ("/abc", "/-1", "/007", f"/{MAX_SEED + 1}", "/118/nope", "/118/../118", "/118/./x"):
        with pytest.raises(FileNotFoundError):
            source.stat(bad)
    path = r.file_paths()[0]
    assert source.stat(f"/118/{path}") == Stat(False, len(r.read(path)), 1)
    with pytest.raises(NotADirectoryError):
        source.listdir(f"/118/{path}")
    with pytest.raises(IsADirectoryError):
        source.read("/118", 10, 0)
    with pytest.raises(IsADirectoryError):
        source.read("/", 10, 0)
    with pytest.raises(FileNotFoundError):
        source.read("/118/nope.csv", 10, 0)


def test_source_reads_at_offsets() -> None:
    seed = small_seeds()["xlsx"][0]
    source = MountSource([seed])
    path = repo(seed).file_paths()[-1]
    data = repo(seed).read(path)
    rng = random.Random(7)
    cases = [(0, len(data)), (0, 1), (len(data) - 1, 10), (len(data), 10), (len(data) + 99, 5), (3, 0)]
    cases += [(rng.randrange(len(data)), rng.randrange(1, 70_000)) for _ in range(50)]
    for offset, size in cases:
        assert source.read(f"/{seed}/{path}", size, offset) == data[offset : offset + size]


def test_source_memoises_sizes_and_bounds_the_cache() -> None:
    seed = small_csv_with_readme()
    paths = [p for p in repo(seed).file_paths() if p != README_NAME]  # the README comes with the repository
    biggest = max(len(repo(seed).read(p)) for p in paths)
    bound = 3 * biggest
    source = MountSource([seed], cache_bytes=bound)
    sizes = {p: source.stat(f"/{seed}/{p}").size for p in paths}
    assert sizes == {p: len(repo(seed).read(p)) for p in paths}
    info = source.cache_info()
    assert info.generated == len(paths)
    assert 0 < info.content_bytes <= bound and info.content_files < len(paths)
    # A second stat never regenerates, even for files evicted from the content cache.
    for p in paths:
        assert source.stat(f"/{seed}/{p}").size == sizes[p]
    assert source.cache_info().generated == len(paths)
    # A cache smaller than any file keeps nothing and still serves every byte.
    tiny = MountSource([seed], cache_bytes=10)
    assert tiny.read(f"/{seed}/{paths[0]}", 1 << 20, 0) == repo(seed).read(paths[0])
    assert tiny.cache_info().content_bytes == 0


def test_source_synthesises_once_under_concurrency() -> None:
    seed = small_seeds()["json"][0]
    path = f"/{seed}/{next(p for p in repo(seed).file_paths() if p != 'README.md')}"
    source = MountSource([seed])
    barrier = threading.Barrier(16)
    results: list[bytes] = []

    def reader() -> None:
        barrier.wait()
        results.append(source.read(path, 1 << 30, 0))

    threads = [threading.Thread(target=reader) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 16
    assert source.cache_info().generated == 1
    assert source.cache_info().repositories == 1


def test_source_wraps_generation_failures() -> None:
    seed = small_seeds()["txt"][0]
    good, bad = repo(seed).file_paths()[:2]

    class Broken(FailingRepository):
        broken = frozenset({bad})

    source = MountSource([seed], factory=lambda s: Broken(generators.build_spec(s)))
    with pytest.raises(GenerationError) as info:
        source.stat(f"/{seed}/{bad}")
    assert info.value.seed == seed and info.value.path == bad
    assert isinstance(info.value.cause, RuntimeError)
    with pytest.raises(GenerationError):  # not cached: every attempt fails the same way
        source.read(f"/{seed}/{bad}", 10, 0)
    assert source.read(f"/{seed}/{good}", 1 << 30, 0) == repo(seed).read(good)

    def no_spec(s: int) -> Repository:
        raise ValueError("spec builder bug")

    with pytest.raises(GenerationError):
        MountSource([], factory=no_spec).stat("/42")
