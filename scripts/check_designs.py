"""Check study-design files (generators/data/designs/*.json, or the FILEs given): one line per problem, exit 1
if there is any. The same checks run when the designs load and in tests/generators/test_designs.py.

    python scripts/check_designs.py [FILE...]
"""

from __future__ import annotations

import argparse

from generators.designs import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", metavar="FILE", help="design files (default: every shipped one)")
    raise SystemExit(main(parser.parse_args().files))
