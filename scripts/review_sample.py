"""What a reviewer reads to judge whether repositories are plausible studies of their subdomain (issue 24).

Draws ``--count`` seeds from ``--seeds`` with ``random.Random(--draw)`` and prints, for each, what an agent sees:
the subdomain it claims, the tree (first paths and the count), the README if there is one, and the header, the
first rows and the last row of two data files (the first and the middle one) as tab-separated text, whatever the
file's format (the last row shows how long a file's records run).

    python scripts/review_sample.py --seeds 8001-9000 --draw 20261128 --count 30 --out review/

With ``--out DIR`` each seed goes to ``DIR/<seed>.txt`` (and the drawn seeds to ``DIR/seeds.txt``); else to stdout.
With ``--field SLUG`` (a design file's name without .json) it shows instead one repository of every design of that
field (or of one ``--subdomain``): the first seed from ``--start`` of each, a designer's self-review before a blind one.

    python scripts/review_sample.py --field natural-physics --subdomain Superconductivity --rows 5
The reviewer's verdicts are recorded in docs/generation.md ("Reviewed as a researcher would").
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from generators.builders.procedural import build_spec
from generators.data_files import taxonomy
from generators.designs import designs
from generators.repository import Repository
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list

_TREE_LINES = 12


def packet(seed: int, rows: int) -> str:
    """The reviewer's view of repository ``seed``."""
    spec = build_spec(seed)
    repo = Repository(spec)
    paths = repo.file_paths()
    data = repo.data_paths()
    context = spec.context
    lines = [f"# seed {seed}: {context.field} / {context.domain} / {context.subdomain}", ""]
    lines += [f"## tree ({len(paths)} files; the first {min(_TREE_LINES, len(paths))})", *paths[:_TREE_LINES], ""]
    if repo.has_readme:
        lines += ["## README.md", repo.readme.decode("utf-8").rstrip(), ""]
    else:
        lines += ["## no README.md", ""]
    for path in dict.fromkeys([data[0], data[len(data) // 2]]):
        table = repo.observed(path)
        shown = min(rows, table.n_rows)
        last = table.n_rows - 1
        more = f", then the last (row {last + 1})" if shown <= last else ""
        lines.append(f"## {path} ({table.n_rows} rows; the first {shown}{more}, tab-separated)")
        lines.append("\t".join(table.names))
        texts = [column.text for column in table.columns]
        rows_shown = [*range(shown), *([last] if more else [])]
        lines += ["\t".join(str(text[i]) for text in texts) for i in rows_shown]
        lines.append("")
    return "\n".join(lines) + "\n"


def design_seeds(parser: argparse.ArgumentParser, slug: str, subdomain: str | None, start: int) -> list[int]:
    """The first seed from ``start`` of every design of field ``slug`` (or of its one ``subdomain``)."""
    from profile_designs import seeds_by_subdomain  # a sibling script: the same scan the profiles use

    field = next((f.name for f in taxonomy() if f.slug == slug), None)
    if field is None:
        parser.error(f"no field {slug!r}: use a file name of generators/data/designs/ without .json")
    wanted = [(name, sub) for name, sub in designs() if name == field and subdomain in (None, sub)]
    if not wanted:
        parser.error(f"field {slug!r} has no subdomain {subdomain!r}")
    found = seeds_by_subdomain(set(wanted), start, 1)
    return [found[key][0] for key in wanted if found.get(key)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="8001-9000", help="seed list to draw from (default: 8001-9000)")
    parser.add_argument("--draw", type=int, default=20261128, help="random.Random seed of the draw")
    parser.add_argument("--count", type=int, default=30, help="how many seeds (default: 30)")
    parser.add_argument("--rows", type=int, default=8, help="rows shown per file (default: 8)")
    parser.add_argument("--exclude", default="", help="seed list never drawn (e.g. an earlier sample)")
    parser.add_argument("--out", type=Path, help="folder for one file per seed (default: stdout)")
    parser.add_argument("--field", help="one repository of every design of this field instead of a draw")
    parser.add_argument("--subdomain", help="with --field: only this subdomain's design")
    parser.add_argument("--start", type=int, default=100_001, help="with --field: first seed scanned")
    args = parser.parse_args()
    if args.rows < 1:
        parser.error("--rows must be at least 1")
    if args.subdomain is not None and args.field is None:
        parser.error("--subdomain needs --field")
    if args.field is not None:
        if args.start < 0:
            parser.error("--start must not be negative")
        for seed in design_seeds(parser, args.field, args.subdomain, args.start):
            sys.stdout.write(packet(seed, args.rows) + "\n")
            sys.stdout.flush()
        return 0
    try:
        pool = parse_seed_list(args.seeds)
        excluded = set(parse_seed_list(args.exclude)) if args.exclude else set()
    except SgfsError as exc:
        parser.error(str(exc))  # one line, exit 2
    candidates = [seed for seed in pool if seed not in excluded]
    if not 1 <= args.count <= len(candidates):
        parser.error(f"--count must be between 1 and {len(candidates)} (the seeds left to draw from)")
    seeds = sorted(random.Random(args.draw).sample(candidates, args.count))
    if args.out is None:
        for seed in seeds:
            sys.stdout.write(packet(seed, args.rows) + "\n")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "seeds.txt").write_text(" ".join(map(str, seeds)) + "\n")
    for seed in seeds:
        (args.out / f"{seed}.txt").write_text(packet(seed, args.rows))
    print(f"{len(seeds)} packets in {args.out}: {' '.join(map(str, seeds))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
