"""Disk cache, synthesis pool and their hooks in MountSource: same bytes, single flight, bounded, never corrupt."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_mount import FailingRepository, cli, files_under, mounted, one_line_error, small_seeds

from generators import Repository
from generators.paths import README_NAME
from sgfs.diskcache import INDEX_NAME, DiskCache, default_cache_dir, repository_key
from sgfs.source import MountSource
from sgfs.synthpool import SynthesisPool

from conftest import repo

MIB = 1 << 20


@pytest.fixture(scope="module")
def pool() -> Iterator[SynthesisPool]:
    workers = SynthesisPool(2)
    yield workers
    workers.close()


def data_files(r: Repository) -> list[str]:
    """Every file but the README, which the repository holds: never synthesised, never stored on disk."""
    return [p for p in r.file_paths() if p != README_NAME]


def entry_files(cache: DiskCache) -> list[Path]:
    return sorted(p for p in cache.root.rglob("*") if p.is_file() and p.name != INDEX_NAME)


# -- the disk cache -----------------------------------------------------------------------------------------
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
    seed = small_seeds()["csv"][0]
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
    """``read_known`` (what the request loop's thread answers itself) reads a small file the disk cache holds,
    without synthesis; a damaged entry is not served (``read`` then regenerates it); a file over
    INLINE_DISK_READ, or one whose size is not known yet, is left to ``read``."""
    from sgfs import source as source_module

    seed = small_seeds()["csv"][0]
    r = repo(seed)
    filler = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    for path in r.file_paths():
        filler.read(f"/{seed}/{path}", 1 << 30, 0)
    fresh = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    first, second = data_files(r)[:2]
    assert fresh.read_known(f"/{seed}/{first}", 1 << 30, 0) is None  # nothing known of it yet
    for path in r.file_paths():
        assert fresh.stat(f"/{seed}/{path}").size == len(r.read(path))  # from the size index
        assert fresh.read_known(f"/{seed}/{path}", 1 << 30, 2) == r.read(path)[2:]
    assert fresh.cache_info().generated == 0
    damaged = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    damaged.stat(f"/{seed}/{first}")
    entry = DiskCache(tmp_path, 64 * MIB)._entry_path(repository_key(seed, r.spec), first)
    raw = bytearray(entry.read_bytes())
    raw[-1] ^= 0xFF
    entry.write_bytes(bytes(raw))
    assert damaged.read_known(f"/{seed}/{first}", 1 << 30, 0) is None
    assert damaged.read(f"/{seed}/{first}", 1 << 30, 0) == r.read(first)
    assert damaged.cache_info().generated == 1
    monkeypatch.setattr(source_module, "INLINE_DISK_READ", 0)
    damaged.stat(f"/{seed}/{second}")
    assert damaged.read_known(f"/{seed}/{second}", 1 << 30, 0) is None


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


# -- the source with a disk cache and a pool -----------------------------------------------------------------
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
    from sgfs.source import PREFETCH_BATCH

    asked: list[list[str]] = []
    real = pool.measure

    def measure(repo_key: str, spec: Any, paths: Any, keep: bool = True) -> Any:
        asked.append(list(paths))
        return real(repo_key, spec, paths, keep)

    for seed in (285, small_seeds()["csv"][0]):
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
    seed = small_seeds()["csv"][0]
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
    from sgfs.source import _Unasked

    paths = sorted(["a/x.csv", "a/b/1.csv", "a/b/2.csv", "a/c/3.csv", "a-b/4.csv", "a0/5.csv", "z.csv"])
    unasked = _Unasked(paths, [p == "a/b/2.csv" for p in paths])  # a size already known: never picked
    assert unasked.take(["a/x.csv", "gone.csv"], "a", 2) == ["a/x.csv", "a/b/1.csv"]
    assert unasked.take([], "a", 10) == ["a/c/3.csv"]  # "a-b" and "a0" are not below "a"
    assert unasked.take(["a/x.csv"], "a", 10) == []
    assert unasked.take([], "", 10) == ["a-b/4.csv", "a0/5.csv", "z.csv"]
    assert unasked.take(["z.csv"], "", 10) == []


def test_a_second_source_asks_the_pool_nothing_for_sizes_on_disk(tmp_path: Path) -> None:
    seed = small_seeds()["csv"][0]
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
        stats = second.peek_stats(f"/{seed}/{folder}", entries)
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


def ended(processes: list[Any], within: float = 30) -> bool:
    """Whether every process has exited and been reaped (by the pool's own threads) within ``within`` s."""
    deadline = time.monotonic() + within
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(p.is_alive() for p in processes)


def test_a_worker_that_dies_fails_its_tasks_and_reads_fall_back_to_the_process() -> None:
    """A worker killed mid-task (out of memory, a signal): its task fails with WorkerGone at once rather than
    hanging, later tasks for it fail when handed, and the mount's reads are synthesised in process instead."""
    import signal

    from sgfs.synthpool import WorkerGone

    big = 288  # long enough to be killed while it measures
    r = repo(big)
    doomed = SynthesisPool(1)
    try:
        process = doomed._workers[0].executor._process  # type: ignore[attr-defined]
        doomed.warm(timeout=60)
        _, sizes = doomed.measure("k", r.spec, data_files(r)[:64])
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(WorkerGone):
            sizes.result(timeout=60)
        assert ended([process])
        _, later = doomed.measure("k", r.spec, data_files(r)[:1])
        with pytest.raises(WorkerGone):
            later.result(timeout=10)
        seed = small_seeds()["csv"][0]
        source = MountSource([seed], pool=doomed)
        source.listdir(f"/{seed}")
        assert {p: source.read(f"/{seed}/{p}", 1 << 30, 0) for p in repo(seed).file_paths()} == {
            p: repo(seed).read(p) for p in repo(seed).file_paths()
        }
    finally:
        doomed.close()


def test_a_failing_task_reports_its_error_and_the_worker_serves_on(pool: SynthesisPool) -> None:
    """An exception in a task reaches its caller; the worker is still there for the next task."""
    import pickle

    from sgfs import synthpool

    executor = pool._workers[0].executor
    failed = executor.submit(synthpool._measure, "garbage", b"not a pickle", ["x"], False)
    with pytest.raises(pickle.UnpicklingError):
        failed.result(timeout=60)
    r = repo(small_seeds()["txt"][0])
    path = data_files(r)[0]
    done = executor.submit(synthpool._measure, "after", pickle.dumps(r.spec), [path], False).result(timeout=60)
    assert [(x.path, x.size) for x in done] == [(path, len(r.read(path)))]


def test_closing_the_pool_ends_its_processes() -> None:
    closing = SynthesisPool(2)
    processes = [worker.executor._process for worker in closing._workers]  # type: ignore[attr-defined]
    closing.warm(timeout=60)
    assert all(p.is_alive() for p in processes)
    closing.close()
    assert ended(processes)


def test_a_broken_pool_falls_back_to_the_process() -> None:
    from sgfs.source import GenerationError

    seed = small_seeds()["csv"][0]
    bad, good = data_files(repo(seed))[:2]

    def factory(s: int) -> Repository:
        failing = FailingRepository(repo(s).spec)
        failing.broken = frozenset([bad])
        return failing

    closed = SynthesisPool(1)
    closed.close()
    source = MountSource([seed], pool=closed, factory=factory)
    source.listdir(f"/{seed}")  # every prefetch submission fails: nothing is left waiting
    with pytest.raises(GenerationError, match="injected failure"):
        source.read(f"/{seed}/{bad}", 1 << 30, 0)
    assert source.read(f"/{seed}/{good}", 1 << 30, 0) == repo(seed).read(good)


# -- exact sizes without the file ------------------------------------------------------------------------------
@pytest.mark.parametrize("extension", ["csv", "txt", "json", "jsonl", "xlsx", "log"])
def test_sizes_from_cell_texts_equal_the_encoded_length(extension: str) -> None:
    checked = 0
    for seed in small_seeds()[extension]:
        r = repo(seed)
        for path in r.file_paths():
            assert r.size(path) == len(r.read(path)), (seed, path)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("extension", ["csv", "txt", "json", "jsonl", "xlsx", "log"])
def test_a_measured_table_encodes_to_the_bytes_of_a_read(extension: str) -> None:
    for seed in small_seeds()[extension][:2]:
        paths = repo(seed).file_paths()
        fresh = Repository(repo(seed).spec)  # nothing cached: the tables are the measured ones
        for path, (size, table) in zip(paths, fresh.measure(paths), strict=True):
            content = repo(seed).read(path)
            assert size == len(content), (seed, path)
            assert (fresh.readme if table is None else fresh.encode_table(table)) == content, (seed, path)


def test_the_pool_measures_then_encodes_the_same_bytes(pool: SynthesisPool, tmp_path: Path) -> None:
    seed = small_seeds()["xlsx"][0]
    r = repo(seed)
    paths = r.file_paths()
    key = repository_key(seed, r.spec)
    worker, sizes = pool.measure(key, r.spec, paths)
    assert [(x.path, x.size) for x in sizes.result(timeout=60)] == [(p, len(r.read(p))) for p in paths]
    assert all(x.content is None for x in sizes.result())
    # From the kept tables on the worker that measured them, or synthesised again on the other one.
    for number in (worker, 1 - worker):
        got = pool.encode(number, key, r.spec, paths).result(timeout=60)
        assert [(x.path, x.content) for x in got] == [(p, r.read(p)) for p in paths]
    disk = DiskCache(tmp_path, 256 * MIB)
    stored = pool.encode(worker, key, r.spec, paths, disk).result(timeout=60)
    assert all(x.content is None and x.size == len(r.read(x.path)) for x in stored)
    assert all(disk.content(key, p) == r.read(p) for p in paths)


def test_a_worker_runs_measures_first_and_encodes_first_while_a_reader_waits() -> None:
    from concurrent.futures import Future

    from sgfs import synthpool

    handed: list[str] = []
    pending: list[Future[list[synthpool.Synthesised]]] = []

    class Recorder:
        def submit(self, function: object, *args: object) -> Future[list[synthpool.Synthesised]]:
            handed.append(str(args[2][0]))  # type: ignore[index]
            future: Future[list[synthpool.Synthesised]] = Future()
            pending.append(future)
            return future

    worker = synthpool._Worker(Recorder(), depth=1)  # type: ignore[arg-type]
    worker.reader_window_s = 600.0

    def run(names: tuple[str, ...], hurried: str = "") -> list[str]:
        handed.clear()
        pending.clear()
        tasks = {
            name: synthpool._Task(synthpool._encode if name[0] == "e" else synthpool._measure, ("k", b"", [name]))
            for name in names
        }
        for name, task in tasks.items():
            worker.put(task, first=name.startswith("m"))
        if hurried:
            worker.hurry(tasks[hurried].future)
        while len(handed) < len(tasks):
            pending[len(handed) - 1].set_result([])  # the running task ends: the next one is handed
        pending[-1].set_result([])
        assert all(task.future.done() for task in tasks.values())
        return handed

    names = ("m1", "e1", "e2", "m2", "e3", "m3")
    assert run(names) == ["m1", "m2", "m3", "e1", "e2", "e3"]  # m1 is handed at once; sizes before bytes
    # A reader waits for e3: it goes next, and for a while encodes go before measures.
    assert run(names, hurried="e3") == ["m1", "e3", "e1", "e2", "m2", "m3"]


def test_sizes_only_prefetch_without_anywhere_to_keep_bytes(pool: SynthesisPool) -> None:
    seed = small_seeds()["log"][0]
    r = repo(seed)
    source = MountSource([seed], pool=pool, cache_bytes=0)
    source.listdir(f"/{seed}")
    assert {p: source.stat(f"/{seed}/{p}").size for p in r.file_paths()} == {p: len(r.read(p)) for p in r.file_paths()}
    assert source.cache_info().content_bytes == 0


# -- through FUSE ----------------------------------------------------------------------------------------------
@pytest.mark.fuse
def test_a_second_mount_starts_warm_and_damage_is_regenerated(tmp_path: Path) -> None:
    seed = small_seeds()["jsonl"][0]
    r = repo(seed)
    cache = tmp_path / "cache"
    with mounted(tmp_path / "first", "--seeds", str(seed), "--cache-dir", cache) as mnt:
        first = {p: (mnt / str(seed) / p).read_bytes() for p in r.file_paths()}
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and p.name != INDEX_NAME)
    assert len(entries) == len(data_files(r)), "every data file read is kept (the README comes with the repository)"
    for entry in entries[::2]:  # damage every other entry: truncated or flipped
        raw = entry.read_bytes()
        entry.write_bytes(raw[:-3] if len(raw) % 2 else raw[:-1] + bytes([raw[-1] ^ 1]))
    with mounted(tmp_path / "second", "--seeds", str(seed), "--cache-dir", cache) as mnt:
        assert {p: (mnt / str(seed) / p).stat().st_size for p in r.file_paths()} == {
            p: len(r.read(p)) for p in r.file_paths()
        }
        assert {p: (mnt / str(seed) / p).read_bytes() for p in r.file_paths()} == first
    assert first == {p: r.read(p) for p in r.file_paths()}


@pytest.mark.fuse
def test_no_disk_cache_writes_nothing(tmp_path: Path) -> None:
    seed = small_seeds()["csv"][0]
    home = tmp_path / "home"
    os.environ["XDG_CACHE_HOME"], previous = str(home), os.environ["XDG_CACHE_HOME"]
    try:
        with mounted(tmp_path / "mnt", "--seeds", str(seed), "--no-disk-cache") as mnt:
            assert len(files_under(mnt / str(seed))) == len(repo(seed).file_paths())
            for p in repo(seed).file_paths():
                (mnt / str(seed) / p).read_bytes()
    finally:
        os.environ["XDG_CACHE_HOME"] = previous
    assert not home.exists()


@pytest.mark.fuse
def test_long_listings_show_exact_sizes(tmp_path: Path) -> None:
    """`ls -l`/`find -printf` take sizes from READDIRPLUS answers: they must be the exact byte counts."""
    import subprocess

    seeds = [small_seeds()[ext][0] for ext in ("csv", "xlsx", "log")]
    with mounted(tmp_path / "mnt", "--seeds", ",".join(map(str, seeds)), "--no-disk-cache") as mnt:
        for seed in seeds:
            found = subprocess.run(
                ["find", str(mnt / str(seed)), "-type", "f", "-printf", "%s %P\\n"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            listed = dict(line.split(" ", 1)[::-1] for line in found.splitlines())
            assert listed == {p: str(len(repo(seed).read(p))) for p in repo(seed).file_paths()}


def test_export_and_mounts_share_the_disk_cache(tmp_path: Path) -> None:
    seed = small_seeds()["json"][0]
    r = repo(seed)
    cache = tmp_path / "cache"
    first = cli("export", seed, tmp_path / "a", "--quiet", "--cache-dir", cache)
    assert first.returncode == 0, first.stderr
    assert len(entry_files(DiskCache(cache, 64 * MIB))) == len(r.file_paths())
    source = MountSource([seed], disk=DiskCache(cache, 64 * MIB))
    assert all(source.read(f"/{seed}/{p}", 1 << 30, 0) == r.read(p) for p in r.file_paths())
    assert source.cache_info().generated == 0, "the mount found every file the export kept"
    second = cli("export", seed, tmp_path / "b", "--quiet", "--cache-dir", cache)
    assert second.returncode == 0, second.stderr
    assert files_under(tmp_path / "a") == files_under(tmp_path / "b")
    assert all((tmp_path / "b" / p).read_bytes() == r.read(p) for p in r.file_paths())


def test_peek_stat_never_synthesises(tmp_path: Path) -> None:
    seed = small_seeds()["csv"][0]
    r = repo(seed)
    folder = next(e.name for e in r.list("") if e.is_dir)
    path = r.file_paths()[-1]
    source = MountSource([seed])
    assert source.peek_stat(f"/{seed}/{folder}") == source.stat(f"/{seed}/{folder}")
    assert source.peek_stat(f"/{seed}/{path}") is None
    assert source.cache_info().generated == 0
    size = source.stat(f"/{seed}/{path}").size
    assert source.peek_stat(f"/{seed}/{path}") == source.stat(f"/{seed}/{path}")
    # A size the disk cache holds counts as known, without synthesis.
    DiskCache(tmp_path, 64 * MIB).put(repository_key(seed, r.spec), path, r.read(path))
    fresh = MountSource([seed], disk=DiskCache(tmp_path, 64 * MIB))
    peeked = fresh.peek_stat(f"/{seed}/{path}")
    assert peeked is not None and peeked.size == size and fresh.cache_info().generated == 0
    with pytest.raises(FileNotFoundError):
        fresh.peek_stat(f"/{seed}/nope.csv")


def test_mount_refuses_an_empty_cache_dir(tmp_path: Path) -> None:
    (tmp_path / "mnt").mkdir()
    assert "--no-disk-cache" in one_line_error(cli("mount", tmp_path / "mnt", "--cache-dir", ""))
