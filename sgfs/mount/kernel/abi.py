"""Every libfuse 3 structure and function the mount passes through ctypes, defined here for libfuse 3 only.

Why its own: a binding that serves libfuse 2 and 3 (mfusepy) picks its ``fuse_file_info`` layout by the library
it finds first, libfuse **2** where both are installed (desktops often have libfuse2 for AppImages); libfuse 3
then reads ``keep_cache`` and ``cache_readdir`` at the wrong offsets and OPENDIR fails. Here libfuse 3 is loaded
by name and every layout is the one of ``fuse_lowlevel.h``/``fuse_common.h`` (3.2 and later) on Linux with
glibc, x86-64 or AArch64; ``tests/mount/kernel/test_abi.py`` compiles a C program against the installed headers
and checks every size, offset and bit position below against it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from typing import Any

from sgfs.errors import SgfsError

MACHINE = platform.machine()


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_int64), ("tv_nsec", ctypes.c_long)]


_TIMES = [("st_atimespec", Timespec), ("st_mtimespec", Timespec), ("st_ctimespec", Timespec)]

if MACHINE in ("aarch64", "arm64"):  # the generic layout of <asm-generic/stat.h>

    class Stat(ctypes.Structure):
        _fields_ = [
            ("st_dev", ctypes.c_uint64),
            ("st_ino", ctypes.c_uint64),
            ("st_mode", ctypes.c_uint32),
            ("st_nlink", ctypes.c_uint32),
            ("st_uid", ctypes.c_uint32),
            ("st_gid", ctypes.c_uint32),
            ("st_rdev", ctypes.c_uint64),
            ("__pad1", ctypes.c_uint64),
            ("st_size", ctypes.c_int64),
            ("st_blksize", ctypes.c_int32),
            ("__pad2", ctypes.c_int32),
            ("st_blocks", ctypes.c_int64),
            *_TIMES,
            ("__reserved", ctypes.c_int32 * 2),
        ]

else:  # x86-64

    class Stat(ctypes.Structure):  # type: ignore[no-redef]
        _fields_ = [
            ("st_dev", ctypes.c_uint64),
            ("st_ino", ctypes.c_uint64),
            ("st_nlink", ctypes.c_uint64),
            ("st_mode", ctypes.c_uint32),
            ("st_uid", ctypes.c_uint32),
            ("st_gid", ctypes.c_uint32),
            ("__pad0", ctypes.c_int32),
            ("st_rdev", ctypes.c_uint64),
            ("st_size", ctypes.c_int64),
            ("st_blksize", ctypes.c_int64),
            ("st_blocks", ctypes.c_int64),
            *_TIMES,
            ("__reserved", ctypes.c_int64 * 3),
        ]


class StatVfs(ctypes.Structure):
    _fields_ = [
        ("f_bsize", ctypes.c_ulong),
        ("f_frsize", ctypes.c_ulong),
        ("f_blocks", ctypes.c_uint64),
        ("f_bfree", ctypes.c_uint64),
        ("f_bavail", ctypes.c_uint64),
        ("f_files", ctypes.c_uint64),
        ("f_ffree", ctypes.c_uint64),
        ("f_favail", ctypes.c_uint64),
        ("f_fsid", ctypes.c_ulong),
        ("f_flag", ctypes.c_ulong),
        ("f_namemax", ctypes.c_ulong),
        ("__spare", ctypes.c_int * 6),
    ]


class FileInfo(ctypes.Structure):
    """``struct fuse_file_info`` of libfuse 3: the flag bits after ``flags``, least significant first."""

    _fields_ = [
        ("flags", ctypes.c_int),
        ("writepage", ctypes.c_uint, 1),
        ("direct_io", ctypes.c_uint, 1),
        ("keep_cache", ctypes.c_uint, 1),
        ("flush", ctypes.c_uint, 1),
        ("nonseekable", ctypes.c_uint, 1),
        ("flock_release", ctypes.c_uint, 1),
        ("cache_readdir", ctypes.c_uint, 1),
        ("noflush", ctypes.c_uint, 1),
        ("padding", ctypes.c_uint, 24),
        ("padding2", ctypes.c_uint, 32),
        ("fh", ctypes.c_uint64),
        ("lock_owner", ctypes.c_uint64),
        ("poll_events", ctypes.c_uint32),
    ]


class Buf(ctypes.Structure):
    """``struct fuse_buf``, with room past its 3.14 fields for the ones later versions append."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("flags", ctypes.c_int),
        ("mem", ctypes.c_void_p),
        ("fd", ctypes.c_int),
        ("pos", ctypes.c_int64),
        ("spare", ctypes.c_uint64 * 8),  # fields a later libfuse appends (zero: unused)
    ]


class Args(ctypes.Structure):
    """``struct fuse_args``."""

    _fields_ = [("argc", ctypes.c_int), ("argv", ctypes.POINTER(ctypes.c_char_p)), ("allocated", ctypes.c_int)]


class EntryParam(ctypes.Structure):
    """``struct fuse_entry_param``: what LOOKUP and READDIRPLUS answer."""

    _fields_ = [
        ("ino", ctypes.c_uint64),
        ("generation", ctypes.c_uint64),
        ("attr", Stat),
        ("attr_timeout", ctypes.c_double),
        ("entry_timeout", ctypes.c_double),
    ]


