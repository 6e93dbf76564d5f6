"""The daemon's request loop: one thread reads the kernel's requests and hands each to libfuse's dispatcher.

Why not libfuse's multithreaded loop: there, each request wakes whichever of several threads is reading the
device, and a walk of a fresh mount is thousands of small requests one after another (`ls -lR`: two listing
pages per directory). Measured on a 2-core VM, a C daemon doing no work per request walks seed 288 in ~0.04 s
on one thread and ~0.085 s on libfuse's pool (scripts/bench_fuse_floor.py). Here one thread reads, so the
requests that need no waiting (a packed listing page, a memoised size, bytes in memory, forget, statfs) are
answered where they arrive; the callbacks send the others (synthesis, disk reads, first listings) to
``RequestLoop.later``, a pool of threads, so that one slow file never holds up the rest: the concurrency of
libfuse's pool where it matters and none of its hand-offs where it does not.

Signatures follow ``fuse_lowlevel.h`` (``fuse_session_receive_buf`` / ``fuse_session_process_buf``, libfuse 3.0
and later); ``struct fuse_buf`` is given room past its 3.14 fields for the ones later versions append.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("sgfs.mount")

# Threads for the requests that wait (as many as libfuse's pool keeps by default, and a few more for the
# parallel readers of `sgfs eval`).
REQUEST_THREADS = 16


class FuseBuf(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("flags", ctypes.c_int),
        ("mem", ctypes.c_void_p),
        ("fd", ctypes.c_int),
        ("pos", ctypes.c_int64),
        ("spare", ctypes.c_uint64 * 8),  # fields a later libfuse appends (zero: unused)
    ]


def bind_loop_functions(lib: ctypes.CDLL) -> Any:
    """Type libfuse's receive/dispatch functions; returns the dispatcher, called without releasing the GIL.

    ``fuse_session_receive_buf`` blocks in read(2), so it releases the GIL like every ctypes call. The
    dispatcher only runs our callbacks (Python) and short writes of replies, so it keeps the GIL: each
    callback then needs no GIL hand-over of its own."""
    lib.fuse_session_receive_buf.restype = ctypes.c_int
    lib.fuse_session_receive_buf.argtypes = [ctypes.c_void_p, ctypes.POINTER(FuseBuf)]
    lib.fuse_session_exited.restype = ctypes.c_int
    lib.fuse_session_exited.argtypes = [ctypes.c_void_p]
    dispatcher = ctypes.PyDLL(lib._name).fuse_session_process_buf
    dispatcher.restype = None
    dispatcher.argtypes = [ctypes.c_void_p, ctypes.POINTER(FuseBuf)]
    return dispatcher


def _leave_signals_to_the_loop() -> None:
    """A request thread never takes SIGINT/SIGTERM/SIGHUP: delivered to the loop's thread, such a signal
    interrupts its read of the device, and the loop ends at once instead of at the next request."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class RequestLoop:
    """Reads requests until the session ends (unmounted, or a signal libfuse handles); ``later`` is the pool
    of threads callbacks hand waiting work to, None when no loop is running (then callbacks answer inline)."""

    def __init__(self, lib: ctypes.CDLL, threads: int = REQUEST_THREADS) -> None:
        self.lib = lib
        self.threads = threads
        self.later: ThreadPoolExecutor | None = None

    def run(self, session: int, dispatch: Any = None) -> None:
        """Serve ``session`` until it ends; ``dispatch`` stands in for libfuse's dispatcher in tests."""
        dispatch = dispatch or bind_loop_functions(self.lib)
        libc = ctypes.CDLL(None)
        libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
        buf = FuseBuf()  # libfuse allocates its memory on the first read and reuses it
        self.later = ThreadPoolExecutor(
            max_workers=self.threads, thread_name_prefix="sgfs-request", initializer=_leave_signals_to_the_loop
        )
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
                dispatch(session, ctypes.byref(buf))
        finally:
            # Every request handed on is answered (or dropped, when it had not started) before the session goes.
            later, self.later = self.later, None
            later.shutdown(wait=True, cancel_futures=True)
            libc.free(buf.mem)
