"""Run untrusted Python in a separate process with the paper's limits (docs/agents.md, "The Python tool").

Limits: wall clock (the whole process group is killed), address space (``RLIMIT_AS``), output (the first and
last halves of a byte budget are kept). Isolation, where the kernel allows it (Linux, as root or with user
namespaces): no network (a new, empty network namespace: not even loopback), every mount read-only in a
private mount namespace, a size-limited private scratch directory as ``TMPDIR``. The child gets a fixed,
minimal environment (nothing from the caller's, so no credentials) and runs with ``-I`` (no user site, no
``PYTHON*`` variables, the working directory not on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

BOOTSTRAP = (Path(__file__).parent / "bootstrap.py").read_text("utf-8")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 512
DEFAULT_OUTPUT_BYTES = 16 * 1024
DEFAULT_SCRATCH_MB = 64
_READ_CHUNK = 65536


@dataclass(frozen=True)
class PythonLimits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_BYTES  # stdout and stderr together, as one stream
    scratch_mb: int = DEFAULT_SCRATCH_MB
    isolate: bool = True  # try the namespaces; False runs with the limits only


@dataclass(frozen=True)
class PythonResult:
    output: str
    exit_code: int | None  # None when killed at the time limit
    timed_out: bool
    truncated: bool
    output_bytes: int  # total bytes written, kept or not
    time_s: float
    network_isolated: bool
    read_only: str  # "mounts": every mount read-only; "partial"; "permissions": file modes only
    capabilities_dropped: bool  # root in the sandbox holds no capability (file modes bind it, no remount)
    files_opened: list[str] = field(default_factory=list)  # below cwd, opened for reading by Python code
    notes: list[str] = field(default_factory=list)

    def for_model(self) -> str:
        """The output, then one bracketed line per event the model should know about."""
        lines = [self.output.rstrip("\n")] if self.output else []
        lines += [f"[{note}]" for note in self.notes]
        return "\n".join(lines) if lines else "[no output]"


def child_environment(scratch: str) -> dict[str, str]:
    """What the child sees: a fixed set, one thread per numeric library so the memory limit holds."""
    return {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.defpath.lstrip(os.pathsep)]),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": scratch,
        "TMPDIR": scratch,
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


class _Capture:
    """Keeps the first ``half`` and the last ``half`` bytes of a stream, counting the rest."""

    def __init__(self, budget: int) -> None:
        self.half = max(budget // 2, 1)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size - len(self.tail[0]) >= self.half:
                self.tail_size -= len(self.tail.popleft())

    def text(self) -> tuple[str, bool]:
        tail = b"".join(self.tail)[-self.half :] if self.tail else b""
        if len(self.head) + len(tail) >= self.total:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), False
        skipped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {skipped} bytes of output left out ...]\n"
        return self.head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace"), True


def run_python(code: str, cwd: str | os.PathLike[str], limits: PythonLimits = PythonLimits()) -> PythonResult:
    """Run ``code`` with ``cwd`` as working directory; never raises for anything the code does."""
    return _run(code, None, cwd, limits)


def run_shell(command: str, cwd: str | os.PathLike[str], limits: PythonLimits = PythonLimits()) -> PythonResult:
    """Run ``bash -c command`` under the same limits and isolation as ``run_python``."""
    return _run("", ["bash", "-c", command], cwd, limits)


def _run(code: str, argv: list[str] | None, cwd: str | os.PathLike[str], limits: PythonLimits) -> PythonResult:
    start = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="sgfs-python-")
    status_read, status_write = os.pipe()
    audit_read, audit_write = os.pipe()
    config = {
        "cwd": os.fspath(cwd),
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "isolate": limits.isolate,
        "scratch_dir": scratch,
        "scratch_mb": limits.scratch_mb,
        "status_fd": status_write,
        "argv": argv,
        "audit_fd": audit_write,
    }
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=scratch,
            env=child_environment(scratch),
            start_new_session=True,  # its own process group: the time limit kills everything it started
            pass_fds=(status_write, audit_write),
        )
    finally:
        os.close(status_write)
        os.close(audit_write)
    audit = bytearray()
    try:
        capture, timed_out = _communicate(
            process, code, start + limits.timeout_s, limits.output_bytes, audit_read, audit
        )
    finally:
        _kill_group(process)
        process.wait()
        _drain(audit_read, audit)
        with os.fdopen(status_read, "r") as status_pipe:
            status_text = status_pipe.read()
        shutil.rmtree(scratch, ignore_errors=True)
    status = json.loads(status_text) if status_text else {}
    output, truncated = capture.text()
    notes: list[str] = []
    if truncated:
        notes.append(f"output truncated: {capture.total} bytes written, the first and last {capture.half} shown")
    if timed_out:
        notes.append(f"time limit: killed after {limits.timeout_s:g} s")
    elif process.returncode < 0:
        notes.append(f"killed by signal {signal.Signals(-process.returncode).name}")
    elif process.returncode != 0:
        notes.append(f"exit code {process.returncode}")
    return PythonResult(
        output=output,
        exit_code=None if timed_out else process.returncode,
        timed_out=timed_out,
        truncated=truncated,
        output_bytes=capture.total,
        time_s=time.monotonic() - start,
        network_isolated=bool(status.get("network_isolated")),
        read_only=str(status.get("read_only", "permissions")),
        capabilities_dropped=bool(status.get("capabilities_dropped")),
        files_opened=sorted(set(audit.decode("utf-8", "replace").splitlines())),
        notes=notes,
    )


def _communicate(
    process: subprocess.Popen[bytes], code: str, deadline: float, budget: int, audit_fd: int, audit: bytearray
) -> tuple[_Capture, bool]:
    """Send the code, read the output into a bounded capture until EOF or the deadline. Once the main
    process has exited, what it left running is killed, so a background child cannot hold the call open."""
    assert process.stdin is not None and process.stdout is not None
    capture = _Capture(budget)
    with contextlib.suppress(BrokenPipeError):  # a child that died at start-up
        process.stdin.write(code.encode("utf-8", "surrogatepass"))
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    selector.register(audit_fd, selectors.EVENT_READ)  # read as it comes: a full pipe would block the code
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return capture, True
            ready = selector.select(min(remaining, 0.25))
            if not ready:
                if process.poll() is not None:
                    _kill_group(process)
                continue
            for key, _ in ready:
                if key.fd == audit_fd:
                    chunk = os.read(audit_fd, _READ_CHUNK)
                    audit += chunk
                    if not chunk:
                        selector.unregister(audit_fd)
                    continue
                chunk = os.read(process.stdout.fileno(), _READ_CHUNK)
                if not chunk:
                    return capture, False
                capture.feed(chunk)
    finally:
        selector.close()
        process.stdout.close()


def _drain(fd: int, into: bytearray) -> None:
    """Read what is left in a pipe whose writers are gone, then close it (bounded: a writer that escaped the
    process group cannot hold us)."""
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                return
            into += chunk
    finally:
        os.close(fd)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
