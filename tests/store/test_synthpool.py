"""The synthesis pool (sgfs.store.synthpool): workers that measure sizes and encode files, fail their tasks
when they die, and give the same bytes as a synthesis in the process."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from generators import Repository
from sgfs.store.diskcache import DiskCache, repository_key
from sgfs.store.source import MIB, MountSource
from sgfs.store.synthpool import SynthesisPool
from tests.helpers import FailingRepository, data_files, repo, small_csv_with_readme, small_seeds


def ended(processes: list[Any], within: float = 30) -> bool:
    """Whether every process has exited and been reaped (by the pool's own threads) within ``within`` s."""
    deadline = time.monotonic() + within
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(p.is_alive() for p in processes)


def test_a_worker_that_dies_fails_its_tasks_and_is_replaced() -> None:
    """A worker killed mid-task (out of memory, a signal): its task fails with WorkerGone at once rather than
    hanging (the mount synthesises those files in its own process), and a fresh process takes its place."""
    import signal

    from sgfs.store.synthpool import WorkerGone

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
        assert wait_for(lambda: doomed.replaced == 1)
        fresh = doomed._workers[0].executor._process  # type: ignore[attr-defined]
        assert fresh.pid != process.pid and fresh.is_alive()
        seed = small_csv_with_readme()
        source = MountSource([seed], pool=doomed)
        source.listdir(f"/{seed}")
        assert {p: source.read(f"/{seed}/{p}", 1 << 30, 0) for p in repo(seed).file_paths()} == {
            p: repo(seed).read(p) for p in repo(seed).file_paths()
        }
    finally:
        doomed.close()


def test_a_stopped_worker_is_killed_and_replaced_and_its_reads_are_served(caplog: pytest.LogCaptureFixture) -> None:
    """A worker that stops answering (SIGSTOP, a stuck task) while a reader waits on it: after the task timeout
    it is killed and replaced, the reader gets the file's exact bytes, and later work goes to the new process."""
    import logging
    import signal

    seed = small_seeds()["xlsx"][0]
    r = repo(seed)
    stuck = SynthesisPool(1, task_timeout_s=1.0)
    stopped = stuck._workers[0].executor._process  # type: ignore[attr-defined]
    try:
        stuck.warm(timeout=60)
        os.kill(stopped.pid, signal.SIGSTOP)
        source = MountSource([seed], pool=stuck)
        path = data_files(r)[0]
        got: list[bytes] = []

        def reader() -> None:
            source.listdir(f"/{seed}")  # hands the sizes to the stopped worker
            got.append(source.read(f"/{seed}/{path}", 1 << 30, 0))

        with caplog.at_level(logging.WARNING, logger="sgfs.store.synthpool"):
            thread = threading.Thread(target=reader, daemon=True)
            thread.start()
            thread.join(15)  # bounded by the timeout, not by how long the worker stays stopped
        assert not thread.is_alive(), "the read waited on the stopped worker"
        assert got == [r.read(path)]
        assert ended([stopped], within=10)  # killed (a stopped process dies of SIGKILL) and reaped
        assert wait_for(lambda: stuck.replaced == 1)
        assert "answered nothing" in caplog.text and "replaced by pid" in caplog.text
        fresh = stuck._workers[0].executor._process  # type: ignore[attr-defined]
        assert fresh.pid != stopped.pid
        other = data_files(r)[-1]
        _, sizes = stuck.measure("k", r.spec, [other])
        assert [(x.path, x.size) for x in sizes.result(timeout=60)] == [(other, len(r.read(other)))]
    finally:
        if stopped.is_alive():
            os.kill(stopped.pid, signal.SIGKILL)
        stuck.close()


def test_a_busy_worker_that_answers_is_never_killed() -> None:
    """The timeout counts silence, not work: a worker that keeps answering tasks one after another is kept."""
    r = repo(288)  # 1 843 files
    # A task of 20 files takes about 10 ms here; 1.5 s of silence is far beyond it, even on a loaded machine.
    busy = SynthesisPool(1, task_timeout_s=1.5)
    try:
        busy.warm(timeout=60)
        paths = data_files(r)
        started = time.monotonic()
        # Every file measured twenty times over: several seconds of work in tasks of 20 files each (eight times took
        # only 3.0 s once generator version 11 made this repository's files half as long)
        chunks = [paths[i : i + 20] for i in range(0, len(paths), 20)] * 20
        tasks = [busy.measure("k", r.spec, chunk, keep=False)[1] for chunk in chunks]
        sizes = {x.path: x.size for task in tasks for x in task.result(timeout=120)}
        took = time.monotonic() - started
        assert took > 2 * busy.task_timeout_s, took  # far longer than the timeout in all, each task well within
        assert busy.replaced == 0
        assert all(size > 0 for size in sizes.values()) and len(sizes) == len(paths)
    finally:
        busy.close()


def wait_for(predicate: Any, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(predicate())


def test_a_failing_task_reports_its_error_and_the_worker_serves_on(pool: SynthesisPool) -> None:
    """An exception in a task reaches its caller; the worker is still there for the next task."""
    import pickle

    from sgfs.store import synthpool

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
    from sgfs.store.source import GenerationError

    seed = small_csv_with_readme()
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

    from sgfs.store import synthpool

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
            worker.prioritise(tasks[hurried].future)
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


def test_closing_a_pool_with_a_stopped_worker_ends_it() -> None:
    """A worker stopped while idle (the watchdog leaves it: it holds no task) must not outlive the pool, or
    the daemon could not exit after its unmount: ``close`` kills it after a short grace."""
    import signal

    from sgfs.store.synthpool import CLOSE_GRACE_S

    pool = SynthesisPool(1)
    process = pool._workers[0].executor._process  # type: ignore[attr-defined]
    try:
        pool.warm(timeout=60)
        os.kill(process.pid, signal.SIGSTOP)
        closer = threading.Thread(target=pool.close, daemon=True)
        started = time.monotonic()
        closer.start()
        closer.join(CLOSE_GRACE_S + 10)
        assert not closer.is_alive() and time.monotonic() - started < CLOSE_GRACE_S + 10
        assert ended([process], within=5)
    finally:
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
