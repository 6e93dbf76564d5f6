"""libfuse 3's low-level API through ctypes: each kernel request becomes one ``SgfsFilesystem`` call, one reply.

Why not libfuse's high-level API (mfusepy's ``FUSE``): it names files by path and owns directory handles, so it
must answer OPENDIR itself and never passes ``cache_readdir`` on (libfuse 3.14 replies to opendir with the
kernel's own flags). Here a mount that may cache answers ENOSYS to OPEN and OPENDIR once: the kernel then
stops asking and keeps pages and listings (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR are its defaults without
open), so a warm ``ls -lR`` or ``find -exec cat`` of a deep tree never leaves the kernel.

Requests are read by one thread (``sgfs.request_loop``): a callback answers there what is at hand (a packed
listing page, a memoised size, bytes in memory) and hands what must wait to the loop's threads.

mfusepy is still the source of the platform's ``struct stat``, ``struct statvfs`` and ``fuse_file_info``
layouts. Function and structure signatures follow ``fuse_lowlevel.h`` of libfuse 3.2 and later.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import mfusepy

from sgfs.errors import SgfsError
from sgfs.fast_pages import PageReader, load_reader
from sgfs.fuse_ops import (
    BLOCK,
    DIR_MODE,
    FILE_MODE,
    FIXED_TIME_S,
    Attributes,
    DirEntry,
    FuseError,
    SgfsFilesystem,
)
from sgfs.listing_pages import (
    DIRENT,
    DIRENT_HEADER,
    DIRENTPLUS,
    DIRENTPLUS_HEADER,
    S_IFMT,
    ListingBooks,
    timeout_parts,
)
from sgfs.request_loop import RequestLoop

log = logging.getLogger("sgfs.mount")

c_stat: Any = mfusepy.c_stat
c_statvfs: Any = mfusepy.c_statvfs
fuse_file_info: Any = mfusepy.fuse_file_info
fi_p = ctypes.POINTER(fuse_file_info)
req_t = ctypes.c_void_p
ino_t = ctypes.c_uint64
off_t = ctypes.c_int64


class FuseArgs(ctypes.Structure):
    _fields_ = [("argc", ctypes.c_int), ("argv", ctypes.POINTER(ctypes.c_char_p)), ("allocated", ctypes.c_int)]


class FuseEntryParam(ctypes.Structure):
    _fields_ = [
        ("ino", ino_t),
        ("generation", ctypes.c_uint64),
        ("attr", c_stat),
        ("attr_timeout", ctypes.c_double),
        ("entry_timeout", ctypes.c_double),
    ]


class FuseConnInfo(ctypes.Structure):  # the fields before ``reserved``, unchanged since libfuse 3.0
    _fields_ = [
        (name, ctypes.c_uint)
        for name in [
            "proto_major",
            "proto_minor",
            "max_write",
            "max_read",
            "max_readahead",
            "capable",
            "want",
            "max_background",
            "congestion_threshold",
            "time_gran",
        ]
    ]


FUSE_CAP_NO_OPEN_SUPPORT = 1 << 17  # the kernel (4.20+) takes ENOSYS to OPEN as "never ask again"
FUSE_CAP_NO_OPENDIR_SUPPORT = 1 << 24  # the same for OPENDIR (5.1+)
FUSE_CAP_READDIRPLUS = 1 << 13
FUSE_CAP_READDIRPLUS_AUTO = 1 << 14


class FuseCtx(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32), ("pid", ctypes.c_int32), ("umask", ctypes.c_uint32)]


# struct fuse_lowlevel_ops, in declaration order; the ones this mount implements are typed below.
OPS = [
    "init",
    "destroy",
    "lookup",
    "forget",
    "getattr",
    "setattr",
    "readlink",
    "mknod",
    "mkdir",
    "unlink",
    "rmdir",
    "symlink",
    "rename",
    "link",
    "open",
    "read",
    "write",
    "flush",
    "release",
    "fsync",
    "opendir",
    "readdir",
    "releasedir",
    "fsyncdir",
    "statfs",
    "setxattr",
    "getxattr",
    "listxattr",
    "removexattr",
    "access",
    "create",
    "getlk",
    "setlk",
    "bmap",
    "ioctl",
    "poll",
    "write_buf",
    "retrieve_reply",
    "forget_multi",
    "flock",
    "fallocate",
    "readdirplus",
    "copy_file_range",
    "lseek",
]


class LowLevelOps(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in OPS]


INIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
LOOKUP = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_char_p)
FORGET = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_uint64)
WITH_FILE = ctypes.CFUNCTYPE(None, req_t, ino_t, fi_p)  # getattr, open, opendir
# read, readdir, readdirplus: their fuse_file_info is never used, so it stays a bare address (no ctypes
# pointer object per request)
READ = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_size_t, off_t, ctypes.c_void_p)
STATFS = ctypes.CFUNCTYPE(None, req_t, ino_t)


def load_libfuse() -> ctypes.CDLL:
    name = ctypes.util.find_library("fuse3")
    if name is None:
        raise SgfsError("FUSE is unavailable: libfuse3 cannot be found; install fuse3")
    lib = ctypes.CDLL(name)
    if not hasattr(lib, "fuse_session_process_buf") or not hasattr(lib, "fuse_session_loop_mt_32"):
        raise SgfsError(f"FUSE is unavailable: {name} is older than libfuse 3.2; install a newer fuse3")
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "fuse_session_new": (
            ctypes.c_void_p,
            [ctypes.POINTER(FuseArgs), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
        ),
        "fuse_session_mount": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
        "fuse_session_unmount": (None, [ctypes.c_void_p]),
        "fuse_session_destroy": (None, [ctypes.c_void_p]),
        "fuse_set_signal_handlers": (ctypes.c_int, [ctypes.c_void_p]),
        "fuse_remove_signal_handlers": (None, [ctypes.c_void_p]),
        "fuse_reply_err": (ctypes.c_int, [req_t, ctypes.c_int]),
        "fuse_reply_none": (None, [req_t]),
        "fuse_reply_entry": (ctypes.c_int, [req_t, ctypes.POINTER(FuseEntryParam)]),
        "fuse_reply_attr": (ctypes.c_int, [req_t, ctypes.POINTER(c_stat), ctypes.c_double]),
        "fuse_reply_open": (ctypes.c_int, [req_t, fi_p]),
        "fuse_reply_buf": (ctypes.c_int, [req_t, ctypes.c_void_p, ctypes.c_size_t]),
        "fuse_reply_statfs": (ctypes.c_int, [req_t, ctypes.POINTER(c_statvfs)]),
        "fuse_req_ctx": (ctypes.POINTER(FuseCtx), [req_t]),
        "fuse_add_direntry": (
            ctypes.c_size_t,
            [req_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(c_stat), off_t],
        ),
        "fuse_add_direntry_plus": (
            ctypes.c_size_t,
            [req_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(FuseEntryParam), off_t],
        ),
    }
    for symbol, (restype, argtypes) in signatures.items():
        function = getattr(lib, symbol)
        function.restype, function.argtypes = restype, argtypes
    return lib


class LowLevelMount:
    """One mount: the session, its callbacks (kept alive as long as the session) and the reply glue.

    Each callback first tries to answer from what is at hand (``*_now``: packed pages, memoised attributes,
    bytes in memory), in the request loop's thread; otherwise the full handler runs on one of the loop's
    request threads (sgfs.request_loop), or inline when no loop runs (tests calling callbacks directly)."""

    def __init__(self, fs: SgfsFilesystem, timeout_s: float) -> None:
        self.fs = fs
        self.timeout = float(timeout_s)
        self.lib = load_libfuse()
        self._callbacks: list[Any] = []
        self.ops = LowLevelOps()
        # Pages of seeds whose every size is known, packed ahead; never on an audited mount, which must see
        # each listing through SgfsFilesystem.readdir.
        self.books = ListingBooks(fs, self.timeout) if fs.cache_listings else None
        self.reader: PageReader | None = None  # answers the books' pages in C once the session runs
        self.loop = RequestLoop(self.lib, reader_for=self._page_reader)
        # Whether the kernel takes ENOSYS to OPEN / OPENDIR as "never ask again" (set at init); older kernels
        # would fail the open, so there the daemon answers it with the caching flags instead.
        self.kernel_skips_open = False
        self.kernel_skips_opendir = False
        self._set("init", INIT(self._init))
        self._set("destroy", DESTROY(self._destroy))
        self._set("lookup", LOOKUP(self._callback(self._lookup, self._lookup_now)))
        self._set("forget", FORGET(self._forget))
        self._set("getattr", WITH_FILE(self._callback(self._getattr, self._getattr_now)))
        self._set("open", WITH_FILE(self._callback(self._open, self._open_now, own_file_info=True)))
        self._set("opendir", WITH_FILE(self._callback(self._opendir, self._opendir_now, own_file_info=True)))
        self._set("read", READ(self._callback(self._read, self._read_now)))
        self._set("readdir", READ(self._callback(self._readdir, self._readdir_now)))
        self._set("readdirplus", READ(self._callback(self._readdirplus, self._readdirplus_now)))
        self._set("statfs", STATFS(self._guard(self._statfs)))

    def _set(self, name: str, callback: Any) -> None:
        self._callbacks.append(callback)
        setattr(self.ops, name, ctypes.cast(callback, ctypes.c_void_p))

    # -- the session -------------------------------------------------------------------------------------
    def prepare(self, seeds: list[int], budget_s: float) -> int:
        """Before mounting: build the listing books of the listed seeds the disk cache knows whole, in order,
        until ``budget_s`` has passed; returns how many are ready. A second mount of the same seeds (the next CI
        run, its cache directory restored) then answers its first walk at once."""
        if self.books is None:
            return 0
        start = time.monotonic()
        ready = 0
        for seed in seeds:
            if time.monotonic() - start >= budget_s:
                break
            try:
                if not self.books.prepare(seed):
                    continue  # not every size known (yet): its first listing goes page by page
                self.fs.source.stat(f"/{seed}")  # memoised: the seed folder's LOOKUP is answered at once too
            except Exception:  # the first request for the seed reports it
                log.debug("preparing seed %d", seed, exc_info=True)
                continue
            ready += 1
        if ready:
            log.info(
                "listings of %d listed seed(s) ready from the disk cache in %.2f s", ready, time.monotonic() - start
            )
        return ready

    def serve(self, mountpoint: str, options: list[str]) -> None:
        """Mount, serve until unmounted or signalled (SIGINT/SIGTERM/SIGHUP), unmount."""
        argv = [b"sgfs"] + [arg for option in options for arg in (b"-o", option.encode())]
        args = FuseArgs(len(argv), (ctypes.c_char_p * len(argv))(*argv), 0)
        session = self.lib.fuse_session_new(ctypes.byref(args), ctypes.byref(self.ops), ctypes.sizeof(self.ops), None)
        if not session:
            raise SgfsError(f"cannot mount {mountpoint}: libfuse rejected the options {','.join(options)}")
        try:
            if self.lib.fuse_session_mount(session, mountpoint.encode()) != 0:
                raise SgfsError(f"cannot mount {mountpoint}: libfuse could not mount it (see its message)")
            self._loop(session)
        finally:
            self.lib.fuse_session_destroy(session)

    def _page_reader(self, session: int) -> PageReader | None:
        """The request reader that answers the books' pages in C (sgfs.fast_pages), when it is built."""
        if self.books is None:
            return None
        lib = load_reader()
        if lib is None:
            return None
        self.reader = PageReader(lib, self.books, self.fs.inodes, self.lib.fuse_session_exited, session)
        log.debug("listing pages of books answered in C")
        return self.reader

    def _loop(self, session: int) -> None:
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_DFL) if in_main else None  # libfuse sets SIG_DFL ones
        if self.lib.fuse_set_signal_handlers(session) != 0:
            self.lib.fuse_session_unmount(session)
            raise SgfsError("cannot install libfuse's signal handlers")
        try:
            # Returns when the kernel ends the connection (unmounted) or a signal ends the session; a signal
            # interrupts the read only in the thread it reaches, the main one (where the daemon serves).
            self.loop.run(session)
        finally:
            self.lib.fuse_remove_signal_handlers(session)
            self.lib.fuse_session_unmount(session)
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    # -- glue ----------------------------------------------------------------------------------------------
    def _guard(self, handler: Callable[..., None]) -> Callable[..., None]:
        """Every request gets exactly one reply: the handler's, or the errno of what it raised."""

        def call(req: int, *args: Any) -> None:
            try:
                handler(req, *args)
            except FuseError as exc:
                self.lib.fuse_reply_err(req, exc.errno)
            except Exception:
                log.exception("unexpected error answering a FUSE request")
                self.lib.fuse_reply_err(req, errno.EIO)

        return call

    def _callback(
        self, handler: Callable[..., None], now: Callable[..., bool], *, own_file_info: bool = False
    ) -> Callable[..., None]:
        """``now`` answers at once when it can (True); else ``handler`` answers on a request thread. A handed-on
        request takes its own copy of the ``fuse_file_info`` libfuse gave (it lives on libfuse's stack)."""
        answer = self._guard(handler)

        def first(req: int, *args: Any) -> None:
            if now(req, *args):
                return
            pool = self.loop.later
            if pool is None:  # no loop running (a test calling callbacks): answer here
                handler(req, *args)
                return
            if own_file_info and args[1]:
                args = (args[0], ctypes.pointer(fuse_file_info.from_buffer_copy(args[1].contents)), *args[2:])
            pool.submit(answer, req, *args)

        return self._guard(first)

    def _pid(self, req: int) -> int:
        return int(self.lib.fuse_req_ctx(req).contents.pid)

    def _fill_stat(self, st: Any, attributes: Attributes) -> None:
        st.st_ino = attributes.ino
        st.st_mode = attributes.mode
        st.st_nlink = attributes.nlink
        st.st_size = attributes.size
        st.st_blocks = (attributes.size + 511) // 512
        st.st_blksize = BLOCK
        st.st_uid = self.fs.uid
        st.st_gid = self.fs.gid
        for field in ("st_atimespec", "st_mtimespec", "st_ctimespec"):
            getattr(st, field).tv_sec = FIXED_TIME_S

    def _entry(self, attributes: Attributes) -> FuseEntryParam:
        entry = FuseEntryParam(ino=attributes.ino, attr_timeout=self.timeout, entry_timeout=self.timeout)
        self._fill_stat(entry.attr, attributes)
        return entry

    # -- callbacks -----------------------------------------------------------------------------------------
    def _init(self, userdata: int, conn: int) -> None:
        info = FuseConnInfo.from_address(conn)
        self.kernel_skips_open = bool(info.capable & FUSE_CAP_NO_OPEN_SUPPORT)
        self.kernel_skips_opendir = bool(info.capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
        if info.capable & FUSE_CAP_READDIRPLUS:
            # Always READDIRPLUS, not only for a listing's first page ("auto"): every page then carries the
            # attributes the daemon knows, so `ls -l` of a large directory needs no LOOKUP per entry.
            info.want = (info.want | FUSE_CAP_READDIRPLUS) & ~FUSE_CAP_READDIRPLUS_AUTO
        self.fs.init()

    def _destroy(self, userdata: int) -> None:
        self.fs.destroy()

    def _lookup(self, req: int, parent: int, name: bytes) -> None:
        attributes = self.fs.lookup(parent, name.decode("utf-8", "surrogateescape"))
        if attributes is None:  # a negative entry the kernel keeps for the timeout: the name never appears
            self.lib.fuse_reply_entry(req, ctypes.byref(FuseEntryParam(ino=0, entry_timeout=self.timeout)))
        else:
            self.lib.fuse_reply_entry(req, ctypes.byref(self._entry(attributes)))

    def _lookup_now(self, req: int, parent: int, name: bytes) -> bool:
        attributes = self.fs.lookup_known(parent, name.decode("utf-8", "surrogateescape"))
        if attributes is None:
            return False
        self.lib.fuse_reply_entry(req, ctypes.byref(self._entry(attributes)))
        return True

    def _forget(self, req: int, ino: int, lookups: int) -> None:
        try:
            self.fs.forget(ino, lookups)
        finally:
            self.lib.fuse_reply_none(req)

    def _getattr(self, req: int, ino: int, fi: Any) -> None:
        self._reply_attr(req, self.fs.getattr(ino))

    def _getattr_now(self, req: int, ino: int, fi: Any) -> bool:
        attributes = self.fs.getattr_known(ino)
        if attributes is None:
            return False
        self._reply_attr(req, attributes)
        return True

    def _reply_attr(self, req: int, attributes: Attributes) -> None:
        st = c_stat()
        self._fill_stat(st, attributes)
        self.lib.fuse_reply_attr(req, ctypes.byref(st), self.timeout)

    def _open(self, req: int, ino: int, fi: Any) -> None:
        info = fi.contents
        if self.fs.audit is None:
            if self.kernel_skips_open:
                raise FuseError(errno.ENOSYS)  # once: the kernel stops sending OPEN and keeps every file's pages
            info.keep_cache = 1
        else:
            self.fs.open(ino, self._pid(req))
            info.keep_cache = 0  # an audited mount: the pages go at each open, so the reads come here again
        self.lib.fuse_reply_open(req, fi)

    def _open_now(self, req: int, ino: int, fi: Any) -> bool:
        if self.fs.audit is not None:
            return False  # checks the file (it may need synthesis) and records the open
        self._open(req, ino, fi)
        return True

    def _opendir(self, req: int, ino: int, fi: Any) -> None:
        info = fi.contents
        if self.fs.cache_listings:
            if self.kernel_skips_opendir:
                raise FuseError(errno.ENOSYS)  # once: the kernel stops sending OPENDIR and keeps listings itself
            info.cache_readdir = info.keep_cache = 1  # one round trip per directory, listings kept
        else:
            self.fs.opendir(ino, self._pid(req))  # no cache_readdir: every listing reaches readdir
        self.lib.fuse_reply_open(req, fi)

    def _opendir_now(self, req: int, ino: int, fi: Any) -> bool:
        if not self.fs.cache_listings:
            return False  # checks the directory (it may build its repository)
        self._opendir(req, ino, fi)
        return True

    def _read(self, req: int, ino: int, size: int, offset: int, fi: Any) -> None:
        data = self.fs.read(ino, size, offset, self._pid(req))
        self.lib.fuse_reply_buf(req, data, len(data))

    def _read_now(self, req: int, ino: int, size: int, offset: int, fi: Any) -> bool:
        data = self.fs.read_known(ino, size, offset, self._pid(req) if self.fs.audit is not None else 0)
        if data is None:
            return False
        self.lib.fuse_reply_buf(req, data, len(data))
        return True

    def _readdir(self, req: int, ino: int, size: int, offset: int, fi: Any) -> None:
        self._list(req, ino, size, offset, plus=False)

    def _readdir_now(self, req: int, ino: int, size: int, offset: int, fi: Any) -> bool:
        return self._list_now(req, ino, size, offset, plus=False)

    def _readdirplus(self, req: int, ino: int, size: int, offset: int, fi: Any) -> None:
        self._list(req, ino, size, offset, plus=True)

    def _readdirplus_now(self, req: int, ino: int, size: int, offset: int, fi: Any) -> bool:
        return self._list_now(req, ino, size, offset, plus=True)

    def _list_now(self, req: int, ino: int, size: int, offset: int, *, plus: bool) -> bool:
        """The empty page after a listing's last, a page of a book already built, or a page of a repository
        already built (the page by page path: a walk of a cold mount lists without a hand-over per directory)."""
        end = self.fs.listing_ends.get(ino)
        if end is not None and offset >= end:
            self.lib.fuse_reply_buf(req, None, 0)
            return True
        if plus and self.books is not None and self._reply_page(req, self.books.page(ino, offset, size, build=False)):
            return True
        if not self.fs.listing_at_hand(ino) or (plus and self.books is not None and self.books.could_build(ino)):
            return False
        self._list_entries(req, ino, size, offset, plus=plus)  # no book to ask again: none answers it now
        return True

    def _reply_page(self, req: int, page: bytes | None) -> bool:
        """Send a packed listing page (empty: past the end); False, sending nothing, when there is none."""
        if page is None:
            return False
        self.lib.fuse_reply_buf(req, page or None, len(page))
        return True

    def _list(self, req: int, ino: int, size: int, offset: int, *, plus: bool) -> None:
        if plus and self.books is not None and self._reply_page(req, self.books.page(ino, offset, size)):
            return
        self._list_entries(req, ino, size, offset, plus=plus)

    def _list_entries(self, req: int, ino: int, size: int, offset: int, *, plus: bool) -> None:
        """A page of the listing built entry by entry (no book)."""
        header = DIRENTPLUS_HEADER if plus else DIRENT_HEADER
        pid = self._pid(req) if self.fs.audit is not None else 0
        entries = self.fs.readdir(ino, offset, size // (header + 8) + 1, pid, plus)
        if not entries:  # past the end: the kernel asks once more after the last page
            self.lib.fuse_reply_buf(req, None, 0)
            return
        page = self.pack_entries(entries, offset, size, plus)
        self.lib.fuse_reply_buf(req, page, len(page))

    def pack_entries(self, entries: list[DirEntry], offset: int, size: int, plus: bool) -> bytes:
        """The entries that fit in ``size`` bytes, as the kernel reads a listing page; an entry sent with
        attributes counts as a lookup (the kernel will FORGET it), so it is acquired only once it fits."""
        page = bytearray(size)
        used = 0
        inodes, uid, gid = self.fs.inodes, self.fs.uid, self.fs.gid
        valid_s, valid_ns = timeout_parts(self.timeout)
        for index, entry in enumerate(entries, start=offset + 1):
            name = entry.name.encode("utf-8", "surrogateescape")
            need = ((DIRENTPLUS_HEADER if plus else DIRENT_HEADER) + len(name) + 7) & ~7
            if used + need > size:
                break
            mode = DIR_MODE if entry.is_dir else FILE_MODE
            kind = (mode & S_IFMT) >> 12
            found = entry.attributes if plus else None
            if found is not None:
                number = inodes.acquire(entry.path)
                blocks = (found.size + 511) // 512
                DIRENTPLUS.pack_into(
                    page, used,
                    number, 0, valid_s, valid_s, valid_ns, valid_ns,
                    number, found.size, blocks, FIXED_TIME_S, FIXED_TIME_S, FIXED_TIME_S, 0, 0, 0,
                    found.mode, found.nlink, uid, gid, 0, BLOCK, 0,
                    number, index, len(name), kind,
                )  # fmt: skip
                start = used + DIRENTPLUS_HEADER
            else:
                # Number 0 in the entry part: the kernel takes the name and type only, and looks it up later.
                number = entry.ino or inodes.number(entry.path)
                if plus:
                    DIRENTPLUS.pack_into(
                        page, used,
                        0, 0, 0, 0, 0, 0,
                        number, 0, 0, 0, 0, 0, 0, 0, 0, mode, 0, 0, 0, 0, 0, 0,
                        number, index, len(name), kind,
                    )  # fmt: skip
                    start = used + DIRENTPLUS_HEADER
                else:
                    DIRENT.pack_into(page, used, number, index, len(name), kind)
                    start = used + DIRENT_HEADER
            page[start : start + len(name)] = name
            used += need
        return bytes(page[:used])

    def _statfs(self, req: int, ino: int) -> None:
        st = c_statvfs()
        for field, value in self.fs.statfs().items():
            setattr(st, field, value)
        self.lib.fuse_reply_statfs(req, ctypes.byref(st))
