"""Listing pages in the kernel's layout, and a seed's every page packed ahead once all its sizes are known.

A fresh mount's ``ls -lR`` or ``find`` sends two READDIRPLUS requests per directory (a page, then the empty
one that ends the listing); the kernel's round trip is fixed, so what the daemon can save is its own work per
request. When the disk cache's size index knows every file of a seed (a second mount of the same seeds), the
first listing of that seed packs every entry of every directory in one pass (``ListingBook``): each later
page is then a slice of records and the lookups it hands the kernel, with no path parsing, no cache lookups
and no packing per request. Pages are byte for byte those ``LowLevelMount.pack_entries`` writes
(tests/mount/kernel/test_pages.py), which are those of libfuse's fuse_add_direntry_plus
(tests/mount/kernel/test_session.py).
"""

from __future__ import annotations

import bisect
import logging
import struct
import threading
from collections.abc import Mapping, Sequence

import numpy as np
from cachetools import LRUCache

from sgfs.mount.inodes import path_ino
from sgfs.mount.operations import BLOCK, DIR_MODE, FILE_MODE, FIXED_TIME_S, SgfsFilesystem
from sgfs.store.source import KnownEntry, seed_from_name

log = logging.getLogger("sgfs.mount")

S_IFMT = 0o170000
DIR_KIND = (DIR_MODE & S_IFMT) >> 12
FILE_KIND = (FILE_MODE & S_IFMT) >> 12
# Books kept per mount, in packed bytes (~170 bytes an entry: 10 000 files are ~2 MiB).
DEFAULT_BOOK_BYTES = 64 << 20


def timeout_parts(seconds: float) -> tuple[int, int]:
    """A validity period as the kernel takes it, whole seconds and nanoseconds, rounded as libfuse does."""
    if seconds < 0:
        return 0, 0
    whole = min(int(seconds), (1 << 64) - 1)
    fraction = seconds - whole
    return whole, 999_999_999 if fraction >= 0.999999999 else max(0, int(fraction * 1e9))


# The kernel ABI's listing entries (fuse_kernel.h): a name follows a 24-byte fuse_dirent (ino, off, namelen,
# type), or a 128-byte fuse_entry_out (nodeid, generation, entry and attribute validity, then fuse_attr) and
# then the fuse_dirent; each entry is padded to 8 bytes. Packed with one struct call per entry: the bytes
# libfuse's fuse_add_direntry(_plus) writes, without a ctypes structure and a foreign call per entry (a numpy
# packer's fixed cost outweighs its gain on the few-entry pages most directories have: docs/performance.md).
DIRENT = struct.Struct("<QQII")
DIRENTPLUS = struct.Struct("<QQQQII" + "QQQQQQIIIIIIIIII" + "QQII")
DIRENT_HEADER = DIRENT.size  # 24
DIRENTPLUS_HEADER = DIRENTPLUS.size  # 128 + 24


def pack_records(
    names: Sequence[bytes],
    numbers: Sequence[int],
    is_dir: Sequence[bool],
    offsets: Sequence[int],
    *,
    plus: bool,
    attributes: Sequence[bool] = (),
    sizes: Sequence[int] = (),
    nlinks: Sequence[int] = (),
    timeout_s: float = 0.0,
    uid: int = 0,
    gid: int = 0,
) -> tuple[bytes, list[int]]:
    """Listing records end to end, as the kernel reads them, and where each ends: the one packer of listing
    pages (books pack a whole seed with it, the page-by-page path the entries of one page). ``offsets``: each
    entry's ``d_off`` (its index in its listing, from 1). With ``plus``, an entry whose ``attributes`` flag is
    set carries its number, size, link count and the cache lifetimes; the others go with their name, type and
    number only (the kernel looks them up later)."""
    header = DIRENTPLUS_HEADER if plus else DIRENT_HEADER
    ends: list[int] = []
    used = 0
    for name in names:
        used += (header + len(name) + 7) & ~7
        ends.append(used)
    page = bytearray(used)
    valid_s, valid_ns = timeout_parts(timeout_s)
    start = 0
    for i, name in enumerate(names):
        number, index = numbers[i], offsets[i]
        mode = DIR_MODE if is_dir[i] else FILE_MODE
        kind = DIR_KIND if is_dir[i] else FILE_KIND
        if not plus:
            DIRENT.pack_into(page, start, number, index, len(name), kind)
        elif attributes[i]:
            size = sizes[i]
            DIRENTPLUS.pack_into(
                page, start,
                number, 0, valid_s, valid_s, valid_ns, valid_ns,
                number, size, (size + 511) // 512, FIXED_TIME_S, FIXED_TIME_S, FIXED_TIME_S, 0, 0, 0,
                mode, nlinks[i], uid, gid, 0, BLOCK, 0,
                number, index, len(name), kind,
            )  # fmt: skip
        else:  # node 0 in the entry part: the kernel takes the name and type only, and looks it up later
            DIRENTPLUS.pack_into(
                page, start,
                0, 0, 0, 0, 0, 0,
                number, 0, 0, 0, 0, 0, 0, 0, 0, mode, 0, 0, 0, 0, 0, 0,
                number, index, len(name), kind,
            )  # fmt: skip
        page[start + header : start + header + len(name)] = name
        start = ends[i]
    return bytes(page), ends


