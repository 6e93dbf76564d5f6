"""Repositories written to local directories for the Python tool's working directory (no FUSE needed).

Files are written once per seed and process, with modes 0444 / 0555; the sandbox makes them read-only for
root too (a read-only mount namespace) where the kernel allows it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from sgfs.store.source import MountSource


def materialise(source: MountSource, seed: int, target: Path) -> Path:
    """Write repository ``seed`` under ``target`` (created, must not exist) through ``source``: the bytes of
    ``sgfs cat``. Directories are made read-only once filled."""
    target.mkdir(parents=True)
    directories: list[Path] = [target]
    pending = [(f"/{seed}", target)]
    while pending:
        mount_path, local = pending.pop()
        for name, is_dir in source.listdir(mount_path):
            child_mount, child_local = f"{mount_path}/{name}", local / name
            if is_dir:
                child_local.mkdir()
                directories.append(child_local)
                pending.append((child_mount, child_local))
            else:
                size = source.stat(child_mount).size
                child_local.write_bytes(source.read(child_mount, size, 0))
                child_local.chmod(0o444)
    for directory in reversed(directories):
        directory.chmod(0o555)
    return target


def _remove(path: Path) -> None:
    """Remove a tree whose directories are read-only (modes block unlinking for non-root users)."""
    for directory in [path, *(p for p in path.rglob("*") if p.is_dir())]:
        directory.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


class Workspaces:
    """One local copy per seed for the life of the process (or until ``close``); thread-safe."""

    def __init__(self, source: MountSource | None = None) -> None:
        self.source = source or MountSource([])
        self._lock = threading.Lock()
        self._root: Path | None = None
        self._seeds: dict[int, Path] = {}
        self._seed_locks: dict[int, threading.Lock] = {}

    def path(self, seed: int) -> Path:
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="sgfs-repos-"))
                self._root.chmod(0o755)
                atexit.register(self.close)
            known = self._seeds.get(seed)
            seed_lock = self._seed_locks.setdefault(seed, threading.Lock())
            root = self._root
        if known is not None:
            return known
        with seed_lock:
            with self._lock:
                known = self._seeds.get(seed)
            if known is not None:
                return known
            made = materialise(self.source, seed, root / str(seed))
            with self._lock:
                self._seeds[seed] = made
            return made

    def close(self) -> None:
        with self._lock:
            root, self._root = self._root, None
            self._seeds.clear()
        if root is not None:
            _remove(root)
