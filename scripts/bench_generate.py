#!/usr/bin/env python3
"""Benchmark the simulator: spec + tree per seed, tree expansion, synthesis and encoding per format.

Prints a table; compares per-file synthesis with reading the same bytes back from a file on disk.
Usage: python3 scripts/bench_generate.py [--seeds 200] [--repeat 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace

from generators import Repository
from generators.builders.procedural import build_spec
from generators.encoders import encode
from generators.paths import Tree
from generators.spec import EXTENSIONS
from generators.synth import synthesize


def timed(func: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="seeds 1..N for spec + tree timing")
    parser.add_argument("--repeat", type=int, default=200, help="repetitions per format")
    args = parser.parse_args()

    build_spec(0)  # load data files once, as a long-running daemon would
    spec_tree, largest = [], (0, 0)
    for seed in range(1, args.seeds + 1):
        start = time.perf_counter()
        tree = Tree(build_spec(seed))
        spec_tree.append(time.perf_counter() - start)
        largest = max(largest, (tree.n_files, seed))
    tree = Tree(build_spec(largest[1]))
    start = time.perf_counter()
    paths = list(tree.file_paths)
    expand = time.perf_counter() - start

    print(f"{'measure':<44}{'value':>14}")
    print("-" * 58)
    print(f"{f'spec + tree per seed, p50 ({args.seeds} seeds)':<44}{percentile(spec_tree, 50) * 1e3:>11.2f} ms")
    print(f"{f'spec + tree per seed, p95 ({args.seeds} seeds)':<44}{percentile(spec_tree, 95) * 1e3:>11.2f} ms")
    print(f"{f'tree expansion, seed {largest[1]} ({len(paths)} files)':<44}{expand * 1e3:>11.2f} ms")

    # A typical file: 160 rows, 12 columns.
    seed = next(s for s in range(1, 1000) if len(build_spec(s).variables) == 12)
    repository = Repository(build_spec(seed))
    path = repository.tree.file_paths[0]
    values = repository.tree.placeholder_values(int(repository.tree.indices[0]))
    spec = repository.spec
    synth = timed(lambda: synthesize(spec, path, values, rows=160), args.repeat)
    table = synthesize(spec, path, values, rows=160)
    print(f"{f'synthesis of a typical table (seed {seed})':<44}{synth * 1e3:>11.3f} ms")
    print()
    names = ("format", "bytes", "encode ms", "synth+enc ms", "MB/s", "disk read ms", "ratio")
    header = "".join(
        f"{n:<8}" if i == 0 else f"{n:>{w}}"
        for i, (n, w) in enumerate(zip(names, (8, 9, 11, 14, 9, 14, 8), strict=True))
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as scratch:
        for extension in EXTENSIONS:
            spec_x = replace(spec, extension=extension)
            content = encode(table, extension)
            encode_time = timed(lambda ext=extension: encode(table, ext), args.repeat)
            total = timed(
                lambda s=spec_x, ext=extension: encode(synthesize(s, path, values, rows=160), ext),
                args.repeat,
            )
            target = os.path.join(scratch, f"file.{extension}")
            with open(target, "wb") as handle:
                handle.write(content)

            def read_back(name: str = target) -> bytes:
                with open(name, "rb") as handle:
                    return handle.read()

            disk = timed(read_back, args.repeat)
            mb_s = len(content) / total / 1e6
            print(
                f"{extension:<8}{len(content):>9}{encode_time * 1e3:>11.3f}{total * 1e3:>14.3f}"
                f"{mb_s:>9.1f}{disk * 1e3:>14.4f}{total / disk:>7.0f}x"
            )
    print("\nsynth+enc: bytes generated from the spec (cold);")
    print("disk read: the same bytes from a local file (warm page cache).")


if __name__ == "__main__":
    main()
