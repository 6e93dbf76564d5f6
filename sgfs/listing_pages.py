"""Listing pages in the kernel's layout, and a seed's every page packed ahead once all its sizes are known.

A fresh mount's ``ls -lR`` or ``find`` sends two READDIRPLUS requests per directory (a page, then the empty
one that ends the listing); the kernel's round trip is fixed, so what the daemon can save is its own work per
request. When the disk cache's size index knows every file of a seed (a second mount of the same seeds), the
first listing of that seed packs every entry of every directory in one pass (``ListingBook``): each later
page is then a slice of records and the lookups it hands the kernel, with no path parsing, no cache lookups
and no packing per request. Pages are byte for byte those ``LowLevelMount.pack_entries`` writes
(tests/test_listing_pages.py), which are those of libfuse's fuse_add_direntry_plus (tests/test_lowlevel.py).
"""

from __future__ import annotations

import bisect
import logging
import struct
import threading
from collections.abc import Mapping, Sequence

import numpy as np
from cachetools import LRUCache

from sgfs.fuse_ops import BLOCK, DIR_MODE, FILE_MODE, FIXED_TIME_S, SgfsFilesystem
from sgfs.inodes import path_ino
from sgfs.source import KnownEntry, seed_from_name

log = logging.getLogger("sgfs.mount")

# The kernel ABI's listing entries (fuse_kernel.h): a name follows a 24-byte fuse_dirent (ino, off, namelen,
# type), or a 128-byte fuse_entry_out (nodeid, generation, entry and attribute validity, then fuse_attr) and
# then the fuse_dirent; each entry is padded to 8 bytes. Packed with one struct call per entry, the bytes
# libfuse's fuse_add_direntry(_plus) writes, without a ctypes structure and a foreign call per entry.
DIRENT = struct.Struct("<QQII")
DIRENTPLUS = struct.Struct("<QQQQII" + "QQQQQQIIIIIIIIII" + "QQII")
DIRENT_HEADER = DIRENT.size  # 24
DIRENTPLUS_HEADER = DIRENTPLUS.size  # 128 + 24
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


# DIRENTPLUS as a numpy record, field for field, so that a whole seed's headers are filled column by column.
_HEADER = np.dtype(
    [(name, "<u8") for name in ("nodeid", "generation", "entry_valid", "attr_valid")]
    + [(name, "<u4") for name in ("entry_valid_ns", "attr_valid_ns")]
    + [(name, "<u8") for name in ("ino", "size", "blocks", "atime", "mtime", "ctime")]
    + [(name, "<u4") for name in ("atime_ns", "mtime_ns", "ctime_ns", "mode", "nlink", "uid", "gid")]
    + [(name, "<u4") for name in ("rdev", "blksize", "flags")]
    + [("d_ino", "<u8"), ("d_off", "<u8"), ("d_namelen", "<u4"), ("d_type", "<u4")]
)
assert _HEADER.itemsize == DIRENTPLUS_HEADER


class ListingBook:
    """Every directory below one seed (mount paths such as "/288/a"), each entry with its attributes, packed
    at once: numbers, names and headers as arrays, every record end to end in one byte string."""

    def __init__(
        self, top: str, tree: Mapping[str, Sequence[KnownEntry]], timeout_s: float, uid: int, gid: int
    ) -> None:
        valid_s, valid_ns = timeout_parts(timeout_s)
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
        attrs = np.array([p is not None for p in paths], dtype=bool)
        number = np.array(numbers, dtype=np.uint64)
        named = number[attrs]
        if len(self.by_number) != len(self.folders) or np.unique(named).size != named.size:
            # Two paths of this tree hash to one number (never in practice): a request by number could not
            # tell them apart, so this seed is listed page by page.
            raise ValueError(f"two paths below {top} share an inode number")
        namelen = np.fromiter(map(len, names), dtype=np.int64, count=total)
        ranges = np.array(list(self.folders.values()), dtype=np.int64).reshape(-1, 2)
        folder_start = np.repeat(ranges[:, 0], ranges[:, 1] - ranges[:, 0])  # each record's folder's first record
        directory_mask = np.array(is_dir, dtype=bool)
        byte_size = np.array(sizes, dtype=np.uint64)
        header = np.zeros(total, dtype=_HEADER)
        header["nodeid"] = np.where(attrs, number, 0)
        header["entry_valid"] = header["attr_valid"] = np.where(attrs, valid_s, 0)
        header["entry_valid_ns"] = header["attr_valid_ns"] = np.where(attrs, valid_ns, 0)
        header["ino"] = header["d_ino"] = number
        header["size"] = byte_size
        header["blocks"] = (byte_size + 511) // 512
        header["atime"] = header["mtime"] = header["ctime"] = np.where(attrs, FIXED_TIME_S, 0)
        header["mode"] = np.where(directory_mask, DIR_MODE, FILE_MODE)
        header["nlink"] = nlinks
        header["uid"] = np.where(attrs, uid, 0)
        header["gid"] = np.where(attrs, gid, 0)
        header["blksize"] = np.where(attrs, BLOCK, 0)
        header["d_off"] = np.arange(total) - folder_start + 1  # an entry's index in its listing, from 1
        header["d_namelen"] = namelen
        header["d_type"] = np.where(directory_mask, DIR_KIND, FILE_KIND)
        # Each record: header, name, zeros to a multiple of 8 bytes; headers are placed as 8-byte words.
        length = (DIRENTPLUS_HEADER + namelen + 7) & ~7
        end = np.cumsum(length)
        start = end - length
        words = np.zeros(int(end[-1]) // 8 if total else 0, dtype=np.uint64)
        per_header = DIRENTPLUS_HEADER // 8
        words[(start[:, None] // 8 + np.arange(per_header)).ravel()] = header.view(np.uint64)
        buffer = words.view(np.uint8)
        name_at = np.repeat(start + DIRENTPLUS_HEADER - (np.cumsum(namelen) - namelen), namelen)
        buffer[name_at + np.arange(int(namelen.sum()))] = np.frombuffer(b"".join(names), dtype=np.uint8)
        self.blob = buffer.tobytes()
        self.ends = end.tolist()  # ends[i]: where record i ends in blob
        # The same for the reader in C (sgfs.fast_pages): record ends, and each directory's number and records.
        self.end_array = end.astype(np.uint64)
        self.folder_numbers = np.fromiter(self.by_number, dtype=np.uint64, count=len(self.by_number))
        self.folder_ranges = np.array(list(self.by_number.values()), dtype=np.int64).reshape(-1, 2)
        self.paths = paths
        self.numbers = numbers
        # The records, and roughly the lists beside them and the claims of the reader in C (sgfs.fast_pages).
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
        self.changes = 0  # how many books came and went: the reader in C registers them again when it moves

    def __setitem__(self, key: str, value: ListingBook) -> None:
        super().__setitem__(key, value)  # may evict others first (popitem)
        self.by_number.update((number, (value, folder)) for number, folder in value.by_number.items())
        self.changes += 1

    def popitem(self) -> tuple[str, ListingBook]:
        key, book = super().popitem()
        self.changes += 1
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

    def kept(self, since: int) -> tuple[int, list[ListingBook]] | None:
        """The books kept now and a mark to pass next time; None when none came or went since mark ``since``."""
        with self._lock:
            books = self._books
            if books.changes == since:
                return None
            return books.changes, list(books.values())

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
