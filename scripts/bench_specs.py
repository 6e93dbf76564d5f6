#!/usr/bin/env python3
"""Benchmark spec generation for any backend: specs per minute, tokens per second, and the shares of seeds
that validated at once, were repaired, and fell back to the procedural spec.

Builds a fresh pack in a temporary directory (or --out) through the same pipeline as `sgfs specs build`.
Usage:
  python3 scripts/bench_specs.py --backend procedural --seeds 1-200
  python3 scripts/bench_specs.py --backend openai --model NAME --base-url http://127.0.0.1:8000/v1
  python3 scripts/bench_specs.py --backend vllm --model ./tiny-model --engine-option load_format=dummy
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from generators.llm import make_backend
from generators.llm.base import Sampling
from generators.llm.pipeline import BuildOptions, build, build_metadata, open_for_build
from sgfs.store.repositories import parse_seed_list


def engine_option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", required=True, choices=["procedural", "openai", "vllm", "ray"])
    parser.add_argument("--model", default=None)
    parser.add_argument("--seeds", default="1-200")
    parser.add_argument("--out", default=None, help="pack to write (default: a temporary file)")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--repairs", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=6000)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--engine-option", type=engine_option, action="append", default=[])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    options: dict[str, Any] = {}
    if args.backend == "openai":
        options = {"base_url": args.base_url, "api_key": args.api_key, "concurrency": args.concurrency}
    elif args.backend in ("vllm", "ray"):
        options = {"engine_options": dict(args.engine_option), "batch_size": args.batch_size}
    build_options = BuildOptions(
        repairs=args.repairs,
        batch_size=args.batch_size,
        sampling=Sampling(temperature=args.temperature, max_tokens=args.max_tokens),
    )
    seeds = parse_seed_list(args.seeds)
    backend = make_backend(args.backend, args.model, **options)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(args.out) if args.out else Path(scratch) / "bench.sgfspack"
        pack = open_for_build(path, build_metadata(backend, build_options, "bench"))
        try:
            report = build(seeds, backend, pack, build_options)
        finally:
            pack.close()
            backend.close()
    built = max(report.built, 1)
    result = {
        "backend": args.backend,
        "model": backend.model,
        "seeds": report.built,
        "seconds": round(report.seconds, 2),
        "specs_per_min": round(report.built / report.seconds * 60, 1) if report.seconds else None,
        "validated_share": round(report.statuses["generated"] / built, 3),
        "repaired_share": round(report.statuses["repaired"] / built, 3),
        "fallback_share": round(report.statuses["fallback"] / built, 3),
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "completion_tokens_per_s": round(report.completion_tokens / report.seconds, 1) if report.seconds else None,
    }
    if args.json:
        print(json.dumps(result))
    else:
        width = max(map(len, result))
        for key, value in result.items():
            print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
