#!/usr/bin/env python3
"""How fast can a fresh FUSE mount of a repository be walked here? `ls -lR` of a seed three ways, interleaved:

- native: the `sgfs export` copy on local disk (page cache warm);
- floor mt: a minimal FUSE daemon (ctypes over libfuse, the same listing pages as sgfs) whose every
  READDIRPLUS page was packed before mounting, so that a request costs one dictionary lookup and the reply,
  on libfuse's multithreaded loop (several threads read the device; what sgfs ran before its own loop);
- floor 1t: the same daemon on sgfs's request loop (sgfs/mount/kernel/loop.py: one thread receives and answers
  every request): the kernel's, libfuse's and ctypes' share of a walk here;
- sgfs: `sgfs mount --seeds SEED` over a disk cache that knows every size (as a CI run that restored
  --cache-dir: the seed's listing pages are made ready before the mount answers);
- sgfs unlisted: the same without --seeds, so the first listing of the seed builds its pages.

The gap between floor 1t and native is FUSE's own (round trips, inodes created on a fresh mount); the gap
between sgfs and floor 1t is the daemon's (Python and ctypes per request; unlisted, building the pages too).
Mounts with `sgfs mount` or this script's own --serve mode and always unmounts.

Usage: python3 scripts/bench_fuse_floor.py [--seeds 288,118] [--repeat 7]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import generators
from sgfs.errors import SgfsError
from sgfs.mount.control import mount_type
from sgfs.store.repositories import parse_seed_list

SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]
ENV = {**os.environ, "LC_ALL": "C"}
SETTLE_S = 0.5


def serve_floor(mountpoint: str, seed: int, cache: str, loop: str) -> None:
    """The minimal daemon: a seed's listing pages packed before mounting, answered by number."""
    from sgfs.mount.inodes import ROOT_INO, path_ino
    from sgfs.mount.kernel.abi import (
        FUSE_CAP_READDIRPLUS,
        FUSE_CAP_READDIRPLUS_AUTO,
        INIT,
        LOOKUP,
        READ,
        WITH_FILE,
        Args,
        ConnInfo,
        EntryParam,
        LowLevelOps,
        Stat,
        load_libfuse,
    )
    from sgfs.mount.kernel.pages import ListingBook
    from sgfs.mount.operations import DIR_MODE, SgfsFilesystem
    from sgfs.store.diskcache import DiskCache
    from sgfs.store.source import MountSource

    source = MountSource([seed], disk=DiskCache(Path(cache), 1 << 40))
    tree = source.known_tree(seed)
    if tree is None:
        raise SystemExit(f"the disk cache {cache} does not know every size of seed {seed}")
    fs = SgfsFilesystem(source)
    top = f"/{seed}"
    book = ListingBook(top, tree, 86400.0, fs.uid, fs.gid)
    lib = load_libfuse()
    top_ino = path_ino(top)

    def directory_stat(st: Any, ino: int) -> None:
        st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_gid = ino, DIR_MODE, 2, fs.uid, fs.gid

    def init(userdata: int, conn: int) -> None:
        info = ConnInfo.from_address(conn)
        info.want = (info.want | FUSE_CAP_READDIRPLUS) & ~FUSE_CAP_READDIRPLUS_AUTO

    def lookup(req: int, parent: int, name: bytes) -> None:
        if parent != ROOT_INO or name.decode() != str(seed):
            lib.fuse_reply_err(req, errno.ENOENT)  # every other name came with its attributes
            return
        entry = EntryParam(ino=top_ino, attr_timeout=86400.0, entry_timeout=86400.0)
        directory_stat(entry.attr, top_ino)
        lib.fuse_reply_entry(req, ctypes.byref(entry))

    def getattr_(req: int, ino: int, fi: Any) -> None:
        st = Stat()
        directory_stat(st, ino)
        lib.fuse_reply_attr(req, ctypes.byref(st), 86400.0)

    def opendir(req: int, ino: int, fi: Any) -> None:
        lib.fuse_reply_err(req, errno.ENOSYS)  # as sgfs: the kernel keeps listings

    def readdirplus(req: int, ino: int, size: int, offset: int, fi: Any) -> None:
        folder = book.by_number.get(ino)
        if folder is None:
            lib.fuse_reply_err(req, errno.ENOENT)
            return
        page, _ = book.page(folder, offset, size)
        lib.fuse_reply_buf(req, page or None, len(page))

    ops, kept = LowLevelOps(), []
    for name, kind, function in (
        ("init", INIT, init),
        ("lookup", LOOKUP, lookup),
        ("getattr", WITH_FILE, getattr_),
        ("opendir", WITH_FILE, opendir),
        ("readdirplus", READ, readdirplus),
    ):
        callback = kind(function)
        kept.append(callback)
        setattr(ops, name, ctypes.cast(callback, ctypes.c_void_p))
    argv = [b"floor", b"-o", b"ro"]
    args = Args(len(argv), (ctypes.c_char_p * len(argv))(*argv), 0)
    session = lib.fuse_session_new(ctypes.byref(args), ctypes.byref(ops), ctypes.sizeof(ops), None)
    if not session or lib.fuse_session_mount(session, mountpoint.encode()) != 0:
        raise SystemExit(f"cannot mount {mountpoint}")
    lib.fuse_set_signal_handlers(session)
    try:
        if loop == "mt" and hasattr(lib, "fuse_session_loop_mt_312"):  # libfuse >= 3.12
            lib.fuse_loop_cfg_create.argtypes, lib.fuse_loop_cfg_create.restype = [], ctypes.c_void_p
            lib.fuse_session_loop_mt_312.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.fuse_session_loop_mt_312(session, lib.fuse_loop_cfg_create())
        else:  # sgfs's own loop: one thread reads and dispatches, keeping the GIL across its callbacks
            from sgfs.mount.kernel.loop import RequestLoop

            RequestLoop(lib).run(session)
    finally:
        lib.fuse_remove_signal_handlers(session)
        lib.fuse_session_unmount(session)
        lib.fuse_session_destroy(session)


