"""Run untrusted Python sealed, with limits (docs/agents.md, "The Python tool").

Sealed: the code runs in the bubblewrap sandbox of ``sgfs.agents.sandbox`` (its own user, PID, IPC, mount and
network namespaces, every capability dropped, a minimal ``/dev``, its own ``/proc``, ``--die-with-parent``):
the interpreter's environment read-only *without* the sgfs installation (no ``sgfs`` command, no ``import
sgfs``, ``qa`` or ``generators``), the repository read-only as working directory, a private size-limited
tmpfs as ``TMPDIR`` and ``HOME``, no network, no host ``/tmp``, ``/run`` or devices (so no host Unix socket;
abstract sockets belong to the network namespace). Where the sandbox cannot start, nothing runs: the result
says why in one line (``PythonLimits(isolate=False)`` is the documented, unsealed opt-out).

Limits: wall clock; a cgroup per call (``sgfs.agents.limits``) bounding the number of processes and the total
memory of everything the call starts, with ``RLIMIT_AS`` per process as well (a single huge allocation gets a
``MemoryError`` rather than a kill); output (the first and last halves of a byte budget are kept). Every
process the call started is gone when it returns: normal end, time limit, or cancellation (the PID
namespace dies with its first process, and the cgroup is emptied and removed). The child gets a fixed,
minimal environment (nothing from the caller's, so no credentials) and runs with ``-I``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sgfs.agents.limits import CallGroup, GroupLimits, create_group
from sgfs.agents.sandbox import Layout, SandboxPolicy, SandboxUnavailable, check_sandbox, start

BOOTSTRAP = (Path(__file__).parent / "bootstrap.py").read_text("utf-8")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 512
DEFAULT_OUTPUT_BYTES = 16 * 1024
DEFAULT_SCRATCH_MB = 64
DEFAULT_PROCESSES = 64
SCRATCH = "/scratch"  # in the sandbox: a private tmpfs, TMPDIR and HOME
MIB = 1024 * 1024
CANCEL_WAIT_S = 10.0  # how long a cancelled call waits for its sandbox to be gone
_READ_CHUNK = 65536
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PythonLimits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB  # all processes of a call together (cgroup), and each one's address space
    output_bytes: int = DEFAULT_OUTPUT_BYTES  # stdout and stderr together, as one stream
    scratch_mb: int = DEFAULT_SCRATCH_MB  # the private TMPDIR (a tmpfs), and the largest file one may write
    isolate: bool = True  # the sandbox, required; False: unsealed (the host's view, limits only)
    processes: int = DEFAULT_PROCESSES  # at most this many processes and threads at once (cgroup)


@dataclass(frozen=True)
class PythonResult:
    output: str
    exit_code: int | None  # None when killed at the time limit, cancelled, or not run
    timed_out: bool
    truncated: bool
    output_bytes: int  # total bytes written, kept or not
    time_s: float
    # As measured inside, by the code's interpreter before the code ran:
    network_isolated: bool  # only a loopback interface (the sandbox's own network namespace)
    read_only: str  # "mounts": every mount read-only but private tmpfs ones; "permissions": file modes only
    capabilities_dropped: bool  # no effective, permitted or bounding capability
    files_opened: list[str] = field(default_factory=list)  # below cwd, opened for reading by Python code
    notes: list[str] = field(default_factory=list)
    sealed: bool = False  # ran in the sandbox
    process_limits: str = ""  # how processes and memory were limited ("cgroup v1: ...", or per process and why)

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


def sandbox_problem(limits: PythonLimits, opt_out: str) -> str | None:
    """None when the Python tool can run as ``limits`` ask (sealed: a sandbox starts here); else one line
    saying why not, naming ``opt_out`` (the option that runs it unsealed)."""
    if not limits.isolate:
        return None
    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        reason = re.sub(r"\s*\(pass --no-sandbox to run unsealed\)|,? or pass --no-sandbox \(unsealed\)", "", str(exc))
        return f"the Python tool's sandbox cannot start: {reason} (pass {opt_out} to run it unsealed)"
    return None


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


def run_python(
    code: str,
    cwd: str | os.PathLike[str],
    limits: PythonLimits = PythonLimits(),
    cancel: threading.Event | None = None,
) -> PythonResult:
    """Run ``code`` with ``cwd`` as working directory; never raises for anything the code does. Setting
    ``cancel`` (from another thread) kills the call's processes; it then returns within a moment."""
    return _run(code, None, cwd, limits, cancel)