def record_length(name: bytes, plus: bool) -> int:
    """The bytes a record of ``name`` takes in a page."""
    return ((DIRENTPLUS_HEADER if plus else DIRENT_HEADER) + len(name) + 7) & ~7


class ListingBook:
    """Every directory below one seed (mount paths such as "/288/a"), each entry with its attributes, packed
    at once: numbers, names and headers as arrays, every record end to end in one byte string."""

    def __init__(
        self, top: str, tree: Mapping[str, Sequence[KnownEntry]], timeout_s: float, uid: int, gid: int
    ) -> None:
        # Records in listing order, folder after folder: '.', '..', then the entries. paths[i] and numbers[i]:
        # the lookup record i hands the kernel (None for '.' and '..', which go without attributes).
        self.folders: dict[str, tuple[int, int]] = {}  # mount path -> its records' range
        self.by_number: dict[int, tuple[int, int]] = {}  # the same, by the folder's own number
        names: list[bytes] = []
        paths: list[str | None] = []
        numbers: list[int] = []
        is_dir: list[bool] = []
        sizes: list[int] = []
        nlinks: list[int] = []
        for rel, entries in tree.items():
            path = f"{top}/{rel}" if rel else top
            lo = len(names)
            self.folders[path] = (lo, lo + 2 + len(entries))
            own = path_ino(path)
            self.by_number[own] = self.folders[path]
            names += [b".", b".."]
            paths += [None, None]
            numbers += [own, path_ino(path.rsplit("/", 1)[0] or "/")]
            is_dir += [True, True]
            sizes += [0, 0]
            nlinks += [0, 0]
            children = [f"{path}/{name}" for name, _, _, _ in entries]
            paths += children
            numbers += map(path_ino, children)
            names += [name.encode("utf-8", "surrogateescape") for name, _, _, _ in entries]
            is_dir += [directory for _, directory, _, _ in entries]
            sizes += [size for _, _, size, _ in entries]
            nlinks += [nlink for _, _, _, nlink in entries]
        total = len(names)
        attrs = [p is not None for p in paths]
        named = np.array(numbers, dtype=np.uint64)[np.array(attrs, dtype=bool)]
        if len(self.by_number) != len(self.folders) or np.unique(named).size != named.size:
            # Two paths of this tree hash to one number (never in practice): a request by number could not
            # tell them apart, so this seed is listed page by page.
            raise ValueError(f"two paths below {top} share an inode number")
        ranges = np.array(list(self.folders.values()), dtype=np.int64).reshape(-1, 2)
        folder_start = np.repeat(ranges[:, 0], ranges[:, 1] - ranges[:, 0])  # each record's folder's first record
        self.blob, end = pack_records(
            names,
            numbers,
            is_dir,
            (np.arange(total) - folder_start + 1).tolist(),  # an entry's index in its listing, from 1
            plus=True,
            attributes=attrs,
            sizes=sizes,
            nlinks=nlinks,
            timeout_s=timeout_s,
            uid=uid,
            gid=gid,
        )
        self.ends = end  # ends[i]: where record i ends in blob
        self.paths = paths
        self.numbers = numbers
        # The records, and roughly the lists beside them.
        self.nbytes = len(self.blob) + 300 * total

    def lookups(self, first: int, end: int) -> list[tuple[str, int]]:
        """The (path, number) lookups records ``first`` to ``end`` hand the kernel ('.' and '..' hand none)."""
        numbers = self.numbers
        return [(path, numbers[i]) for i, path in enumerate(self.paths[first:end], start=first) if path is not None]

    def page(self, folder: tuple[int, int], offset: int, size: int) -> tuple[bytes, list[tuple[str, int]]]:
        """The records of ``folder`` (a range of ``folders``) from entry ``offset`` on that fit in ``size``
        bytes (none past the end), and the lookups they hand the kernel."""
        lo, hi = folder
        first = lo + offset
        if first >= hi:
            return b"", []
        ends = self.ends
        base = ends[first - 1] if first > 0 else 0
        last = bisect.bisect_right(ends, base + size, lo=first, hi=hi)
        if last == first:
            return b"", []
        return self.blob[base : ends[last - 1]], self.lookups(first, last)


