"""Listing pages answered in C: the request loop's reader for a mount whose seeds have listing books.

A walk of a fresh mount over a warm disk cache is almost nothing but READDIRPLUS requests for directories whose
every page is packed in a book (sgfs.listing_pages). Answering one from Python costs 20-60 us of interpreter and
ctypes work, cache-cold, which made such a walk 3-6x a local one on a 2-core machine while a C daemon doing the
same work stays within 2x. So the loop's reads go through ``sgfs_pages_receive`` (sgfs/_fastpages.c): it
answers those requests itself, from the books registered here, and returns every other request to Python.

The kernel counts one lookup per entry a page hands it; the reader logs each page it sent and ``settle`` counts
those lookups in the inode table before Python dispatches the next request, so a FORGET never arrives for a
lookup not yet counted. Until they are counted, the numbers of a registered book are claimed in the inode
table (``InodeTable.claim``), so that no other path can take one meanwhile. A mount with a colliding inode
number (never seen: numbers are 63-bit hashes) stops using the reader, and Python answers every page again.

The reader is compiled when the package is installed (setup.py; optional); without it, or with
``SGFS_PAGES_IN_C=0`` in the environment, the loop reads through libfuse as before.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
from typing import Any

import numpy as np

from sgfs.inodes import InodeTable
from sgfs.listing_pages import ListingBook, ListingBooks

log = logging.getLogger("sgfs.mount")

# sgfs.request_loop.DRAIN is SGFS_PAGES_DRAIN of the C source: the lookup log is full (tests/test_fast_pages.py).
LOG_PAGES = 4096  # pages the reader answers before Python must count their lookups
ENV_SWITCH = "SGFS_PAGES_IN_C"

_u64p = ctypes.POINTER(ctypes.c_uint64)
_i64p = ctypes.POINTER(ctypes.c_int64)


def load_reader() -> ctypes.CDLL | None:
    """The compiled reader, or None (not built, switched off, or not loadable: then Python reads)."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "no", "false", "off"):
        log.debug("listing pages in C switched off by %s", ENV_SWITCH)
        return None
    spec = importlib.util.find_spec("sgfs._fastpages")
    if spec is None or not spec.origin:
        log.debug("listing pages in C not built: Python answers them")
        return None
    try:
        lib = ctypes.CDLL(spec.origin)
    except OSError as exc:
        log.warning("cannot load %s (%s): Python answers listing pages", spec.origin, exc)
        return None
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "sgfs_pages_new": (ctypes.c_void_p, [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]),
        "sgfs_pages_free": (None, [ctypes.c_void_p]),
        "sgfs_pages_add_book": (
            ctypes.c_int,
            [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, _u64p, ctypes.c_int64, _u64p, _i64p, _i64p],
        ),
        "sgfs_pages_clear": (None, [ctypes.c_void_p]),
        "sgfs_pages_receive": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]),
        "sgfs_pages_log": (_i64p, [ctypes.c_void_p]),
        "sgfs_pages_log_length": (ctypes.c_int64, [ctypes.c_void_p]),
        "sgfs_pages_log_clear": (None, [ctypes.c_void_p]),
        "sgfs_pages_served": (ctypes.c_uint64, [ctypes.c_void_p]),
        "sgfs_pages_write_errors": (ctypes.c_uint64, [ctypes.c_void_p]),
        "sgfs_pages_registered": (ctypes.c_uint64, [ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def _u64(array: np.ndarray) -> Any:
    return array.ctypes.data_as(_u64p)


def _i64(array: np.ndarray) -> Any:
    return array.ctypes.data_as(_i64p)


def _every_lookup(book: ListingBook) -> list[tuple[str, int]]:
    """The (path, number) of every entry of ``book``: what registering it claims."""
    return book.lookups(0, len(book.paths))


class PageReader:
    """The reader of one session: the books it answers from, their claims, and the lookups still to count.

    Only the request loop's thread uses it: ``settle`` between two ``receive`` calls, never during one."""

    def __init__(
        self,
        lib: ctypes.CDLL,
        books: ListingBooks,
        inodes: InodeTable,
        exited: Any = None,
        session: int | None = None,
        log_pages: int = LOG_PAGES,
    ) -> None:
        self.lib = lib
        self.books = books
        self.inodes = inodes
        pointer = ctypes.cast(exited, ctypes.c_void_p) if exited is not None else None
        self._pages = lib.sgfs_pages_new(log_pages, pointer, session)
        if not self._pages:
            raise MemoryError("cannot allocate the listing page reader")
        self._mark = -1  # books.kept() mark of the registered books
        self._registered: dict[int, ListingBook] = {}  # by slot, as the log names them; their numbers claimed
        self._next_slot = 0
        self.enabled = True

    # -- between requests ----------------------------------------------------------------------------------
    def settle(self) -> None:
        """Count the lookups of the pages sent since the last call, then register the books that came and
        drop those that went. Before each read, and after it before the request read is dispatched."""
        self.count_lookups()
        if not self.enabled:
            return
        if self.inodes.collided:  # some path holds a number other than its hash: Python checks every page
            self.disable("an inode number collided")
            return
        kept = self.books.kept(self._mark)
        if kept is not None:
            self._mark, books = kept
            self._register(books)

    def count_lookups(self) -> None:
        """Count in the inode table the lookups of every page the reader sent and Python has not counted."""
        length = self.lib.sgfs_pages_log_length(self._pages)
        if not length:
            return
        entries = np.ctypeslib.as_array(self.lib.sgfs_pages_log(self._pages), shape=(length, 3)).tolist()
        self.lib.sgfs_pages_log_clear(self._pages)
        held: list[tuple[str, int]] = []
        for slot, first, end in entries:
            held += self._registered[slot].lookups(first, end)
        if not self.inodes.acquire_hashed(held):
            # Claimed numbers cannot be taken by another path, so this cannot happen; should it, count them
            # the slow way and let Python answer every later page.
            log.error("a listing page sent from C named an inode number another path holds")
            for path, _ in held:
                self.inodes.acquire(path)
            self.disable("an inode number collided")

    def _register(self, books: list[ListingBook]) -> None:
        wanted = {id(book) for book in books}
        for slot, book in list(self._registered.items()):
            if id(book) not in wanted:
                self.inodes.release(_every_lookup(book))
                del self._registered[slot]
        present = {id(book) for book in self._registered.values()}
        for book in books:
            if id(book) in present:
                continue
            claims = _every_lookup(book)
            if not self.inodes.claim(claims):
                log.info("a listing book shares an inode number with another path: Python answers its pages")
                continue
            self._registered[self._next_slot] = book
            self._next_slot += 1
        self.lib.sgfs_pages_clear(self._pages)
        for slot, book in self._registered.items():
            ranges = book.folder_ranges
            starts, stops = np.ascontiguousarray(ranges[:, 0]), np.ascontiguousarray(ranges[:, 1])
            added = self.lib.sgfs_pages_add_book(
                self._pages,
                slot,
                book.blob,
                _u64(book.end_array),
                len(book.folder_numbers),
                _u64(book.folder_numbers),
                _i64(starts),
                _i64(stops),
            )
            if added != 0:
                self.disable("out of memory for the listing page reader")
                return

    def disable(self, why: str) -> None:
        """Answer no more pages in C (the lookups already logged are counted first)."""
        if self.enabled:
            self._stop()
            log.warning("listing pages in C switched off: %s", why)

    def _stop(self) -> None:
        self.count_lookups()
        self.enabled = False
        self.lib.sgfs_pages_clear(self._pages)
        for book in self._registered.values():
            self.inodes.release(_every_lookup(book))
        self._registered.clear()

    # -- reading -------------------------------------------------------------------------------------------
    def receive(self, fd: int, buffer: Any, size: int) -> int:
        """Read requests from ``fd`` into ``buffer``, answering registered pages in C: the length of the first
        other request, 0 at the session's end, -errno, or DRAIN (call ``settle``, then again)."""
        return int(self.lib.sgfs_pages_receive(self._pages, fd, buffer, size))

    @property
    def served(self) -> int:
        """Pages answered in C so far (empty ones after a listing's last included)."""
        return int(self.lib.sgfs_pages_served(self._pages))

    @property
    def write_errors(self) -> int:
        return int(self.lib.sgfs_pages_write_errors(self._pages))

    @property
    def registered(self) -> int:
        """Directories the reader answers now."""
        return int(self.lib.sgfs_pages_registered(self._pages))

    def close(self) -> None:
        """Count what is left, give up the claims and free the reader (it reads no more)."""
        if self._pages:
            self._stop()
            errors = f", {self.write_errors} not delivered" if self.write_errors else ""
            log.info("%d listing pages answered in C%s", self.served, errors)
            self.lib.sgfs_pages_free(self._pages)
            self._pages = None
