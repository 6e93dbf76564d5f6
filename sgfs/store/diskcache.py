"""A persistent cache of file sizes and contents, shared by mounts and commands, safe under concurrency and crashes.

One entry per file: ``DIR/v<generator version>/<repository key>/<path key>``, where the repository key is
xxh3-128 over the generator version, the seed and the spec's digest (so a spec pack's repository never
collides with the procedural one of the same seed) and the path key xxh3-64 of the path. An entry is a
fixed header (magic, flags, size, xxh3-64 of the content, the entry's key: xxh3-64 of the generator version,
the repository key and the path; then xxh3-64 of the header itself) followed by the content when it is kept.
A reader checks the key against the entry it asked for, so an entry file swapped with, renamed to or copied
over another one is refused like a damaged one (removed, then regenerated), never served as the other bytes.
Writers write a private temporary file and rename it into place (atomic on POSIX),
so readers see a whole entry or none; a reader checks every hash and deletes an entry that fails, which is
then a miss and regenerated: a corrupted or truncated entry is never served. The directory is bounded in
bytes: past the budget the least recently written entries are removed.

Sizes also go to one append-only index per repository (``sizes.idx``: records of xxh3-64 of the path, size,
and xxh3-64 of those two seeded with the repository's key, so a damaged or truncated record, or an index
copied from another repository, is skipped, never believed), read once per
repository: a fresh mount over a warm cache knows every size of a directory listing without opening one
entry per file. Appends of one 24-byte record are atomic (O_APPEND), so concurrent writers never interleave.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import xxhash
from cachetools import LRUCache

from generators import GENERATOR_VERSION, Repository, Spec
from generators.packs import canonical_json, spec_digest

MAGIC = b"SGFSC\x00\x02\x00"  # version 2: entries carry their key
_HEADER = struct.Struct("<8sBQQQ")  # magic, flags, size, content hash, key (version, repository, path) hash
_HEADER_SIZE = _HEADER.size + 8  # + xxh3-64 of the packed header
_HAS_CONTENT = 1
_RECORD = struct.Struct("<QQQ")  # xxh3-64 of the path, size, xxh3-64 of the first 16 bytes (seeded by the repository)
INDEX_NAME = "sizes.idx"
DEFAULT_DISK_CACHE_MB = 2048


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sgfs``, else ``~/.cache/sgfs``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sgfs"


def repository_key(seed: int, spec: Spec) -> str:
    """Generator version, seed and spec digest, hashed: the name of a repository's entry folder."""
    digest = spec_digest(canonical_json(spec))
    return xxhash.xxh3_128_hexdigest(f"{GENERATOR_VERSION}\0{seed}\0{digest}".encode())


@dataclass(frozen=True)
class Entry:
    size: int
    content: bytes | None


