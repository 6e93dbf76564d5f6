#!/usr/bin/env python3
"""Benchmark MCP tool-call latency: ``list_directory`` and ``read_text_file(head=40)``, cold and warm.

The server is ``sgfs mcp`` in a child process, reached over stdio by the MCP SDK's own client (and, for
comparison, the same server in memory). Cold: the first call that touches a repository (its spec and tree are
built) or a file (its bytes are synthesised), one per seed. Warm: the same call repeated, median and p95.

Usage: python3 scripts/bench_mcp.py [--seeds 1-12] [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

import generators
from sgfs.agents.mcp.server import build_server
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list
from sgfs.store.source import MountSource

SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]


def data_file(seed: int) -> str:
    """The first data file of a repository (not the README), as a tool path."""
    paths = [p for p in generators.repository(seed).file_paths() if p != "README.md"]
    return f"{seed}/{paths[0]}"


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    result = await call()
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise SystemExit(f"tool error: {result.content[0].text}")
    return elapsed * 1000


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(target: Any, seeds: list[int], repeat: int) -> dict[str, list[float]]:
    files = {seed: data_file(seed) for seed in seeds}
    times: dict[str, list[float]] = {
        "list_directory cold": [],
        "read_text_file cold": [],
        "list_directory warm": [],
        "read_text_file warm": [],
    }
    async with Client(target) as client:
        for seed in seeds:
            times["list_directory cold"].append(
                await timed(lambda seed=seed: client.call_tool("list_directory", {"path": str(seed)}))
            )
            times["read_text_file cold"].append(
                await timed(lambda seed=seed: client.call_tool("read_text_file", {"path": files[seed], "head": 40}))
            )
        seed = seeds[0]
        for _ in range(repeat):
            times["list_directory warm"].append(
                await timed(lambda: client.call_tool("list_directory", {"path": str(seed)}))
            )
            times["read_text_file warm"].append(
                await timed(lambda: client.call_tool("read_text_file", {"path": files[seed], "head": 40}))
            )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-12", help="seeds for the cold calls, xlsx ones skipped (default 1-12)")
    parser.add_argument("--repeat", type=int, default=200, help="warm calls per tool (default 200)")
    args = parser.parse_args()
    # read_text_file refuses xlsx (binary): those repositories are left out
    seeds = [seed for seed in parse_seed_list(args.seeds) if generators.repository(seed).spec.extension != "xlsx"]
    if not seeds:
        raise SystemExit("no seed with a text format among --seeds")

    stdio = StdioServerParameters(command=SGFS[0], args=[*SGFS[1:], "mcp"])
    results = {
        "stdio": anyio.run(measure, stdio, seeds, args.repeat),
        "in memory": anyio.run(measure, build_server(MountSource([])), seeds, args.repeat),
    }
    print(f"seeds {seeds} (cold: one call per seed), warm: {args.repeat} calls; milliseconds per call")
    print(f"{'transport':<10} {'call':<21} {'n':>4} {'median':>8} {'p95':>8} {'max':>8}")
    for transport, times in results.items():
        for name, values in times.items():
            print(
                f"{transport:<10} {name:<21} {len(values):>4} {statistics.median(values):>8.2f} "
                f"{percentile(values, 0.95):>8.2f} {max(values):>8.2f}"
            )


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
