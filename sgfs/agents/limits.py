"""Limits on everything one call starts: a control group per call (docs/agents.md, "The Python tool").

A call's processes share one cgroup made before anything runs and removed after: ``pids.max`` bounds how many
exist at once (a fork bomb gets ``EAGAIN``), the memory limit bounds their *total* memory (page cache and
tmpfs files included), and the group lists every process the call left behind, whatever sessions it made,
so that all of them are killed at the end. Both cgroup versions: v1 (one directory under the ``pids`` and
the ``memory`` hierarchies) and v2 (one directory in the unified hierarchy, which needs the controllers
delegated to our own cgroup). Where neither can be made (not root, no delegation), ``create_group`` says why
and the caller falls back to per-process limits (``RLIMIT_AS``).

Each group is a sub-group of our own, named ``sgfs-call-<our pid>-<n>``; a group left behind by a process
that was killed is removed by the next one that makes a group beside it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass

CGROUP_ROOT = "/sys/fs/cgroup"
PREFIX = "sgfs-call-"
_COUNTER = itertools.count()
_STALE = re.compile(rf"^{PREFIX}(\d+)-\d+$")


@dataclass(frozen=True)
class GroupLimits:
    processes: int  # at most this many processes (and threads, on v1/v2 ``pids``) at once
    memory_bytes: int  # all the group's processes together


@dataclass
class CallGroup:
    """A made cgroup: ``directories`` are one per v1 hierarchy (pids, memory) or the single v2 one."""

    version: int
    directories: tuple[str, ...]

    def add(self, pid: int) -> None:
        """Move process ``pid`` (with its threads) into the group; its future children are born there."""
        for directory in self.directories:
            with open(os.path.join(directory, "cgroup.procs"), "w", encoding="ascii") as procs:
                procs.write(str(pid))

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(os.path.join(d, "cgroup.procs") for d in self.directories)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.directories:
            procs_file = os.path.join(directory, "cgroup.procs")
            with contextlib.suppress(OSError), open(procs_file, encoding="ascii") as procs:
                found.update(int(line) for line in procs if line.strip())
        return found

    def events(self) -> dict[str, int]:
        """Counters worth telling the caller: ``oom_kill`` (processes the memory limit killed) and
        ``pids_max`` (forks refused by the process limit)."""
        counts = {"oom_kill": 0, "pids_max": 0}
        for directory in self.directories:
            for name, key, field in (
                ("memory.events", "oom_kill", "oom_kill"),  # v2
                ("memory.oom_control", "oom_kill", "oom_kill"),  # v1 (kernel 4.13+)
                ("pids.events", "pids_max", "max"),  # v1 and v2
            ):
                path = os.path.join(directory, name)
                with contextlib.suppress(OSError, ValueError), open(path, encoding="ascii") as handle:
                    for line in handle:
                        words = line.split()
                        if len(words) == 2 and words[0] == field:
                            counts[key] = max(counts[key], int(words[1]))
        return counts

    def kill(self) -> None:
        """SIGKILL every process in the group (``cgroup.kill`` where the kernel has it)."""
        for directory in self.directories:
            with contextlib.suppress(OSError):
                _write(os.path.join(directory, "cgroup.kill"), "1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def close(self, timeout_s: float = 5.0) -> bool:
        """Kill what is left, wait until the group is empty, remove it. False if it could not be removed in
        time (its directories are then left for the next group's clean-up)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.kill()
            if not self.pids():
                break
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        removed = True
        for directory in self.directories:
            while True:
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: an exiting process not yet gone from the group
                    if time.monotonic() > deadline:
                        removed = False
                        break
                    time.sleep(0.01)
        return removed


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of every cgroup mount we can see."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                point = fields[4].encode().decode("unicode_escape")
                found.append((fields[3], point, tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """Our cgroup path per v1 controller, and under "" the v2 one (``/proc/self/cgroup``)."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    paths[controller] = parts[2]
    return paths


def _directory(root: str, point: str, path: str) -> str:
    """Where cgroup ``path`` (as /proc/self/cgroup names it) lies under a mount of hierarchy root ``root``."""
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root.rstrip("/")) :]
    return os.path.join(point, path.lstrip("/"))


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _remove_stale(parent: str) -> None:
    """Groups beside ours left by processes that are gone (killed before they could remove them)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            match = _STALE.match(name)
            if match and not os.path.exists(f"/proc/{match.group(1)}"):
                stale = CallGroup(0, (os.path.join(parent, name),))
                stale.close(timeout_s=0.5)


def _new_directory(parent: str) -> str:
    _remove_stale(parent)
    directory = os.path.join(parent, f"{PREFIX}{os.getpid()}-{next(_COUNTER)}")
    os.mkdir(directory)
    return directory


def _v1(limits: GroupLimits) -> CallGroup:
    mounts = {c: (root, point) for root, point, kind, options in _mounts() if kind == "cgroup" for c in options}
    own = _own_paths()
    made: list[str] = []
    try:
        for controller in ("pids", "memory"):
            if controller not in mounts or controller not in own:
                raise OSError(f"no cgroup v1 {controller} hierarchy")
            root, point = mounts[controller]
            made.append(_new_directory(_directory(root, point, own[controller])))
        pids, memory = made
        _write(os.path.join(pids, "pids.max"), str(limits.processes))
        _write(os.path.join(memory, "memory.limit_in_bytes"), str(limits.memory_bytes))
        with contextlib.suppress(OSError):  # no swap accounting: swap is then not limited
            _write(os.path.join(memory, "memory.memsw.limit_in_bytes"), str(limits.memory_bytes))
        return CallGroup(1, tuple(made))
    except BaseException:
        for directory in made:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        raise


def _v2(limits: GroupLimits) -> CallGroup:
    mounts = [(root, point) for root, point, kind, _ in _mounts() if kind == "cgroup2"]
    own = _own_paths()
    if not mounts or "" not in own:
        raise OSError("no cgroup v2 hierarchy")
    # The unified hierarchy at /sys/fs/cgroup (not a hybrid setup's empty /sys/fs/cgroup/unified) first.
    root, point = sorted(mounts, key=lambda mount: mount[1] != CGROUP_ROOT)[0]
    parent = _directory(root, point, own[""])
    with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as handle:
        enabled = set(handle.read().split())
    if not {"pids", "memory"} <= enabled:
        # Refused (EBUSY) where our own group holds processes: v2 lets only leaves hold them.
        _write(os.path.join(parent, "cgroup.subtree_control"), "+pids +memory")
    directory = _new_directory(parent)
    try:
        _write(os.path.join(directory, "pids.max"), str(limits.processes))
        _write(os.path.join(directory, "memory.max"), str(limits.memory_bytes))
        with contextlib.suppress(OSError):
            _write(os.path.join(directory, "memory.swap.max"), "0")
        return CallGroup(2, (directory,))
    except BaseException:
        with contextlib.suppress(OSError):
            os.rmdir(directory)
        raise


def create_group(limits: GroupLimits) -> tuple[CallGroup | None, str]:
    """A new, empty cgroup with ``limits``, or None and one line saying why none could be made."""
    reasons = []
    for make in (_v1, _v2):
        try:
            return make(limits), ""
        except (OSError, ValueError) as exc:
            reasons.append(f"{make.__name__.lstrip('_')}: {getattr(exc, 'strerror', None) or exc}")
    return None, "no cgroup could be made (" + "; ".join(reasons) + ")"


__all__ = ["CallGroup", "GroupLimits", "create_group"]
