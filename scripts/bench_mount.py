#!/usr/bin/env python3
"""Benchmark the FUSE mount against the same bytes exported to a local directory.

For each seed: `find DIR -type f -exec cat {} +` cold (first touch, synthesis included, no disk cache) and
warm, `ls -lR DIR` cold and warm, both again on a fresh mount over a disk cache a previous mount filled;
each on the mount and on an `sgfs export` copy of the repository on local disk (page cache warm), as a ratio;
plus synthesis alone (build the repository and read every file in one process, no cache), the floor for a cold
read: the first synthesis of the seed in a fresh process warmed up as a mount's workers are (what a cold mount
does), and, for comparison, the same again in a process that has synthesised the seed before.
Mounts with `sgfs mount` and always unmounts.

Usage: python3 scripts/bench_mount.py [--seeds auto | 285,118,279] [--cache-mb 256]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import generators
from sgfs.errors import SgfsError
from sgfs.mount.control import mount_type
from sgfs.store.repositories import parse_seed_list

SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]
T = TypeVar("T")
ENV = {**os.environ, "LC_ALL": "C"}


def sgfs(*args: object) -> None:
    result = subprocess.run([*SGFS, *map(str, args)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"sgfs {' '.join(map(str, args))} failed: {result.stderr.strip()}")


def shell_seconds(command: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, shell=True, check=True, env=ENV, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_of(func: Callable[[T], float], arg: T, repeat: int = 3) -> float:
    return statistics.median(func(arg) for _ in range(repeat))


def cat_all(root: Path) -> float:
    return shell_seconds(f"find '{root}' -type f -exec cat {{}} + > /dev/null")


def ls_all(root: Path) -> float:
    return shell_seconds(f"ls -lR '{root}' > /dev/null")


def synthesis_again(seed: int) -> float:
    """Build and read every file in this process, which may have synthesised the seed before."""
    start = time.perf_counter()
    repo = generators.repository(seed)
    for path in repo.file_paths():
        repo.read(path)
    return time.perf_counter() - start


FIRST_SYNTHESIS = """
import sys, time
import generators
generators.warm_up()  # the state of a mount's synthesis workers when the first request comes
start = time.perf_counter()
repo = generators.repository(int(sys.argv[1]))
for path in repo.file_paths():
    repo.read(path)
print(time.perf_counter() - start)
"""


def synthesis_alone(seed: int) -> float:
    """The seed's first synthesis, in a fresh process warmed up on other seeds: the same work a cold mount does
    (a repeat in one process finds the seed's parsed expressions and encoded categories cached)."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_SYNTHESIS, str(seed)], capture_output=True, text=True, check=True, env=ENV
    )
    return float(done.stdout.strip())


@contextlib.contextmanager
def mounted(mnt: Path, seeds: list[int], cache_mb: int, *options: object) -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        sgfs("mount", mnt, "--seeds", ",".join(map(str, seeds)), "--cache-mb", cache_mb, *options)
        yield mnt
    finally:
        if mount_type(str(mnt)) is not None:
            with contextlib.suppress(SystemExit):
                sgfs("unmount", mnt)
        if mount_type(str(mnt)) is not None:  # last resort: never leave a mount behind
            tool = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"
            subprocess.run([tool, "-uz", str(mnt)], check=False)


def auto_seeds(scan: int = 300) -> list[int]:
    """A tiny repository, a mid-sized one, seed 118, and the one closest to 2 000 files."""
    counts = {s: len(generators.repository(s).file_paths()) for s in range(1, scan + 1)}
    tiny = min(counts, key=lambda s: counts[s])
    mid = min(counts, key=lambda s: abs(counts[s] - 150))
    big = min(counts, key=lambda s: abs(counts[s] - 2000))
    return list(dict.fromkeys([tiny, mid, 118, big]))


