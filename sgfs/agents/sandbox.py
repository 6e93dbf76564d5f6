"""Agents in a bubblewrap sandbox (docs/eval.md, "The sandbox").

Why bubblewrap: it is the small, audited setuid-free tool Flatpak builds on, packaged by Debian, and it does
exactly what a sealed evaluation needs from one command line: new user, PID, IPC, network and mount
namespaces, every capability dropped, no further user namespaces, a fresh ``/proc`` and a minimal ``/dev``,
and only the paths we name, bound read-only or read-write.

What an agent sees: the system directories (``/usr``, ``/etc``, the libraries) read-only; the Python
environment the harness runs in, read-only, with the sgfs installation covered (neither ``sgfs`` on PATH nor
``import sgfs``, ``qa`` or ``generators``); its repository read-only as its working directory; a private
writable scratch directory; an empty ``HOME`` and ``/tmp``; the paths the user binds. It never sees the run
directory, the questions, the audit log or the key: they are not bound, and where one lies under a bound
path it is covered.

All processes of one sandbox share its PID namespace, whatever sessions they make, so the namespace names
the question in the audit log; the harness holds the namespace open (an nsfs descriptor) until the audit is
read, so its inode cannot be reused by another sandbox meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import select
import shutil
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import IO, Any

from sgfs.errors import SgfsError

BWRAP = "bwrap"
# Read-only in every sandbox where they exist; symbolic links among them (merged /usr) are recreated as links.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files of the bound system directories that no agent needs and that could hold secrets.
COVERED_SYSTEM_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
SYSTEM_PATH_VARIABLE = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PACKAGES = ("sgfs", "qa", "generators")
START_TIMEOUT_S = 10.0


class SandboxUnavailable(SgfsError):
    """The sandbox cannot start here (one line saying why)."""


@dataclass(frozen=True)
class Bind:
    """A host path made visible in the sandbox at ``target`` (the same path unless given)."""

    source: str
    target: str
    writable: bool = False

    @classmethod
    def parse(cls, text: str, writable: bool = False) -> Bind:
        """``SRC[:DST]`` as given to ``--sandbox-bind``: SRC must exist; both become absolute."""
        source, sep, target = text.partition(":")
        if not source or (sep and not target):
            raise SgfsError(f"invalid sandbox bind {text!r}: expected SRC[:DST]")
        source = os.path.abspath(os.path.expanduser(source))
        if not os.path.exists(source):
            raise SgfsError(f"invalid sandbox bind {text!r}: {source} does not exist")
        target = os.path.abspath(os.path.expanduser(target)) if target else source
        if target == "/" or target in ("/proc", "/dev") or target.startswith(("/proc/", "/dev/")):
            raise SgfsError(f"invalid sandbox bind {text!r}: cannot bind over {target}")
        return cls(source, target, writable)

    def describe(self) -> str:
        mode = "rw" if self.writable else "ro"
        return f"{self.source}:{self.target}:{mode}" if self.target != self.source else f"{self.source}:{mode}"


@dataclass(frozen=True)
class SandboxPolicy:
    """What every sandbox of a run may see beyond the default (the options of ``sgfs eval``)."""

    binds: tuple[Bind, ...] = ()
    network: bool = False  # share the host's network (and its abstract Unix sockets): for a model API
    hidden: tuple[str, ...] = ()  # host paths never visible, even under a bound directory

    def describe(self) -> dict[str, Any]:
        return {"binds": [b.describe() for b in self.binds], "network": self.network}


@dataclass(frozen=True)
class Layout:
    """One sandbox: the policy plus the paths of one agent run."""

    policy: SandboxPolicy
    workdir: str  # bound read-only, the working directory
    scratch: str  # bound read-write at the same path (prompt, answer, TMPDIR)
    programs: tuple[str, ...] = ()  # files or directories the command names, bound read-only
    home: str = "/root"
    # None: ``scratch`` is a host directory bound read-write. A size in bytes: ``scratch`` is instead a
    # private tmpfs of that size, made in the sandbox (no host path behind it; the Python tool's).
    scratch_size: int | None = None

    def arguments(self) -> list[str]:
        """bwrap's arguments up to (not including) the command."""
        args = [
            *("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
            *("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"),
            *(() if self.policy.network else ("--unshare-net",)),
            *("--die-with-parent", "--new-session", "--hostname", "sandbox"),
        ]
        binds: list[tuple[str, str]] = []  # (source, target) of everything bound, for covering hidden paths
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
                binds.append((path, path))
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"]
        if self.home not in ("/", "", self.scratch) and not _under_any(self.home, SYSTEM_PATHS):
            args += ["--tmpfs", self.home]
        for path in python_paths():
            args += ["--ro-bind", path, path]
            binds.append((path, path))
        programs = [(program, program) for program in self.programs]
        for program, _ in programs:
            args += ["--ro-bind", program, program]
        for bind in self.policy.binds:
            args += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
            binds.append((bind.source, bind.target))
        args += ["--ro-bind", self.workdir, self.workdir]
        binds.append((self.workdir, self.workdir))
        if self.scratch_size is None:
            args += ["--bind", self.scratch, self.scratch]
            binds.append((self.scratch, self.scratch))
        else:
            args += ["--size", str(self.scratch_size), "--tmpfs", self.scratch]
        hidden = [*COVERED_SYSTEM_FILES, *installation_paths(), *self.policy.hidden]
        # A program the command names (scripts/openai_agent.py) may lie in an sgfs checkout, never in a package.
        checkouts = set(checkout_roots())
        covers = _visible(hidden, binds) + _visible([h for h in hidden if h not in checkouts], programs)
        covered: list[str] = []
        for target, is_dir in sorted(dict(covers).items(), key=lambda item: item[0].count("/")):
            if _under_any(target, covered):
                continue  # inside a directory already covered (and read-only): nothing of it is visible
            if is_dir:
                covered.append(target)
                args += ["--tmpfs", target, "--remount-ro", target]
            else:
                args += ["--ro-bind", "/dev/null", target]
        args += ["--chdir", self.workdir]
        return args

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment: the caller's (API keys and the like), with paths that fit the sandbox."""
        env = {k: v for k, v in base.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYENV"))}
        env.update(
            PATH=os.pathsep.join([os.path.dirname(sys.executable), SYSTEM_PATH_VARIABLE]),
            HOME=self.home,
            TMPDIR=self.scratch,
            PWD=self.workdir,
        )
        return env


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _under_any(path: str, roots: Iterable[str]) -> bool:
    return any(_under(path, root) for root in roots)


def _visible(hidden: Iterable[str], binds: Sequence[tuple[str, str]]) -> list[tuple[str, bool]]:
    """Where each hidden host path would appear in the sandbox (through any bind that holds it), and whether
    it is a directory; bound paths under a hidden one are covered too, by covering their bind target."""
    found: dict[str, bool] = {}
    for path in hidden:
        path = os.path.abspath(path)
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        for source, target in binds:
            for candidate in {path, real}:
                if _under(candidate, source):
                    found[target + candidate[len(source.rstrip("/")) :]] = os.path.isdir(candidate)
                elif _under(source, candidate):  # the whole bind lies inside a hidden directory
                    found[target] = os.path.isdir(source)
    # Cover outer paths first: bwrap mounts in order, and a covered directory's inner covers become moot.
    return sorted(found.items(), key=lambda item: item[0].count("/"))


@functools.cache
def python_paths() -> tuple[str, ...]:
    """The interpreter's prefixes that the system paths do not already hold (a venv, pyenv, conda)."""
    paths: list[str] = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix):
        prefix = os.path.realpath(prefix)
        if not _under_any(prefix, SYSTEM_PATHS) and not _under_any(prefix, paths) and os.path.isdir(prefix):
            paths.append(prefix)
    return tuple(paths)


@functools.cache
def package_directories() -> tuple[str, ...]:
    """Where ``sgfs``, ``qa`` and ``generators`` are imported from (real paths)."""
    found = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        locations = (spec.submodule_search_locations or []) if spec is not None else []
        found += [os.path.realpath(location) for location in locations]
    return tuple(found)


@functools.cache
def checkout_roots() -> tuple[str, ...]:
    """Source checkouts the packages are installed from (editable installs): hidden as a whole."""
    parents = {os.path.dirname(location) for location in package_directories()}
    return tuple(sorted(p for p in parents if os.path.exists(os.path.join(p, "pyproject.toml"))))


@functools.cache
def installation_paths() -> tuple[str, ...]:
    """Every host path of the sgfs installation: its packages, metadata, scripts and (editable) source tree."""
    # The packages, and an editable install's checkout (data, tests and packs live there).
    found: set[str] = {*package_directories(), *checkout_roots()}
    directories = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    for dist in metadata.distributions(path=[d for d in directories if d and os.path.isdir(d)]):
        if (dist.metadata["Name"] or "").lower() != "sgfs":
            continue
        for entry in dist.files or []:
            located = os.path.realpath(str(dist.locate_file(entry)))
            base = os.path.realpath(str(dist.locate_file("")))
            relative = os.path.relpath(located, base)
            top = relative.split(os.sep, 1)[0]
            # Files under site-packages are covered by their top entry; scripts elsewhere one by one.
            whole = top not in (os.pardir, "__pycache__")  # a shared cache holds other modules' files too
            found.add(os.path.join(base, top) if whole else located)
    for script in {shutil.which("sgfs"), os.path.join(os.path.dirname(sys.executable), "sgfs")}:
        if script and os.path.lexists(script):
            found.add(os.path.realpath(script))
            found.add(os.path.abspath(script))
    return tuple(sorted(p for p in found if p not in ("/", *SYSTEM_PATHS)))


def command_paths(words: Sequence[str]) -> tuple[str, ...]:
    """Absolute paths an agent command names (its program, its script): bound read-only so that it can run."""
    paths: list[str] = []
    for word in words:
        word = word.split("=", 1)[1] if "=" in word.split("/", 1)[0] else word
        if word.startswith("/") and os.path.exists(word):
            path = os.path.abspath(word)
            if path != "/" and not _under_any(path, SYSTEM_PATHS) and path not in paths:
                paths.append(path)
    return tuple(paths)


@dataclass
class SandboxedProcess:
    """A started sandbox: the bwrap process and a descriptor holding its PID namespace open."""

    process: subprocess.Popen[bytes]
    namespace: int  # inode of the sandbox's PID namespace (the audit log's "pidns")
    _namespace_fd: int | None = field(default=None, repr=False)

    def close(self) -> None:
        """Release the namespace (after the audit was read: from then on its inode may be reused)."""
        if self._namespace_fd is not None:
            os.close(self._namespace_fd)
            self._namespace_fd = None


def start(
    layout: Layout,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: IO[bytes] | int | None,
    stdout: IO[bytes] | int | None,
    stderr: IO[bytes] | int | None,
    pass_fds: Sequence[int] = (),
    on_start: Callable[[int, int], None] | None = None,
) -> SandboxedProcess:
    """Start ``argv`` in the sandbox ``layout``. bwrap reads its options from a memory file (so the layout is
    not on the sandbox's command line), reports the sandbox's PID, and waits on a pipe until the harness holds the
    namespace: the command starts only then. Raises SandboxUnavailable when bwrap fails to set up.

    ``pass_fds`` are inherited by the command (bwrap keeps them open). ``on_start(bwrap_pid, sandbox_pid)`` runs
    while the command is still held: both processes exist, nothing of the command has run (the Python tool
    moves them into its cgroup there); if it raises, the sandbox is killed and the exception propagates."""
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        raise SandboxUnavailable(_MISSING)
    info_read, info_write = os.pipe()
    block_read, block_write = os.pipe()
    args_fd, args_write = os.pipe()  # a pipe, not a file: no file-size limit applies to it
    words = [*layout.arguments(), "--info-fd", str(info_write), "--block-fd", str(block_read)]
    try:
        process = subprocess.Popen(
            [bwrap, "--args", str(args_fd), "--", *argv],
            env=layout.environment(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=(args_fd, info_write, block_read, *pass_fds),
            start_new_session=True,
        )
    except OSError as exc:
        for fd in (info_read, info_write, block_read, block_write, args_fd, args_write):
            os.close(fd)
        raise SandboxUnavailable(f"cannot run {bwrap}: {exc.strerror or exc}") from None
    for fd in (info_write, block_read, args_fd):
        os.close(fd)
    try:
        try:
            with open(args_write, "wb", closefd=True) as pipe:  # bwrap reads them all before anything else
                pipe.write(b"".join(w.encode("utf-8", "surrogateescape") + b"\0" for w in words))
        except BrokenPipeError:
            pass  # bwrap is gone: _read_info says so
        info = _read_info(info_read, process)
        pid = int(info["child-pid"])
        namespace_fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        namespace = os.fstat(namespace_fd).st_ino
        if namespace != int(info.get("pid-namespace", namespace)):
            os.close(namespace_fd)
            raise SandboxUnavailable("the sandbox's PID namespace changed while it started")
        if on_start is not None:
            try:
                on_start(process.pid, pid)
            except BaseException:
                os.close(namespace_fd)
                raise
        with contextlib.suppress(BrokenPipeError):
            os.write(block_write, b"go")
        return SandboxedProcess(process, namespace, namespace_fd)
    except BaseException:
        _stop(process)
        raise
    finally:
        os.close(info_read)
        os.close(block_write)


def _read_info(fd: int, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """bwrap's JSON status, written once the sandbox exists; bounded in time and size."""
    data = b""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            info = json.loads(data)
            if isinstance(info, dict) and "child-pid" in info:
                return info
        if len(data) > 1 << 16:
            break
    raise SandboxUnavailable(f"the sandbox did not start (bwrap exit code {process.poll()})")


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, 9)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


_MISSING = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap, or pass --no-sandbox (unsealed)"


@functools.cache
def check_sandbox() -> None:
    """Raise SandboxUnavailable (one line, saying why) unless a sandbox starts and runs a command here."""
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        raise SandboxUnavailable(_MISSING)
    # mkdtemp in a named directory: gettempdir() would probe by writing a file, which a file-size limit forbids.
    try:
        scratch = tempfile.mkdtemp(prefix="sgfs-sandbox-check-", dir=os.environ.get("TMPDIR") or "/tmp")
    except OSError as exc:
        raise SandboxUnavailable(f"the sandbox cannot start here: no scratch directory ({exc.strerror})") from None
    try:
        _check(Layout(SandboxPolicy(), workdir=scratch, scratch=scratch, home=scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check(layout: Layout) -> None:
    with open(os.devnull, "rb") as devnull:
        try:
            sandbox = start(layout, ["/bin/sh", "-c", "exit 0"], env=os.environ, stdin=devnull,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        except SandboxUnavailable as exc:
            raise SandboxUnavailable(f"the sandbox cannot start here: {exc}") from None
        try:
            _, err = sandbox.process.communicate(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop(sandbox.process)
            raise SandboxUnavailable("the sandbox cannot start here: bwrap did not finish a test run") from None
        finally:
            sandbox.close()
    if sandbox.process.returncode != 0:
        reason = (err or b"").decode("utf-8", "replace").strip().splitlines()
        raise SandboxUnavailable(
            f"the sandbox cannot start here: {reason[-1] if reason else f'bwrap exit {sandbox.process.returncode}'}"
            " (pass --no-sandbox to run unsealed)"
        )


def hidden_paths(*paths: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """The given paths made absolute, without None: what a policy must hide."""
    return tuple(os.path.abspath(os.fspath(p)) for p in paths if p is not None)


__all__ = [
    "Bind",
    "Layout",
    "SandboxPolicy",
    "SandboxUnavailable",
    "SandboxedProcess",
    "check_sandbox",
    "command_paths",
    "hidden_paths",
    "installation_paths",
    "python_paths",
    "start",
]
