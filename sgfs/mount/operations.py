"""What the mount answers, without FUSE: inode-numbered requests over ``MountSource``, failures as errno.

``sgfs.mount.kernel.session`` turns each kernel request into one call here and its result into one reply, so everything
below is tested without mounting (ratarmount's split: a FUSE-free core, a thin layer that maps every failure
to an explicit errno). Unknown names are ENOENT, generator failures are logged and answered EIO, anything
unexpected is logged and answered EIO; the daemon keeps serving.

What the kernel may answer itself is never asked for (each is a round trip into Python saved per use): a
plain mount has no open, and no opendir unless ``cache_listings`` is off (the kernel then keeps pages and
listings for as long as it likes: content never changes); only an audited mount (``sgfs.mount.audit``, a
wrapper around this contract) answers ``open``; there are no xattr, access or write callbacks (``ro`` and
``default_permissions`` let the kernel refuse writes with EROFS and check the 0444/0555 modes itself).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from sgfs.mount.inodes import ROOT_INO, InodeTable
from sgfs.store.source import GenerationError, MountSource, Stat
from sgfs.store.source import WouldWait as WouldWait  # part of this contract: raised by wait=False calls

log = logging.getLogger("sgfs.mount")

F = TypeVar("F", bound=Callable[..., Any])

# Content never changes, so every timestamp is one constant (2024-01-01T00:00:00Z).
FIXED_TIME_S = 1_704_067_200
FILE_MODE = stat.S_IFREG | 0o444
DIR_MODE = stat.S_IFDIR | 0o555
BLOCK = 4096
NAME_MAX = 255


class FuseError(Exception):
    """A request answered with an errno value."""

    def __init__(self, code: int) -> None:
        super().__init__(os.strerror(code))
        self.errno = code


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a stat answer carries; the rest (owner, times, modes) is the same for every entry."""

    ino: int
    is_dir: bool
    size: int
    nlink: int

    @property
    def mode(self) -> int:
        return DIR_MODE if self.is_dir else FILE_MODE


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One entry of a listing. ``ino`` is known for '.' and '..' only (0: the path's own number), and
    ``attributes`` are given for READDIRPLUS when they cost nothing (directories, files whose size is known)."""

    name: str
    path: str
    is_dir: bool
    ino: int = 0
    attributes: Attributes | None = None


def _errors(method: F) -> F:
    """Map the core's exceptions to errno values; log and answer EIO for anything unexpected."""

    @functools.wraps(method)
    def wrapper(self: SgfsFilesystem, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (FuseError, WouldWait):
            raise
        except (FileNotFoundError, KeyError):
            raise FuseError(errno.ENOENT) from None
        except IsADirectoryError:
            raise FuseError(errno.EISDIR) from None
        except NotADirectoryError:
            raise FuseError(errno.ENOTDIR) from None
        except GenerationError as exc:
            log.error("generation failed: seed %s path %s", exc.seed, exc.path or "/", exc_info=exc.cause)
            raise FuseError(errno.EIO) from None
        except Exception:
            log.exception("unexpected error in %s%r", method.__name__, args)
            raise FuseError(errno.EIO) from None

    return cast(F, wrapper)


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


class SgfsFilesystem:
    """The mount's answers to inode-numbered requests. Thread-safe: libfuse calls it from several threads."""

    # Whether every listing, open and read must reach the daemon (and be recorded, with the caller's pid): the
    # kernel then keeps no pages across opens and no listings (sgfs.mount.audit.AuditedFilesystem).
    audited = False

    def __init__(
        self, source: MountSource, on_init: Callable[[], None] | None = None, *, cache_listings: bool = True
    ) -> None:
        self.source = source
        # Listings and pages kept by the kernel never reach the daemon: never for a mount that must see them.
        self.cache_listings = cache_listings and not self.audited
        self.inodes = InodeTable()
        self.uid = os.getuid()
        self.gid = os.getgid()
        self.initialized = False  # set once the kernel has talked to us: the mount is up
        self._on_init = on_init
        # Entries of each directory listed so far, '.' and '..' included, by its number: a request for the page
        # after the last (how the kernel learns a listing ended) is answered without building the listing.
        self.listing_ends: dict[int, int] = {}

    # -- lifecycle ---------------------------------------------------------------------------------------
    def init(self) -> None:
        self.initialized = True
        log.info("mount is up")
        if self._on_init is not None:
            try:
                self._on_init()
            except Exception:
                log.exception("init hook failed")

    def destroy(self) -> None:
        log.info("mount is going down")

    # -- names and attributes ----------------------------------------------------------------------------
    def _path(self, ino: int) -> str:
        try:
            return self.inodes.path(ino)
        except KeyError:
            raise FuseError(errno.ESTALE) from None  # a number the kernel was never given or has forgotten

    @_errors
    def lookup(self, parent: int, name: str, *, wait: bool = True) -> Attributes | None:
        """The attributes of ``name`` in directory ``parent``, counting one lookup; None when there is none
        (the kernel caches that answer as a negative entry). With ``wait=False``: only a memoised answer, else
        WouldWait (a name not there is among those answered later)."""
        path = child_path(self._path(parent), name)
        try:
            st = self.source.stat(path, wait=wait)
        except FileNotFoundError:
            return None
        return Attributes(self.inodes.acquire(path), st.is_dir, st.size, st.nlink)

    def forget(self, ino: int, lookups: int) -> None:
        self.inodes.forget(ino, lookups)

    @_errors
    def getattr(self, ino: int, *, wait: bool = True) -> Attributes:
        path = self._path(ino)
        st = self.source.stat(path, wait=wait)
        return Attributes(ino, st.is_dir, st.size, st.nlink)

    # -- directories -------------------------------------------------------------------------------------
    @_errors
    def opendir(self, ino: int, pid: int) -> None:
        """Only called on a mount without the listing cache: checks that ``ino`` is a listable directory."""
        self.source.listdir(self._path(ino))

    @_errors
    def readdir(
        self, ino: int, offset: int, limit: int, pid: int, plus: bool = False, *, wait: bool = True
    ) -> list[DirEntry]:
        """At most ``limit`` entries from ``offset`` on ('.' and '..' first); a listing from the start is what an
        audited mount records. The kernel reads a listing in pages, so each call builds only what one page can
        hold. With ``plus``, entries carry the attributes that cost nothing, so that a listing never waits for synthesis
        (`find`, plain `ls`) while `ls -l` after it needs no lookup per entry. With ``wait=False``: WouldWait
        unless the listing needs nothing built first (the entries' attributes are only looked up, never computed)."""
        path = self._path(ino)
        if not wait and not self.source.built(path):
            raise WouldWait
        listing = self.source.listdir(path)
        self.listing_ends[ino] = len(listing) + 2
        entries: list[DirEntry] = []
        if offset <= 0:
            entries.append(DirEntry(".", path, True, ino))
        if offset <= 1:
            parent = path.rsplit("/", 1)[0] or "/"
            entries.append(DirEntry("..", parent, True, self.inodes.number(parent)))
        start = max(0, offset - 2)
        page = listing[start : start + max(0, limit - len(entries))]
        stats: list[Stat | None] = [None] * len(page)
        if plus and page:
            try:
                stats = self.source.stats_without_synthesis(path, page)
            except Exception:  # the entries go without attributes; their lookups report the error
                log.exception("attributes for a listing of %s", path)
        for (name, is_dir), st in zip(page, stats, strict=True):
            attributes = None if st is None else Attributes(0, st.is_dir, st.size, st.nlink)
            entries.append(DirEntry(name, child_path(path, name), is_dir, 0, attributes))
        return entries

    # -- files -------------------------------------------------------------------------------------------
    @_errors
    def open(self, ino: int, pid: int) -> None:
        """Only called on an audited mount: every open is an event, and the kernel keeps no pages across opens,
        so the reads after it come here too even when another question's reads filled the page cache."""
        path = self._path(ino)
        if self.source.stat(path).is_dir:
            raise IsADirectoryError(path)

    @_errors
    def read(self, ino: int, size: int, offset: int, pid: int, *, wait: bool = True) -> bytes:
        """With ``wait=False``: only bytes at hand (in memory, or a small file in the disk cache), else WouldWait."""
        path = self._path(ino)
        return self.source.read(path, size, offset, wait=wait)

    def statfs(self) -> dict[str, int]:
        # The kernel derives f_flag (ST_RDONLY) from the "ro" mount option. Sizes are unknown (infinite
        # repositories): report an empty, full filesystem.
        return {"f_bsize": BLOCK, "f_frsize": BLOCK, "f_namemax": NAME_MAX, "f_flag": os.ST_RDONLY | os.ST_NOSUID}

    @property
    def root(self) -> int:
        return ROOT_INO
