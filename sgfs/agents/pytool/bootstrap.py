"""The first code the Python tool's interpreter runs (as ``python -I -c <this file's text> CONFIG``).

The isolation is made before it runs (the bubblewrap sandbox of ``sgfs.agents.sandbox``, docs/agents.md);
this code only reports what the sandbox gives, as measured from inside, sets the per-process limits, joins the
call's cgroup where the parent could not put it there (the unsealed mode), then runs the code it reads from
stdin as ``__main__`` (or executes the command it was given), recording which files below the working
directory the code opens. Standard library only: its text is passed as an argument, not imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import sys
import traceback
from typing import Any

PRIVATE_FILESYSTEMS = ("tmpfs", "proc", "mqueue", "devpts")


def _capabilities_dropped() -> bool:
    """No effective, permitted or bounding capability (``/proc/self/status``)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return all(int(fields[name].strip(), 16) == 0 for name in ("CapEff", "CapPrm", "CapBnd"))
    return False


def _network_isolated() -> bool:
    """Only a loopback interface: a network namespace of its own (which also holds its abstract sockets)."""
    with contextlib.suppress(OSError):
        return {name for _, name in socket.if_nameindex()} <= {"lo"}
    return False


def _read_only(cwd: str) -> str:
    """Say "mounts" when every mount but private ones (tmpfs, proc, the device nodes of /dev) is read-only and
    the working directory's is too, else "permissions" (file modes only)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return "permissions"
    cwd_mount, cwd_read_only, writable = "", False, False
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 6 or not tail:
            continue
        point = fields[4].encode().decode("unicode_escape")
        read_only = "ro" in fields[5].split(",")
        if (cwd == point or cwd.startswith(point.rstrip("/") + "/")) and len(point) >= len(cwd_mount):
            cwd_mount, cwd_read_only = point, read_only
        private = tail[0] in PRIVATE_FILESYSTEMS or point == "/dev" or point.startswith("/dev/")
        writable |= not read_only and not private
    return "mounts" if cwd_read_only and not writable else "permissions"


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
    for procs in config.get("cgroup_procs") or []:  # the unsealed mode: join the call's cgroup ourselves
        with open(procs, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
    limit = config["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if config.get("file_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["file_bytes"], config["file_bytes"]))
    os.chdir(config["cwd"])
    status = {
        "network_isolated": _network_isolated(),
        "read_only": _read_only(os.getcwd()),
        "capabilities_dropped": _capabilities_dropped(),
    }
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
