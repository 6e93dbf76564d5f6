"""Mount control, used by the command line and the evaluation harness: whether FUSE works here, what is
mounted where, starting a detached daemon for a mount point and unmounting it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from sgfs.errors import SgfsError
from sgfs.mount.options import MountOptions

FSNAME = "sgfs"
FSTYPE = "fuse.sgfs"  # what /proc/self/mountinfo shows for our mounts (fuse.<subtype>)
LIBFUSE_NOISE = ("Ignoring invalid max threads value",)  # libfuse 3.14 with some loop configurations: harmless
START_TIMEOUT_S = 30.0
UNMOUNT_TIMEOUT_S = 10.0


def fusermount_commands() -> list[list[str]]:
    """Unmount commands in order of preference, those present on PATH."""
    commands = [["fusermount3", "-u"], ["fusermount", "-u"], ["umount"]]
    return [c for c in commands if shutil.which(c[0])]


def check_fuse(device: str = "/dev/fuse", which: Callable[[str], str | None] = shutil.which) -> None:
    """Nothing, or an SgfsError saying why FUSE cannot be used here."""
    if not os.path.exists(device):
        raise SgfsError(
            f"FUSE is unavailable: {device} is missing (load the fuse kernel module; in a container, "
            "start it with --device /dev/fuse --cap-add SYS_ADMIN)"
        )
    if not (which("fusermount3") or which("fusermount")):
        raise SgfsError("FUSE is unavailable: neither fusermount3 nor fusermount is on PATH (install fuse3)")
    from sgfs.mount.kernel.abi import load_libfuse  # ctypes: only once the device and the tools are there

    load_libfuse()


def _unescape(field: str) -> str:
    """Mount table fields escape space, tab, newline and backslash as octal (\\040...)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_table() -> dict[str, str]:
    """Mount point -> filesystem type, from /proc/self/mountinfo (the last mount on a point wins)."""
    table: dict[str, str] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return table
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if len(fields) > 4 and len(fields) > sep + 1:
            table[_unescape(fields[4])] = fields[sep + 1]
    return table


def mount_type(path: str) -> str | None:
    """The filesystem type mounted exactly at ``path``, or None."""
    table = mount_table()
    for candidate in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        if candidate in table:
            return table[candidate]
    return None


def check_mount_point(path: str) -> str:
    """The absolute mount point, or an SgfsError: missing, not a directory, mounted, stale or not empty."""
    mnt = os.path.abspath(path)
    kind = mount_type(mnt)
    try:
        info = os.stat(mnt)
        if kind is not None:
            os.listdir(mnt)  # the kernel may answer stat from its cache even when the daemon is gone
    except FileNotFoundError:
        raise SgfsError(f"mount point {path} does not exist") from None
    except OSError as exc:
        if kind is not None:  # typically ENOTCONN: a FUSE mount whose daemon died
            raise SgfsError(
                f"{path} is a stale {kind} mount ({exc.strerror}): clear it with `fusermount3 -uz {mnt}`"
            ) from None
        raise SgfsError(f"cannot use mount point {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SgfsError(f"mount point {path} is not a directory")
    if kind is not None or os.path.ismount(mnt):
        what = "an sgfs mount" if kind == FSTYPE else f"a mount point ({kind or 'unknown type'})"
        raise SgfsError(f"{path} is already {what}; unmount it first (sgfs unmount {path})")
    try:
        if any(os.scandir(mnt)):
            raise SgfsError(f"mount point {path} is not empty")
    except PermissionError:
        raise SgfsError(f"cannot read mount point {path}: permission denied") from None
    return mnt


def start_daemon(mnt: str, options: MountOptions) -> int:
    """Start ``python -m sgfs.mount.daemon`` detached, serving ``options`` (``checked``) at the absolute mount
    point ``mnt``; return its pid once the mount answers."""
    args = [sys.executable, "-m", "sgfs.mount.daemon", mnt, *options.to_argv(), "--background"]
    env = dict(os.environ)
    # The daemon runs from "/" (so it pins no working directory): make sure it imports this very sgfs.
    package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds sgfs/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,  # startup errors only: the daemon drops stderr once the mount is up
            cwd="/",
            env=env,
            start_new_session=True,  # survives this shell and its Ctrl-C
            close_fds=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SgfsError(f"cannot mount {mnt}: {_daemon_message(errors)}")
            if mount_type(mnt) == FSTYPE and _answers(mnt):
                return proc.pid
            if time.monotonic() > deadline:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                if mount_type(mnt) == FSTYPE:
                    lazy_unmount(mnt)
                raise SgfsError(f"cannot mount {mnt}: the daemon did not answer in {START_TIMEOUT_S:.0f} s")
            time.sleep(0.02)


def _answers(mnt: str) -> bool:
    try:
        return os.path.isdir(mnt) and os.stat(mnt).st_ino > 0
    except OSError:
        return False


def _daemon_message(errors: IO[bytes]) -> str:
    """The daemon's own error line if it wrote one, else what libfuse or Python printed."""
    errors.seek(0)
    lines = [line.strip() for line in errors.read().decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith(LIBFUSE_NOISE)]
    ours = [line.removeprefix("sgfs: error: ") for line in lines if line.startswith("sgfs: error: ")]
    if ours:
        return ours[-1]
    return "; ".join(lines[-3:]) or "the daemon exited without a message"


def unmount(mnt: str) -> None:
    """Unmount ``mnt`` and return once it is gone; an SgfsError says why it could not be."""
    commands = fusermount_commands()
    if not commands:
        raise SgfsError("cannot unmount: none of fusermount3, fusermount, umount is on PATH")
    failures: list[str] = []
    for command in commands:
        result = subprocess.run([*command, mnt], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            break
        failures.append(" ".join(result.stderr.split()) or f"{command[0]} exited with {result.returncode}")
    else:
        hint = ""
        if any("busy" in f.lower() for f in failures):
            hint = f" (a process is still using it: close it, or detach lazily with `fusermount3 -uz {mnt}`)"
        raise SgfsError(f"cannot unmount {mnt}: {failures[0]}{hint}")
    deadline = time.monotonic() + UNMOUNT_TIMEOUT_S
    while mount_type(mnt) == FSTYPE:
        if time.monotonic() > deadline:
            raise SgfsError(f"{mnt} is still mounted {UNMOUNT_TIMEOUT_S:.0f} s after unmounting")
        time.sleep(0.02)


def lazy_unmount(mnt: str) -> None:
    """Detach ``mnt`` now, whoever still uses it (the last resort of a cleanup)."""
    for command in fusermount_commands():
        lazy = [*command, "-z", mnt] if command[0].startswith("fusermount") else [*command, "-l", mnt]
        if subprocess.run(lazy, capture_output=True, check=False).returncode == 0:
            return