@dataclass
class Row:
    seed: int
    ext: str
    files: int
    megabytes: float
    synth: float
    synth_again: float
    cold_cat: float = 0.0
    warm_cat: float = 0.0
    native_cat: float = 0.0
    cold_ls: float = 0.0
    first_ls: float = 0.0
    warm_ls: float = 0.0
    native_ls: float = 0.0
    disk_ls: float = 0.0  # a fresh mount whose disk cache a previous mount filled
    disk_cat: float = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="auto", help="seed list (1-3,118) or 'auto'")
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (cold: fresh mounts); median")
    args = parser.parse_args()
    seeds = auto_seeds() if args.seeds == "auto" else parse_seed_list(args.seeds)
    generators.warm_up()  # load what a first synthesis loads, as the long-running daemon's workers have

    rows: dict[int, Row] = {}
    with tempfile.TemporaryDirectory(prefix="sgfs-bench-") as tmp:
        work = Path(tmp)
        for seed in seeds:
            repo = generators.repository(seed)
            local = work / "export" / str(seed)
            sgfs("export", seed, local, "--quiet")
            size = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
            synth = median_of(synthesis_alone, seed, args.repeat)
            again = median_of(synthesis_again, seed, args.repeat)
            rows[seed] = Row(seed, repo.spec.extension, len(repo.file_paths()), size / 1e6, synth, again)
            rows[seed].native_cat = median_of(cat_all, local)
            rows[seed].native_ls = median_of(ls_all, local)
        # Cold figures need a fresh mount each time: the median over --repeat fresh mounts per measure.
        cold_cat: dict[int, list[float]] = {s: [] for s in seeds}
        cold_ls: dict[int, list[float]] = {s: [] for s in seeds}
        first_ls: dict[int, list[float]] = {s: [] for s in seeds}
        plain_starts: list[float] = []
        for attempt in range(args.repeat):
            start = time.perf_counter()
            with mounted(work / f"mnt-cat-{attempt}", seeds, args.cache_mb, "--no-disk-cache") as mnt:
                plain_starts.append(time.perf_counter() - start)
                for seed in seeds:
                    cold_cat[seed].append(cat_all(mnt / str(seed)))
                    if attempt == 0:
                        rows[seed].warm_cat = median_of(cat_all, mnt / str(seed))
            with mounted(work / f"mnt-ls-{attempt}", seeds, args.cache_mb, "--no-disk-cache") as mnt:
                for seed in seeds:
                    cold_ls[seed].append(ls_all(mnt / str(seed)))
                    if attempt == 0:
                        rows[seed].warm_ls = median_of(ls_all, mnt / str(seed))
            # The default configuration on a fresh machine: the disk cache on, and empty.
            with mounted(
                work / f"mnt-first-{attempt}", seeds, args.cache_mb, "--cache-dir", work / f"empty-{attempt}"
            ) as mnt:
                for seed in seeds:
                    first_ls[seed].append(ls_all(mnt / str(seed)))
        for seed in seeds:
            rows[seed].cold_cat = statistics.median(cold_cat[seed])
            rows[seed].cold_ls = statistics.median(cold_ls[seed])
            rows[seed].first_ls = statistics.median(first_ls[seed])
        # Warm disk cache (as a CI run that restored --cache-dir): filled once, then fresh mounts over it.
        cache = work / "disk-cache"
        with mounted(work / "mnt-fill", seeds, args.cache_mb, "--cache-dir", cache) as mnt:
            for seed in seeds:
                cat_all(mnt / str(seed))
        disk_ls: dict[int, list[float]] = {s: [] for s in seeds}
        disk_cat: dict[int, list[float]] = {s: [] for s in seeds}
        disk_starts: list[float] = []
        for attempt in range(args.repeat):
            start = time.perf_counter()
            with mounted(work / f"mnt-disk-{attempt}", seeds, args.cache_mb, "--cache-dir", cache) as mnt:
                disk_starts.append(time.perf_counter() - start)
                for seed in seeds:
                    disk_ls[seed].append(ls_all(mnt / str(seed)))
                    disk_cat[seed].append(cat_all(mnt / str(seed)))
        for seed in seeds:
            rows[seed].disk_ls = statistics.median(disk_ls[seed])
            rows[seed].disk_cat = statistics.median(disk_cat[seed])

    header = (
        f"{'seed':>6} {'ext':>5} {'files':>6} {'MB':>6} | {'synth s':>8} {'again':>7} {'cold cat':>9} {'/synth':>7} "
        f"{'/native':>8} | {'warm cat':>9} {'native':>8} {'ratio':>6} | {'cold ls':>8} {'warm ls':>8} "
        f"{'native':>8} {'ratio':>6} {'1st ls':>7} | {'disk ls':>8} {'ratio':>6} {'disk cat':>9} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows.values():
        print(
            f"{r.seed:>6} {r.ext:>5} {r.files:>6} {r.megabytes:>6.1f} | {r.synth:>8.3f} {r.synth_again:>7.3f} "
            f"{r.cold_cat:>9.3f} "
            f"{r.cold_cat / r.synth:>7.2f} {r.cold_cat / r.native_cat:>8.1f} | {r.warm_cat:>9.3f} "
            f"{r.native_cat:>8.3f} {r.warm_cat / r.native_cat:>6.2f} | {r.cold_ls:>8.3f} {r.warm_ls:>8.3f} "
            f"{r.native_ls:>8.3f} {r.warm_ls / r.native_ls:>6.2f} {r.first_ls:>7.3f} | "
            f"{r.disk_ls:>8.3f} {r.disk_ls / r.native_ls:>6.2f} "
            f"{r.disk_cat:>9.3f} {r.disk_cat / r.native_cat:>6.2f}"
        )
    print()
    print("times in seconds; native = the `sgfs export` copy on local disk (page cache warm);")
    print("synth s = the seed's first synthesis in a fresh, warmed-up process; again = a repeat in this one;")
    print("/synth = cold cat over synth s (aim <= 1.30); warm ratio = mount / native (aim <= 3);")
    print("cold ls = first `ls -lR` of a fresh mount without disk cache (every file synthesised for its size);")
    print("1st ls = the same with the default configuration of a first mount: the disk cache on, and empty;")
    print("disk ls / disk cat = first `ls -lR` / cat of a fresh mount over a disk cache a previous mount filled.")
    print(
        f"`sgfs mount` until it answers (median): {statistics.median(plain_starts):.3f} s without disk cache, "
        f"{statistics.median(disk_starts):.3f} s over the filled one (listings of the listed seeds made ready)."
    )


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
