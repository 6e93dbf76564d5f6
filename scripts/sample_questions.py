#!/usr/bin/env python3
"""Print random questions as an agent sees them: the text (template or a paraphrase) with its ``{path}``
placeholders filled, and nothing privileged (no query, no answer, no evidence).

Use it to read questions the way an agent would, next to the repository (`sgfs tree SEED`, `sgfs cat SEED
README.md`), and judge whether each is fully specified by what the agent can see.
Usage: python3 scripts/sample_questions.py [--seeds 1-300] [--count 50] [--sample-seed 7] [--answers FILE]
With --answers FILE, the privileged record of each printed question (id, answer, reason) goes to FILE.
"""

from __future__ import annotations

import argparse
import json
import random

from generators import repository
from qa.generate import generate
from sgfs.store.repositories import parse_seed_list


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-300")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--sample-seed", type=int, default=7, help="seed of the random sample itself")
    parser.add_argument("--answers", metavar="FILE", help="write the privileged records of the sample here")
    args = parser.parse_args()

    chooser = random.Random(args.sample_seed)
    seeds = parse_seed_list(args.seeds)
    picks: list[tuple[int, int, int]] = []  # (seed, question index, variant)
    for _ in range(args.count):
        picks.append((chooser.choice(seeds), chooser.randrange(39), chooser.randrange(4)))
    records = []
    for number, (seed, index, variant) in enumerate(sorted(picks), start=1):
        questions = generate(repository(seed))
        question = questions[index % len(questions)]
        text = [question.question, *question.paraphrases][variant]
        for name, value in question.variables.items():
            text = text.replace("{" + name + "}", value)
        label = "template" if variant == 0 else f"paraphrase_{variant}"
        print(f"[{number}] repository {seed}, question {question.id} ({label})\n{text}\n")
        records.append(
            {"n": number, "id": question.id, "answer": question.answer, "reason": question.unanswerable_reason}
        )
    if args.answers:
        with open(args.answers, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main()
