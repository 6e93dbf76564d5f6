"""``sgfs mount MNT`` and ``sgfs unmount MNT``: serve repositories as a read-only FUSE filesystem."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import click

import sgfs
from sgfs.cli.options import specs_options
from sgfs.daemon import (
    FSTYPE,
    LIBFUSE_NOISE,
    check_fuse,
    check_mount_point,
    fusermount_commands,
    mount_type,
    serve,
    setup_logging,
)
from sgfs.diskcache import DEFAULT_DISK_CACHE_MB
from sgfs.errors import SgfsError
from sgfs.seeds import mount_repositories, parse_seed_list
from sgfs.source import DEFAULT_CACHE_MB

START_TIMEOUT_S = 30.0
UNMOUNT_TIMEOUT_S = 10.0

MOUNT_HELP = """Serve repositories at MNT as a read-only FUSE filesystem.

MNT/<seed>/ is repository <seed> for any integer seed in [0, 2^63); the root lists the seeds given with
--seeds (none by default: `ls MNT/118` works, `ls MNT` is empty). Runs in the background and returns once
the mount answers; stop it with `sgfs unmount MNT`.
"""


@click.command("mount", help=MOUNT_HELP)
@click.argument("mountpoint", metavar="MNT")
@click.option("--seeds", default="", metavar="LIST", help="Seeds listed at the root, e.g. 1-100,118.")
@click.option("--foreground", "-f", is_flag=True, help="Serve in this process until unmounted.")
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=DEFAULT_CACHE_MB,
    show_default=True,
    help="Size bound of the daemon's cache of synthesised files, in MiB.",
)
@click.option(
    "--log",
    "log_file",
    metavar="FILE",
    default=None,
    help="Write the daemon's log here (default: stderr with --foreground, discarded in the background).",
)
@click.option(
    "--audit",
    "audit_file",
    metavar="FILE",
    default=None,
    help="Append every listing and read, with the caller's session, to FILE (for `sgfs eval --audit`); "
    "turns off the kernel's page cache.",
)
@specs_options
@click.option(
    "--cache-dir",
    metavar="DIR",
    default=None,
    help="Persistent cache of sizes and contents, shared by mounts (default: $XDG_CACHE_HOME/sgfs or ~/.cache/sgfs).",
)
@click.option("--no-disk-cache", is_flag=True, help="Keep nothing on disk.")
@click.option(
    "--disk-cache-mb",
    type=click.IntRange(min=0),
    default=DEFAULT_DISK_CACHE_MB,
    show_default=True,
    help="Size bound of the disk cache, in MiB.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    help="Processes that synthesise cold files in parallel (default: one per core; 0: none).",
)
def mount_command(
    mountpoint: str,
    seeds: str,
    foreground: bool,
    cache_mb: int,
    log_file: str | None,
    audit_file: str | None,
    specs: str | None,
    fallback: str | None,
    cache_dir: str | None,
    no_disk_cache: bool,
    disk_cache_mb: int,
    workers: int | None,
) -> None:
    seed_list = parse_seed_list(seeds) if seeds.strip() else []
    factory = None
    if specs is not None:
        specs = os.path.abspath(specs)  # the daemon runs from "/"
        factory = mount_repositories(specs, fallback)  # refuses a corrupt or hostile pack before mounting
        if not seeds.strip():
            seed_list = factory.pack.seeds()  # the root lists the pack's seeds unless --seeds says otherwise
    elif fallback is not None:
        raise SgfsError("--fallback only applies with --specs PACK")
    if no_disk_cache:
        cache_dir = ""
    elif cache_dir is not None:
        if cache_dir == "":
            raise SgfsError("--cache-dir must not be empty (use --no-disk-cache)")
        cache_dir = os.path.abspath(cache_dir)  # the daemon runs from "/"
    check_fuse()
    mnt = check_mount_point(mountpoint)
    if log_file is not None:
        log_file = os.path.abspath(log_file)
        try:
            with open(log_file, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise SgfsError(f"cannot write log file {log_file}: {exc.strerror or exc}") from None
    if audit_file is not None:
        audit_file = os.path.abspath(audit_file)
        if audit_file == mnt or audit_file.startswith(mnt + os.sep):
            raise SgfsError(f"--audit {audit_file} must lie outside the mount point")
        try:
            with open(audit_file, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise SgfsError(f"cannot write audit file {audit_file}: {exc.strerror or exc}") from None
    if foreground:
        setup_logging(log_file)
        serve(
            mnt,
            seed_list,
            cache_mb,
            factory=factory,
            audit=audit_file,
            cache_dir=cache_dir,
            disk_cache_mb=disk_cache_mb,
            workers=workers,
        )
        return
    disk_args = ["--disk-cache-mb", str(disk_cache_mb)] + ([] if cache_dir is None else ["--cache-dir", cache_dir])
    disk_args += [] if workers is None else ["--workers", str(workers)]
    pid = _start_daemon(mnt, seeds, cache_mb, log_file, specs, fallback, audit_file, extra=disk_args)
    listed = f"{len(seed_list)} seed{'s' * (len(seed_list) != 1)} listed" if seed_list else "no seed listed"
    click.echo(f"mounted sgfs at {mnt} ({listed}; daemon pid {pid})", err=True)


@click.command("unmount", help="Unmount an sgfs mount and return once it is gone.")
@click.argument("mountpoint", metavar="MNT")
def unmount_command(mountpoint: str) -> None:
    mnt = os.path.abspath(mountpoint)
    kind = mount_type(mnt)
    if kind is None:
        if not os.path.lexists(mnt):
            raise SgfsError(f"{mountpoint} does not exist")
        raise SgfsError(f"{mountpoint} is not mounted")
    if kind != FSTYPE:
        raise SgfsError(f"{mountpoint} is not an sgfs mount (it is a {kind} mount)")
    _unmount(mnt)
    click.echo(f"unmounted {mnt}", err=True)


def _start_daemon(
    mnt: str,
    seeds: str,
    cache_mb: int,
    log_file: str | None,
    specs: str | None = None,
    fallback: str | None = None,
    audit_file: str | None = None,
    exit_with: int | None = None,
    extra: list[str] | None = None,
) -> int:
    """Start ``python -m sgfs.daemon`` detached; return its pid once the mount answers."""
    args = [sys.executable, "-m", "sgfs.daemon", mnt, "--seeds", seeds, "--cache-mb", str(cache_mb)]
    args += extra or []
    args.append("--background")
    if specs is not None:
        args += ["--specs", specs]
    if fallback is not None:
        args += ["--fallback", fallback]
    if log_file is not None:
        args += ["--log", log_file]
    if audit_file is not None:
        args += ["--audit", audit_file]
    if exit_with is not None:
        args += ["--exit-with", str(exit_with)]
    env = dict(os.environ)
    # The daemon runs from "/" (so it pins no working directory): make sure it imports this very sgfs.
    package_root = str(Path(sgfs.__file__).resolve().parent.parent)
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
                    _lazy_unmount(mnt)
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


def _unmount(mnt: str) -> None:
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


def _lazy_unmount(mnt: str) -> None:
    for command in fusermount_commands():
        lazy = [*command, "-z", mnt] if command[0].startswith("fusermount") else [*command, "-l", mnt]
        if subprocess.run(lazy, capture_output=True, check=False).returncode == 0:
            return