def run_shell(
    command: str,
    cwd: str | os.PathLike[str],
    limits: PythonLimits = PythonLimits(),
    cancel: threading.Event | None = None,
) -> PythonResult:
    """Run ``bash -c command`` under the same limits and isolation as ``run_python``."""
    return _run("", ["bash", "-c", command], cwd, limits, cancel)


async def run_python_async(code: str, cwd: str | os.PathLike[str], limits: PythonLimits) -> PythonResult:
    """``run_python`` in a worker thread; when the awaiting task is cancelled (a client that disconnects, an
    Inspect sample stopped), the call's processes are killed and gone before the cancellation goes on."""
    return await _in_thread(lambda cancel: run_python(code, cwd, limits, cancel))


async def run_shell_async(command: str, cwd: str | os.PathLike[str], limits: PythonLimits) -> PythonResult:
    """``run_shell`` as ``run_python_async`` runs ``run_python``."""
    return await _in_thread(lambda cancel: run_shell(command, cwd, limits, cancel))


async def _in_thread(work: Callable[[threading.Event], PythonResult]) -> PythonResult:
    import anyio
    import anyio.to_thread

    cancel, finished = threading.Event(), threading.Event()

    def call() -> PythonResult:
        try:
            return work(cancel)
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except BaseException:
        cancel.set()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(finished.wait, CANCEL_WAIT_S)
        raise


