"""The mount a run uses: a private, audited one started and always stopped by the harness, or the user's."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from sgfs.errors import SgfsError
from sgfs.mount.control import FSTYPE, check_fuse, lazy_unmount, mount_type, start_daemon, unmount
from sgfs.mount.options import MountOptions


@dataclass(frozen=True)
class RunMount:
    path: str
    audit_file: str | None  # None: the mount records nothing, evidence fields are null


@contextlib.contextmanager
def private_mount(
    seeds: list[int], key_file: str | None = None, counterfactual: bool = False, mess: int = 0
) -> Iterator[RunMount]:
    """An audited mount on a fresh temporary directory, unmounted and removed whatever happens."""
    check_fuse()
    base = tempfile.mkdtemp(prefix="sgfs-eval-")
    mnt = os.path.join(base, "mnt")
    audit = os.path.join(base, "audit.jsonl")  # beside the mount point, never under it
    os.mkdir(mnt)
    pid: int | None = None
    try:
        options = MountOptions(
            seeds=tuple(seeds[:10_000]),
            audit_file=audit,
            exit_with=os.getpid(),
            key_file=key_file,
            counterfactual=counterfactual,
            mess=mess,
        )
        pid = start_daemon(mnt, options.checked(mnt))
        yield RunMount(mnt, audit)
    finally:
        # SIGINT/SIGTERM while cleaning up must not leave a stale mount: hold them until done.
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            if mount_type(mnt) == FSTYPE:
                try:
                    unmount(mnt)
                except SgfsError:
                    lazy_unmount(mnt)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 0)
                    _wait_gone(pid)
            shutil.rmtree(base, ignore_errors=True)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _wait_gone(pid: int) -> None:
    """The daemon exits once unmounted; stop it if it lingers (it is not our child: poll /proc)."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rpartition(")")[2].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def user_mount(path: str, audit_file: str | None) -> RunMount:
    mnt = os.path.abspath(path)
    kind = mount_type(mnt)
    if kind != FSTYPE:
        raise SgfsError(f"--mount {path} is not a running sgfs mount" + (f" (it is a {kind} mount)" if kind else ""))
    if audit_file is not None:
        audit_file = os.path.abspath(audit_file)
        if not os.path.isfile(audit_file):
            raise SgfsError(f"--audit {audit_file} does not exist (give the file passed to `sgfs mount --audit`)")
    return RunMount(mnt, audit_file)