class _Books(LRUCache[str, ListingBook]):
    """Books by seed path, bounded in bytes; a book's directories stay findable by number while it is kept."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(maxsize=max(max_bytes, 1), getsizeof=lambda book: book.nbytes)
        self.by_number: dict[int, tuple[ListingBook, tuple[int, int]]] = {}

    def __setitem__(self, key: str, value: ListingBook) -> None:
        super().__setitem__(key, value)  # may evict others first (popitem)
        self.by_number.update((number, (value, folder)) for number, folder in value.by_number.items())

    def popitem(self) -> tuple[str, ListingBook]:
        key, book = super().popitem()
        for number in book.by_number:
            self.by_number.pop(number, None)
        return key, book


class ListingBooks:
    """The books of a mount's seeds, built on a seed's first listing once the disk cache knows all its sizes."""

    def __init__(self, fs: SgfsFilesystem, timeout_s: float, max_bytes: int = DEFAULT_BOOK_BYTES) -> None:
        self.fs = fs
        self.timeout = timeout_s
        self._lock = threading.Lock()
        self._books = _Books(max_bytes)
        self._refused: set[str] = set()  # seeds whose book failed or outgrows the budget: the slow path only

    def page(self, ino: int, offset: int, size: int, *, build: bool = True) -> bytes | None:
        """A READDIRPLUS page of directory ``ino`` with its entries' lookups counted, or None when no book
        answers it (the root, a seed whose sizes are not all known yet; without ``build``, a seed whose book
        is not built yet): then ask the slow path."""
        inodes = self.fs.inodes
        if inodes.collided:  # records carry each path's hashed number: not while one path holds another's
            return None
        # A directory's own number is its hashed one (nothing collided): its listing, by number, in one lookup.
        found = self._books.by_number.get(ino)
        if found is None:
            if not build:
                return None
            found = self._folder(ino)
            if found is None:
                return None
        book, folder = found
        page, children = book.page(folder, offset, size)
        if children and not inodes.acquire_hashed(children):
            return None  # a collision just now: nothing was counted, the slow path numbers them
        return page

    def could_build(self, ino: int) -> bool:
        """Whether a listing of directory ``ino`` may build its seed's book now (work to hand to a request
        thread); cheap: no book yet, not refused, and the disk cache counts as many sizes as the seed has files."""
        try:
            path = self.fs.inodes.path(ino)
        except KeyError:
            return False
        cut = path.find("/", 1)
        top = path if cut < 0 else path[:cut]
        seed = seed_from_name(top[1:]) if top != "/" else None
        with self._lock:
            if seed is None or top in self._books or top in self._refused:
                return False
        return self.fs.source.tree_may_be_known(seed)

    def prepare(self, seed: int) -> bool:
        """Build the book of ``seed`` now (at mount start, for a listed seed) if the disk cache knows every
        size of its repository; True when it is built."""
        top = f"/{seed}"
        with self._lock:
            if top in self._books:
                return True
            if top in self._refused:
                return False
        return self._build(top) is not None

    def _folder(self, ino: int) -> tuple[ListingBook, tuple[int, int]] | None:
        """The book and record range of directory ``ino``, the book built now if it can be."""
        try:
            path = self.fs.inodes.path(ino)
        except KeyError:
            return None  # the slow path answers ESTALE
        cut = path.find("/", 1)
        top = path if cut < 0 else path[:cut]
        if top == "/":
            return None
        with self._lock:
            book = self._books.get(top)
            if book is None and top in self._refused:
                return None
        if book is None:
            book = self._build(top)
        folder = None if book is None else book.folders.get(path)
        return None if book is None or folder is None else (book, folder)

    def _build(self, top: str) -> ListingBook | None:
        seed = seed_from_name(top[1:])
        if seed is None:
            return None
        try:
            # None while some size is unknown (a cold mount): cheap to ask again, the index only grows.
            tree = self.fs.source.known_tree(seed)
            book = None if tree is None else ListingBook(top, tree, self.timeout, self.fs.uid, self.fs.gid)
        except Exception:  # the slow path reports whatever it is, request by request
            log.debug("no listing book for %s", top, exc_info=True)
            book = None
            with self._lock:
                self._refused.add(top)
        if book is None:
            return None
        with self._lock:
            if book.nbytes > self._books.maxsize:
                self._refused.add(top)
                return None
            self._books[top] = book
        return book
