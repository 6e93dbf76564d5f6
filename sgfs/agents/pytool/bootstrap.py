"""The first code the sandboxed interpreter runs (as ``python -I -c <this file's text> CONFIG``).

It isolates itself where the kernel lets it (new network and mount namespaces, every mount read-only but a
size-limited private scratch directory, the ``TMPDIR`` the parent made, then every capability dropped, so
that even root can neither undo the mounts nor bypass file modes), limits its address space, reports what
it achieved on a status pipe, then runs the code it reads from stdin as ``__main__`` (or executes the command
it was given). Standard library only: its text is passed as an argument, not imported.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import sys
import traceback
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
# statvfs flag -> mount flag that a read-only remount must keep (the kernel refuses to drop locked ones)
KEPT_FLAGS = ((2, 2), (4, 4), (8, 8), (1024, 1024), (2048, 2048), (4096, 1 << 21))
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
CAPABILITY_VERSION_3 = 0x20080522
LAST_CAPABILITY = 63


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        # field 5 is the mount point, with spaces and the like written as octal escapes
        return [line.split()[4].encode().decode("unicode_escape") for line in handle]


def _read_only_mounts(libc: Any, config: dict[str, Any], status: dict[str, Any]) -> None:
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return
    failed = []
    for point in _mount_points():
        try:
            flags = os.statvfs(point).f_flag
        except OSError:
            continue
        kept = sum(mount_flag for statvfs_flag, mount_flag in KEPT_FLAGS if flags & statvfs_flag)
        if libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None) != 0:
            failed.append(point)
    options = f"size={config['scratch_mb']}m,mode=1777".encode()
    if libc.mount(b"tmpfs", config["scratch_dir"].encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0:
        status["scratch"] = "tmpfs"
    status["read_only"] = "partial" if failed else "mounts"
    status["writable_mounts"] = failed


def _drop_capabilities(libc: Any, status: dict[str, Any]) -> None:
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for capability in range(LAST_CAPABILITY + 1):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # fails past the kernel's last one: harmless
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    status["capabilities_dropped"] = libc.capset(ctypes.byref(header), data) == 0


def _isolate(config: dict[str, Any], status: dict[str, Any]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    flags = CLONE_NEWNET | CLONE_NEWNS
    if libc.unshare(flags) != 0 and libc.unshare(flags | CLONE_NEWUSER) != 0:
        return
    status["network_isolated"] = True
    _read_only_mounts(libc, config, status)
    _drop_capabilities(libc, status)


def _record_opens(fd: int, root: str) -> None:
    """Report each file below ``root`` that the code opens for reading, once, as a line on ``fd``: Python's
    "open" audit event, which every open through Python (builtins, io, os.open, pandas, zipfile) raises."""
    seen: set[str] = set()
    prefix = root.rstrip("/") + "/"

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event != "open" or not args or not isinstance(args[0], (str, bytes)):
            return
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 else 0
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & 3):
            return
        path = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(args[0])))
        if path.startswith(prefix) and path not in seen and os.path.isfile(path):
            seen.add(path)
            with contextlib.suppress(OSError):
                os.write(fd, (path[len(prefix) :] + "\n").encode("utf-8", "surrogateescape"))

    sys.addaudithook(hook)


def main() -> None:
    config = json.loads(sys.argv[1])
    status: dict[str, Any] = {
        "network_isolated": False,
        "read_only": "permissions",
        "scratch": None,
        "writable_mounts": [],
        "capabilities_dropped": False,
    }
    if config["isolate"] and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            _isolate(config, status)
    limit = config["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(config["cwd"])
    with os.fdopen(config["status_fd"], "w") as report:
        report.write(json.dumps(status))
    code = "" if config.get("argv") else sys.stdin.read()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if config.get("argv"):  # a command (the shell tool) instead of Python code: same limits, same isolation
        os.close(config["audit_fd"])
        sys.stdout.flush()
        os.execvp(config["argv"][0], config["argv"])
    _record_opens(config["audit_fd"], os.path.realpath(config["cwd"]))
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the interpreter's stdin for the rest of the run
    sys.argv = ["-c"]
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "<code>", "exec"), namespace)  # the sandbox's purpose: run the model's code
    except SystemExit:
        raise
    except BaseException as exc:
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        sys.stderr.flush()
        os._exit(1)


main()
