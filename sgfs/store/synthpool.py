"""Cold work spread over processes: synthesise batches of files of one repository in a pool sized to the cores.

Workers rebuild the repository from its spec (sent pickled with every batch, pickled once per repository in the
parent and unpickled only by a worker that does not hold that repository yet) and run the same code as the
daemon, so bytes are identical to in-process synthesis by construction: same functions, same inputs.

A listing needs sizes, a read needs bytes, and a file's table is most of the cost of either. So a batch goes in
two steps to one worker: ``measure`` synthesises the tables, sends back the exact sizes at once and keeps the
tables; ``encode`` assembles the files from the kept tables (stores them in the disk cache when one is
configured) and sends back the contents the disk did not keep. Each worker is one process, driven through a pipe,
with two queues here, measures first, so a recursive listing gets its sizes before files are assembled, the files
follow without being synthesised twice, and an ``encode`` reaches the worker that holds its tables. A reader
waiting for a file's bytes has its encode prioritised ahead of the measures. A worker that dies fails its tasks at
once (``WorkerGone``): the mount then synthesises those files in its own process. A worker that stops answering
(stopped, stuck) while it holds tasks is killed after ``task_timeout_s`` without a reply, which fails its tasks
the same way; a watchdog replaces every worker that died or was killed with a fresh process, and logs it.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any, Protocol

from cachetools import LRUCache

from generators import Repository, Spec
from generators.mess import MessyFile
from generators.repository import Measured
from sgfs.store.diskcache import DiskCache


@dataclass(frozen=True)
class Synthesised:
    path: str
    size: int  # -1 when synthesis failed
    content: bytes | None  # None when the disk cache holds it, when only measured, or on failure
    error: str = ""


log = logging.getLogger(__name__)

_MAX_PICKLED_SPECS = 64
# How long a worker holding tasks may go without a reply before it is killed and replaced: far above any task's
# run time (a batch of a few files), short enough that a reader of a stopped worker's file is soon served.
TASK_TIMEOUT_S = 10.0
WATCH_INTERVAL_S = 0.25
# How long ``close`` lets workers finish before it kills them: a stopped worker would otherwise keep the daemon
# from exiting (multiprocessing joins its children at exit, and a stopped process never takes SIGTERM).
CLOSE_GRACE_S = 2.0
# Tables a worker keeps between measuring and encoding, bounded by an estimate of their memory; one that was
# dropped is synthesised again by ``encode``.
KEPT_TABLE_BYTES = 128 << 20
_disks: dict[tuple[str, int], DiskCache] = {}
_repositories: dict[str, Repository] = {}


def _kept_bytes(kept: Measured) -> int:
    table = kept.observed if isinstance(kept, MessyFile) else kept
    return 64 * max(1, table.n_rows) * max(1, len(table.columns))


_tables: LRUCache[tuple[str, str], Measured] = LRUCache(maxsize=KEPT_TABLE_BYTES, getsizeof=_kept_bytes)


def _start_worker() -> None:
    import generators

    generators.warm_up()  # load what a first synthesis of each format loads, before the first real request


def _repository(repo_key: str, pickled_spec: bytes) -> Repository:
    repo = _repositories.get(repo_key)
    if repo is None:
        if len(_repositories) >= 8:
            _repositories.clear()
        spec: Spec = pickle.loads(pickled_spec)  # only here: a known repository skips the unpickling
        repo = _repositories[repo_key] = Repository(spec)
    return repo


def _disk(disk_place: tuple[str, int] | None) -> DiskCache | None:
    if disk_place is None:
        return None
    disk = _disks.get(disk_place)
    if disk is None:
        disk = _disks[disk_place] = DiskCache(Path(disk_place[0]), disk_place[1])
    return disk


def _failed(path: str, exc: BaseException) -> Synthesised:
    return Synthesised(path, -1, None, f"{type(exc).__name__}: {exc}")


def _measure(repo_key: str, pickled_spec: bytes, paths: Sequence[str], keep: bool) -> list[Synthesised]:
    """Exact sizes from the cell texts, the whole batch measured together, no file assembled; with ``keep``,
    the tables stay here for ``_encode``."""
    repo = _repository(repo_key, pickled_spec)
    results: list[Synthesised] = []
    for path, (size, table) in zip(paths, repo.measure(list(paths)), strict=True):
        if isinstance(size, Exception):
            results.append(_failed(path, size))
            continue
        if keep and table is not None:
            _tables[(repo_key, path)] = table
        results.append(Synthesised(path, size, None))
    return results


def _encode(
    repo_key: str, pickled_spec: bytes, paths: Sequence[str], disk_place: tuple[str, int] | None
) -> list[Synthesised]:
    """The files' bytes, from the tables ``_measure`` kept (or synthesised again); stored in the disk cache
    when there is one, and sent back when it did not keep them."""
    repo = _repository(repo_key, pickled_spec)
    disk = _disk(disk_place)
    results: list[Synthesised] = []
    for path in paths:
        try:
            table = _tables.pop((repo_key, path), None)
            content = repo.read(path) if table is None else repo.encode_table(table)
        except Exception as exc:  # reported to the caller, who synthesises in process and maps the error
            results.append(_failed(path, exc))
            continue
        stored = disk is not None and disk.put(repo_key, path, content) > len(content)
        results.append(Synthesised(path, len(content), None if stored else content))
    return results


def _nothing() -> None:
    return None


class WorkerGone(RuntimeError):
    """A worker process exited (killed, out of memory) or its pool was closed: its tasks were not done."""


def _serve(conn: Connection) -> None:
    """A worker process: run each task read from ``conn`` and write back (number, ok, result or exception),
    until the parent closes its end or sends an empty message."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on a foreground daemon: the parent shuts us down
    _start_worker()
    # A thread takes tasks off the pipe while one runs: the parent may hand a second one at once (no gap
    # between two tasks) and its write never waits for the running task to end.
    tasks: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def receive() -> None:
        while True:
            try:
                message = conn.recv_bytes()
            except (EOFError, OSError):
                message = b""
            tasks.put(message)
            if not message:
                return

    threading.Thread(target=receive, name="sgfs-synthesis-tasks", daemon=True).start()
    while True:
        message = tasks.get()
        if not message:
            return
        number, function, args = pickle.loads(message)
        try:
            payload = pickle.dumps((number, True, function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            try:  # an exception goes back as it is if it survives the trip, as its text otherwise
                payload = pickle.dumps((number, False, exc))
                pickle.loads(payload)
            except Exception:
                payload = pickle.dumps((number, False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        try:
            conn.send_bytes(payload)
        except OSError:
            return


class _Process:
    """One worker process driven through a pipe: the submitting thread writes the task, one thread per worker
    reads the results. Lighter than a one-process ProcessPoolExecutor, whose manager and feeder threads put
    two hand-overs between threads on each way of every cold request.

    The worker reads its tasks in a thread of its own, so a write never waits for the running task to end."""

    def __init__(self, context: SpawnContext) -> None:
        self._conn, child = context.Pipe(duplex=True)
        self._process = context.Process(target=_serve, args=(child,), name="sgfs-synthesis", daemon=True)
        self._process.start()
        child.close()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._numbers = itertools.count()
        self._gone = False
        self._heard = time.monotonic()  # the last reply, or the hand-over that gave an idle worker a task
        self._reader = threading.Thread(target=self._read, name="sgfs-synthesis-results", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def gone(self) -> bool:
        with self._lock:
            return self._gone

    def silent_for(self) -> float:
        """Seconds the worker has held tasks without a reply; 0 when it holds none."""
        with self._lock:
            return time.monotonic() - self._heard if self._pending else 0.0

    def kill(self) -> None:
        """Kill the process (a stopped one too): its pipe closes, and its tasks fail with WorkerGone."""
        with contextlib.suppress(OSError, ValueError):
            self._process.kill()

    def end(self, within: float) -> None:
        """Wait up to ``within`` seconds for the process to exit (after ``shutdown``), then kill it."""
        with contextlib.suppress(OSError, ValueError, AssertionError):
            self._process.join(max(0.0, within))
            if self._process.is_alive():
                log.warning("synthesis worker (pid %s) did not exit: killed", self._process.pid)
                self._process.kill()
                self._process.join(5)

    def submit(self, function: Callable[..., Any], *args: object) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._gone:
                raise WorkerGone("the synthesis worker has exited")
            number = next(self._numbers)
            if not self._pending:
                self._heard = time.monotonic()
            self._pending[number] = future
        try:
            message = pickle.dumps((number, function, args), protocol=pickle.HIGHEST_PROTOCOL)
            with self._send_lock:
                self._conn.send_bytes(message)
        except BaseException as exc:
            with self._lock:
                self._pending.pop(number, None)
            if isinstance(exc, OSError):
                raise WorkerGone(f"the synthesis worker has exited: {exc}") from None
            raise
        return future

    def _read(self) -> None:
        while True:
            try:
                number, ok, value = pickle.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                break
            except Exception:  # a reply that cannot be read: the pipe can no longer be trusted
                log.exception("unreadable reply from synthesis worker %s", self._process.pid)
                self._process.kill()
                break
            with self._lock:
                future = self._pending.pop(number, None)
                self._heard = time.monotonic()
            if future is not None and future.set_running_or_notify_cancel():
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        with self._lock:
            self._gone = True
            left = list(self._pending.values())
            self._pending.clear()
        for future in left:
            if future.set_running_or_notify_cancel():
                future.set_exception(WorkerGone("the synthesis worker exited before finishing its task"))
        self._conn.close()
        self._process.join(timeout=5)  # reaped: no process left behind once its pipe is closed

    def shutdown(self) -> None:
        """Ask the worker to exit once the tasks it holds are done (their results fail if unread by then)."""
        with self._lock:
            if self._gone:
                return
        with contextlib.suppress(OSError), self._send_lock:
            self._conn.send_bytes(b"")


class Executor(Protocol):
    """Where a ``_Worker`` hands its tasks: a ``_Process`` (a stand-in in tests)."""

    def submit(self, function: Callable[..., Any], *args: object) -> Future[Any]: ...

    def shutdown(self) -> None: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def gone(self) -> bool: ...

    def silent_for(self) -> float: ...

    def kill(self) -> None: ...

    def end(self, within: float) -> None: ...


class _Worker:
    """One worker process and its two queues: a measure always goes before an encode waiting here, so that a
    recursive listing gets its sizes before any file is assembled. At most ``depth`` tasks are handed to the
    process at once (one running, one ready), the rest wait here where their order can still change."""

    def __init__(self, executor: Executor, depth: int = 2) -> None:
        self.executor = executor
        self._lock = threading.Lock()
        self._measures: collections.deque[_Task] = collections.deque()
        self._encodes: collections.deque[_Task] = collections.deque()
        self._handed = 0
        self.reader_window_s = 0.5
        self._readers_until = 0.0  # until then a reader is waiting for bytes: encodes go first
        self._depth = depth

    def put(self, task: _Task, *, first: bool) -> None:
        with self._lock:
            (self._measures if first else self._encodes).append(task)
        self._pump()

    def prioritise(self, future: Future[list[Synthesised]]) -> None:
        """A reader waits for this task: it goes first, and for a while encodes go before measures (a reader
        reads on: `cat` of many files wants bytes, not the sizes of files further on)."""
        with self._lock:
            self._readers_until = time.monotonic() + self.reader_window_s
            for task in self._encodes:
                if task.future is future:
                    self._encodes.remove(task)
                    self._encodes.appendleft(task)
                    return

    def _pump(self) -> None:
        while True:
            with self._lock:
                if self._handed >= self._depth or not (self._measures or self._encodes):
                    return
                reading = self._encodes and time.monotonic() < self._readers_until
                task = (self._encodes if reading else self._measures or self._encodes).popleft()
                self._handed += 1
                executor = self.executor
            try:
                inner = executor.submit(task.function, *task.args)
            except Exception as exc:  # a closed or broken pool
                with self._lock:
                    if executor is self.executor:
                        self._handed -= 1
                task.future.set_exception(exc)
                continue
            inner.add_done_callback(functools.partial(self._done, task, executor))

    def _done(self, task: _Task, executor: Executor, inner: Future[list[Synthesised]]) -> None:
        with self._lock:
            if executor is self.executor:  # a replaced process's tasks no longer count
                self._handed -= 1
        exc = inner.exception() if not inner.cancelled() else CancelledError()
        if exc is None:
            task.future.set_result(inner.result())
        else:
            task.future.set_exception(exc)
        self._pump()

    def replace(self, executor: Executor) -> None:
        """Hand later tasks to ``executor``, a fresh process, in place of one that is gone or is being killed
        (whose tasks fail with WorkerGone)."""
        with self._lock:
            self.executor = executor
            self._handed = 0  # only tasks handed to the current process count
        self._pump()

    def close(self) -> None:
        with self._lock:
            waiting = [*self._measures, *self._encodes]
            self._measures.clear()
            self._encodes.clear()
        for task in waiting:
            task.future.cancel()
        self.executor.shutdown()


@dataclass
class _Task:
    function: Callable[..., list[Synthesised]]
    args: tuple[object, ...]
    future: Future[list[Synthesised]] = field(default_factory=Future)


class SynthesisPool:
    """Worker processes for batches of one repository's files, each with its own queues."""

    def __init__(self, workers: int | None = None, task_timeout_s: float = TASK_TIMEOUT_S) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.task_timeout_s = task_timeout_s
        # spawn: the daemon is multithreaded when the pool starts, and fork would copy held locks.
        self._context = multiprocessing.get_context("spawn")
        self._workers = [_Worker(_Process(self._context)) for _ in range(self.workers)]
        self._turn = itertools.count()  # next() is atomic under the GIL
        self._pickled_specs: dict[str, bytes] = {}  # repo_key -> pickled spec: pickled once, not per batch
        self.replaced = 0  # workers replaced after they died or stopped answering
        self._closed = threading.Event()
        threading.Thread(target=self._watch, name="sgfs-synthesis-watchdog", daemon=True).start()

    def _watch(self) -> None:
        """Replace a worker that holds tasks and has not answered for ``task_timeout_s`` (killed: its tasks fail
        and are synthesised in the mount's process) or that is gone, with a fresh process."""
        while not self._closed.wait(WATCH_INTERVAL_S):
            for number, worker in enumerate(self._workers):
                old = worker.executor
                silent = old.silent_for()
                stalled = silent > self.task_timeout_s
                if not stalled and not old.gone:
                    continue
                try:
                    fresh = _Process(self._context)
                except Exception:  # no process can be started: reads are synthesised in the mount's process
                    log.exception("cannot start a synthesis worker to replace worker %d", number)
                    continue
                if self._closed.is_set():
                    fresh.shutdown()
                    return
                worker.replace(fresh)  # first: the tasks still queued go to the fresh process
                if stalled:
                    old.kill()
                    why = f"answered nothing for {silent:.1f} s: killed"
                else:
                    why = "exited"
                self.replaced += 1
                log.warning("synthesis worker %d (pid %s) %s; replaced by pid %s", number, old.pid, why, fresh.pid)

    def warm(self, timeout: float | None = None) -> None:
        """Start every worker now rather than on the first cold request, and wait (up to ``timeout`` seconds)
        until each has loaded what it needs: a request that meets a starting worker waits for it to start."""
        started = [worker.executor.submit(_nothing) for worker in self._workers]
        futures.wait(started, timeout=timeout)

    def measure(
        self, repo_key: str, spec: Spec, paths: Sequence[str], keep: bool = True
    ) -> tuple[int, Future[list[Synthesised]]]:
        """The sizes of ``paths`` (each worker in turn); the worker's number, to which ``encode`` goes."""
        number = next(self._turn) % self.workers
        task = _Task(_measure, (repo_key, self._pickled(repo_key, spec), list(paths), keep))
        self._workers[number].put(task, first=True)
        return number, task.future

    def encode(
        self, worker: int, repo_key: str, spec: Spec, paths: Sequence[str], disk: DiskCache | None = None
    ) -> Future[list[Synthesised]]:
        """The bytes of ``paths`` measured by ``worker``; with ``disk``, stored there and sent back only if not."""
        place = (str(disk.root.parent), disk.max_bytes) if disk is not None else None
        task = _Task(_encode, (repo_key, self._pickled(repo_key, spec), list(paths), place))
        self._workers[worker].put(task, first=False)
        return task.future

    def prioritise(self, worker: int, future: Future[list[Synthesised]]) -> None:
        """Someone waits for the bytes of an ``encode`` task not started yet: run it next on its worker."""
        self._workers[worker].prioritise(future)

    def _pickled(self, repo_key: str, spec: Spec) -> bytes:
        pickled = self._pickled_specs.get(repo_key)
        if pickled is None:
            if len(self._pickled_specs) >= _MAX_PICKLED_SPECS:
                self._pickled_specs.clear()
            pickled = self._pickled_specs[repo_key] = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        return pickled

    def close(self) -> None:
        """Stop every worker: each exits once its running task is done; one still there after CLOSE_GRACE_S
        (stopped, stuck) is killed, so that no process outlives the pool."""
        self._closed.set()
        for worker in self._workers:
            worker.close()
        deadline = time.monotonic() + CLOSE_GRACE_S
        for worker in self._workers:
            worker.executor.end(deadline - time.monotonic())
