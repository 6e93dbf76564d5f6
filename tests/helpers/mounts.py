"""Real mounts for the tests: through ``sgfs mount`` in the background, or served from a thread of the test
process (which then sees every request that reaches Python); always unmounted, even when a test fails."""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sgfs.mount.control import mount_type
from sgfs.mount.operations import SgfsFilesystem, WouldWait
from tests.helpers.commands import cli, sgfs, wait_until


def require_fuse() -> None:
    problem = None
    if not os.path.exists("/dev/fuse"):
        problem = "/dev/fuse is missing"
    elif not (shutil.which("fusermount3") or shutil.which("fusermount")):
        problem = "neither fusermount3 nor fusermount is on PATH"
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"FUSE mount tests cannot run in CI: {problem} (give the job /dev/fuse and fuse3)")
    pytest.skip(f"FUSE unavailable: {problem}")


def is_mounted(mnt: Path) -> bool:
    return mount_type(str(mnt)) is not None


def daemon_pid(mnt: Path) -> int | None:
    """The pid of the ``python -m sgfs.mount.daemon`` process serving ``mnt``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sgfs.mount.daemon" in argv and str(mnt).encode() in argv:
            return int(entry.name)
    return None


def force_unmount(mnt: Path) -> None:
    """Last resort for teardown: lazy unmount, then stop whatever daemon is left."""
    if is_mounted(mnt):
        for tool in ("fusermount3", "fusermount"):
            if shutil.which(tool):
                subprocess.run([tool, "-uz", str(mnt)], capture_output=True, check=False)
                break
    pid = daemon_pid(mnt)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def mounted(mnt: Path, *options: str) -> Iterator[Path]:
    """``sgfs mount MNT OPTIONS`` in the background; always unmounted afterwards, even on failure."""
    require_fuse()
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        result = sgfs("mount", mnt, *options, timeout=60)
        assert result.returncode == 0, result.stderr
        assert is_mounted(mnt) and os.path.isdir(mnt)
        yield mnt
    finally:
        try:
            if is_mounted(mnt):
                cli("unmount", mnt)
        finally:
            force_unmount(mnt)
            wait_until(lambda: daemon_pid(mnt) is None, 5)
    assert not is_mounted(mnt)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


class CountingFilesystem(SgfsFilesystem):
    """Counts the requests that reach Python and are answered (an answer the loop's thread gives at once counts
    too; a ``wait=False`` call that hands the request on does not)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: collections.Counter[str] = collections.Counter()

    def _counted(self, kind: str, call: Callable[..., Any], *args: Any, wait: bool) -> Any:
        try:
            result = call(*args, wait=wait)
        except WouldWait:
            raise  # handed on: counted when it is answered
        except BaseException:
            self.calls[kind] += 1  # answered with an errno
            raise
        self.calls[kind] += 1
        return result

    def lookup(self, parent: int, name: str, *, wait: bool = True) -> Any:
        return self._counted("lookup", super().lookup, parent, name, wait=wait)

    def getattr(self, ino: int, *, wait: bool = True) -> Any:
        return self._counted("getattr", super().getattr, ino, wait=wait)

    def readdir(self, ino: int, offset: int, limit: int, pid: int, plus: bool = False, *, wait: bool = True) -> Any:
        return self._counted("readdir", super().readdir, ino, offset, limit, pid, plus, wait=wait)

    def read(self, ino: int, size: int, offset: int, pid: int, *, wait: bool = True) -> Any:
        return self._counted("read", super().read, ino, size, offset, pid, wait=wait)


@contextmanager
def serving(mnt: Path, fs: SgfsFilesystem) -> Iterator[Any]:
    """Serve ``fs`` at ``mnt`` from a thread of this process and yield the LowLevelMount; always unmounted."""
    from sgfs.mount.kernel.session import LowLevelMount

    require_fuse()
    mnt.mkdir()
    mount = LowLevelMount(fs, 3600)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            mount.serve(str(mnt), ["ro", "default_permissions", "fsname=sgfs", "subtype=sgfs"])
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if fs.initialized or failure:
                break
            threading.Event().wait(0.05)
        assert not failure and fs.initialized and is_mounted(mnt)
        yield mount
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
        thread.join(timeout=20)
        force_unmount(mnt)
    assert not thread.is_alive() and not is_mounted(mnt)


@contextmanager
def served(mnt: Path, fs: SgfsFilesystem) -> Iterator[Path]:
    """Serve ``fs`` at ``mnt`` from a thread of this process; always unmounted afterwards."""
    with serving(mnt, fs):
        yield mnt


def walk(root: Path) -> dict[str, int]:
    """What `ls -lR` needs: every name and every size."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            out[os.path.relpath(os.path.join(folder, name), root)] = os.stat(os.path.join(folder, name)).st_size
    return out


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[int, str, str, int]] = []

    def record(self, pid: int, kind: str, path: str, size: int) -> None:
        self.events.append((pid, kind, path, size))
