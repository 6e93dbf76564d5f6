"""The daemon's request loop: one thread reads the kernel's requests and hands each to libfuse's dispatcher.

Why not libfuse's multithreaded loop: there, each request wakes whichever of several threads is reading the
device, and a walk of a fresh mount is thousands of small requests one after another (`ls -lR`: two listing
pages per directory); a daemon doing no work per request walks a tree faster on one thread than on libfuse's
pool (scripts/bench_fuse_floor.py; figures in docs/performance.md). Here one thread reads, so the
requests that need no waiting (a packed listing page, a memoised size, bytes in memory, forget, statfs) are
answered where they arrive; the callbacks send the others (synthesis, disk reads, first listings) to
``RequestLoop.later``, a pool of threads, so that one slow file never holds up the rest: the concurrency of
libfuse's pool where it matters and none of its hand-offs where it does not.

Where libfuse lacks the fix (before 3.17.1, which copies the flag itself), the loop also answers the kernel's
INIT with FUSE_PARALLEL_DIROPS whenever the kernel offers it. libfuse documents that capability as on by
default, but its INIT reply never carried it before that release, and the kernel then serialises LOOKUP and
READDIR per directory: while one seed's repository is built for its first lookup, a lookup of any other seed in
the mount's root waits for it. docs/design/kernel.md says more.

Signatures follow ``fuse_lowlevel.h`` (``fuse_session_receive_buf`` / ``fuse_session_process_buf``, libfuse 3.0
and later); ``struct fuse_buf`` is given room past its 3.14 fields for the ones later versions append.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import signal
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sgfs.mount.kernel.abi import Buf

log = logging.getLogger("sgfs.mount")

# Threads for the requests that wait (as many as libfuse's pool keeps by default, and a few more for the
# parallel readers of `sgfs eval`).
REQUEST_THREADS = 16

# From the kernel's <linux/fuse.h>: the INIT opcode, the flag, and where the flags sit in the request (after the
# 40-byte fuse_in_header: major, minor, max_readahead, flags) and in the reply (after the 16-byte
# fuse_out_header: major, minor, max_readahead, flags).
FUSE_INIT = 26
FUSE_PARALLEL_DIROPS = 1 << 18
IN_HEADER, OUT_HEADER = 40, 16
INIT_FLAGS_AT = 12
FUSE_BUF_IS_FD = 1 << 1
# The first libfuse whose INIT reply carries FUSE_PARALLEL_DIROPS by itself.
LIBFUSE_SENDS_PARALLEL_DIROPS = (3, 17, 1)


def bind_dispatcher(lib: ctypes.CDLL) -> Any:
    """libfuse's dispatcher (``fuse_session_process_buf``), called without releasing the GIL.

    ``fuse_session_receive_buf`` blocks in read(2), so it releases the GIL like every ctypes call. The
    dispatcher only runs our callbacks (Python) and short writes of replies, so it keeps the GIL: each
    callback then needs no GIL hand-over of its own."""
    dispatcher = ctypes.PyDLL(lib._name).fuse_session_process_buf
    dispatcher.restype = None
    dispatcher.argtypes = [ctypes.c_void_p, ctypes.POINTER(Buf)]
    return dispatcher


def needs_init_rewrite(version: str) -> bool:
    """Whether libfuse ``version`` ("3.14.0", from ``fuse_pkgversion``) leaves FUSE_PARALLEL_DIROPS out of its INIT
    reply; an unreadable version is taken as an old one (the rewrite is harmless where it is not needed)."""
    try:
        parts = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        return True
    return parts < LIBFUSE_SENDS_PARALLEL_DIROPS


def init_request_flags(buf: Buf) -> int | None:
    """The flags the kernel offers when ``buf`` (in memory) holds an INIT request; None for any other request."""
    if not buf.mem or buf.flags & FUSE_BUF_IS_FD or buf.size < IN_HEADER + INIT_FLAGS_AT + 4:
        return None
    head = ctypes.string_at(buf.mem, IN_HEADER + INIT_FLAGS_AT + 4)
    if struct.unpack_from("<I", head, 4)[0] != FUSE_INIT:
        return None
    return int(struct.unpack_from("<I", head, IN_HEADER + INIT_FLAGS_AT)[0])


def with_parallel_dirops(reply: bytes, offered: int) -> bytes:
    """The INIT ``reply`` with FUSE_PARALLEL_DIROPS set when the kernel ``offered`` it; an error reply, or
    one whose length does not match its header, is left as it is."""
    if not offered & FUSE_PARALLEL_DIROPS or len(reply) < OUT_HEADER + INIT_FLAGS_AT + 4:
        return reply
    length, error = struct.unpack_from("<Ii", reply)
    if error != 0 or length != len(reply):
        return reply
    at = OUT_HEADER + INIT_FLAGS_AT
    flags = struct.unpack_from("<I", reply, at)[0] | FUSE_PARALLEL_DIROPS
    return reply[:at] + struct.pack("<I", flags) + reply[at + 4 :]


def writes_to(fd: int, call: Any) -> bytes:
    """Run ``call`` with descriptor ``fd`` pointing at a pipe, and return what it wrote there; ``fd`` is
    restored (close-on-exec flag included) whatever happens. For a reply of a few bytes (a pipe holds 64 KiB)."""
    read_end, write_end = os.pipe()
    saved = os.dup(fd)
    fd_flags = fcntl.fcntl(fd, fcntl.F_GETFD)
    try:
        os.dup2(write_end, fd)
        try:
            call()
        finally:
            os.dup2(saved, fd)
            fcntl.fcntl(fd, fcntl.F_SETFD, fd_flags)
        os.close(write_end)
        write_end = -1
        chunks = []
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        for descriptor in (read_end, write_end, saved):
            if descriptor >= 0:
                os.close(descriptor)


def _leave_signals_to_the_loop() -> None:
    """A request thread never takes SIGINT/SIGTERM/SIGHUP: delivered to the loop's thread, such a signal
    interrupts its read of the device, and the loop ends at once instead of at the next request."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class RequestLoop:
    """Reads requests until the session ends (unmounted, or a signal libfuse handles); ``later`` is the pool
    of threads callbacks hand waiting work to, None when no loop is running (then callbacks answer inline).
    ``rewrite_init``: add FUSE_PARALLEL_DIROPS to libfuse's INIT reply (``needs_init_rewrite``)."""

    def __init__(self, lib: ctypes.CDLL, threads: int = REQUEST_THREADS, *, rewrite_init: bool = True) -> None:
        self.lib = lib
        self.threads = threads
        self.rewrite_init = rewrite_init
        self.later: ThreadPoolExecutor | None = None

    def run(self, session: int, dispatch: Any = None) -> None:
        """Serve ``session`` until it ends; ``dispatch`` stands in for libfuse's dispatcher in tests."""
        dispatch = dispatch or bind_dispatcher(self.lib)
        libc = ctypes.CDLL(None)
        libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
        buf = Buf()  # libfuse allocates its memory on the first read and reuses it
        self.later = ThreadPoolExecutor(
            max_workers=self.threads, thread_name_prefix="sgfs-request", initializer=_leave_signals_to_the_loop
        )
        initialised = False
        try:
            # Checked before each read: a signal that came while a request was being answered ends the loop here.
            while not self.lib.fuse_session_exited(session):
                received = self.lib.fuse_session_receive_buf(session, ctypes.byref(buf))
                if received == -errno.EINTR:  # a signal: libfuse's handler marked the session exited, or not ours
                    continue
                if received <= 0:  # 0: unmounted, or exited by a signal
                    if received < 0:
                        log.error("reading the FUSE device failed: %s", os.strerror(-received))
                    break
                offered = None if initialised or not self.rewrite_init else init_request_flags(buf)
                initialised = True  # INIT comes first: later requests are dispatched as they are
                if offered is None:
                    dispatch(session, ctypes.byref(buf))
                else:
                    self._init(session, buf, dispatch, offered)
        finally:
            # Every request handed on is answered (or dropped, when it had not started) before the session goes.
            later, self.later = self.later, None
            later.shutdown(wait=True, cancel_futures=True)
            libc.free(buf.mem)

    def _init(self, session: int, buf: Buf, dispatch: Any, offered: int) -> None:
        """Let libfuse answer INIT (it calls the init callback and writes its reply), catch that reply on its
        way to the device and send it on with FUSE_PARALLEL_DIROPS. Nothing else reads or writes the device
        yet: INIT is the first request, and no request has been handed on."""
        fd = self.lib.fuse_session_fd(session)
        reply = writes_to(fd, lambda: dispatch(session, ctypes.byref(buf)))
        answer = with_parallel_dirops(reply, offered)
        if answer:  # libfuse always answers INIT; a zero-length write would be refused by the device
            os.write(fd, answer)
        allowed = "allows" if offered & FUSE_PARALLEL_DIROPS else "does not offer"
        log.debug("INIT answered: the kernel %s parallel lookups and listings in one directory", allowed)
