"""The FUSE-free core of the mount: mount paths -> repositories -> attributes and bytes, with caches.

``MountSource`` answers everything the filesystem needs (``stat``, ``listdir``, ``read``) for paths as the
kernel gives them ("/", "/118", "/118/a/b.csv"), and is tested without mounting anything. The FUSE layer
(``sgfs.mount.operations``) only translates its answers and exceptions into stat dicts and errno values.

Content is immutable (a pure function of seed and path), so every cache here can be shared freely across
threads; locks only protect the cache structures, and a per-key in-flight table makes concurrent requests
for the same file wait for one synthesis instead of running it twice.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
from cachetools import LRUCache

import generators
from generators import MAX_SEED, PathNotFound, Repository
from generators.paths import README_NAME

if TYPE_CHECKING:
    from sgfs.store.diskcache import DiskCache
    from sgfs.store.synthpool import Synthesised, SynthesisPool

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MIB = 1 << 20
DEFAULT_CACHE_MB = 256
# Building a Repository takes a few milliseconds and holds its spec and tree: keep the recently used ones.
DEFAULT_REPOSITORIES = 64
# One entry is a (seed, path) key and a Stat: a few hundred bytes. A million entries bound the memo near
# 200-300 MB in the worst case while covering hundreds of typical repositories.
DEFAULT_MEMO_ENTRIES = 1_000_000
# Listing a directory prefetches up to this many files below it (its own, then those below, breadth first),
# in batches of PREFETCH_BATCH files per pool task: enough that a recursive walk keeps both workers busy.
PREFETCH_FILES = 256
# A file the disk cache holds and is at most this large is read where its request arrives (sgfs.mount.kernel.loop).
INLINE_DISK_READ = 1 << 20
PREFETCH_BATCH = 8  # fewer, larger pool tasks: less IPC per file, and sizes measured together (Repository.sizes)


class WouldWait(Exception):
    """Raised by a call made with ``wait=False`` whose answer is not at hand: it would build a repository,
    synthesise, read a large file from disk or wait for a worker. The caller asks again where it may wait."""


class GenerationError(Exception):
    """Synthesising a repository or a file failed: a generator bug, answered as EIO by the mount."""

    def __init__(self, seed: int, path: str, cause: BaseException) -> None:
        super().__init__(f"seed {seed} path {path or '/'}: {type(cause).__name__}: {cause}")
        self.seed = seed
        self.path = path
        self.cause = cause


@dataclass(frozen=True)
class Stat:
    is_dir: bool
    size: int  # exact byte count for files; 0 for directories
    nlink: int  # files 1; directories 2 + number of subdirectories


# One entry of a directory whose every attribute is known: name, is_dir, size (0 for directories), nlink.
KnownEntry = tuple[str, bool, int, int]


@dataclass(frozen=True)
class CacheInfo:
    generated: int  # files synthesised so far (cache misses that ran the generator)
    content_bytes: int
    content_files: int
    memo_entries: int
    repositories: int


def _directory_stat(entries: Sequence[tuple[str, bool]]) -> Stat:
    return Stat(True, 0, 2 + sum(1 for _, is_dir in entries if is_dir))  # nlink: 2 + subdirectories


def seed_from_name(name: str) -> int | None:
    """The seed a root entry names, or None: canonical decimal only ("007", "+7", "-1" are not seeds)."""
    if not (name.isascii() and name.isdigit()) or (len(name) > 1 and name[0] == "0"):
        return None
    seed = int(name)
    return seed if seed <= MAX_SEED else None


class _InFlight(Generic[K, V]):
    """Run ``compute`` once per key at a time; concurrent callers for that key wait for its result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[K, Future[V]] = {}

    def claim(self, key: K) -> Future[V] | None:
        """A future the caller promises to settle (then ``release``), or None if ``key`` is in flight."""
        with self._lock:
            if key in self._calls:
                return None
            future: Future[V] = Future()
            self._calls[key] = future
            return future

    def release(self, key: K) -> None:
        with self._lock:
            self._calls.pop(key, None)

    def pending(self, key: K) -> Future[V] | None:
        with self._lock:
            return self._calls.get(key)

    def run(self, key: K, compute: Callable[[], V]) -> V:
        with self._lock:
            future = self._calls.get(key)
            leader = future is None
            if future is None:
                future = self._calls[key] = Future()
        if not leader:
            return future.result()
        try:
            value = compute()
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(value)
            return value
        finally:
            with self._lock:
                del self._calls[key]


