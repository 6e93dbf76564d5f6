"""The mfusepy Operations of the mount: a thin, read-only translation of ``MountSource`` into FUSE.

Every callback maps exceptions to an explicit errno and never lets a Python exception reach mfusepy
(which would answer EINVAL): unknown paths are ENOENT, generator failures are logged and answered EIO,
anything that would modify the filesystem is EROFS, and there are no extended attributes.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import mfusepy

from sgfs.source import GenerationError, MountSource

if TYPE_CHECKING:
    from sgfs.eval.audit import AuditSink

log = logging.getLogger("sgfs.mount")

F = TypeVar("F", bound=Callable[..., Any])

# Content never changes, so every timestamp is one constant (2024-01-01T00:00:00Z, in nanoseconds).
FIXED_TIME_NS = 1_704_067_200 * 10**9
FILE_MODE = stat.S_IFREG | 0o444
DIR_MODE = stat.S_IFDIR | 0o555
BLOCK = 4096
NAME_MAX = 255
READDIR_PLUS = 1  # libfuse 3: FUSE_READDIR_PLUS in readdir's flags
FILL_DIR_PLUS = 2  # libfuse 3: FUSE_FILL_DIR_PLUS, the filler's entry carries full attributes


def _errors(method: F) -> F:
    """Map the core's exceptions to errno values; log and answer EIO for anything unexpected."""

    @functools.wraps(method)
    def wrapper(self: SgfsOperations, path: str, *args: Any) -> Any:
        try:
            return method(self, path, *args)
        except mfusepy.FuseOSError:
            raise
        except FileNotFoundError:
            raise mfusepy.FuseOSError(errno.ENOENT) from None
        except IsADirectoryError:
            raise mfusepy.FuseOSError(errno.EISDIR) from None
        except NotADirectoryError:
            raise mfusepy.FuseOSError(errno.ENOTDIR) from None
        except GenerationError as exc:
            log.error("generation failed: seed %s path %s", exc.seed, exc.path or "/", exc_info=exc.cause)
            raise mfusepy.FuseOSError(errno.EIO) from None
        except Exception:
            log.exception("unexpected error in %s(%r)", method.__name__, path)
            raise mfusepy.FuseOSError(errno.EIO) from None

    return cast(F, wrapper)


class SgfsOperations(mfusepy.Operations):  # type: ignore[misc]  # mfusepy ships no type information
    use_ns = True  # timestamps in integer nanoseconds (and no deprecation warning)

    def __init__(
        self,
        source: MountSource,
        on_init: Callable[[], None] | None = None,
        audit: AuditSink | None = None,
        *,
        cache_listings: bool = True,
    ) -> None:
        self.source = source
        self.audit = audit  # where listings and reads are recorded, with the caller's pid (docs/eval.md)
        # Listings answered from the kernel's cache never reach the daemon: off for a mount that must see them.
        self.cache_listings = cache_listings
        self._on_init = on_init
        self.uid = os.getuid()
        self.gid = os.getgid()
        self.initialized = False  # set once the kernel has talked to us: the mount is up

    # -- lifecycle ---------------------------------------------------------------------------------------
    def init(self, path: str) -> None:
        self.initialized = True
        log.info("mount is up")
        if self._on_init is not None:
            try:
                self._on_init()
            except Exception:
                log.exception("init hook failed")

    def destroy(self, path: str) -> None:
        log.info("mount is going down")

    # -- metadata ----------------------------------------------------------------------------------------
    def _attrs(self, is_dir: bool, size: int, nlink: int) -> dict[str, int]:
        return {
            "st_mode": DIR_MODE if is_dir else FILE_MODE,
            "st_nlink": nlink,
            "st_size": size,
            "st_blocks": (size + 511) // 512,
            "st_blksize": BLOCK,
            "st_uid": self.uid,
            "st_gid": self.gid,
            "st_atime": FIXED_TIME_NS,
            "st_mtime": FIXED_TIME_NS,
            "st_ctime": FIXED_TIME_NS,
        }

    @_errors
    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        st = self.source.stat(path)
        return self._attrs(st.is_dir, st.size, st.nlink)

    @_errors
    def readdir(self, path: str, fh: int) -> list[tuple[str, int, int]]:
        # Passing st_mode gives the kernel each entry's d_type: `find -type f` need not stat every file.
        listing = self.source.listdir(path)
        if self.audit is not None:
            self.audit.record(mfusepy.fuse_get_context()[2], "readdir", path, 0)
        return [(".", DIR_MODE, 0), ("..", DIR_MODE, 0)] + [
            (name, DIR_MODE if is_dir else FILE_MODE, 0) for name, is_dir in listing
        ]

    def readdir_plus(self, path: str) -> list[tuple[str, dict[str, int]]]:
        """Entries for READDIRPLUS: full attributes where they cost nothing (directories, files whose size is
        known), the mode alone otherwise, so that a listing never waits for synthesis (`find`, plain `ls`)."""
        try:
            base = path.rstrip("/")
            entries: list[tuple[str, dict[str, int]]] = []
            for name, is_dir in self.source.listdir(path):
                st = self.source.peek_stat(f"{base}/{name}")
                mode_only = {"st_mode": DIR_MODE if is_dir else FILE_MODE}
                entries.append((name, mode_only if st is None else self._attrs(st.is_dir, st.size, st.nlink)))
            return entries
        except Exception:
            return self.readdir_plus_fallback(path)

    @_errors
    def readdir_plus_fallback(self, path: str) -> list[tuple[str, dict[str, int]]]:
        # Let _errors map the failure, then answer without attributes (the kernel looks entries up itself).
        return [(name, {"st_mode": DIR_MODE if is_dir else FILE_MODE}) for name, is_dir in self.source.listdir(path)]

    # No access callback: with default_permissions and "ro" the kernel checks access itself. opendir only
    # exists so that listing_cache_fuse can mark directory handles cacheable (see there).
    def opendir(self, path: str) -> int:
        return 0

    @_errors
    def statfs(self, path: str) -> dict[str, int]:
        # The kernel derives f_flag (ST_RDONLY) from the "ro" mount option; it is set here too for bindings
        # that pass it through. Sizes are unknown (infinite repositories): report an empty, full filesystem.
        return {
            "f_bsize": BLOCK,
            "f_frsize": BLOCK,
            "f_blocks": 0,
            "f_bfree": 0,
            "f_bavail": 0,
            "f_files": 0,
            "f_ffree": 0,
            "f_favail": 0,
            "f_flag": os.ST_RDONLY | os.ST_NOSUID,
            "f_namemax": NAME_MAX,
        }

    # -- content -----------------------------------------------------------------------------------------
    @_errors
    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        data = self.source.read(path, size, offset)
        if self.audit is not None:
            # Recorded before the reply: once the reader has its bytes, the event is in the sink.
            self.audit.record(mfusepy.fuse_get_context()[2], "read", path, len(data))
        return data

    # No open, getxattr or listxattr callbacks: with the "ro" mount option the kernel itself refuses every
    # open for writing (EROFS), and without xattr callbacks it learns after one ENOSYS that this filesystem
    # has no extended attributes (EOPNOTSUPP from then on) instead of asking Python again for every entry
    # `ls -l` shows. Each callback left out is a round trip into Python saved per file.

    # -- everything that writes: EROFS, whatever the arguments ------------------------------------------
    def _erofs(self, *args: Any) -> int:
        raise mfusepy.FuseOSError(errno.EROFS)

    write = create = mknod = mkdir = unlink = rmdir = rename = link = symlink = _erofs
    chmod = chown = truncate = utimens = setxattr = removexattr = _erofs