class DiskCache:
    """Sizes always, contents while they fit in ``max_bytes``; every method is thread- and process-safe."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = Path(root) / f"v{GENERATOR_VERSION}"
        self.max_bytes = max(max_bytes, 0)
        self._lock = threading.Lock()
        self._used: int | None = None  # bytes on disk, counted on first write
        self._indexes: LRUCache[str, dict[int, int]] = LRUCache(maxsize=16)  # repository key -> path hash -> size

    # -- reading ---------------------------------------------------------------------------------------
    def size(self, repo_key: str, path: str) -> int | None:
        """The file's size if the repository's index or an intact entry holds it."""
        known = self._index(repo_key).get(_path_hash(path))
        if known is not None:
            return known
        header = self._read(repo_key, path, header_only=True)
        if header is None:
            return None
        self._append_index(repo_key, [(path, header.size)])  # an entry the index lacks: the next mount finds it there
        return header.size

    def index_sizes(self, repo_key: str, paths: list[str]) -> list[int | None]:
        """The sizes the repository's index holds for ``paths`` (None where it has none), without opening entries."""
        index = self._index(repo_key)
        return [index.get(_path_hash(path)) for path in paths]

    def index_count(self, repo_key: str) -> int:
        """How many sizes the repository's index holds."""
        return len(self._index(repo_key))

    def _index(self, repo_key: str) -> dict[int, int]:
        with self._lock:
            index = self._indexes.get(repo_key)
        if index is not None:
            return index
        index = {}
        try:
            raw = (self.root / repo_key / INDEX_NAME).read_bytes()
        except OSError:
            raw = b""
        for start in range(0, len(raw) - _RECORD.size + 1, _RECORD.size):
            path_hash, size, check = _RECORD.unpack_from(raw, start)
            if xxhash.xxh3_64_intdigest(raw[start : start + 16], seed=_repository_seed(repo_key)) == check:
                index[path_hash] = size
        with self._lock:
            self._indexes[repo_key] = index
        return index

    def note_sizes(self, repo_key: str, sizes: list[tuple[str, int]]) -> None:
        """Record sizes measured without the bytes (a pool's prefetch) in the index, in one append: a mount
        that ends before the files are assembled still leaves every size it learnt to the next one."""
        self._account(self._append_index(repo_key, sizes))

    def _append_index(self, repo_key: str, sizes: list[tuple[str, int]]) -> int:
        """Append the (path, size) records the index lacks, in one write; the bytes written (0: none, or a
        full or read-only disk, which only costs the cache)."""
        index = self._index(repo_key)
        hashed = [(_path_hash(path), size) for path, size in sizes]
        fresh = [(path_hash, size) for path_hash, size in hashed if index.get(path_hash) != size]
        if not fresh:
            return 0
        seed = _repository_seed(repo_key)
        records = b"".join(
            fields + struct.pack("<Q", xxhash.xxh3_64_intdigest(fields, seed=seed))
            for fields in (struct.pack("<QQ", path_hash, size) for path_hash, size in fresh)
        )
        try:
            (self.root / repo_key).mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / repo_key / INDEX_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, records)
            finally:
                os.close(fd)
        except OSError:
            return 0
        with self._lock:
            index.update(fresh)
        return len(records)

    def content(self, repo_key: str, path: str) -> bytes | None:
        """The file's bytes if an intact entry holds them (hashes checked; a bad entry is removed)."""
        entry = self._read(repo_key, path, header_only=False)
        return None if entry is None else entry.content

    def _read(self, repo_key: str, path: str, *, header_only: bool) -> Entry | None:
        where = self._entry_path(repo_key, path)
        try:
            with open(where, "rb") as handle:
                raw = handle.read(_HEADER_SIZE) if header_only else handle.read()
        except OSError:
            return None
        entry = _decode(raw, header_only, _entry_key(repo_key, path))
        if entry is None:
            with contextlib.suppress(OSError):
                where.unlink()  # corrupt or truncated: never served, regenerated by the caller
        return entry

    # -- writing ---------------------------------------------------------------------------------------
    def put(self, repo_key: str, path: str, content: bytes) -> int:
        """Store the size, and the content when it fits the budget; the bytes written (0 when skipped)."""
        keep = len(content) + _HEADER_SIZE <= self.max_bytes // 4
        blob = _encode(len(content), content if keep else None, _entry_key(repo_key, path))
        if len(blob) > self.max_bytes:
            return 0
        where = self._entry_path(repo_key, path)
        if not keep and self.size(repo_key, path) is not None:
            return 0  # already known; never replace a full entry by a header
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=where.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(blob)
                os.replace(temporary, where)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return 0  # a full or read-only disk only costs the cache
        self._append_index(repo_key, [(path, len(content))])
        self._account(len(blob) + _RECORD.size)
        return len(blob)

    def _account(self, added: int) -> None:
        with self._lock:
            if self._used is None:
                self._used = self.usage()
            else:
                self._used += added
            if self._used <= self.max_bytes:
                return
            self._used = self._evict(int(self.max_bytes * 0.8))

    def usage(self) -> int:
        total = 0
        for folder, _, files in os.walk(self.root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.stat(os.path.join(folder, name)).st_size
        return total

    def _evict(self, target: int) -> int:
        """Remove the oldest entries until at most ``target`` bytes remain; the bytes left."""
        entries: list[tuple[int, int, str]] = []
        for folder, _, files in os.walk(self.root):
            for name in files:
                full = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.stat(full)
                    entries.append((info.st_mtime_ns, info.st_size, full))
        entries.sort()
        total = sum(size for _, size, _ in entries)
        for _, size, full in entries:
            if total <= target:
                break
            with contextlib.suppress(OSError):
                os.unlink(full)
                total -= size
        return total

    def _entry_path(self, repo_key: str, path: str) -> Path:
        return self.root / repo_key / xxhash.xxh3_64_hexdigest(path.encode("utf-8"))


def _path_hash(path: str) -> int:
    return xxhash.xxh3_64_intdigest(path.encode("utf-8", "surrogateescape"))


def _repository_seed(repo_key: str) -> int:
    """What binds a size index's records to its repository (and this generator version)."""
    return xxhash.xxh3_64_intdigest(f"{GENERATOR_VERSION}\0{repo_key}".encode("utf-8", "surrogateescape"))


def _entry_key(repo_key: str, path: str) -> int:
    """The key an entry carries inside its checksummed header: generator version, repository key and path."""
    text = f"{GENERATOR_VERSION}\0{repo_key}\0{path}"
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogateescape"))


def _encode(size: int, content: bytes | None, key: int) -> bytes:
    digest = xxhash.xxh3_64_intdigest(content) if content is not None else 0
    header = _HEADER.pack(MAGIC, _HAS_CONTENT if content is not None else 0, size, digest, key)
    return header + xxhash.xxh3_64_digest(header) + (content or b"")


def _decode(raw: bytes, header_only: bool, key: int) -> Entry | None:
    """The entry, or None when anything is missing, fails its hash, or is another entry's (its key differs)."""
    if len(raw) < _HEADER_SIZE:
        return None
    header = raw[: _HEADER.size]
    if xxhash.xxh3_64_digest(header) != raw[_HEADER.size : _HEADER_SIZE]:
        return None
    magic, flags, size, digest, stored_key = _HEADER.unpack(header)
    if magic != MAGIC or stored_key != key:
        return None
    if header_only:
        return Entry(size, None)
    if not flags & _HAS_CONTENT:
        return Entry(size, None) if len(raw) == _HEADER_SIZE else None
    content = raw[_HEADER_SIZE:]
    if len(content) != size or xxhash.xxh3_64_intdigest(content) != digest:
        return None
    return Entry(size, content)


def read_through(cache: DiskCache | None, repo: Repository, path: str) -> bytes:
    """``repo.read(path)``, from the cache when it holds the file intact, stored there otherwise."""
    if cache is None:
        return repo.read(path)
    key = repository_key(repo.spec.seed, repo.spec)
    content = cache.content(key, path)
    if content is None:
        content = repo.read(path)
        cache.put(key, path, content)
    return content
