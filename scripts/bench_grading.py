#!/usr/bin/env python3
"""Grading speed on hostile responses, and the rounding check of the continuous rule over many seeds.

Prints, for responses of --megabytes MB of adversarial content, the time to reduce each to its final answer and
grade it against one question of each answer kind (the grader is linear: compare the per-MB figures), and the
grading rate of ordinary responses. With --check-seeds, counts how the truth rounded half up, half even and
truncated (all must be right) and shifted by two units of the last asked figure (all must be wrong) are graded
over every answerable continuous question of those seeds.
Usage: python3 scripts/bench_grading.py [--megabytes 10] [--check-seeds 1-300]
"""

from __future__ import annotations

import argparse
import json
import time
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

from generators import repository
from qa.answers import DECODER
from qa.generate import generate
from qa.grading import GradedQuestion, extract_answer, figure_unit, grade, parse_question
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list


def question(kind: str, answer: Any, **extra: Any) -> GradedQuestion:
    record = {"id": f"q-{kind}", "type": "t", "category": "c", "answer_kind": kind, "answer": answer}
    record |= {"answerable": True, "choices": None, "sig_figs": None, **extra}
    return parse_question(DECODER.decode(json.dumps(record)), "bench")


QUESTIONS = [
    question("yes_no", "yes", choices=["yes", "no"]),
    question("categorical", "json", choices=["csv", "json", "jsonl", "xlsx", "txt", "log"]),
    question("categorical", "A title: a study", choices=["A title: a study"]),
    question("integer", 163),
    question("continuous", 0.52, sig_figs=2),
]


def hostile(size: int) -> dict[str, str]:
    def fill(unit: str) -> str:
        return unit * (size // len(unit))

    return {
        "braces": fill("{"),
        "latex fractions": fill("\\frac{a}{b}"),
        "digits": fill("7"),
        "numbers": fill("1 2 "),
        "answer keys": fill('{"answer": '),
        "unterminated answer": '{"answer": "' + fill("x"),
        "choices": fill("yes no jsonl "),
        "answer markers": fill("Answer: 1\n"),
        "boxes": fill("\\boxed{"),
        "parentheses": "1 " + fill("(") + fill(")"),
    }


def time_hostile(megabytes: float) -> None:
    size = int(megabytes * 1024 * 1024)
    print(f"{'response (' + str(megabytes) + ' MB)':<24} {'extract s':>10} {'grade s (5 kinds)':>18} {'max s':>7}")
    for name, text in hostile(size).items():
        start = time.perf_counter()
        final = extract_answer(text)
        extracted = time.perf_counter() - start
        times = []
        for q in QUESTIONS:
            start = time.perf_counter()
            grade(q, final)
            times.append(time.perf_counter() - start)
        print(f"{name:<24} {extracted:>10.3f} {sum(times):>18.3f} {extracted + max(times):>7.3f}")
    ordinary = ['I computed it.\n```json\n{"answer": 0.52}\n```', "**Final answer:** yes", "The mean is 0.52."]
    start = time.perf_counter()
    count = 0
    while time.perf_counter() - start < 1.0:
        for text in ordinary:
            for q in QUESTIONS:
                grade(q, extract_answer(text))
                count += 1
    print(f"ordinary responses: {count / (time.perf_counter() - start):,.0f} grades per second")


def check_seeds(seeds: list[int]) -> None:
    right = wrong = misgraded = total = 0
    for seed in seeds:
        for record in generate(repository(seed)):
            if record.answer_kind != "continuous" or not record.answerable:
                continue
            total += 1
            q = parse_question(DECODER.decode(json.dumps(record.to_dict())), record.id)
            truth = Decimal(q.answer)
            unit = figure_unit(truth, q.sig_figs or 1)
            for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN):
                ok = grade(q, str(truth.quantize(unit, rounding=rounding))).correct
                right += ok
                misgraded += not ok
            for shifted in (truth + 2 * unit, truth - 2 * unit):
                bad = not grade(q, str(shifted)).correct
                wrong += bad
                misgraded += not bad
    print(
        f"{total} answerable continuous questions over {len(seeds)} seeds: rounded or truncated graded right "
        f"{right}/{3 * total}, two units off graded wrong {wrong}/{2 * total}, misgraded {misgraded}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--check-seeds", metavar="SEEDS", help="e.g. 1-300")
    args = parser.parse_args()
    time_hostile(args.megabytes)
    if args.check_seeds:
        check_seeds(parse_seed_list(args.check_seeds))


if __name__ == "__main__":
    try:
        main()
    except SgfsError as exc:  # a bad --seeds: one line, no traceback
        raise SystemExit(f"error: {exc}") from None
