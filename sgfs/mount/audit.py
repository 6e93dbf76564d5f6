"""The evidence-access audit: an audited filesystem (a wrapper around the filesystem contract), its sink of
listing, open and read events, and the harness's reader of them.

An audited mount (``sgfs mount --audit FILE``) appends one JSON line per directory listing, file open and read
request to FILE, which lies outside the mount and is never visible through it. Each event carries the
session id and the PID namespace of the calling process. A sandboxed agent (the default of ``sgfs eval``) has
a PID namespace of its own that every process it starts shares, whatever sessions they make, so the namespace
names the question; an unsandboxed one (``--no-sandbox``) is named by its session, which a child that calls
``setsid`` leaves.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sgfs.mount.operations import DirEntry, SgfsFilesystem
from sgfs.store.source import MountSource


class EventSink(Protocol):
    def record(self, pid: int, op: str, path: str, size: int) -> None: ...


class AuditSink:
    """Append-only event writer used by the daemon; one ``write`` per event on an O_APPEND descriptor."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def open(cls, path: str) -> AuditSink:
        return cls(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600))

    def record(self, pid: int, op: str, path: str, size: int) -> None:
        try:
            sid: int | None = os.getsid(pid)
        except OSError:  # the caller is already gone (or pid 0 for kernel-initiated requests)
            sid = None
        try:
            pidns: int | None = os.stat(f"/proc/{pid}/ns/pid").st_ino
        except OSError:
            pidns = None
        event = {"sid": sid, "pidns": pidns, "pid": pid, "op": op, "path": path, "bytes": size}
        line = json.dumps(event, ensure_ascii=False)
        with contextlib.suppress(OSError):  # a full or removed sink must not break the filesystem
            os.write(self._fd, (line + "\n").encode("utf-8"))


class AuditedFilesystem(SgfsFilesystem):
    """The filesystem contract with every listing (from its start), open and read recorded in ``sink`` with the
    caller's pid; the kernel keeps no listings and no pages across opens, so that each reaches the daemon."""

    audited = True

    def __init__(self, source: MountSource, sink: EventSink, on_init: Callable[[], None] | None = None) -> None:
        super().__init__(source, on_init, cache_listings=False)
        self.sink = sink

    def readdir(
        self, ino: int, offset: int, limit: int, pid: int, plus: bool = False, *, wait: bool = True
    ) -> list[DirEntry]:
        entries = super().readdir(ino, offset, limit, pid, plus, wait=wait)
        if offset == 0:
            self.sink.record(pid, "readdir", self.inodes.path(ino), 0)
        return entries

    def open(self, ino: int, pid: int) -> None:
        super().open(ino, pid)
        self.sink.record(pid, "open", self.inodes.path(ino), 0)

    def read(self, ino: int, size: int, offset: int, pid: int, *, wait: bool = True) -> bytes:
        data = super().read(ino, size, offset, pid, wait=wait)
        # Recorded before the reply: once the reader has its bytes, the event is in the sink.
        self.sink.record(pid, "read", self.inodes.path(ino), len(data))
        return data


@dataclass
class Access:
    """What one session did on the mount: files opened with the bytes read from each, directories listed (mount
    paths)."""

    bytes_read: dict[str, int] = field(default_factory=dict)
    listed: list[str] = field(default_factory=list)


Origin = tuple[str, int]  # ("sid", session id) or ("pidns", PID namespace inode)


class AuditReader:
    """Follows an audit file from a given offset and buckets its events by session id and by PID namespace;
    thread-safe."""

    def __init__(self, path: str, start_at_end: bool = True) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._offset = os.path.getsize(path) if start_at_end and os.path.exists(path) else 0
        self._pending = b""
        self._origins: dict[Origin, Access] = {}

    def _collect(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        data = self._pending + data
        complete, _, self._pending = data.rpartition(b"\n")
        for line in complete.split(b"\n") if complete else ():
            try:
                event: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            path = str(event.get("path", ""))
            for kind in ("sid", "pidns"):
                value = event.get(kind)
                if not isinstance(value, int):
                    continue
                access = self._origins.setdefault((kind, value), Access())
                if event.get("op") in ("open", "read"):
                    access.bytes_read[path] = access.bytes_read.get(path, 0) + int(event.get("bytes", 0))
                elif event.get("op") == "readdir" and path not in access.listed:
                    access.listed.append(path)

    def take(self, origin: Origin) -> Access:
        """Everything done so far by the processes of ``origin`` (a session, or a PID namespace), forgotten
        here; call once they have exited (and, for a namespace, while it is still held open)."""
        with self._lock:
            self._collect()
            return self._origins.pop(origin, Access())


def evidence_fields(access: Access | None, seed: int, evidence: list[str]) -> dict[str, Any]:
    """The audit keys of a result record (docs/eval.md); all null when the run was not audited."""
    if access is None:
        return {
            "files_read": None,
            "bytes_read": None,
            "dirs_listed": None,
            "reads_outside": None,
            "evidence_read": None,
            "evidence_recall": None,
        }
    prefix = f"/{seed}/"
    inside = {p[len(prefix) :]: n for p, n in access.bytes_read.items() if p.startswith(prefix)}
    outside = sorted(p for p in access.bytes_read if not p.startswith(prefix))
    evidence_read = [p for p in evidence if p in inside]
    root = f"/{seed}"
    listed = ["." if p == root else p[len(prefix) :] if p.startswith(prefix) else p for p in access.listed]
    return {
        "files_read": sorted(inside),
        "bytes_read": sum(access.bytes_read.values()),
        "dirs_listed": listed,
        "reads_outside": outside,
        "evidence_read": evidence_read,
        "evidence_recall": len(evidence_read) / len(evidence) if evidence else None,
    }
