#!/usr/bin/env python3
"""Time a cold `cat` of whole repositories on fresh mounts, optionally against another checkout of sgfs.

Each round mounts the seeds afresh without disk cache (`--no-disk-cache`), runs
`find DIR -type f -exec cat {} +` once per seed, and unmounts; with `--against DIR` (the root of another
checkout) the same round also runs that checkout's code first on PYTHONPATH, the two in alternating order,
so both are measured in turns under the same host load. The floor is the seed's first synthesis in a fresh,
warmed-up process (as in bench_mount.py); "native" is the same command on an `sgfs export` copy on local
disk: the tools' own time, which a cold `cat` pays on top of the work. Medians over --repeat rounds, with
the quartiles; with --against, in how many rounds this checkout was the faster of the two (on a noisy host
a difference is real only when that count is far from half).

Usage: python3 scripts/bench_cold_cat.py [--seeds 285,28,118] [--repeat 9] [--against ../sgfs-old]
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from bench_fuse_floor import walk_arguments, walk_seeds
from bench_mount import cat_all, mounted, sgfs, synthesis_alone

from sgfs.errors import SgfsError

MOUNTED_SEEDS = [285, 28, 118, 288]  # what bench_mount.py mounts: the same root listing in both scripts


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile (one value: itself three times)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4)
    return low, middle, high


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
    native: dict[int, list[float]] = {seed: [] for seed in seeds}
    with tempfile.TemporaryDirectory(prefix="sgfs-bench-") as tmp:
        for seed in seeds:
            sgfs("export", seed, Path(tmp) / "export" / str(seed), "--quiet")
        for attempt in range(args.repeat):
            # Alternating order: neither checkout always runs right after the floor's subprocesses.
            order = list(trees.items()) if attempt % 2 == 0 else list(reversed(trees.items()))
            for tree, path in order:
                os.environ["PYTHONPATH"] = path  # the mount command below runs that checkout's code
                listed = list(dict.fromkeys([*MOUNTED_SEEDS, *seeds]))
                with mounted(Path(tmp) / f"{tree}-{attempt}", listed, 256, "--no-disk-cache") as mnt:
                    for seed in seeds:
                        cold[(tree, seed)].append(cat_all(mnt / str(seed)))
            os.environ["PYTHONPATH"] = trees["this"]
            for seed in seeds:
                floor[seed].append(synthesis_alone(seed))
                native[seed].append(cat_all(Path(tmp) / "export" / str(seed)))
            print(f"round {attempt + 1}/{args.repeat} done", flush=True)
    header = f"{'seed':>6} | {'synth s':>8} {'native':>7} | " + " | ".join(
        f"{tree + ' cat':>11} {'q1-q3':>13} {'/synth':>7}" for tree in trees
    )
    if "against" in trees:
        header += " | this faster"
    print(header)
    print("-" * len(header))
    for seed in seeds:
        synth = statistics.median(floor[seed])
        cells = []
        for tree in trees:
            low, middle, high = quartiles(cold[(tree, seed)])
            cells.append(f"{middle:>11.3f} {f'{low:.3f}-{high:.3f}':>13} {middle / synth:>7.2f}")
        line = f"{seed:>6} | {synth:>8.3f} {statistics.median(native[seed]):>7.3f} | " + " | ".join(cells)
        if "against" in trees:
            wins = sum(a < b for a, b in zip(cold[("this", seed)], cold[("against", seed)], strict=True))
            line += f" | {wins:>4}/{args.repeat}"
        print(line)
    print()
    print("seconds; synth s = the seed's first synthesis in a fresh, warmed-up process; native = the same `cat`")
    print("on a local copy (the tools alone); /synth = median cold cat over synth s (aim <= 1.30); q1-q3 = its")
    print("quartiles over the rounds; this faster = rounds in which this checkout's cat was the faster of the two")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