def run(*command: object) -> None:
    result = subprocess.run(list(map(str, command)), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed: {result.stderr.strip()}")


def ls_seconds(root: Path) -> float:
    time.sleep(SETTLE_S)  # every variant starts from the same idle state, the daemon past its start-up
    start = time.perf_counter()
    subprocess.run(["ls", "-lR", str(root)], check=True, env=ENV, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def unmount(mnt: Path) -> None:
    tool = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"
    if mount_type(str(mnt)) is not None:
        subprocess.run([tool, "-u", str(mnt)], check=False)
    if mount_type(str(mnt)) is not None:
        subprocess.run([tool, "-uz", str(mnt)], check=False)


@contextlib.contextmanager
def floor_mounted(mnt: Path, seed: int, cache: Path, loop: str) -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    script = str(Path(__file__).resolve())
    daemon = subprocess.Popen([sys.executable, script, "--serve", str(mnt), str(seed), str(cache), loop])
    try:
        deadline = time.monotonic() + 30
        while mount_type(str(mnt)) is None:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the floor daemon did not mount")
            time.sleep(0.02)
        yield mnt
    finally:
        unmount(mnt)
        daemon.wait(timeout=30)


@contextlib.contextmanager
def sgfs_mounted(mnt: Path, seed: int, cache: Path, listed: bool) -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        run(*SGFS, "mount", mnt, *(["--seeds", seed] if listed else []), "--cache-dir", cache)
        yield mnt
    finally:
        unmount(mnt)


def walk_arguments(description: str, repeat: int) -> argparse.ArgumentParser:
    """The options of a script that walks seeds in interleaved rounds (see ``walk_seeds``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", default="288,118", help="seed list (1-3,118)")
    parser.add_argument("--repeat", type=int, default=repeat, help="interleaved rounds; medians")
    return parser


def walk_seeds(args: argparse.Namespace) -> list[int]:
    """The seeds to walk, once --repeat is checked."""
    if args.repeat < 1:
        raise SystemExit("--repeat must be 1 or more")
    return parse_seed_list(args.seeds)


def main() -> None:
    parser = walk_arguments(__doc__.splitlines()[0], repeat=7)
    parser.add_argument("--serve", nargs=4, metavar=("MNT", "SEED", "CACHE", "LOOP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_floor(args.serve[0], int(args.serve[1]), args.serve[2], args.serve[3])
        return
    seeds = walk_seeds(args)
    print(f"{'seed':>6} {'dirs':>6} {'files':>6} | {'native':>7} {'floor mt':>8} {'floor 1t':>8} {'sgfs':>7} "
          f"{'unlisted':>8} | {'mt/nat':>7} {'1t/nat':>7} {'sgfs/nat':>9} {'unl/nat':>8} {'sgfs/1t':>8}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sgfs-floor-") as tmp:
        work = Path(tmp)
        for seed in seeds:
            repo = generators.repository(seed)
            local, cache = work / "export" / str(seed), work / "cache"
            run(*SGFS, "export", seed, local, "--quiet", "--cache-dir", cache)  # fills the size index too
            times: dict[str, list[float]] = {"native": [], "mt": [], "1t": [], "sgfs": [], "unlisted": []}
            for attempt in range(args.repeat):
                times["native"].append(ls_seconds(local))
                for loop in ("mt", "1t"):
                    with floor_mounted(work / f"floor-{loop}-{seed}-{attempt}", seed, cache, loop) as mnt:
                        times[loop].append(ls_seconds(mnt / str(seed)))
                for listed, key in ((True, "sgfs"), (False, "unlisted")):
                    with sgfs_mounted(work / f"{key}-{seed}-{attempt}", seed, cache, listed) as mnt:
                        times[key].append(ls_seconds(mnt / str(seed)))
            native, floor, single, ours, unlisted = (
                statistics.median(times[k]) for k in ("native", "mt", "1t", "sgfs", "unlisted")
            )
            print(f"{seed:>6} {len(repo.listings):>6} {len(repo.file_paths()):>6} | {native:>7.3f} {floor:>8.3f} "
                  f"{single:>8.3f} {ours:>7.3f} {unlisted:>8.3f} | {floor / native:>7.2f} {single / native:>7.2f} "
                  f"{ours / native:>9.2f} {unlisted / native:>8.2f} {ours / single:>8.2f}")  # fmt: skip
    print()
    print("`ls -lR` seconds, medians of interleaved rounds, each mount fresh; floor = a FUSE daemon with every")
    print("listing page packed before mounting, on libfuse's multithreaded loop (mt) or sgfs's request loop (1t):")
    print("the kernel's and libfuse's share; sgfs = `sgfs mount --seeds SEED` over a disk cache that knows every")
    print("size; unlisted = the same mount without --seeds (the first listing builds the seed's pages).")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
