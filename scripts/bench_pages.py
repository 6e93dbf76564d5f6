#!/usr/bin/env python3
"""Time the one packer of listing pages (sgfs.mount.kernel.pages.pack_records): a page of N entries as the
page-by-page path packs it (``LowLevelMount.pack_entries``), and a whole seed's listing book, next to a copy of
the same records on a bytes slice (the floor: what answering from a packed book costs per page).

Usage: python3 scripts/bench_pages.py [--seeds 118,288,7] [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from types import SimpleNamespace

import generators
from sgfs.errors import SgfsError
from sgfs.mount.inodes import InodeTable
from sgfs.mount.kernel.pages import ListingBook
from sgfs.mount.kernel.session import LowLevelMount
from sgfs.mount.operations import Attributes, DirEntry
from sgfs.store.repositories import parse_seed_list

PAGE_BYTES = 4096  # what the kernel asks per READDIRPLUS


def page_entries(count: int) -> list[DirEntry]:
    entries = [DirEntry(".", "/5", True, 7), DirEntry("..", "/", True, 1)]
    entries += [
        DirEntry(f"file_{i:04d}.csv", f"/5/file_{i:04d}.csv", False, 0, Attributes(0, False, 1000 + i, 1))
        for i in range(count)
    ]
    return entries


def best_us(call: object, number: int, repeat: int) -> float:
    assert callable(call)
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="118,288,7", help="seeds whose books are timed (default 118,288,7)")
    parser.add_argument("--repeat", type=int, default=7, help="rounds per figure; the best is shown")
    args = parser.parse_args()
    try:
        seeds = parse_seed_list(args.seeds)
    except SgfsError as exc:
        print(f"bench_pages: error: {exc}", file=sys.stderr)
        return 1
    # Enough of a LowLevelMount for pack_entries: its filesystem's inode table, owner and cache lifetime.
    mount = SimpleNamespace(timeout=3600.0, fs=SimpleNamespace(inodes=InodeTable(), uid=0, gid=0))
    print(f"{'entries':>8} {'bytes':>7} {'pack us':>9} {'per entry us':>13}")
    for count in (1, 3, 10, 24, 100, 1000):
        size = PAGE_BYTES if count <= 24 else 1 << 20
        entries = page_entries(count)
        page = LowLevelMount.pack_entries(mount, entries, 0, size, True)  # type: ignore[arg-type]
        took = best_us(lambda e=entries, s=size: LowLevelMount.pack_entries(mount, e, 0, s, True), 200, args.repeat)  # type: ignore[misc]
        print(f"{count:>8} {len(page):>7} {took:>9.1f} {took / (count + 2):>13.2f}")
    print()
    print(f"{'seed':>6} {'entries':>8} {'book ms':>8} {'MB':>6}")
    for seed in seeds:
        repo = generators.repository(seed)
        tree = {rel: [(e[0], e[1], 1000, 2 if e[1] else 1) for e in es] for rel, es in repo.listings.items()}
        total = sum(len(es) for es in tree.values())
        took = best_us(lambda t=tree, s=seed: ListingBook(f"/{s}", t, 3600.0, 0, 0), 3, args.repeat) / 1000  # type: ignore[misc]
        book = ListingBook(f"/{seed}", tree, 3600.0, 0, 0)
        print(f"{seed:>6} {total:>8} {took:>8.2f} {len(book.blob) / 1e6:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
