#!/usr/bin/env python3
"""Per-file synthesis cost in one process: what a cold `ls -l` (size) and a cold `cat` (bytes) pay per file.

For each seed: the spec and tree build, then for every data file the exact size (``Repository.size``, from the
cell texts), the same in batches as a pool worker measures them (``Repository.sizes``), and the full bytes
(``Repository.read``), each on a fresh table (nothing cached between them).
Prints per-file milliseconds of CPU time (``time.process_time``: steadier than wall time on a shared
machine) and totals; ``--profile`` prints the top of a cProfile of the size and read passes.

``--mess LEVEL`` measures the messy repositories of that level (``--mess``; 0 is the clean repository), whose files
are written to be measured: compare a level with 0 in paired runs.

Usage: python3 scripts/bench_synth.py [--seeds 288,279,118,28] [--limit N] [--repeat 3] [--batch 4] [--mess LEVEL]
       [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable

from generators import Repository, build_spec
from generators.paths import README_NAME
from generators.spec import World


def _timed(func: Callable[[], object]) -> float:
    start = time.process_time()
    func()
    return time.process_time() - start


def _batched_sizes(repo: Repository, paths: list[str], batch: int) -> float:
    """``Repository.sizes`` over batches of ``batch`` paths, as a pool worker measures a prefetch batch."""
    if not hasattr(repo, "sizes"):  # an older generator: one by one
        return _pass(repo, paths, True)
    start = time.process_time()
    for first in range(0, len(paths), batch):
        repo.sizes(paths[first : first + batch])
    return time.process_time() - start


def _pass(repo: Repository, paths: list[str], sizes_only: bool) -> float:
    start = time.process_time()
    step = repo.size if sizes_only else repo.read
    for path in paths:
        step(path)
    return time.process_time() - start


def bench_seed(seed: int, limit: int | None, repeat: int, profile: bool, batch: int, mess: int = 0) -> None:
    repo: Repository | None = None

    def build() -> None:
        nonlocal repo
        repo = Repository(build_spec(seed, world=World(mess=mess)))
        repo.tree.file_paths  # noqa: B018  (the tree's path list is part of the build)

    build_s = min(_timed(build) for _ in range(repeat))
    assert repo is not None
    paths = [p for p in repo.file_paths() if p != README_NAME][:limit]
    size_s = min(_pass(repo, paths, True) for _ in range(repeat))
    read_s = min(_pass(repo, paths, False) for _ in range(repeat))
    batch_s = min(_batched_sizes(repo, paths, batch) for _ in range(repeat))
    n = len(paths)
    print(
        f"{seed:>6} {repo.spec.extension:>5} {n:>6} {build_s * 1e3:>9.1f} "
        f"{size_s / n * 1e3:>11.3f} {batch_s / n * 1e3:>11.3f} {read_s / n * 1e3:>11.3f} "
        f"{size_s:>9.2f} {read_s:>9.2f}",
        flush=True,
    )
    if profile:
        for sizes_only in (True, False):
            profiler = cProfile.Profile()
            profiler.enable()
            _pass(repo, paths, sizes_only)
            profiler.disable()
            print(f"--- seed {seed} {'size' if sizes_only else 'read'} profile")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", default="288,279,118,28")
    parser.add_argument("--limit", type=int, default=None, help="files per seed (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="passes per measure; the fastest counts")
    parser.add_argument("--batch", type=int, default=4, help="paths per Repository.sizes call (a pool batch)")
    parser.add_argument("--mess", type=int, default=0, choices=range(4), help="messiness level (0: clean)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    heads = ("seed", "ext", "files", "build ms", "size ms/f", "sizes ms/f", "read ms/f", "size s", "read s")
    widths = (6, 5, 6, 9, 11, 11, 11, 9, 9)
    print(" ".join(f"{head:>{width}}" for head, width in zip(heads, widths, strict=True)))
    for seed in (int(s) for s in args.seeds.split(",")):
        bench_seed(seed, args.limit, args.repeat, args.profile, args.batch, args.mess)


if __name__ == "__main__":
    main()
