"""The mount daemon: ``python -m sgfs.daemon MNT --seeds ...`` serves repositories at MNT until unmounted.

``sgfs mount`` starts this module as a detached process (or calls ``serve`` in-process with
``--foreground``). It checks that FUSE is usable and the mount point is fit, sets up logging, and serves
libfuse's low-level API from its own request loop (``sgfs.lowlevel``, ``sgfs.request_loop``). libfuse installs the
SIGINT/SIGTERM/SIGHUP handlers (fuse_set_signal_handlers, for signals left at SIG_DFL): a signal ends the loop,
then the mount is undone before ``serve`` returns, so no Python handler is needed.

This module does not import mfusepy at import time: ``sgfs`` commands that do not mount must keep working
on machines without libfuse.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import generators
from generators import Repository
from sgfs.diskcache import DEFAULT_DISK_CACHE_MB, DiskCache, default_cache_dir
from sgfs.errors import SgfsError
from sgfs.seeds import mount_repositories, parse_seed_list
from sgfs.source import DEFAULT_CACHE_MB, MIB, MountSource
from sgfs.synthpool import SynthesisPool

log = logging.getLogger("sgfs.mount")

FSNAME = "sgfs"
FSTYPE = "fuse.sgfs"  # what /proc/self/mountinfo shows for our mounts (fuse.<subtype>)
TIMEOUT_S = 3600  # attribute, entry and negative-lookup cache lifetime in the kernel: content never changes
LIBFUSE_NOISE = ("Ignoring invalid max threads value",)  # libfuse 3.14 with some loop configurations: harmless


def fusermount_commands() -> list[list[str]]:
    """Unmount commands in order of preference, those present on PATH."""
    commands = [["fusermount3", "-u"], ["fusermount", "-u"], ["umount"]]
    return [c for c in commands if shutil.which(c[0])]


def check_fuse(device: str = "/dev/fuse", which: Callable[[str], str | None] = shutil.which) -> ModuleType:
    """The mfusepy module, or an SgfsError saying why FUSE cannot be used here."""
    if not os.path.exists(device):
        raise SgfsError(
            f"FUSE is unavailable: {device} is missing (load the fuse kernel module; in a container, "
            "start it with --device /dev/fuse --cap-add SYS_ADMIN)"
        )
    if not (which("fusermount3") or which("fusermount")):
        raise SgfsError("FUSE is unavailable: neither fusermount3 nor fusermount is on PATH (install fuse3)")
    try:
        import mfusepy
    except Exception as exc:  # mfusepy raises OSError/AttributeError when libfuse is missing or too old
        raise SgfsError(f"FUSE is unavailable: libfuse cannot be loaded ({exc}); install fuse3") from None
    module: ModuleType = mfusepy  # typed as Any: mfusepy ships no type information
    return module


def _unescape(field: str) -> str:
    """Mount table fields escape space, tab, newline and backslash as octal (\\040...)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_table() -> dict[str, str]:
    """Mount point -> filesystem type, from /proc/self/mountinfo (the last mount on a point wins)."""
    table: dict[str, str] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return table
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if len(fields) > 4 and len(fields) > sep + 1:
            table[_unescape(fields[4])] = fields[sep + 1]
    return table


def mount_type(path: str) -> str | None:
    """The filesystem type mounted exactly at ``path``, or None."""
    table = mount_table()
    for candidate in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        if candidate in table:
            return table[candidate]
    return None