class ConnInfo(ctypes.Structure):
    """``struct fuse_conn_info``: the fields before ``reserved``, unchanged since libfuse 3.0 (it is only read
    and written through a pointer libfuse gives, never allocated here)."""

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


class Ctx(ctypes.Structure):
    """``struct fuse_ctx``: who sent a request."""

    _fields_ = [("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32), ("pid", ctypes.c_int32), ("umask", ctypes.c_uint32)]


FUSE_CAP_READDIRPLUS = 1 << 13
FUSE_CAP_READDIRPLUS_AUTO = 1 << 14
FUSE_CAP_NO_OPEN_SUPPORT = 1 << 17  # the kernel (4.20+) takes ENOSYS to OPEN as "never ask again"
FUSE_CAP_NO_OPENDIR_SUPPORT = 1 << 24  # the same for OPENDIR (5.1+)

# struct fuse_lowlevel_ops, in declaration order (libfuse 3.2 to 3.14; later versions append after lseek).
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
    """``struct fuse_lowlevel_ops``: a null entry is an operation libfuse answers ENOSYS to."""

    _fields_ = [(name, ctypes.c_void_p) for name in OPS]


req_t = ctypes.c_void_p
ino_t = ctypes.c_uint64
off_t = ctypes.c_int64
FileInfoPointer = ctypes.POINTER(FileInfo)

# The callback types of the operations the mount implements.
INIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
LOOKUP = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_char_p)
FORGET = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_uint64)
WITH_FILE = ctypes.CFUNCTYPE(None, req_t, ino_t, FileInfoPointer)  # getattr, open, opendir
# read, readdir, readdirplus: their fuse_file_info is never used, so it stays a bare address (no ctypes
# pointer object per request)
READ = ctypes.CFUNCTYPE(None, req_t, ino_t, ctypes.c_size_t, off_t, ctypes.c_void_p)
STATFS = ctypes.CFUNCTYPE(None, req_t, ino_t)

SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "fuse_pkgversion": (ctypes.c_char_p, []),
    "fuse_session_new": (ctypes.c_void_p, [ctypes.POINTER(Args), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
    "fuse_session_mount": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "fuse_session_unmount": (None, [ctypes.c_void_p]),
    "fuse_session_destroy": (None, [ctypes.c_void_p]),
    "fuse_session_exited": (ctypes.c_int, [ctypes.c_void_p]),
    "fuse_session_fd": (ctypes.c_int, [ctypes.c_void_p]),
    "fuse_session_receive_buf": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(Buf)]),
    "fuse_set_signal_handlers": (ctypes.c_int, [ctypes.c_void_p]),
    "fuse_remove_signal_handlers": (None, [ctypes.c_void_p]),
    "fuse_reply_err": (ctypes.c_int, [req_t, ctypes.c_int]),
    "fuse_reply_none": (None, [req_t]),
    "fuse_reply_entry": (ctypes.c_int, [req_t, ctypes.POINTER(EntryParam)]),
    "fuse_reply_attr": (ctypes.c_int, [req_t, ctypes.POINTER(Stat), ctypes.c_double]),
    "fuse_reply_open": (ctypes.c_int, [req_t, FileInfoPointer]),
    "fuse_reply_buf": (ctypes.c_int, [req_t, ctypes.c_void_p, ctypes.c_size_t]),
    "fuse_reply_statfs": (ctypes.c_int, [req_t, ctypes.POINTER(StatVfs)]),
    "fuse_req_ctx": (ctypes.POINTER(Ctx), [req_t]),
    "fuse_add_direntry": (
        ctypes.c_size_t,
        [req_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(Stat), off_t],
    ),
    "fuse_add_direntry_plus": (
        ctypes.c_size_t,
        [req_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(EntryParam), off_t],
    ),
}

LIBRARY = "fuse3"  # libfuse3.so.3, never libfuse.so.2


def load_libfuse() -> ctypes.CDLL:
    """libfuse 3 with every function above typed, or an SgfsError saying why it cannot be used."""
    if MACHINE not in ("x86_64", "AMD64", "aarch64", "arm64"):
        raise SgfsError(f"FUSE is unavailable: sgfs knows libfuse's structures on x86-64 and AArch64, not {MACHINE}")
    name = ctypes.util.find_library(LIBRARY)
    if name is None:
        raise SgfsError("FUSE is unavailable: libfuse3 cannot be found; install fuse3")
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise SgfsError(f"FUSE is unavailable: {name} cannot be loaded ({exc}); install fuse3") from None
    if not hasattr(lib, "fuse_session_process_buf") or not hasattr(lib, "fuse_session_loop_mt_32"):
        raise SgfsError(f"FUSE is unavailable: {name} is older than libfuse 3.2; install a newer fuse3")
    for symbol, (restype, argtypes) in SIGNATURES.items():
        function = getattr(lib, symbol)
        function.restype, function.argtypes = restype, argtypes
    return lib


def libfuse_version(lib: ctypes.CDLL) -> str:
    """The library's own version, e.g. "3.14.0"."""
    return bytes(lib.fuse_pkgversion()).decode("ascii", "replace")
