"""How much repositories of one subdomain have in common, against repositories of other domains of the same field.

For every pair of seeds in the range whose repositories share a field, the Jaccard index of their variable names
(every column and path variable) is put in one of three groups: same subdomain, same domain (other subdomain),
other domain. The study designs (issue 24) should make the first large and the last small.

    python scripts/measure_designs.py --seeds 9001-9400 --check

``--check`` exits 1 unless same-subdomain pairs share at least three times as much as other-domain pairs and
other-domain pairs share at most 0.08.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections import defaultdict

from generators.builders.procedural import build_spec
from generators.spec import Spec
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list

MIN_RATIO = 3.0
MAX_OTHER_DOMAIN = 0.08


def names(spec: Spec) -> frozenset[str]:
    return frozenset([v.column for v in spec.variables] + [pv.column for pv in spec.path_variables])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b)


def measure(seeds: list[int]) -> dict[str, list[float]]:
    by_field: dict[str, list[Spec]] = defaultdict(list)
    for seed in seeds:
        spec = build_spec(seed)
        by_field[spec.context.field].append(spec)
    groups: dict[str, list[float]] = {"same subdomain": [], "same domain, other subdomain": [], "other domain": []}
    for specs in by_field.values():
        for a, b in itertools.combinations(specs, 2):
            if a.context.domain != b.context.domain:
                group = "other domain"
            elif a.context.subdomain != b.context.subdomain:
                group = "same domain, other subdomain"
            else:
                group = "same subdomain"
            groups[group].append(jaccard(names(a), names(b)))
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="9001-9400", help="seed list (default: 9001-9400)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the thresholds of issue 24 hold")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        seeds = parse_seed_list(args.seeds)
    except SgfsError as exc:
        parser.error(str(exc))  # one line, exit 2
    groups = measure(seeds)
    print(f"{'pairs of one field':<32} {'pairs':>7} {'mean Jaccard':>13} {'median':>8}")
    for group, values in groups.items():
        mean = statistics.fmean(values) if values else float("nan")
        median = statistics.median(values) if values else float("nan")
        print(f"{group:<32} {len(values):>7} {mean:>13.3f} {median:>8.3f}")
    same = statistics.fmean(groups["same subdomain"]) if groups["same subdomain"] else 0.0
    other = statistics.fmean(groups["other domain"]) if groups["other domain"] else 0.0
    ratio = same / other if other else float("inf")
    print(f"ratio same subdomain / other domain: {ratio:.1f} ({time.perf_counter() - started:.1f} s)")
    if args.check:
        problems = []
        if not groups["same subdomain"] or not groups["other domain"]:
            problems.append("too few pairs: use more seeds")
        if ratio < MIN_RATIO:
            problems.append(f"ratio {ratio:.2f} is below {MIN_RATIO}")
        if other > MAX_OTHER_DOMAIN:
            problems.append(f"other-domain Jaccard {other:.3f} exceeds {MAX_OTHER_DOMAIN}")
        for problem in problems:
            print(f"check failed: {problem}", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
