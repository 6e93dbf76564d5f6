"""libfuse 3's low-level API through ctypes: each kernel request becomes one ``SgfsFilesystem`` call, one reply.

Why not libfuse's high-level API (mfusepy's ``FUSE``): it names files by path and owns directory handles, so it
must answer OPENDIR itself and never passes ``cache_readdir`` on (libfuse 3.14 replies to opendir with the
kernel's own flags). Here a mount that may cache answers ENOSYS to OPEN and OPENDIR once: the kernel then
stops asking and keeps pages and listings (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR are its defaults without
open), so a warm ``ls -lR`` or ``find -exec cat`` of a deep tree never leaves the kernel.

Requests are read by one thread (``sgfs.mount.kernel.loop``): a callback answers there what is at hand (a packed
listing page, a memoised size, bytes in memory) and hands what must wait to the loop's threads.

Every structure and function signature comes from ``sgfs.mount.kernel.abi`` (libfuse 3 only).
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

from sgfs.errors import SgfsError
from sgfs.mount.kernel.abi import (
    DESTROY,
    FORGET,
    FUSE_CAP_NO_OPEN_SUPPORT,
    FUSE_CAP_NO_OPENDIR_SUPPORT,
    FUSE_CAP_READDIRPLUS,
    FUSE_CAP_READDIRPLUS_AUTO,
    INIT,
    LOOKUP,
    READ,
    STATFS,
    WITH_FILE,
    Args,
    ConnInfo,
    EntryParam,
    FileInfo,
    LowLevelOps,
    Stat,
    StatVfs,
    libfuse_version,
    load_libfuse,
)
from sgfs.mount.kernel.loop import RequestLoop, needs_init_rewrite
from sgfs.mount.kernel.pages import (
    DIRENT_HEADER,
    DIRENTPLUS_HEADER,
    ListingBooks,
    pack_records,
    record_length,
)
from sgfs.mount.operations import (
    BLOCK,
    FIXED_TIME_S,
    Attributes,
    DirEntry,
    FuseError,
    SgfsFilesystem,
    WouldWait,
)

log = logging.getLogger("sgfs.mount")


class LowLevelMount:
    """One mount: the session, its callbacks (kept alive as long as the session) and the reply glue.

    Each callback first asks its handler not to wait (``wait=False``: packed pages, memoised attributes, bytes
    in memory), in the request loop's thread; when the answer is not at hand (WouldWait) the handler runs again on
    one of the loop's request threads (sgfs.mount.kernel.loop), or inline when no loop runs (tests calling
    callbacks directly)."""

    def __init__(self, fs: SgfsFilesystem, timeout_s: float) -> None:
        self.fs = fs
        self.timeout = float(timeout_s)
        self.lib = load_libfuse()
        self._callbacks: list[Any] = []
        self.ops = LowLevelOps()
        # Pages of seeds whose every size is known, packed ahead; never on an audited mount, which must see
        # each listing through SgfsFilesystem.readdir.
        self.books = ListingBooks(fs, self.timeout) if fs.cache_listings else None
        # libfuse before 3.17.1 leaves FUSE_PARALLEL_DIROPS out of its INIT reply: the loop adds it there.
        self.loop = RequestLoop(self.lib, rewrite_init=needs_init_rewrite(libfuse_version(self.lib)))
        # Whether the kernel takes ENOSYS to OPEN / OPENDIR as "never ask again" (set at init); older kernels
        # would fail the open, so there the daemon answers it with the caching flags instead.
        self.kernel_skips_open = False
        self.kernel_skips_opendir = False
        self._set("init", INIT(self._init))
        self._set("destroy", DESTROY(self._destroy))
        self._set("lookup", LOOKUP(self._callback(self._lookup)))
        self._set("forget", FORGET(self._forget))
        self._set("getattr", WITH_FILE(self._callback(self._getattr)))
        self._set("open", WITH_FILE(self._callback(self._open, own_file_info=True)))
        self._set("opendir", WITH_FILE(self._callback(self._opendir, own_file_info=True)))
        self._set("read", READ(self._callback(self._read)))
        self._set("readdir", READ(self._callback(self._readdir)))
        self._set("readdirplus", READ(self._callback(self._readdirplus)))
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
        args = Args(len(argv), (ctypes.c_char_p * len(argv))(*argv), 0)
        session = self.lib.fuse_session_new(ctypes.byref(args), ctypes.byref(self.ops), ctypes.sizeof(self.ops), None)
        if not session:
            raise SgfsError(f"cannot mount {mountpoint}: libfuse rejected the options {','.join(options)}")
        try:
            if self.lib.fuse_session_mount(session, mountpoint.encode()) != 0:
                raise SgfsError(f"cannot mount {mountpoint}: libfuse could not mount it (see its message)")
            self._loop(session)
        finally:
            self.lib.fuse_session_destroy(session)

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

    def _callback(self, handler: Callable[..., None], *, own_file_info: bool = False) -> Callable[..., None]:
        """The one place a request's answer is decided: ``handler(..., wait=False)`` answers at once when it can,
        in the loop's thread; when it raises WouldWait, ``handler`` answers on a request thread, where it may
        wait. A handed-on request takes its own copy of the ``fuse_file_info`` libfuse gave (it lives on
        libfuse's stack)."""
        answer = self._guard(handler)

        def first(req: int, *args: Any) -> None:
            try:
                handler(req, *args, wait=False)
                return
            except WouldWait:
                pass
            pool = self.loop.later
            if pool is None:  # no loop running (a test calling callbacks): answer here
                handler(req, *args)
                return
            if own_file_info and args[1]:
                args = (args[0], ctypes.pointer(FileInfo.from_buffer_copy(args[1].contents)), *args[2:])
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

    def _entry(self, attributes: Attributes) -> EntryParam:
        entry = EntryParam(ino=attributes.ino, attr_timeout=self.timeout, entry_timeout=self.timeout)
        self._fill_stat(entry.attr, attributes)
        return entry

    # -- callbacks -----------------------------------------------------------------------------------------
    def _init(self, userdata: int, conn: int) -> None:
        info = ConnInfo.from_address(conn)
        self.kernel_skips_open = bool(info.capable & FUSE_CAP_NO_OPEN_SUPPORT)
        self.kernel_skips_opendir = bool(info.capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
        if info.capable & FUSE_CAP_READDIRPLUS:
            # Always READDIRPLUS, not only for a listing's first page ("auto"): every page then carries the
            # attributes the daemon knows, so `ls -l` of a large directory needs no LOOKUP per entry.
            info.want = (info.want | FUSE_CAP_READDIRPLUS) & ~FUSE_CAP_READDIRPLUS_AUTO
        self.fs.init()

    def _destroy(self, userdata: int) -> None:
        self.fs.destroy()

    def _lookup(self, req: int, parent: int, name: bytes, *, wait: bool = True) -> None:
        attributes = self.fs.lookup(parent, name.decode("utf-8", "surrogateescape"), wait=wait)
        if attributes is None:  # a negative entry the kernel keeps for the timeout: the name never appears
            self.lib.fuse_reply_entry(req, ctypes.byref(EntryParam(ino=0, entry_timeout=self.timeout)))
        else:
            self.lib.fuse_reply_entry(req, ctypes.byref(self._entry(attributes)))

    def _forget(self, req: int, ino: int, lookups: int) -> None:
        try:
            self.fs.forget(ino, lookups)
        finally:
            self.lib.fuse_reply_none(req)

    def _getattr(self, req: int, ino: int, fi: Any, *, wait: bool = True) -> None:
        attributes = self.fs.getattr(ino, wait=wait)
        st = Stat()
        self._fill_stat(st, attributes)
        self.lib.fuse_reply_attr(req, ctypes.byref(st), self.timeout)

    def _open(self, req: int, ino: int, fi: Any, *, wait: bool = True) -> None:
        info = fi.contents
        if not self.fs.audited:
            if self.kernel_skips_open:
                raise FuseError(errno.ENOSYS)  # once: the kernel stops sending OPEN and keeps every file's pages
            info.keep_cache = 1
        else:
            if not wait:
                raise WouldWait  # checks the file (it may need synthesis) and records the open
            self.fs.open(ino, self._pid(req))
            info.keep_cache = 0  # an audited mount: the pages go at each open, so the reads come here again
        self.lib.fuse_reply_open(req, fi)

    def _opendir(self, req: int, ino: int, fi: Any, *, wait: bool = True) -> None:
        info = fi.contents
        if self.fs.cache_listings:
            if self.kernel_skips_opendir:
                raise FuseError(errno.ENOSYS)  # once: the kernel stops sending OPENDIR and keeps listings itself
            info.cache_readdir = info.keep_cache = 1  # one round trip per directory, listings kept
        else:
            if not wait:
                raise WouldWait  # checks the directory (it may build its repository)
            self.fs.opendir(ino, self._pid(req))  # no cache_readdir: every listing reaches readdir
        self.lib.fuse_reply_open(req, fi)

    def _read(self, req: int, ino: int, size: int, offset: int, fi: Any, *, wait: bool = True) -> None:
        pid = self._pid(req) if self.fs.audited else 0
        data = self.fs.read(ino, size, offset, pid, wait=wait)
        self.lib.fuse_reply_buf(req, data, len(data))

    def _readdir(self, req: int, ino: int, size: int, offset: int, fi: Any, *, wait: bool = True) -> None:
        self._list(req, ino, size, offset, plus=False, wait=wait)

    def _readdirplus(self, req: int, ino: int, size: int, offset: int, fi: Any, *, wait: bool = True) -> None:
        self._list(req, ino, size, offset, plus=True, wait=wait)

    def _list(self, req: int, ino: int, size: int, offset: int, *, plus: bool, wait: bool) -> None:
        """A listing page: empty past the listing's end, from a book when one holds it (built here if it may
        wait), else entry by entry. Without ``wait``, WouldWait when a book could be built for it or the entries
        need their repository built."""
        end = self.fs.listing_ends.get(ino)
        if end is not None and offset >= end:
            self.lib.fuse_reply_buf(req, None, 0)
            return
        books = self.books if plus else None
        if books is not None:
            page = books.page(ino, offset, size, build=wait)
            if page is not None:
                self.lib.fuse_reply_buf(req, page or None, len(page))
                return
            if not wait and books.could_build(ino):
                raise WouldWait
        header = DIRENTPLUS_HEADER if plus else DIRENT_HEADER
        pid = self._pid(req) if self.fs.audited else 0
        entries = self.fs.readdir(ino, offset, size // (header + 8) + 1, pid, plus, wait=wait)
        if not entries:  # past the end: the kernel asks once more after the last page
            self.lib.fuse_reply_buf(req, None, 0)
            return
        page = self.pack_entries(entries, offset, size, plus)
        self.lib.fuse_reply_buf(req, page, len(page))

    def pack_entries(self, entries: list[DirEntry], offset: int, size: int, plus: bool) -> bytes:
        """The entries that fit in ``size`` bytes, as the kernel reads a listing page (``pack_records``); an entry
        sent with attributes counts as a lookup (the kernel will FORGET it), so it is acquired only once it fits."""
        names = [entry.name.encode("utf-8", "surrogateescape") for entry in entries]
        used = fit = 0
        for name in names:
            used += record_length(name, plus)
            if used > size:
                break
            fit += 1
        if fit == 0:
            return b""
        entries = entries[:fit]
        inodes = self.fs.inodes
        attributes = [entry.attributes if plus else None for entry in entries]
        numbers = [
            inodes.acquire(entry.path) if found is not None else entry.ino or inodes.number(entry.path)
            for entry, found in zip(entries, attributes, strict=True)
        ]
        page, _ends = pack_records(
            names[:fit],
            numbers,
            [entry.is_dir for entry in entries],
            range(offset + 1, offset + fit + 1),
            plus=plus,
            attributes=[found is not None for found in attributes],
            sizes=[0 if found is None else found.size for found in attributes],
            nlinks=[0 if found is None else found.nlink for found in attributes],
            timeout_s=self.timeout,
            uid=self.fs.uid,
            gid=self.fs.gid,
        )
        return page

    def _statfs(self, req: int, ino: int) -> None:
        st = StatVfs()
        for field, value in self.fs.statfs().items():
            setattr(st, field, value)
        self.lib.fuse_reply_statfs(req, ctypes.byref(st))