class _Call:
    """What one call holds until its end: the process, the sandbox's first process (a pidfd) and the group."""

    def __init__(self, group: CallGroup | None) -> None:
        self.group = group
        self.pidfd: int | None = None
        self.sandbox_pid: int | None = None

    def joined(self, bwrap_pid: int, sandbox_pid: int) -> None:
        """sandbox.start's hook: both processes exist, the code has not started."""
        if self.group is not None:
            self.group.add(bwrap_pid)
            self.group.add(sandbox_pid)
        self.sandbox_pid = sandbox_pid
        with contextlib.suppress(OSError, AttributeError):  # pidfds: Linux 5.3
            self.pidfd = os.pidfd_open(sandbox_pid)

    def end(self, process: subprocess.Popen[bytes]) -> None:
        """Kill everything the call started and wait until it is gone. The sandbox's first process is the
        init of its PID namespace: when it dies the kernel kills every process in the namespace, and it is
        not reported dead before they are. Then bwrap itself (its process group), then the cgroup."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            with contextlib.suppress(OSError):
                select.select([self.pidfd], [], [], 5.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if self.pidfd is None and self.sandbox_pid is not None:  # no pidfd: wait for the init to be gone
            _wait_gone(self.sandbox_pid, 5.0)

    def close(self) -> None:
        if self.group is not None and not self.group.close():
            log.warning("the Python tool's cgroup %s could not be emptied", self.group.directories)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _wait_gone(pid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
                if stat.read().rpartition(")")[2].split()[:1] == ["Z"]:
                    return
        except OSError:
            return
        time.sleep(0.01)


def _process_limits(group: CallGroup | None, reason: str, limits: PythonLimits) -> str:
    if group is not None:
        return f"cgroup v{group.version}: {limits.processes} processes, {limits.memory_mb} MB in total"
    return f"per process only: {limits.memory_mb} MB of address space each, processes not limited ({reason})"


_warned: set[str] = set()


def _refused(reason: str, start_time: float, limits_text: str) -> PythonResult:
    log.error("run_python_code refused: %s", reason)
    return PythonResult(
        output="",
        exit_code=None,
        timed_out=False,
        truncated=False,
        output_bytes=0,
        time_s=time.monotonic() - start_time,
        network_isolated=False,
        read_only="permissions",
        capabilities_dropped=False,
        notes=[f"not run: {reason}"],
        process_limits=limits_text,
    )


def _run(
    code: str,
    argv: list[str] | None,
    cwd: str | os.PathLike[str],
    limits: PythonLimits,
    cancel: threading.Event | None,
) -> PythonResult:
    start_time = time.monotonic()
    cwd = os.path.abspath(os.fspath(cwd))
    group, reason = create_group(GroupLimits(limits.processes, limits.memory_mb * MIB))
    limits_text = _process_limits(group, reason, limits)
    if group is None and reason not in _warned:
        _warned.add(reason)
        log.warning("the Python tool limits each process only: %s", reason)
    call = _Call(group)
    host_scratch = None if limits.isolate else tempfile.mkdtemp(prefix="sgfs-python-")
    scratch = SCRATCH if host_scratch is None else host_scratch
    status_read, status_write = os.pipe()
    audit_read, audit_write = os.pipe()
    config = {
        "cwd": cwd,
        "memory_bytes": limits.memory_mb * MIB,
        "file_bytes": limits.scratch_mb * MIB,
        "status_fd": status_write,
        "argv": argv,
        "audit_fd": audit_write,
        "cgroup_procs": list(group.procs_files) if group is not None and not limits.isolate else [],
    }
    command = [sys.executable, "-I", "-c", BOOTSTRAP, json.dumps(config)]
    sandboxed = None
    try:
        if limits.isolate:
            layout = Layout(SandboxPolicy(), cwd, SCRATCH, home=SCRATCH, scratch_size=limits.scratch_mb * MIB)
            sandboxed = start(
                layout,
                command,
                env=child_environment(SCRATCH),
                pass_fds=(status_write, audit_write),
                on_start=call.joined,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            process = sandboxed.process
        else:
            process = subprocess.Popen(
                command,
                cwd=scratch,
                env=child_environment(scratch),
                start_new_session=True,  # its own process group: the time limit kills everything it started
                pass_fds=(status_write, audit_write),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
    except (SandboxUnavailable, OSError) as exc:
        for fd in (status_read, audit_read):
            os.close(fd)
        call.close()
        if host_scratch is not None:
            shutil.rmtree(host_scratch, ignore_errors=True)
        what = "the Python sandbox cannot start" if limits.isolate else "the Python process cannot start"
        return _refused(f"{what}: {exc}", start_time, limits_text)
    finally:
        os.close(status_write)
        os.close(audit_write)
    audit = bytearray()
    cancelled = False
    try:
        capture, timed_out, cancelled = _communicate(
            process, code, start_time + limits.timeout_s, limits.output_bytes, audit_read, audit, cancel
        )
    finally:
        call.end(process)
        _drain(audit_read, audit)
        with os.fdopen(status_read, "r") as status_pipe:
            status_text = status_pipe.read()
        events = group.events() if group is not None else {}
        call.close()
        if sandboxed is not None:
            sandboxed.close()
        if host_scratch is not None:
            shutil.rmtree(host_scratch, ignore_errors=True)
    status = json.loads(status_text) if status_text else {}
    output, truncated = capture.text()
    notes: list[str] = []
    if truncated:
        notes.append(f"output truncated: {capture.total} bytes written, the first and last {capture.half} shown")
    if events.get("oom_kill"):
        notes.append(f"memory limit: processes killed for using over {limits.memory_mb} MB together")
    if events.get("pids_max"):
        notes.append(f"process limit: {events['pids_max']} new processes refused (at most {limits.processes})")
    code_ = process.returncode
    if cancelled:
        notes.append("cancelled: killed")
    elif timed_out:
        notes.append(f"time limit: killed after {limits.timeout_s:g} s")
    elif code_ < 0:
        notes.append(f"killed by signal {signal.Signals(-code_).name}")
    elif sandboxed is not None and 128 < code_ <= 128 + 64 and _signal_name(code_ - 128):
        notes.append(f"exit code {code_} (killed by signal {_signal_name(code_ - 128)})")  # bwrap's convention
    elif code_ != 0:
        notes.append(f"exit code {code_}")
    return PythonResult(
        output=output,
        exit_code=None if timed_out or cancelled else code_,
        timed_out=timed_out,
        truncated=truncated,
        output_bytes=capture.total,
        time_s=time.monotonic() - start_time,
        network_isolated=bool(status.get("network_isolated")),
        read_only=str(status.get("read_only", "permissions")),
        capabilities_dropped=bool(status.get("capabilities_dropped")),
        files_opened=sorted(set(audit.decode("utf-8", "replace").splitlines())),
        notes=notes,
        sealed=sandboxed is not None,
        process_limits=limits_text,
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return ""


def _communicate(
    process: subprocess.Popen[bytes],
    code: str,
    deadline: float,
    budget: int,
    audit_fd: int,
    audit: bytearray,
    cancel: threading.Event | None,
) -> tuple[_Capture, bool, bool]:
    """Send the code, read the output into a bounded capture until EOF, the deadline (timed out) or
    ``cancel`` (cancelled). Once the main process has exited, what it left running is killed, so a background
    child cannot hold the call open."""
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
            if cancel is not None and cancel.is_set():
                return capture, False, True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return capture, True, False
            ready = selector.select(min(remaining, 0.1))
            if not ready:
                if process.poll() is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
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
                    return capture, False, False
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
