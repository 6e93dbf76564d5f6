"""Learn the prior table shipped with sgfs (qa/data/prior.json) from its reserved training seeds.

Run after any change to question generation; tests/qa/test_prior.py fails until the shipped table is renewed.

    python scripts/learn_prior.py            # rewrites qa/data/prior.json
    python scripts/learn_prior.py --check    # exit 1 when the shipped table is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generators import repository
from qa.generate import Options
from qa.prior import TRAINING_SEEDS, PriorError, default_table, learn_seeds, write_table

TABLE = Path(__file__).resolve().parent.parent / "qa" / "data" / "prior.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped table instead of writing")
    args = parser.parse_args()
    table, _ = learn_seeds(repository, TRAINING_SEEDS, Options())
    if args.check:
        try:
            same = default_table() == table
        except PriorError as exc:  # another question format: stale as well
            print(exc)
            same = False
        print("the shipped prior table is current" if same else "the shipped prior table is stale")
        return 0 if same else 1
    write_table(table, TABLE)
    for qtype, answer in table.answers.items():
        print(f"{qtype:24s} {answer!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
