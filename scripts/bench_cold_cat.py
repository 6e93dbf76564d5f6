#!/usr/bin/env python3
"""Time a cold `cat` of whole repositories on fresh mounts, optionally against another checkout of sgfs.

Each round mounts the seeds afresh without disk cache (`--no-disk-cache`), runs
`find DIR -type f -exec cat {} +` once per seed, and unmounts; with `--against DIR` (the root of another
checkout, with its `sgfs/_fastpages` built in place) the same round follows with that checkout's code first on
PYTHONPATH, so both are measured in turns under the same host load. The floor is the seed's first synthesis in a
fresh, warmed-up process (as in bench_mount.py). Medians over --repeat rounds.

Usage: python3 scripts/bench_cold_cat.py [--seeds 285,28,118] [--repeat 9] [--against ../sgfs-old]
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from bench_fuse_floor import walk_arguments, walk_seeds
from bench_mount import cat_all, mounted, synthesis_alone

from sgfs.errors import SgfsError

MOUNTED_SEEDS = [285, 28, 118, 288]  # what bench_mount.py mounts: the same root listing in both scripts


def main() -> None:
    parser = walk_arguments(__doc__.splitlines()[0], repeat=9)
    parser.set_defaults(seeds="285,28,118")
    parser.add_argument("--against", type=Path, help="root of another sgfs checkout to measure in turns")
    args = parser.parse_args()
    seeds = walk_seeds(args)
    trees = {"this": os.environ.get("PYTHONPATH", "")}
    if args.against is not None:
        if not (args.against / "sgfs" / "__init__.py").is_file():
            raise SystemExit(f"error: --against {args.against}: not the root of an sgfs checkout")
        trees["against"] = str(args.against.resolve())
    cold: dict[tuple[str, int], list[float]] = {(tree, seed): [] for tree in trees for seed in seeds}
    floor: dict[int, list[float]] = {seed: [] for seed in seeds}
    with tempfile.TemporaryDirectory(prefix="sgfs-bench-") as tmp:
        for attempt in range(args.repeat):
            for tree, path in trees.items():
                os.environ["PYTHONPATH"] = path  # the mount command below runs that checkout's code
                listed = list(dict.fromkeys([*MOUNTED_SEEDS, *seeds]))
                with mounted(Path(tmp) / f"{tree}-{attempt}", listed, 256, "--no-disk-cache") as mnt:
                    for seed in seeds:
                        cold[(tree, seed)].append(cat_all(mnt / str(seed)))
            os.environ["PYTHONPATH"] = trees["this"]
            for seed in seeds:
                floor[seed].append(synthesis_alone(seed))
            print(f"round {attempt + 1}/{args.repeat} done", flush=True)
    header = f"{'seed':>6} | {'synth s':>8} | " + " | ".join(f"{tree + ' cat':>11} {'/synth':>7}" for tree in trees)
    print(header)
    print("-" * len(header))
    for seed in seeds:
        synth = statistics.median(floor[seed])
        cells = [
            f"{statistics.median(cold[(tree, seed)]):>11.3f} {statistics.median(cold[(tree, seed)]) / synth:>7.2f}"
            for tree in trees
        ]
        print(f"{seed:>6} | {synth:>8.3f} | " + " | ".join(cells))
    print()
    print("seconds; synth s = the seed's first synthesis in a fresh, warmed-up process; /synth: aim <= 1.30")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
