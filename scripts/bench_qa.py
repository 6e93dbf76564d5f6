#!/usr/bin/env python3
"""Question statistics and generation time over a range of seeds.

Prints the count of each question type, the unanswerable share by type and by reason, and the time
question generation takes per repository (p50, p95), as `sgfs qa` runs it (spec, tree and tables included).
Usage: python3 scripts/bench_qa.py [--seeds 1-500] [--per-type 5] [--unanswerable 0.28]
"""

from __future__ import annotations

import argparse
import collections
import time

from generators import Repository, build_spec
from qa.generate import Options, generate
from qa.model import CATEGORIES
from sgfs.store.repositories import parse_seed_list


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-500")
    parser.add_argument("--per-type", type=int, default=5)
    parser.add_argument("--unanswerable", type=float, default=0.28)
    args = parser.parse_args()
    options = Options(per_type=args.per_type, unanswerable=args.unanswerable)

    build_spec(0)  # data files loaded once
    by_type: collections.Counter[str] = collections.Counter()
    unanswerable_by_type: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    seconds = []
    seeds = parse_seed_list(args.seeds)
    for seed in seeds:
        start = time.perf_counter()
        questions = generate(Repository(build_spec(seed)), options)
        seconds.append(time.perf_counter() - start)
        for q in questions:
            by_type[q.type] += 1
            if not q.answerable:
                unanswerable_by_type[q.type] += 1
                reasons[str(q.unanswerable_reason)] += 1

    total = sum(by_type.values())
    print(f"{len(seeds)} repositories, {total} questions, unanswerable {sum(reasons.values()) / total:.1%}\n")
    print(f"{'category':<24}{'type':<26}{'count':>7}{'unanswerable':>14}")
    for qtype, category in CATEGORIES.items():
        share = unanswerable_by_type[qtype] / by_type[qtype] if by_type[qtype] else 0.0
        print(f"{category:<24}{qtype:<26}{by_type[qtype]:>7}{share:>13.1%}")
    print(f"\n{'reason':<26}{'count':>7}{'share of unanswerable':>24}")
    for reason, count in reasons.most_common():
        print(f"{reason:<26}{count:>7}{count / sum(reasons.values()):>23.1%}")
    print(
        f"\ntime per repository: p50 {percentile(seconds, 50):.3f} s, p95 {percentile(seconds, 95):.3f} s, "
        f"max {max(seconds):.3f} s"
    )


if __name__ == "__main__":
    main()