def _caches_listings(operations: Any) -> bool:
    """Listings may be answered by the kernel: asked for, and no audit that must see every listing."""
    return bool(getattr(operations, "cache_listings", False)) and getattr(operations, "audit", None) is None


def listing_cache_fuse(base: type[Any]) -> type[Any]:
    """mfusepy's FUSE class whose opendir marks each directory handle for the kernel's readdir cache.

    mfusepy's own opendir ignores ``raw_fi`` and sets only the handle, so the FOPEN_CACHE_DIR and
    FOPEN_KEEP_CACHE flags (libfuse >= 3.5: ``cache_readdir``, ``keep_cache``) are set here, after it, on
    the same ``fuse_file_info``: the kernel then answers repeated listings itself (content never changes).
    """

    class ListingCacheFUSE(base):  # type: ignore[misc]
        def readdir_fuse_3(self, path: bytes | None, buf: Any, filler: Any, offset: int, fip: Any, flags: int) -> int:
            # mfusepy never answers READDIRPLUS with attributes (its filler flags are always 0): do it here, so
            # the kernel learns every entry's attributes with the listing instead of one lookup per entry.
            if not (flags & READDIR_PLUS) or path is None or not _caches_listings(self.operations):
                return int(super().readdir_fuse_3(path, buf, filler, offset, fip, flags))
            decoded = path.decode(self.encoding, self.errors)
            entries = self.operations.readdir_plus(decoded)
            for name in (".", ".."):
                dot = mfusepy.c_stat()
                dot.st_mode = DIR_MODE
                if filler(buf, name.encode(), dot, 0, 0) != 0:
                    return 0
            for name, attrs in entries:
                st = mfusepy.c_stat()
                mfusepy.set_st_attrs(st, attrs, use_ns=True)
                plus = FILL_DIR_PLUS if len(attrs) > 1 else 0
                if filler(buf, name.encode(self.encoding, self.errors), st, 0, plus) != 0:
                    break
            return 0

        def opendir(self, path: bytes, fip: Any) -> int:
            result: int = super().opendir(path, fip)
            if result == 0 and _caches_listings(self.operations):
                info = fip.contents
                if hasattr(info, "cache_readdir"):
                    info.cache_readdir = 1
                    info.keep_cache = 1
            return result

    return ListingCacheFUSE
