"""What the study designs of a field give when the builder draws repositories from them: a designer's check of
magnitudes and relations (issue 24).

For each design of a field (or one ``--subdomain``), the first ``--repos`` seeds from ``--start`` whose repository is
of that subdomain are built, and their data files read as a reviewer reads them. Per numeric column: the range the
values take over all files (1st, 50th and 99th percentile) against the design's ``center ± spread``, and the
median scatter within one file (what a repeat record under the same conditions shows). Per path variable: each
outcome's mean at every level, so a relation that runs the wrong way or a control level with an effect shows.
When the records were taken (months and hours seen, the weekend share, a file's median span). Then the header,
three rows and the last row of one file.

    python scripts/profile_designs.py engineering-chemical-materials --subdomain "Heterogeneous Catalysis"
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from generators.builders import procedural
from generators.data_files import taxonomy
from generators.designs import Design, Outcome, designs
from generators.repository import Repository

_SCAN_LIMIT = 2_000_000  # seeds scanned for repositories of a subdomain
_FILES = 8  # data files read per repository


def seeds_by_subdomain(wanted: set[tuple[str, str]], start: int, count: int) -> dict[tuple[str, str], list[int]]:
    """The first ``count`` seeds from ``start`` of every (field, subdomain) in ``wanted``."""
    found: dict[tuple[str, str], list[int]] = defaultdict(list)
    open_keys = set(wanted)
    for seed in range(start, start + _SCAN_LIMIT):
        key = procedural.subdomain_of(seed)
        if key in open_keys:
            found[key].append(seed)
            if len(found[key]) == count:
                open_keys.discard(key)
                if not open_keys:
                    break
    return found


def _number(value: float) -> str:
    return f"{value:.4g}"


def _level_order(level: str) -> tuple[int, float, str]:
    """Numeric levels by value, then the others by name."""
    try:
        return (0, float(level), "")
    except ValueError:
        return (1, 0.0, level)


def _typical(outcome: Outcome) -> str:
    if outcome.derived:
        return f"= {outcome.formula}"
    log = outcome.scale == "log"
    residual = ""
    if outcome.residual is not None:
        residual = f", repeat ±{_number(outcome.residual)}{' decades' if log else ''}"
    if log:
        return f"~{_number(outcome.center)} ×/÷ 10^{_number(outcome.spread)}{residual}"
    return f"{_number(outcome.center)} ± {_number(outcome.spread)}{residual}"


def profile(design: Design, seeds: list[int]) -> str:
    """The profile of one design over the repositories of ``seeds``."""
    outcomes = {o.column: o for o in design.outcomes}
    factors = {f.column for f in design.factors}
    pooled: dict[str, list[np.ndarray]] = defaultdict(list)
    within: dict[str, list[float]] = defaultdict(list)
    by_level: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    sample: list[str] = []
    times: list[np.ndarray] = []  # seconds since the epoch of the timestamp column, per file
    stamp = design.timestamp.column if design.timestamp is not None else None
    for seed in seeds:
        repo = Repository(procedural.build_spec(seed))
        for number, path in enumerate(repo.data_paths()[:_FILES]):
            table = repo.table(path)
            levels = repo.tree.placeholder_values(repo.tree.file_index(path.split("/")) or 0)
            for column in table.columns:
                if column.name == stamp and np.issubdtype(np.asarray(column.values).dtype, np.integer):
                    times.append(np.asarray(column.values, dtype=np.int64))
                if not column.numeric:
                    continue
                values = np.asarray(column.values, dtype=np.float64)
                pooled[column.name].append(values)
                if values.size > 1:
                    within[column.name].append(float(np.std(values)))
                if column.name in outcomes:
                    for variable, level in levels.items():
                        if variable not in factors:
                            continue
                        by_level[(column.name, variable)][str(level)].append(float(np.mean(values)))
            if not sample and number == 0:
                rows = [*range(min(3, table.n_rows)), table.n_rows - 1]
                sample = [f"  {path} ({table.n_rows} rows)", "  " + "\t".join(table.names)]
                sample += ["  " + "\t".join(str(c.text[i]) for c in table.columns) for i in rows]
    lines = [f"## {design.subdomain} (seeds {', '.join(map(str, seeds))})"]
    for name, arrays in pooled.items():
        values = np.concatenate(arrays)
        low, mid, high = np.percentile(values, [1, 50, 99])
        outcome = outcomes.get(name)
        role = f"outcome {_typical(outcome)}" if outcome else "measure"
        spread_within = _number(float(np.median(within[name]))) if within[name] else "-"
        lines.append(
            f"  {name}: p1 {_number(low)}  p50 {_number(mid)}  p99 {_number(high)}  "
            f"sd within a file {spread_within}  [{role}]"
        )
    for (name, variable), means in by_level.items():
        if len(means) > 1:
            ordered = sorted(means.items(), key=lambda item: _level_order(item[0]))
            shown = "  ".join(f"{level}: {_number(float(np.mean(m)))}" for level, m in ordered)
            lines.append(f"  mean {name} by {variable}: {shown}")
    if times:
        lines.append("  " + _when(times))
    return "\n".join(lines + sample) + "\n"


def _when(times: list[np.ndarray]) -> str:
    """When the records were taken: months and hours seen, the weekend share and a file's median span."""
    seconds = np.concatenate(times)
    days = seconds // 86_400
    months = sorted(set((days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12 + 1).tolist()))
    hours = np.bincount((seconds % 86_400) // 3600, minlength=24)
    open_hours = [h for h in range(24) if hours[h]]
    weekend = float(np.mean((days + 3) % 7 >= 5))
    span = float(np.median([(t[-1] - t[0]) / 86_400 for t in times]))
    return (
        f"times: months {months}  hours {open_hours[0]}-{open_hours[-1]} ({len(open_hours)} of 24 seen)  "
        f"weekend {weekend:.0%}  a file spans {_number(span)} days (median)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("field", help="a field's slug: the name of its design file without .json")
    parser.add_argument("--subdomain", help="one subdomain of the field (default: all)")
    parser.add_argument("--repos", type=int, default=3, help="repositories per design (default: 3)")
    parser.add_argument("--start", type=int, default=100_001, help="first seed scanned (default: 100001)")
    args = parser.parse_args()
    field = next((f.name for f in taxonomy() if f.slug == args.field), None)
    if field is None:
        parser.error(f"no field {args.field!r}: use a file name of generators/data/designs/ without .json")
    chosen = [d for (name, _), d in designs().items() if name == field]
    if args.subdomain is not None:
        chosen = [d for d in chosen if d.subdomain == args.subdomain]
        if not chosen:
            parser.error(f"field {args.field!r} has no subdomain {args.subdomain!r}")
    if not 1 <= args.repos <= 20:
        parser.error("--repos must be between 1 and 20")
    if args.start < 0:
        parser.error("--start must not be negative")
    seeds = seeds_by_subdomain({(field, d.subdomain) for d in chosen}, args.start, args.repos)
    for design in chosen:
        found = seeds.get((field, design.subdomain), [])
        if not found:
            print(f"## {design.subdomain}: no repository in {_SCAN_LIMIT} seeds from {args.start}", file=sys.stderr)
            continue
        sys.stdout.write(profile(design, found) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
