#!/usr/bin/env python3
"""What answering listing pages in C is worth for `ls -lR` of a fresh mount over a warm disk cache.

The walk with the request reader of sgfs/_fastpages.c (the default where it is built) and with every page
answered from Python (SGFS_PAGES_IN_C=0), next to the same walk of an exported copy on local disk.

Interleaved round by round, every mount fresh, each seed listed with --seeds over a disk cache that knows every
size (`sgfs export` filled it), so every READDIRPLUS of the walk is a page of a listing book. Always unmounts.

Usage: python3 scripts/bench_pages_in_c.py [--seeds 288,118,28] [--repeat 9]
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench_fuse_floor import SGFS, ls_seconds, run, unmount, walk_arguments, walk_seeds

import generators
from sgfs.errors import SgfsError
from sgfs.fast_pages import ENV_SWITCH, load_reader


@contextlib.contextmanager
def mounted(mnt: Path, seed: int, cache: Path, in_c: bool) -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **{ENV_SWITCH: "1" if in_c else "0"})
    command = [*SGFS, "mount", str(mnt), "--seeds", str(seed), "--cache-dir", str(cache)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0:
            raise SystemExit(f"sgfs mount failed: {result.stderr.strip()}")
        yield mnt
    finally:
        unmount(mnt)


def main() -> None:
    args = walk_arguments(__doc__.splitlines()[0], repeat=9).parse_args()
    seeds = walk_seeds(args)
    if load_reader() is None:
        raise SystemExit("error: the reader is not built (no C compiler at install?): nothing to compare")
    print(f"{'seed':>6} {'dirs':>6} {'files':>6} | {'native':>7} {'in C':>7} {'Python':>7} | "
          f"{'C/nat':>6} {'Py/nat':>6} {'gain':>6}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sgfs-pages-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        for seed in seeds:
            repo = generators.repository(seed)
            local = work / "export" / str(seed)
            run(*SGFS, "export", seed, local, "--quiet", "--cache-dir", cache)  # fills the size index too
            times: dict[str, list[float]] = {"native": [], "c": [], "py": []}
            for attempt in range(args.repeat):
                times["native"].append(ls_seconds(local))
                for in_c, key in ((True, "c"), (False, "py")):
                    with mounted(work / f"{key}-{seed}-{attempt}", seed, cache, in_c) as mnt:
                        times[key].append(ls_seconds(mnt / str(seed)))
            native, in_c_s, python_s = (statistics.median(times[k]) for k in ("native", "c", "py"))
            print(f"{seed:>6} {len(repo.listings):>6} {len(repo.file_paths()):>6} | {native:>7.3f} {in_c_s:>7.3f} "
                  f"{python_s:>7.3f} | {in_c_s / native:>6.2f} {python_s / native:>6.2f} "
                  f"{python_s / in_c_s:>6.2f}")  # fmt: skip
    print()
    print("`ls -lR` seconds, medians of interleaved rounds, each mount fresh over a disk cache that knows every")
    print("size; native = the exported copy on local disk; in C = listing pages answered by sgfs/_fastpages.c,")
    print("Python = the same mount with SGFS_PAGES_IN_C=0; gain = Python / in C.")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
