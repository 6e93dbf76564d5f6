"""Inode numbers of the mount: a deterministic number per path, and the kernel's lookup counts.

FUSE's low-level protocol names files by inode number: the kernel learns a number from a lookup (or a READDIRPLUS
entry with attributes), uses it in every later request, and says with FORGET how many of those lookups it has
dropped. A number is a 63-bit xxhash of the path, so that the ``d_ino`` of a listing, the ``st_ino`` of a stat
and the numbers of another mount of the same seeds all agree; an entry is kept while the kernel holds a lookup
on it, so memory follows the kernel's inode cache rather than everything ever listed.
"""

from __future__ import annotations

import threading

import xxhash

ROOT_INO = 1  # FUSE_ROOT_ID: the kernel's number for the mount's root, never forgotten
_INO_MASK = (1 << 63) - 1  # positive as a signed 64-bit ino_t too


def path_ino(path: str) -> int:
    """The inode number a path gets when nothing else holds it (2 or more: 0 is invalid, 1 is the root)."""
    if path == "/":
        return ROOT_INO
    ino = xxhash.xxh64_intdigest(path.encode("utf-8", "surrogateescape")) & _INO_MASK
    return ino if ino > ROOT_INO else ino + 2


class InodeTable:
    """Path <-> inode number for the entries the kernel holds, with their lookup counts. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {ROOT_INO: "/"}
        self._counts: dict[int, int] = {}
        self._moved: dict[str, int] = {}  # paths whose hashed number another path held first (never in practice)

    def __len__(self) -> int:
        """Entries the kernel holds, the root included."""
        with self._lock:
            return len(self._paths)

    def path(self, ino: int) -> str:
        """The path of a number the kernel holds; KeyError for one it never got or has forgotten."""
        with self._lock:
            return self._paths[ino]

    def number(self, path: str) -> int:
        """The number ``path`` has or would get, without counting a lookup (the ``d_ino`` of a listing)."""
        with self._lock:
            return self._moved.get(path) or path_ino(path)

    def acquire(self, path: str) -> int:
        """Count one lookup of ``path`` by the kernel and return its number."""
        if path == "/":
            return ROOT_INO
        with self._lock:
            ino = self._moved.get(path) or path_ino(path)
            held = self._paths.get(ino)
            while held is not None and held != path:  # a 63-bit collision: probe for a free number
                ino = ino + 1 if ino < _INO_MASK else 2
                held = self._paths.get(ino)
                self._moved[path] = ino
            self._paths[ino] = path
            self._counts[ino] = self._counts.get(ino, 0) + 1
            return ino

    @property
    def collided(self) -> bool:
        """Whether some path holds a number other than its hash (a 63-bit collision: never in practice)."""
        return bool(self._moved)

    def acquire_hashed(self, held: list[tuple[str, int]]) -> bool:
        """Count one lookup of each (path, number), numbers as ``path_ino`` gives them; False, with nothing
        counted, when one of those numbers is another path's (then ``acquire`` each path instead)."""
        with self._lock:
            paths = self._paths
            for path, ino in held:
                holder = paths.get(ino)
                if holder is not None and holder != path:
                    return False
            counts = self._counts
            for path, ino in held:
                paths[ino] = path
                counts[ino] = counts.get(ino, 0) + 1
        return True

    def forget(self, ino: int, lookups: int) -> None:
        """The kernel dropped ``lookups`` of its lookups of ``ino``; at zero the entry goes."""
        if ino == ROOT_INO:
            return
        with self._lock:
            left = self._counts.get(ino, 0) - lookups
            if left > 0:
                self._counts[ino] = left
                return
            self._counts.pop(ino, None)
            path = self._paths.pop(ino, None)
            if path is not None:
                self._moved.pop(path, None)
