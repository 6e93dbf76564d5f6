#!/usr/bin/env python3
"""What FUSE_PARALLEL_DIROPS is worth: `ls -lR` of a fresh mount with the kernel allowed to send LOOKUP and
READDIR of one directory in parallel (what sgfs's request loop asks for) against the same daemon whose INIT
reply leaves the flag out (what libfuse 3.14 sends on its own: the kernel then takes a lock per directory
around each LOOKUP and READDIR).

Two walks per seed, interleaved round by round, every mount fresh:
- cold: no disk cache, so each lookup waits for its file's size (the walk is the workers' synthesis);
- disk: over a disk cache that knows every size (`sgfs export` filled it), the seed listed with --seeds.

Both variants start the daemon the same way (`python -c`, in the foreground); the serial one replaces
``sgfs.mount.kernel.loop.with_parallel_dirops`` by the identity before serving, nothing else. Always unmounts.

Usage: python3 scripts/bench_parallel_dirops.py [--seeds 288,118] [--repeat 5]
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_fuse_floor import (  # the same walk, timed the same way
    SGFS,
    ls_seconds,
    run,
    unmount,
    walk_arguments,
    walk_seeds,
)

import generators
from sgfs.errors import SgfsError
from sgfs.mount.control import mount_type

SERIAL = "import sgfs.mount.kernel.loop as loop; loop.with_parallel_dirops = lambda reply, offered: reply; "
DAEMON = "import sys; from sgfs.mount.daemon import main; sys.exit(main(sys.argv[1:]))"


@contextlib.contextmanager
def daemon_mounted(mnt: Path, seed: int, cache: str, parallel: bool) -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    code = DAEMON if parallel else SERIAL + DAEMON
    command = [sys.executable, "-c", code, str(mnt), "--seeds", str(seed), "--cache-dir", cache]
    daemon = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while mount_type(str(mnt)) is None:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not mount {mnt}")
            time.sleep(0.02)
        yield mnt
    finally:
        unmount(mnt)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()


def main() -> None:
    args = walk_arguments(__doc__.splitlines()[0], repeat=5).parse_args()
    seeds = walk_seeds(args)
    print(f"{'seed':>6} {'dirs':>6} {'files':>6} | {'cold par':>8} {'serial':>8} {'gain':>6} | "
          f"{'disk par':>8} {'serial':>8} {'gain':>6}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sgfs-dirops-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        for seed in seeds:
            repo = generators.repository(seed)
            run(*SGFS, "export", seed, work / "export" / str(seed), "--quiet", "--cache-dir", cache)
            times: dict[tuple[str, bool], list[float]] = {}
            for attempt in range(args.repeat):
                for walk, cache_dir in (("cold", ""), ("disk", str(cache))):
                    for parallel in (True, False):
                        where = work / f"mnt-{seed}-{attempt}-{walk}-{parallel}"
                        with daemon_mounted(where, seed, cache_dir, parallel) as mnt:
                            times.setdefault((walk, parallel), []).append(ls_seconds(mnt / str(seed)))
            median = {key: statistics.median(values) for key, values in times.items()}
            cold, cold_serial = median["cold", True], median["cold", False]
            disk, disk_serial = median["disk", True], median["disk", False]
            print(f"{seed:>6} {len(repo.listings):>6} {len(repo.file_paths()):>6} | {cold:>8.3f} "
                  f"{cold_serial:>8.3f} {cold_serial / cold:>6.2f} | {disk:>8.3f} {disk_serial:>8.3f} "
                  f"{disk_serial / disk:>6.2f}")  # fmt: skip
    print()
    print("`ls -lR` seconds, medians of interleaved rounds, each mount fresh; par = the kernel may send LOOKUP and")
    print("READDIR of one directory in parallel (sgfs's INIT reply), serial = the flag left out (libfuse 3.14's")
    print("own reply); gain = serial / par. cold: no disk cache; disk: a disk cache that knows every size.")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
