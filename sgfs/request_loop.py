"""The daemon's request loop: one thread reads the kernel's requests and hands each to libfuse's dispatcher.

Why not libfuse's multithreaded loop: there, each request wakes whichever of several threads is reading the
device, and a walk of a fresh mount is thousands of small requests one after another (`ls -lR`: two listing
pages per directory). Measured on a 2-core VM, a C daemon doing no work per request walks seed 288 in ~0.04 s
on one thread and ~0.085 s on libfuse's pool (scripts/bench_fuse_floor.py). Here one thread reads, so the
requests that need no waiting (a packed listing page, a memoised size, bytes in memory, forget, statfs) are
answered where they arrive; the callbacks send the others (synthesis, disk reads, first listings) to
``RequestLoop.later``, a pool of threads, so that one slow file never holds up the rest: the concurrency of
libfuse's pool where it matters and none of its hand-offs where it does not.

The loop also answers the kernel's INIT with FUSE_PARALLEL_DIROPS whenever the kernel offers it. libfuse
documents that capability as on by default, but up to at least 3.14 (Debian 12) its INIT reply never carries
it, and the kernel then serialises LOOKUP and READDIR per directory: while one seed's repository is built for
its first lookup, a lookup of any other seed in the mount's root waits for it.

Once INIT is answered, a ``Reader`` (``reader_for``; sgfs.fast_pages) may read the device in libfuse's place:
it answers some requests itself, without entering Python (listing pages of books, in C), and returns every
other one, which the loop dispatches through libfuse as before.

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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

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
# What libfuse (3.x) reads the device with: room for the largest write the kernel may send and its header.
# A reader of its own needs no less, or the kernel refuses the read (EINVAL, the request left queued).
READ_BUFFER_BYTES = 256 * os.sysconf("SC_PAGESIZE") + 4096
DRAIN = -100000  # a reader's "count my log first" (sgfs.fast_pages)


class Reader(Protocol):
    """Reads the device in the loop's place and answers some requests itself (sgfs.fast_pages.PageReader)."""

    def settle(self) -> None: ...

    def receive(self, fd: int, buffer: Any, size: int) -> int: ...

    def close(self) -> None: ...


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
    lib.fuse_session_fd.restype = ctypes.c_int
    lib.fuse_session_fd.argtypes = [ctypes.c_void_p]
    dispatcher = ctypes.PyDLL(lib._name).fuse_session_process_buf
    dispatcher.restype = None
    dispatcher.argtypes = [ctypes.c_void_p, ctypes.POINTER(FuseBuf)]
    return dispatcher


def init_request_flags(buf: FuseBuf) -> int | None:
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
    of threads callbacks hand waiting work to, None when no loop is running (then callbacks answer inline)."""

    def __init__(
        self,
        lib: ctypes.CDLL,
        threads: int = REQUEST_THREADS,
        reader_for: Callable[[int], Reader | None] | None = None,
    ) -> None:
        self.lib = lib
        self.threads = threads
        self.later: ThreadPoolExecutor | None = None
        # Called once INIT is answered, with the session: a reader that answers some requests without Python.
        self.reader_for = reader_for

    def run(self, session: int, dispatch: Any = None) -> None:
        """Serve ``session`` until it ends; ``dispatch`` stands in for libfuse's dispatcher in tests."""
        dispatch = dispatch or bind_loop_functions(self.lib)
        libc = ctypes.CDLL(None)
        libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
        buf = FuseBuf()  # libfuse allocates its memory on the first read and reuses it
        self.later = ThreadPoolExecutor(
            max_workers=self.threads, thread_name_prefix="sgfs-request", initializer=_leave_signals_to_the_loop
        )
        initialised = False
        reader: Reader | None = None
        own = FuseBuf()  # what a reader's requests are dispatched from
        memory: Any = None
        fd = -1
        try:
            # Checked before each read: a signal that came while a request was being answered ends the loop here.
            while not self.lib.fuse_session_exited(session):
                if reader is None:
                    received = self.lib.fuse_session_receive_buf(session, ctypes.byref(buf))
                    request = buf
                else:
                    received = reader.receive(fd, memory, len(memory))
                    reader.settle()  # lookups it handed the kernel are counted before the next dispatch
                    if received == DRAIN:
                        continue
                    if received == -errno.EINVAL:  # the kernel wants a larger buffer: read through libfuse
                        log.warning("the kernel refused the request reader's buffer: libfuse reads instead")
                        reader.close()
                        reader = None
                        continue
                    own.size = max(received, 0)
                    request = own
                if received == -errno.EINTR:  # a signal: libfuse's handler marked the session exited, or not ours
                    continue
                if received <= 0:  # 0: unmounted, or exited by a signal
                    if received < 0:
                        log.error("reading the FUSE device failed: %s", os.strerror(-received))
                    break
                if initialised:
                    dispatch(session, ctypes.byref(request))
                    continue
                initialised = True  # INIT comes first: later requests are dispatched as they are
                offered = init_request_flags(buf)
                if offered is None:
                    dispatch(session, ctypes.byref(buf))
                else:
                    self._init(session, buf, dispatch, offered)
                reader = self._reader(session)
                if reader is not None:
                    fd = self.lib.fuse_session_fd(session)
                    memory = ctypes.create_string_buffer(READ_BUFFER_BYTES)
                    own.mem = ctypes.addressof(memory)
                    reader.settle()
        finally:
            if reader is not None:
                reader.close()
            # Every request handed on is answered (or dropped, when it had not started) before the session goes.
            later, self.later = self.later, None
            later.shutdown(wait=True, cancel_futures=True)
            libc.free(buf.mem)

    def _reader(self, session: int) -> Reader | None:
        """The reader ``reader_for`` gives; None (libfuse reads) when there is none or it cannot be made."""
        if self.reader_for is None:
            return None
        try:
            return self.reader_for(session)
        except Exception:  # the loop reads through libfuse, as without a reader
            log.warning("no request reader: libfuse reads every request", exc_info=True)
            return None

    def _init(self, session: int, buf: FuseBuf, dispatch: Any, offered: int) -> None:
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
