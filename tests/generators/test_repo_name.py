"""A repository's name never claims a year its data contradict (issue 24): a reviewer read "...-2023" over interviews
all dated 2024, "...-2017" over interviews of 2018 and "...-2016" over folders dated 2017. Where files are named by
date the name carries the years of the first and last dates its files are named by (a small tree need not hold every
date its spec lists); otherwise it carries no year."""

from __future__ import annotations

import re

from generators.builders import procedural
from generators.paths import Tree


def test_the_name_carries_the_years_of_the_dated_files_and_no_other() -> None:
    spans = undated = narrowed = 0
    for seed in range(1, 400):
        spec = procedural.build_spec(seed)
        name = spec.project.repo_name
        if spec.dates:
            held = [str(d) for d in Tree(spec).held_values("date")]
            first, last = min(held)[:4], max(held)[:4]
            expected = f"-{first}" if first == last else f"-{first}-{last}"
            assert name.endswith(expected), (seed, name, held)
            spans += first != last
            narrowed += (first, last) != (min(spec.dates)[:4], max(spec.dates)[:4])
        else:
            assert not re.search(r"-(?:19|20)[0-9]{2}$", name), (seed, name)  # no year closes an undated name
            undated += 1
    assert spans >= 5 and undated >= 50  # both cases occur often enough for the test to mean something
    assert narrowed >= 1  # a tree that lacks the spec's first or last year (seeds 102 and 158)
