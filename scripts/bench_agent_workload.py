#!/usr/bin/env python3
"""Time what agents do on a repository, on the mount (cold, warm, warm disk cache) and on an exported copy.

The fixed script of steps, per seed: list the root (`ls -la`), `find -type f | head`, `ls -la` of the
largest directory, `head -40` of five files, `wc -l` of every file of that directory, pandas reads of
three files, `du -sh` of the repository. Conditions:
  cold       a fresh mount without disk cache (`--no-disk-cache`): everything synthesised on demand;
  warm       the same mount, the script run a second time;
  disk-warm  a fresh mount whose disk cache a previous mount filled (`--cache-dir`, as CI restores it);
  native     the `sgfs export` copy on local disk, page cache warm.
Seeds (auto): the repository with the fewest files, one of typical size per format, and the one with the
most files below --max-files, among seeds 1..--scan.

Usage: python3 scripts/bench_agent_workload.py [--seeds auto | 285,28,288] [--scan 300]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_mount import ENV, mounted, sgfs

import generators
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list

Step = tuple[str, Callable[[Path], float]]
STEP_NAMES = ("ls root", "find | head", "ls largest dir", "head -40 x5", "wc -l dir", "pandas x3", "du -sh")


def shell(command: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, shell=True, check=True, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def largest_dir(repo: generators.Repository) -> str:
    """The directory with the most entries ('' is the root)."""
    folders: dict[str, int] = {}
    for path in repo.file_paths():
        parent = path.rpartition("/")[0]
        folders[parent] = folders.get(parent, 0) + 1
    return max(sorted(folders), key=lambda f: folders[f])


def pandas_read(path: Path, extension: str) -> None:
    import pandas as pd

    if extension == "csv":
        pd.read_csv(path)
    elif extension == "txt":
        pd.read_csv(path, sep="\t")
    elif extension == "json":
        pd.read_json(path)
    elif extension == "jsonl":
        pd.read_json(path, lines=True)
    elif extension == "xlsx":
        pd.read_excel(path)
    else:  # log lines: one text column, as an agent would start
        pd.read_csv(path, sep="\x01", header=None)


def steps(seed: int) -> list[Step]:
    repo = generators.repository(seed)
    ext = repo.spec.extension
    data = [p for p in repo.file_paths() if p.endswith("." + ext)]
    folder = largest_dir(repo)
    in_folder = [p for p in data if p.rpartition("/")[0] == folder]
    sample = [data[i * len(data) // 5] for i in range(5)] if len(data) >= 5 else data
    frames = [data[i * len(data) // 3] for i in range(3)] if len(data) >= 3 else data

    def q(root: Path, rel: str) -> str:
        return shlex.quote(str(root / rel) if rel else str(root))

    def pandas_step(root: Path) -> float:
        start = time.perf_counter()
        for rel in frames:
            pandas_read(root / rel, ext)
        return time.perf_counter() - start

    return [
        ("ls root", lambda root: shell(f"ls -la {q(root, '')}")),
        ("find | head", lambda root: shell(f"find {q(root, '')} -type f | head")),
        ("ls largest dir", lambda root: shell(f"ls -la {q(root, folder)}")),
        ("head -40 x5", lambda root: shell(" ; ".join(f"head -40 {q(root, p)}" for p in sample))),
        ("wc -l dir", lambda root: shell(f"wc -l {' '.join(q(root, p) for p in in_folder)}")),
        ("pandas x3", pandas_step),
        ("du -sh", lambda root: shell(f"du -sh {q(root, '')}")),
    ]


def auto_seeds(scan: int, max_files: int) -> list[int]:
    counts: dict[int, tuple[int, str]] = {}
    for seed in range(1, scan + 1):
        repo = generators.repository(seed)
        counts[seed] = (len(repo.file_paths()), repo.spec.extension)
    fewest = min(counts, key=lambda s: counts[s][0])
    most = max((s for s in counts if counts[s][0] <= max_files), key=lambda s: counts[s][0])
    chosen = [fewest]
    for ext in ("csv", "txt", "json", "jsonl", "xlsx", "log"):
        of_ext = sorted((c, s) for s, (c, e) in counts.items() if e == ext)
        if of_ext:
            chosen.append(of_ext[len(of_ext) // 2][1])
    chosen.append(most)
    return list(dict.fromkeys(chosen))


def run_all(plan: dict[int, list[Step]], root: Path) -> dict[tuple[int, str], float]:
    return {(seed, name): step(root / str(seed)) for seed, items in plan.items() for name, step in items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="auto", help="seed list (28,118) or 'auto'")
    parser.add_argument("--scan", type=int, default=300, help="auto: seeds 1..SCAN are considered")
    parser.add_argument("--max-files", type=int, default=2500, help="auto: the 'many files' seed has at most this")
    parser.add_argument("--repeat", type=int, default=1, help="cold runs (fresh mounts); the median is shown")
    args = parser.parse_args()
    seeds = auto_seeds(args.scan, args.max_files) if args.seeds == "auto" else parse_seed_list(args.seeds)
    plan = {seed: steps(seed) for seed in seeds}
    results: dict[str, dict[tuple[int, str], float]] = {}
    with tempfile.TemporaryDirectory(prefix="sgfs-agent-") as tmp:
        work = Path(tmp)
        for seed in seeds:
            sgfs("export", seed, work / "export" / str(seed), "--quiet")
        run_all(plan, work / "export")  # page cache warm
        results["native"] = run_all(plan, work / "export")
        colds = []
        for attempt in range(args.repeat):
            with mounted(work / f"cold-{attempt}", seeds, 256, "--no-disk-cache") as mnt:
                colds.append(run_all(plan, mnt))
                if attempt == 0:
                    results["warm"] = run_all(plan, mnt)
        results["cold"] = {k: statistics.median(run[k] for run in colds) for k in colds[0]}
        cache = work / "disk-cache"
        with mounted(work / "fill", seeds, 256, "--cache-dir", cache) as mnt:
            run_all(plan, mnt)
        with mounted(work / "disk-warm", seeds, 256, "--cache-dir", cache) as mnt:
            results["disk-warm"] = run_all(plan, mnt)

    conditions = ("cold", "warm", "disk-warm", "native")
    print(f"{'seed':>6} {'ext':>5} {'files':>6}  {'step':<15}" + "".join(f"{c:>10}" for c in conditions))
    for seed in seeds:
        repo = generators.repository(seed)
        for name in STEP_NAMES:
            cells = "".join(f"{results[c][(seed, name)]:>10.3f}" for c in conditions)
            print(f"{seed:>6} {repo.spec.extension:>5} {len(repo.file_paths()):>6}  {name:<15}{cells}")
    worst = max(results["cold"].items(), key=lambda item: item[1])
    print()
    print(f"slowest cold step: seed {worst[0][0]} '{worst[0][1]}' {worst[1]:.3f} s (aim: every cold step < 2 s)")
    for c in ("warm", "disk-warm"):
        ratio = max(results[c][k] / max(results["native"][k], 1e-3) for k in results[c])
        print(f"largest {c} / native ratio over steps: {ratio:.1f}")


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
