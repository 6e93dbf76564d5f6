#!/usr/bin/env python3
"""The evaluation harness's own overhead per question (agent = `true`) and how it scales with -j, sandboxed
(the default) and unsealed (--no-sandbox), in paired, interleaved runs.

Runs `sgfs eval --questions FILE --agent true --no-report` (private audited mount included) on a small and a
large question set for each -j and mode; the overhead per question is the slope (large - small) / (questions
difference), which leaves out the fixed costs (interpreter, mount start and stop).
Usage: python3 scripts/bench_eval.py [--seeds 1-3] [--jobs 1,2,4,8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SGFS = [sys.executable, "-m", "sgfs"]


MODES = {"sandbox": (), "no-sandbox": ("--no-sandbox",)}


def timed_eval(questions: Path, jobs: int, out: Path, mode: str) -> float:
    start = time.perf_counter()
    command = [*SGFS, "eval", "--questions", str(questions), "--agent", "true", "--out", str(out), "-j", str(jobs)]
    result = subprocess.run([*command, "--quiet", "--no-report", *MODES[mode]], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"bench_eval: {' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-3")
    parser.add_argument("--jobs", default="1,2,4,8")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        large = work / "large.jsonl"
        subprocess.run([*SGFS, "qa", args.seeds, "--out", str(large), "--quiet"], check=True, capture_output=True)
        lines = large.read_text().splitlines()
        small = work / "small.jsonl"
        small.write_text("\n".join(lines[:4]) + "\n")
        count = len(lines) - 4
        print(f"{len(lines)} questions (seeds {args.seeds}) against 4; medians of {args.repeat} runs")
        print(f"{'-j':>3} {'mode':>11} {'small s':>8} {'large s':>8} {'ms/question':>12} {'questions/s':>12}")
        run = 0
        for jobs in (int(j) for j in args.jobs.split(",")):
            small_s: dict[str, list[float]] = {mode: [] for mode in MODES}
            large_s: dict[str, list[float]] = {mode: [] for mode in MODES}
            for _ in range(args.repeat):
                for mode in MODES:  # interleaved: both modes see the same machine state
                    run += 1
                    small_s[mode].append(timed_eval(small, jobs, work / f"s{run}", mode))
                    large_s[mode].append(timed_eval(large, jobs, work / f"l{run}", mode))
            for mode in MODES:
                a, b = statistics.median(small_s[mode]), statistics.median(large_s[mode])
                per_question = (b - a) / count
                print(
                    f"{jobs:>3} {mode:>11} {a:>8.2f} {b:>8.2f} {1000 * per_question:>12.1f} {1 / per_question:>12.1f}"
                )


if __name__ == "__main__":
    main()
