"""The mount daemon: ``python -m sgfs.mount.daemon MNT --seeds ...`` serves repositories at MNT until unmounted.

``sgfs mount`` starts this module as a detached process (``sgfs.mount.control.start_daemon``) or calls ``serve``
in-process with ``--foreground``. It checks that FUSE is usable and the mount point is fit, sets up logging, and
serves libfuse's low-level API from its own request loop (``sgfs.mount.kernel``). libfuse installs the
SIGINT/SIGTERM/SIGHUP handlers (fuse_set_signal_handlers, for signals left at SIG_DFL): a signal ends the loop,
then the mount is undone before ``serve`` returns, so no Python handler is needed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import generators
from generators import Repository
from generators.spec import World
from sgfs.errors import SgfsError
from sgfs.mount.control import FSNAME, check_fuse, check_mount_point
from sgfs.mount.options import MountOptions
from sgfs.store.diskcache import DiskCache, default_cache_dir
from sgfs.store.repositories import keyed_procedural, load_key, mount_repositories
from sgfs.store.source import MIB, MountSource
from sgfs.store.synthpool import SynthesisPool

log = logging.getLogger("sgfs.mount")

TIMEOUT_S = 3600  # attribute, entry and negative-lookup cache lifetime in the kernel: content never changes


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


# How long a mount may spend, before it answers, making the listings of listed seeds ready from the disk cache.
PREPARE_BUDGET_S = 0.5


def _detach_stderr() -> None:
    """Once the mount is up, stop writing to the startup-error file ``sgfs mount`` gave us as stderr."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def serve(
    mountpoint: str,
    options: MountOptions,
    *,
    detach_stderr: bool = False,
    factory: Callable[[int], Repository] | None = None,
) -> None:
    """Mount and serve until unmounted (``sgfs unmount``, fusermount3 -u, SIGINT/SIGTERM/SIGHUP).

    With ``options.audit_file`` (a file outside the mount), every directory listing and file read is appended
    there with the caller's session (docs/eval.md), and the kernel keeps no page cache across opens, so that
    every open and the reads after it reach the daemon. ``factory`` replaces the one ``options`` names (tests)."""
    check_fuse()
    mnt = check_mount_point(mountpoint)
    options = options.checked(mnt)
    seeds = list(options.seeds)
    key = load_key(options.key_file, warn=False)  # `sgfs mount` has warned already
    if factory is None and options.specs is not None:
        pack = mount_repositories(options.specs, options.fallback, key)
        factory = pack
        seeds = seeds or pack.pack.seeds()  # the root lists the pack's seeds unless --seeds says otherwise
    elif factory is None and (key is not None or options.counterfactual or options.mess):
        factory = keyed_procedural(key, World(counterfactual=options.counterfactual, mess=options.mess))
    workers, cache_dir = options.workers, options.cache_dir
    from sgfs.mount.audit import AuditedFilesystem, AuditSink
    from sgfs.mount.kernel.pages import ListingBook
    from sgfs.mount.kernel.session import LowLevelMount  # ctypes over libfuse: only once FUSE works
    from sgfs.mount.operations import SgfsFilesystem

    # Build one repository and one listing book before mounting: the modules, data files and code paths they
    # load on first use are then not paid by the agent's first `ls`.
    warm = generators.repository(0)
    ListingBook("/0", {"": [(name, is_dir, 0, 1) for name, is_dir in warm.listings[""]]}, TIMEOUT_S, 0, 0)
    if workers == 0:  # files are synthesised here: load what a first synthesis of each format loads
        generators.warm_up()
    # --cache-dir "" (--no-disk-cache) turns the disk cache off; workers=0 the process pool.
    disk = None if cache_dir == "" else DiskCache(Path(cache_dir or default_cache_dir()), options.disk_cache_mb * MIB)
    pool = SynthesisPool(workers) if workers != 0 else None
    if pool is not None:
        pool.warm(timeout=30)  # before the mount answers, so the first cold requests find the workers up
    source = MountSource(
        seeds, cache_bytes=options.cache_mb * MIB, factory=factory or generators.repository, disk=disk, pool=pool
    )
    on_init = _detach_stderr if detach_stderr else None
    fs: SgfsFilesystem
    if options.audit_file is not None:
        # An audited mount must see every listing, open and read: the kernel caches none of them there.
        fs = AuditedFilesystem(source, AuditSink.open(options.audit_file), on_init)
    else:
        fs = SgfsFilesystem(source, on_init, cache_listings=options.cache_listings)
    # Mount options only: the daemon stays in the foreground (`sgfs mount` detaches it itself), runs its own
    # request loop, and sets cache lifetimes in each reply (TIMEOUT_S: content never changes).
    fuse_options = ["ro", "default_permissions", f"fsname={FSNAME}", f"subtype={FSNAME}"]
    if threading.current_thread() is threading.main_thread():
        # libfuse only installs its exit handlers on signals left at SIG_DFL.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    log.info("serving %s (seeds listed: %d, cache %d MiB, pid %d)", mnt, len(seeds), options.cache_mb, os.getpid())
    if options.exit_with is not None:
        _watch_owner(options.exit_with)
    try:
        mount = LowLevelMount(fs, TIMEOUT_S)
        if disk is not None and seeds:
            mount.prepare(list(seeds), PREPARE_BUDGET_S)
        mount.serve(mnt, fuse_options)
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
    mountpoint, options, background = MountOptions.from_argv(sys.argv[1:] if argv is None else argv)
    try:
        setup_logging(options.log_file)
        serve(mountpoint, options, detach_stderr=background)
    except SgfsError as exc:
        print(f"sgfs: error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