def check_mount_point(path: str) -> str:
    """The absolute mount point, or an SgfsError: missing, not a directory, mounted, stale or not empty."""
    mnt = os.path.abspath(path)
    kind = mount_type(mnt)
    try:
        info = os.stat(mnt)
        if kind is not None:
            os.listdir(mnt)  # the kernel may answer stat from its cache even when the daemon is gone
    except FileNotFoundError:
        raise SgfsError(f"mount point {path} does not exist") from None
    except OSError as exc:
        if kind is not None:  # typically ENOTCONN: a FUSE mount whose daemon died
            raise SgfsError(
                f"{path} is a stale {kind} mount ({exc.strerror}): clear it with `fusermount3 -uz {mnt}`"
            ) from None
        raise SgfsError(f"cannot use mount point {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SgfsError(f"mount point {path} is not a directory")
    if kind is not None or os.path.ismount(mnt):
        what = "an sgfs mount" if kind == FSTYPE else f"a mount point ({kind or 'unknown type'})"
        raise SgfsError(f"{path} is already {what}; unmount it first (sgfs unmount {path})")
    try:
        if any(os.scandir(mnt)):
            raise SgfsError(f"mount point {path} is not empty")
    except PermissionError:
        raise SgfsError(f"cannot read mount point {path}: permission denied") from None
    return mnt


def setup_logging(log_file: str | None) -> None:
    """Log to ``log_file`` when given, else to stderr."""
    handler: logging.Handler
    if log_file:
        try:
            handler = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise SgfsError(f"cannot write log file {log_file}: {exc.strerror or exc}") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("fuse").setLevel(logging.WARNING)  # mfusepy logs every errno at debug/info


# How long a mount may spend, before it answers, making the listings of listed seeds ready from the disk cache.
PREPARE_BUDGET_S = 0.5


def _detach_stderr() -> None:
    """Once the mount is up, stop writing to the startup-error file ``sgfs mount`` gave us as stderr."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def serve(
    mountpoint: str,
    seeds: Sequence[int],
    cache_mb: int,
    *,
    detach_stderr: bool = False,
    factory: Callable[[int], Repository] | None = None,
    audit: str | None = None,
    exit_with: int | None = None,
    cache_dir: str | None = None,
    disk_cache_mb: int = DEFAULT_DISK_CACHE_MB,
    workers: int | None = None,
    cache_listings: bool = True,
) -> None:
    """Mount and serve until unmounted (``sgfs unmount``, fusermount3 -u, SIGINT/SIGTERM/SIGHUP).

    With ``audit`` (a file outside the mount), every directory listing and file read is appended there
    with the caller's session (docs/eval.md), and the kernel keeps no page cache across opens, so that every
    open and the reads after it reach the daemon."""
    check_fuse()
    mnt = check_mount_point(mountpoint)
    if cache_mb < 0:
        raise SgfsError(f"invalid --cache-mb {cache_mb}: must be 0 or more")
    from sgfs.fuse_ops import SgfsFilesystem
    from sgfs.listing_pages import ListingBook
    from sgfs.lowlevel import LowLevelMount, load_libfuse  # ctypes over libfuse: only once FUSE works

    load_libfuse()  # a missing or too old libfuse is a clear error before any work starts
    # Build one repository and one listing book before mounting: the modules, data files and code paths they
    # load on first use (~0.1 s) are then not paid by the agent's first `ls`.
    warm = generators.repository(0)
    ListingBook("/0", {"": [(name, is_dir, 0, 1) for name, is_dir in warm.listings[""]]}, TIMEOUT_S, 0, 0)
    if workers == 0:  # files are synthesised here: load what a first synthesis of each format loads
        generators.warm_up()
    # --cache-dir "" (--no-disk-cache) turns the disk cache off; workers=0 the process pool.
    disk = None if cache_dir == "" else DiskCache(Path(cache_dir or default_cache_dir()), disk_cache_mb * MIB)
    pool = SynthesisPool(workers) if workers != 0 else None
    if pool is not None:
        pool.warm(timeout=30)  # before the mount answers, so the first cold requests find the workers up
    source = MountSource(
        seeds, cache_bytes=cache_mb * MIB, factory=factory or generators.repository, disk=disk, pool=pool
    )
    sink = None
    if audit is not None:
        from sgfs.eval.audit import AuditSink

        sink = AuditSink.open(audit)
    # An audited mount must see every listing, open and read: the kernel caches none of them there.
    fs = SgfsFilesystem(
        source,
        on_init=_detach_stderr if detach_stderr else None,
        audit=sink,
        cache_listings=cache_listings,
    )
    # Mount options only: the daemon stays in the foreground (`sgfs mount` detaches it itself), runs its own
    # request loop, and sets cache lifetimes in each reply (TIMEOUT_S: content never changes).
    options = ["ro", "default_permissions", f"fsname={FSNAME}", f"subtype={FSNAME}"]
    if threading.current_thread() is threading.main_thread():
        # libfuse only installs its exit handlers on signals left at SIG_DFL.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    log.info("serving %s (seeds listed: %d, cache %d MiB, pid %d)", mnt, len(seeds), cache_mb, os.getpid())
    if exit_with is not None:
        _watch_owner(exit_with)
    try:
        mount = LowLevelMount(fs, TIMEOUT_S)
        if disk is not None and seeds:
            mount.prepare(list(seeds), PREPARE_BUDGET_S)
        mount.serve(mnt, options)
    finally:
        if pool is not None:
            pool.close()
    log.info("unmounted %s", mnt)


def _watch_owner(pid: int) -> None:
    """Unmount once process ``pid`` is gone: a private mount must not outlive a harness that was killed (SIGKILL
    gives it no chance to clean up). SIGTERM to ourselves is libfuse's own clean way out."""

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.info("owner process %d is gone: unmounting", pid)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            except PermissionError:
                pass  # it exists, owned by someone else

    threading.Thread(target=watch, name="owner-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgfs.daemon", description="Serve repositories at MNT.")
    parser.add_argument("mountpoint", metavar="MNT")
    parser.add_argument("--seeds", default="", help="seeds listed at the root, e.g. 1-100,118")
    parser.add_argument("--cache-mb", type=int, default=DEFAULT_CACHE_MB)
    parser.add_argument("--log", default=None, help="log file (default: stderr)")
    parser.add_argument("--background", action="store_true", help="stop writing to stderr once mounted")
    parser.add_argument("--specs", default=None, help="spec pack to serve")
    parser.add_argument("--fallback", default=None, choices=["procedural"], help="for seeds outside the pack")
    parser.add_argument("--audit", default=None, help="append an audit event per listing and read to this file")
    parser.add_argument("--exit-with", type=int, default=None, help="unmount when the process with this pid exits")
    parser.add_argument("--cache-dir", default=None, help="disk cache folder; empty: no disk cache")
    parser.add_argument("--disk-cache-mb", type=int, default=DEFAULT_DISK_CACHE_MB)
    parser.add_argument("--workers", type=int, default=None, help="synthesis processes (0: none; default: cores)")
    parser.add_argument("--no-listing-cache", action="store_true", help="every listing reaches the daemon")
    args = parser.parse_args(argv)
    try:
        seeds = parse_seed_list(args.seeds) if args.seeds.strip() else []
        setup_logging(args.log)
        factory = mount_repositories(args.specs, args.fallback) if args.specs else None
        if factory is not None and not seeds:
            seeds = factory.pack.seeds()  # the root lists the pack's seeds unless --seeds says otherwise
        serve(
            args.mountpoint,
            seeds,
            args.cache_mb,
            detach_stderr=args.background,
            factory=factory,
            audit=args.audit,
            exit_with=args.exit_with,
            cache_dir=args.cache_dir,
            disk_cache_mb=args.disk_cache_mb,
            workers=args.workers,
            cache_listings=not args.no_listing_cache,
        )
    except SgfsError as exc:
        print(f"sgfs: error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