class MountSource:
    """Seeds as top-level directories, repositories below them; thread-safe."""

    def __init__(
        self,
        seeds: Sequence[int],
        cache_bytes: int = DEFAULT_CACHE_MB * MIB,
        *,
        repositories: int = DEFAULT_REPOSITORIES,
        memo_entries: int = DEFAULT_MEMO_ENTRIES,
        factory: Callable[[int], Repository] = generators.repository,
        disk: DiskCache | None = None,
        pool: SynthesisPool | None = None,
    ) -> None:
        for seed in seeds:
            if not 0 <= seed <= MAX_SEED:
                raise ValueError(f"seed {seed} is outside [0, 2^63)")
        self.seeds = list(dict.fromkeys(seeds))
        self._factory = factory
        self._lock = threading.Lock()
        # Bounded in bytes: the sum of len(content) of the cached files never exceeds cache_bytes.
        self._content: LRUCache[tuple[int, str], bytes] = LRUCache(maxsize=max(cache_bytes, 0), getsizeof=len)
        self._stats: LRUCache[tuple[int, str], Stat] = LRUCache(maxsize=max(memo_entries, 1))
        self._repos: LRUCache[int, Repository] = LRUCache(maxsize=max(repositories, 1))
        self._repo_flight: _InFlight[int, Repository] = _InFlight()
        self._file_flight: _InFlight[tuple[int, str], bytes] = _InFlight()
        self._generated = 0
        self._disk = disk  # sizes and contents that outlive the mount (sgfs.store.diskcache)
        self._pool = pool  # cold batches in other processes (sgfs.store.synthpool)
        self._repo_keys: dict[int, str] = {}
        self._prefetched: LRUCache[tuple[int, str], bool] = LRUCache(maxsize=65_536)  # directories done
        # Per seed: which files' sizes are known or asked of the pool (prefetch picks among the others).
        self._prefetch_candidates: LRUCache[int, _PrefetchCandidates] = LRUCache(maxsize=max(repositories, 1))
        # Files whose size a pool worker is computing: stat and read wait for it rather than synthesise twice;
        # then files it is assembling from the tables it kept: read waits for those bytes.
        self._prefetch_flight: _InFlight[tuple[int, str], int] = _InFlight()
        self._content_flight: _InFlight[tuple[int, str], bool] = _InFlight()
        self._encoding: dict[tuple[int, str], tuple[int, Future[list[Synthesised]]]] = {}  # worker, task

    # -- public API (mount paths) ----------------------------------------------------------------------
    def stat(self, path: str, *, wait: bool = True) -> Stat:
        """The attributes of ``path``. With ``wait=False``: only a memoised answer, else WouldWait (which also
        covers a path that is not there or would fail)."""
        if not wait:
            return self._stat_at_hand(path)
        parts = self._split(path)
        if not parts:
            return Stat(True, 0, 2 + len(self.seeds))
        seed, rel = self._seed(parts[0]), "/".join(parts[1:])
        key = (seed, rel)
        with self._lock:
            known = self._stats.get(key)
        if known is not None:
            return known
        repo = self._repository(seed)
        entries = self._listing(seed, repo, rel)
        if entries is not None:
            stat = _directory_stat(entries)
        else:
            self._guard(seed, rel, lambda: repo.lookup(rel))  # FileNotFoundError unless it is a file
            # An exact st_size means the bytes: synthesise (and cache) them once, memo the size; unless the
            # disk cache or a prefetch in the pool knows it.
            size = self._known_size(seed, rel)
            stat = Stat(False, len(self._file(seed, rel)) if size is None else size, 1)
        with self._lock:
            self._stats[key] = stat
        return stat

    def built(self, path: str) -> bool:
        """Whether ``path`` lies in a seed whose repository is in memory (its listings then cost no synthesis
        and no wait). Never the root: its listing carries the attributes of every listed seed."""
        parts = path.split("/")[1:] if path.startswith("/") else path.split("/")
        seed = seed_from_name(parts[0])
        with self._lock:
            return seed is not None and seed in self._repos

    def _stat_at_hand(self, path: str) -> Stat:
        if path in ("/", ""):
            return self.stat("/")
        key = self._memo_key(path)
        with self._lock:
            stat = None if key is None else self._stats.get(key)
        if stat is None:
            raise WouldWait
        return stat

    def _read_at_hand(self, path: str, size: int, offset: int) -> bytes:
        """The bytes of a file in memory, or in the disk cache for a file of at most INLINE_DISK_READ bytes (a
        local read and a hash check); WouldWait when it would synthesise or wait."""
        key = self._memo_key(path)
        if key is None or size < 0 or offset < 0:
            raise WouldWait
        seed = key[0]
        with self._lock:
            stat = self._stats.get(key)
            content = None if stat is None or stat.is_dir else self._content.get(key)
            repo_key = self._repo_keys.get(seed)
        if content is None and stat is not None and not stat.is_dir and stat.size <= INLINE_DISK_READ:
            if self._disk is None or repo_key is None or self._file_flight.pending(key) is not None:
                raise WouldWait
            content = self._disk.content(repo_key, key[1])
            if content is None or len(content) != stat.size:
                raise WouldWait  # not stored (or damaged, now removed): a waiting read regenerates it
            with self._lock:
                if len(content) <= self._content.maxsize:
                    self._content[key] = content
        if content is None:
            raise WouldWait
        return content[offset : offset + size]

    def listdir(self, path: str) -> list[tuple[str, bool]]:
        """Sorted (name, is_dir) entries of a directory; the list is shared: callers must not change it."""
        parts = self._split(path)
        if not parts:
            return [(str(seed), True) for seed in self.seeds]
        seed, rel = self._seed(parts[0]), "/".join(parts[1:])
        repo = self._repository(seed)
        entries = self._listing(seed, repo, rel)
        if entries is None:
            self._guard(seed, rel, lambda: repo.lookup(rel))  # FileNotFoundError unless it is a file
            raise NotADirectoryError(path)
        if self._pool is not None:
            self._prefetch(seed, repo, rel, entries)
        return entries

    def stat_without_synthesis(self, path: str, is_dir: bool | None = None) -> Stat | None:
        """The ``stat`` of a directory, or of a file whose size is already known (memo or disk cache); None for
        a file that would need synthesis. Never synthesises and never waits for a prefetch. ``is_dir``, from a
        listing the caller holds, spares the lookup."""
        parts = self._split(path)
        if len(parts) < 2:
            return self.stat(path)
        seed, rel = self._seed(parts[0]), "/".join(parts[1:])
        with self._lock:
            known = self._stats.get((seed, rel))
        if known is not None:
            return known
        repo = self._repository(seed)
        if is_dir is None:
            is_dir = self._guard(seed, rel, lambda: repo.lookup(rel)).is_dir
        if is_dir:
            return self.stat(path)
        size = self._disk.size(self._repo_key(seed, repo), rel) if self._disk is not None else None
        if size is None:
            return None
        stat = Stat(False, size, 1)
        with self._lock:
            self._stats[(seed, rel)] = stat
        return stat

    def stats_without_synthesis(self, path: str, entries: Sequence[tuple[str, bool]]) -> list[Stat | None]:
        """``stat_without_synthesis`` of each (name, is_dir) entry of directory ``path`` (a page of its listing),
        at once."""
        parts = self._split(path)
        if not parts:
            return [self.stat(f"/{name}") for name, _ in entries]
        seed, rel = self._seed(parts[0]), "/".join(parts[1:])
        children = [f"{rel}/{name}" if rel else name for name, _ in entries]
        with self._lock:
            found: list[Stat | None] = [self._stats.get((seed, child)) for child in children]
        if all(found):
            return found
        repo = self._repository(seed)
        sizes = None if self._disk is None else self._disk.index_sizes(self._repo_key(seed, repo), children)
        learnt: list[tuple[str, Stat]] = []
        for i, ((_, is_dir), child) in enumerate(zip(entries, children, strict=True)):
            if found[i] is not None:
                continue
            size = None if sizes is None else sizes[i]
            stat: Stat | None
            if is_dir:
                below = self._listing(seed, repo, child)
                stat = None if below is None else _directory_stat(below)
            elif size is not None:
                stat = Stat(False, size, 1)
            else:  # not in the size index: an entry of the disk cache may still hold it
                stat = self.stat_without_synthesis(f"{path.rstrip('/')}/{entries[i][0]}", False)
            if stat is None:
                continue
            found[i] = stat
            learnt.append((child, stat))
        with self._lock:
            for child, stat in learnt:
                self._stats[(seed, child)] = stat
        return found

    def known_tree(self, seed: int) -> dict[str, list[KnownEntry]] | None:
        """Every directory of the seed's repository ('' is its top) with every entry's attributes, when the disk
        cache's size index knows every file's size; None otherwise. Never synthesises: a fresh mount over a
        warm disk cache answers a whole walk from this, built in one pass rather than one listing at a time."""
        if self._disk is None:
            return None
        repo = self._repository(seed)
        repo_key = self._repo_key(seed, repo)
        # Asked again at every listing of a seed until it succeeds: count before sorting any path.
        if not self._counted_whole(repo_key, repo):
            return None
        # The README's size is the repository's own text: the index need not hold it (see _repository).
        paths = [path for path in repo.file_paths() if path != README_NAME or not repo.has_readme]
        sizes = [size for size in self._disk.index_sizes(repo_key, paths) if size is not None]
        if len(sizes) < len(paths):
            return None
        size_of = dict(zip(paths, sizes, strict=True))
        if repo.has_readme:
            size_of[README_NAME] = len(self._file(seed, README_NAME))
        listings = self._guard(seed, "", lambda: repo.listings)
        tree: dict[str, list[KnownEntry]] = {}
        for rel, entries in listings.items():
            prefix = f"{rel}/" if rel else ""
            tree[rel] = [
                (name, True, 0, _directory_stat(listings[prefix + name]).nlink)
                if is_dir
                else (name, False, size_of[prefix + name], 1)
                for name, is_dir in entries
            ]
        return tree

    def tree_may_be_known(self, seed: int) -> bool:
        """Cheaply, whether ``known_tree(seed)`` may succeed: a disk cache, the repository built, and as many
        sizes in its index as the repository has files. Builds and reads nothing."""
        with self._lock:
            repo = self._repos.get(seed)
            repo_key = self._repo_keys.get(seed)
        return (
            self._disk is not None and repo is not None and repo_key is not None and self._counted_whole(repo_key, repo)
        )

    def _counted_whole(self, repo_key: str, repo: Repository) -> bool:
        assert self._disk is not None
        return self._disk.index_count(repo_key) >= len(repo.tree.file_paths)  # the README need not be there

    def read(self, path: str, size: int, offset: int, *, wait: bool = True) -> bytes:
        """Up to ``size`` bytes from ``offset``: short at the end of the file, empty past it. With ``wait=False``:
        only bytes at hand, else WouldWait."""
        if not wait:
            return self._read_at_hand(path, size, offset)
        if size < 0 or offset < 0:
            raise ValueError("negative size or offset")
        parts = self._split(path)
        if not parts:
            raise IsADirectoryError(path)
        seed, rel = self._seed(parts[0]), "/".join(parts[1:])
        if self.stat(path).is_dir:
            raise IsADirectoryError(path)
        content = self._file(seed, rel)
        return content[offset : offset + size]

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(
                generated=self._generated,
                content_bytes=int(self._content.currsize),
                content_files=len(self._content),
                memo_entries=len(self._stats),
                repositories=len(self._repos),
            )

    # -- internals -------------------------------------------------------------------------------------
    @staticmethod
    def _split(path: str) -> list[str]:
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise FileNotFoundError(path)
        return parts

    @staticmethod
    def _memo_key(path: str) -> tuple[int, str] | None:
        """(seed, path within its repository) of a path below a seed folder, as the memos key it; None for the
        root or a malformed path (an empty, '.' or '..' part): never raises, for the answers at hand."""
        parts = path.split("/")[1:] if path.startswith("/") else path.split("/")
        seed = seed_from_name(parts[0])
        if seed is None or "" in parts or "." in parts or ".." in parts:
            return None
        return seed, "/".join(parts[1:])

    @staticmethod
    def _seed(name: str) -> int:
        seed = seed_from_name(name)
        if seed is None:
            raise FileNotFoundError(name)
        return seed

    @staticmethod
    def _guard(seed: int, rel: str, call: Callable[[], V]) -> V:
        """PathNotFound becomes FileNotFoundError; any other failure of the generator a GenerationError."""
        try:
            return call()
        except PathNotFound:
            raise FileNotFoundError(f"{seed}/{rel}") from None
        except Exception as exc:
            raise GenerationError(seed, rel, exc) from exc

    def _through(
        self,
        cache: LRUCache[K, V],
        flight: _InFlight[K, V],
        key: K,
        compute: Callable[[], V],
        store: Callable[[V], None],
    ) -> V:
        """``cache[key]``, or ``compute()`` run once however many threads ask, then ``store``d."""
        with self._lock:
            value = cache.get(key)
        if value is not None:
            return value

        def leader() -> V:
            with self._lock:
                cached = cache.get(key)
            if cached is not None:  # another leader finished between our miss and our turn
                return cached
            computed = compute()
            with self._lock:
                store(computed)
            return computed

        return flight.run(key, leader)

    def _listing(self, seed: int, repo: Repository, rel: str) -> list[tuple[str, bool]] | None:
        """The entries of directory ``rel`` (normalised), or None when it is a file or nothing."""
        return self._guard(seed, rel, lambda: repo.listings).get(rel)

    def _repository(self, seed: int) -> Repository:
        # The README is text the repository holds (cheap to render): rendered with the repository (outside
        # the lock), its lookup and reads are answered at hand, never handed to a thread. Not counted as
        # generated: it comes with the repository, like its listings. One that fails to render is left to
        # ``read``, which reports the error for that file alone.
        readme: list[bytes] = []

        def build() -> Repository:
            repo = self._guard(seed, "", lambda: self._factory(seed))
            if repo.has_readme:
                with contextlib.suppress(Exception):
                    readme.append(repo.read(README_NAME))
            return repo

        def store(repo: Repository) -> None:
            self._repos[seed] = repo
            for text in readme:
                self._stats[(seed, README_NAME)] = Stat(False, len(text), 1)
                if len(text) <= self._content.maxsize:
                    self._content[(seed, README_NAME)] = text

        return self._through(self._repos, self._repo_flight, seed, build, store)

    def _file(self, seed: int, rel: str) -> bytes:
        key = (seed, rel)

        def store(data: bytes) -> None:
            self._stats[key] = Stat(False, len(data), 1)
            if len(data) <= self._content.maxsize:  # a file larger than the whole cache is not kept
                self._content[key] = data

        def synthesise() -> bytes:
            repo = self._repository(seed)
            waiting = self._prefetch_flight.pending(key)
            if waiting is not None:  # a pool worker is measuring it: then it assembles it (or fails)
                waiting.exception()
            assembling = self._content_flight.pending(key)
            if assembling is not None:  # its bytes land in memory or on disk
                with self._lock:
                    task = self._encoding.get(key)
                if task is not None and self._pool is not None:
                    self._pool.prioritise(*task)  # a reader waits: before the sizes still queued
                assembling.exception()
                with self._lock:
                    done = self._content.get(key)
                if done is not None:
                    return done
            if self._disk is not None:
                stored = self._disk.content(self._repo_key(seed, repo), rel)
                if stored is not None:
                    return stored
            data = self._guard(seed, rel, lambda: repo.read(rel))
            with self._lock:
                self._generated += 1
            if self._disk is not None:
                self._disk.put(self._repo_key(seed, repo), rel, data)
            return data

        return self._through(self._content, self._file_flight, key, synthesise, store)

    # -- disk cache and pool hooks ---------------------------------------------------------------------
    def _repo_key(self, seed: int, repo: Repository) -> str:
        key = self._repo_keys.get(seed)
        if key is None:
            from sgfs.store.diskcache import repository_key

            key = self._repo_keys[seed] = repository_key(seed, repo.spec)
        return key

    def _known_size(self, seed: int, rel: str) -> int | None:
        """A size the disk cache holds, or the one a prefetch in flight computes; None if neither."""
        waiting = self._prefetch_flight.pending((seed, rel))
        if waiting is not None:
            try:
                size = waiting.result()
            except Exception:
                size = -1
            if size >= 0:
                return size
        if self._disk is not None:
            return self._disk.size(self._repo_key(seed, self._repository(seed)), rel)
        return None

    def _prefetch(self, seed: int, repo: Repository, rel: str, entries: list[tuple[str, bool]]) -> None:
        """Start computing, in the pool, the sizes of the files under a listed directory not known yet."""
        assert self._pool is not None
        with self._lock:
            if (seed, rel) in self._prefetched:
                return
            self._prefetched[(seed, rel)] = True
        candidates = self._prefetch_candidates_of(seed, repo)
        # The directory's own files, then those below it in path order (the order a recursive walk such as
        # `ls -lR`, `du` or `find -size` takes), up to PREFETCH_FILES: the walk finds the pool working ahead of it.
        own = [f"{rel}/{name}" if rel else name for name, is_dir in entries if not is_dir]
        # The README is text the repository already holds: read in process, never worth a pool round trip.
        wanted = [path for path in candidates.take(own, rel, PREFETCH_FILES) if path != README_NAME]
        if not wanted:
            return
        with self._lock:
            wanted = [p for p in wanted if (seed, p) not in self._stats]
        claimed: list[tuple[str, Future[int]]] = []
        for child in wanted:
            future = self._prefetch_flight.claim((seed, child))
            if future is None:
                continue
            # Claimed first, then checked: a read that registered meanwhile is seen here, or it sees this claim.
            if self._file_flight.pending((seed, child)) is not None:
                future.set_result(-1)
                self._prefetch_flight.release((seed, child))
                continue
            claimed.append((child, future))
        repo_key = self._repo_key(seed, repo)
        # Sizes first, then the bytes from the tables the worker kept (sgfs.store.synthpool orders the two); with
        # nowhere to keep bytes, sizes only.
        assemble = self._disk is not None or self._content.maxsize > 0
        # Batches of up to PREFETCH_BATCH, spread evenly over the workers: 9 files are 5 + 4 on two workers, not
        # 8 + 1 (a small repository's files all arrive in about half the time).
        size = max(1, min(PREFETCH_BATCH, -(-len(claimed) // self._pool.workers)))
        for start in range(0, len(claimed), size):
            batch = claimed[start : start + size]
            try:
                worker, task = self._pool.measure(repo_key, repo.spec, [p for p, _ in batch], keep=assemble)
            except Exception:  # a broken or closed pool: the files are synthesised in process
                self._settle(seed, repo, batch, None, None)
                continue
            task.add_done_callback(functools.partial(self._settle, seed, repo, batch, worker if assemble else None))

    def _prefetch_candidates_of(self, seed: int, repo: Repository) -> _PrefetchCandidates:
        with self._lock:
            candidates = self._prefetch_candidates.get(seed)
        if candidates is None:
            paths = repo.file_paths()
            known = [False] * len(paths)
            if self._disk is not None:  # sizes a previous mount left: never asked of the pool again
                sizes = self._disk.index_sizes(self._repo_key(seed, repo), paths)
                known = [size is not None for size in sizes]
            candidates = _PrefetchCandidates(paths, known)
            with self._lock:
                candidates = self._prefetch_candidates.setdefault(seed, candidates)
        return candidates

    def _settle(
        self,
        seed: int,
        repo: Repository,
        batch: list[tuple[str, Future[int]]],
        worker: int | None,
        done: Future[list[Synthesised]] | None,
    ) -> None:
        """Memo the sizes a pool task measured (-1 for files it did not do); then, with ``worker``, ask that
        worker for their bytes. Reads of those files wait for the bytes rather than synthesise them again."""
        results: dict[str, Synthesised] = {}
        if done is not None and not done.cancelled() and done.exception() is None:
            results = {r.path: r for r in done.result()}
        if self._disk is not None:  # sizes always: kept even if the mount ends before the bytes are assembled
            measured = [(r.path, r.size) for r in results.values() if r.size >= 0]
            if measured:
                self._disk.note_sizes(self._repo_key(seed, repo), measured)
        to_encode: list[str] = []
        for path, future in batch:
            key = (seed, path)
            result = results.get(path)
            if result is not None and result.size >= 0:
                with self._lock:
                    self._generated += 1
                    self._stats[key] = Stat(False, result.size, 1)
                # Claimed before the size is released: a read woken by the size then finds the bytes on the way.
                if worker is not None and self._file_flight.pending(key) is None:
                    pending = self._content_flight.claim(key)
                    if pending is not None:
                        to_encode.append(path)
                future.set_result(result.size)
            else:  # failed in the worker: stat and read synthesise in process and report the error there
                future.set_result(-1)
            self._prefetch_flight.release(key)
        if not to_encode or worker is None or self._pool is None:
            return
        try:
            task = self._pool.encode(worker, self._repo_key(seed, repo), repo.spec, to_encode, self._disk)
        except Exception:  # a closed pool: reads synthesise in process
            self._settle_content(seed, to_encode, None)
            return
        with self._lock:
            for path in to_encode:
                self._encoding[(seed, path)] = (worker, task)
        task.add_done_callback(functools.partial(self._settle_content, seed, to_encode))

    def _settle_content(self, seed: int, paths: list[str], done: Future[list[Synthesised]] | None) -> None:
        """Keep the bytes a pool task assembled (those the disk cache holds are read from there)."""
        results: dict[str, Synthesised] = {}
        if done is not None and not done.cancelled() and done.exception() is None:
            results = {r.path: r for r in done.result()}
        for path in paths:
            key = (seed, path)
            result = results.get(path)
            content = None if result is None else result.content
            with self._lock:
                self._encoding.pop(key, None)
                if content is not None and len(content) <= self._content.maxsize:
                    self._content[key] = content
            future = self._content_flight.pending(key)
            if future is not None:
                future.set_result(result is not None and result.size >= 0)
            self._content_flight.release(key)


class _PrefetchCandidates:
    """A repository's files in path order, and which of them no prefetch has picked yet. Thread-safe."""

    def __init__(self, paths: list[str], known: list[bool]) -> None:
        self._lock = threading.Lock()
        self._paths = paths  # sorted: the files below a directory are one contiguous run
        self._position = {path: i for i, path in enumerate(paths)}
        self._taken = np.array(known, dtype=bool)
        self._left = len(paths) - int(self._taken.sum())

    def take(self, own: list[str], folder: str, limit: int) -> list[str]:
        """Up to ``limit`` files not picked yet: those of ``own`` first, then those below ``folder`` in path
        order ('' is the root); each is picked once."""
        with self._lock:
            if self._left == 0:
                return []
            first = [i for i in (self._position.get(p) for p in own) if i is not None and not self._taken[i]]
            first = first[:limit]
            self._taken[first] = True
            if folder:  # the run of paths starting "folder/": from it up to "folder0" ('0' follows '/')
                low, high = bisect.bisect_left(self._paths, f"{folder}/"), bisect.bisect_left(self._paths, f"{folder}0")
            else:
                low, high = 0, len(self._paths)
            rest = (np.flatnonzero(~self._taken[low:high])[: limit - len(first)] + low).tolist()
            self._taken[rest] = True
            picked = first + rest
            self._left -= len(picked)
            return [self._paths[i] for i in picked]
