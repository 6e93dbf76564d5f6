"""Measure how much guessing pays and which question defects remain (qa/audit.py).

Learns the prior-only policy on the training seeds, generates the questions of the evaluation seeds, and
prints per type the count, unanswerable share and most common answer; the abstain floor and the prior's
score; the hypothesis "yes" share; the title and abstract answerable shares among README repositories; the
count of every defect class (with examples); and the done-when checks.

    python scripts/measure_guessing.py --train 1001-1040 --eval 1-100
    python scripts/measure_guessing.py --train 1001-1040 --eval 1-300 --check   # exit 1 when a check fails
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.table import Table

from qa.audit import (
    DEFECTS,
    Balance,
    Criterion,
    Finding,
    audit_seeds,
    balance,
    criteria,
    defect_counts,
    failed,
    learn_prior,
)
from qa.generate import Options


def seed_list(text: str) -> list[int]:
    """Seeds written as ``1-100``, ``3`` or a comma-separated list of either."""
    seeds: list[int] = []
    for part in text.split(","):
        start, _, end = part.strip().partition("-")
        try:
            first, last = int(start), int(end or start)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid seeds {part!r}") from None
        if last < first:
            raise argparse.ArgumentTypeError(f"invalid seeds {part!r}: the end is below the start")
        seeds += range(first, last + 1)
    return seeds


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def print_report(
    console: Console, result: Balance, findings: list[Finding], checks: list[Criterion], examples: int
) -> None:
    types = Table(title=f"Answers per type ({result.n} questions)")
    for column in ("type", "n", "unanswerable", "most common answer", "its share"):
        types.add_column(column, justify="left" if column in ("type", "most common answer") else "right")
    for t in result.per_type:
        types.add_row(t.type, str(t.n), _percent(t.unanswerable_share), t.top_answer[:40], _percent(t.top_share))
    console.print(types)

    floors = Table(title="Guessing")
    floors.add_column("measure")
    floors.add_column("value", justify="right")
    floors.add_row("abstain floor (share unanswerable)", f"{result.abstain_floor:.3f}")
    floors.add_row("prior-only score (learned on training seeds)", f"{result.prior_score:.3f}")
    floors.add_row("prior - abstain", f"{result.prior_margin:+.3f}")
    floors.add_row(f"hypothesis yes share ({result.hypothesis_n} answerable)", f"{result.hypothesis_yes_share:.3f}")
    floors.add_row(f"title answerable ({result.readme_repositories} README repos)", f"{result.title_share:.3f}")
    floors.add_row(f"abstract answerable ({result.readme_repositories} README repos)", f"{result.abstract_share:.3f}")
    floors.add_row(f"first-run questions not possible ({result.first_run_n})", f"{result.first_run_not_possible:.3f}")
    floors.add_row(f"factor questions confounded ({result.factor_n})", f"{result.factor_not_possible:.3f}")
    console.print(floors)

    defects = Table(title="Defects")
    defects.add_column("class")
    defects.add_column("count", justify="right")
    defects.add_column("examples")
    counts = defect_counts(findings)
    for defect in DEFECTS:
        shown = [f"{f.id} ({f.detail})" for f in findings if f.defect == defect][:examples]
        defects.add_row(defect, str(counts[defect]), "\n".join(shown))
    console.print(defects)

    verdicts = Table(title="Done-when checks")
    verdicts.add_column("check")
    verdicts.add_column("result")
    verdicts.add_column("detail")
    for check in checks:
        verdicts.add_row(check.name, "pass" if check.passed else "FAIL", check.detail)
    console.print(verdicts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=seed_list, default=seed_list("1001-1040"), help="seeds the prior learns on")
    parser.add_argument("--eval", type=seed_list, default=seed_list("1-100"), help="seeds evaluated")
    parser.add_argument("--per-type", type=int, default=Options().per_type, help="sampled questions per type")
    parser.add_argument("--unanswerable", type=float, default=Options().unanswerable, help="unanswerable share")
    parser.add_argument("--examples", type=int, default=3, help="example findings shown per defect class")
    parser.add_argument("--check", action="store_true", help="exit 1 when a done-when check fails")
    args = parser.parse_args(argv)
    overlap = sorted(set(args.train) & set(args.eval))
    if overlap:
        parser.error(f"training and evaluation seeds overlap ({overlap[0]} ...)")
    options = Options(per_type=args.per_type, unanswerable=args.unanswerable)
    prior = learn_prior(args.train, options)
    records, findings = audit_seeds(args.eval, options)
    result = balance(records, prior)
    checks = criteria(result, findings)
    print_report(Console(width=200), result, findings, checks, args.examples)
    return 1 if args.check and failed(checks) else 0


if __name__ == "__main__":
    sys.exit(main())
