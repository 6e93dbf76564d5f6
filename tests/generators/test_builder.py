"""The procedural builder: valid, realistic and diverse projects across seeds 1-1000."""

from __future__ import annotations

import collections
import functools
import re

import pytest

from generators import expr
from generators.builders.procedural import build_spec
from generators.data_files import taxonomy
from generators.designs import designs
from generators.spec import (
    CONTINUOUS_DISTRIBUTIONS,
    DATE_FORMATS,
    EXTENSIONS,
    INTEGER_DISTRIBUTIONS,
    SPECIAL_PLACEHOLDERS,
    VALUE_STYLES,
    Spec,
    expression_scope,
)


@functools.cache
def specs() -> list[Spec]:
    return [build_spec(seed) for seed in range(1, 1001)]


def test_taxonomy_size_and_order() -> None:
    fields = taxonomy()
    domains = [d for f in fields for d in f.domains]
    subdomains = [s for d in domains for s in d.subdomains]
    assert len(fields) >= 22 and len(domains) >= 244 and len(subdomains) >= 780
    assert [f.slug for f in fields] == sorted(f.slug for f in fields)
    assert all(s.description.endswith(".") and "\n" not in s.description for s in subdomains)


def test_diversity_over_a_thousand_seeds() -> None:
    all_specs = specs()
    titles = {s.project.title for s in all_specs}
    assert len(titles) >= 900
    assert {s.context.field for s in all_specs} == {f.name for f in taxonomy()}
    assert {s.extension for s in all_specs} == set(EXTENSIONS)
    kinds = {v.distribution.kind for s in all_specs for v in s.variables if v.distribution}
    assert kinds == set(CONTINUOUS_DISTRIBUTIONS) | set(INTEGER_DISTRIBUTIONS)
    placeholders = {p for s in all_specs for p in s.template.placeholders}
    assert set(SPECIAL_PLACEHOLDERS) <= placeholders
    assert any(pv.numeric for s in all_specs for pv in s.path_variables)
    assert any(not pv.numeric for s in all_specs for pv in s.path_variables)
    assert {j for s in all_specs for j in s.template.joiners} == {"-", "_"}
    assert {s.template.value_style for s in all_specs} == set(VALUE_STYLES)
    assert {s.template.date_format for s in all_specs} == set(DATE_FORMATS)
    levels = collections.Counter(len(s.template.components) - 1 for s in all_specs)
    assert set(levels) <= {1, 2, 3, 4} and {2, 3, 4} <= set(levels)
    readme = collections.Counter((s.readme.present, s.readme.show_title, s.readme.show_abstract) for s in all_specs)
    assert 0.4 < sum(n for k, n in readme.items() if k[0]) / 1000 < 0.6


def test_every_spec_is_well_formed() -> None:
    for spec in specs()[:300]:
        columns = spec.variables
        assert 5 <= len(columns) <= 16, spec.seed
        roles = collections.Counter(v.role for v in columns)
        assert roles["identifier"] == 1 and roles["datetime"] == 1 and roles["dependent"] >= 1
        assert roles["independent"] >= 1
        assert len(spec.path_variables) >= 1
        for i, variable in enumerate(columns):
            assert variable.name and variable.description
            if variable.expression:
                tree = expr.check(variable.expression, expression_scope(spec, i))
                assert expr.names_used(tree), variable.expression
                assert variable.noise_sd > 0 or variable.column in _definitions(spec), variable.column
        text = " ".join([spec.project.description.plan, *spec.project.description.hypotheses])
        outcomes = [v for v in columns if v.role == "dependent"]
        assert all(o.name in text or o.name.capitalize() in text for o in outcomes)
        assert spec.project.title and spec.project.abstract


def _definitions(spec: Spec) -> set[str]:
    """Columns that the subdomain's design defines by a formula (exact unless the design gives noise)."""
    design = designs()[(spec.context.field, spec.context.subdomain)]
    return {o.column for o in design.outcomes if o.derived}


_STATED = (
    (re.compile(r"(?P<y>.+) increases? with (?P<x>.+?)(?:, with diminishing returns| and levels? off.*)?\."), 1),
    (re.compile(r"Higher (?P<x>.+) raises (?P<y>.+)\."), 1),
    (re.compile(r"(?P<y>.+) rises? as (?P<x>.+) increases\."), 1),
    (re.compile(r"(?P<y>.+) decreases? as (?P<x>.+) increases\."), -1),
    (re.compile(r"Higher (?P<x>.+) lowers (?P<y>.+)\."), -1),
    (re.compile(r"(?P<y>.+) falls? with increasing (?P<x>.+)\."), -1),
)


def test_hypotheses_follow_the_coefficients() -> None:
    """A stated "Y increases with X" (or "Higher X lowers Y"...) must hold in the synthesised data on average."""
    import numpy as np

    from generators import Repository

    checked = 0
    for spec in specs()[:80]:
        repository = Repository(spec)
        by_name = {v.name.lower(): v for v in spec.variables}
        for hypothesis in spec.project.description.hypotheses:
            match, direction = next(((m, d) for p, d in _STATED if (m := p.fullmatch(hypothesis))), (None, 0))
            if match is None:
                continue
            driver, outcome = by_name.get(match["x"].lower()), by_name.get(match["y"].lower())
            if driver is None or outcome is None or driver.role != "independent" or driver.type == "categorical":
                continue
            xs, ys = [], []
            # A per-file driver has one value per file: the direction shows over many files, not within one.
            files = 60 if driver.per_file else 8
            for path in repository.tree.file_paths[:files]:
                table = repository.table(path)
                xs += table.column(driver.column).values.tolist()
                ys += table.column(outcome.column).values.tolist()
            if np.std(xs) > 0 and np.std(ys) > 0:
                # Other terms add noise; the stated direction must not be contradicted strongly.
                assert direction * np.corrcoef(xs, ys)[0, 1] > -0.2, (spec.seed, hypothesis)
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("seed", [0, 2**63 - 1, 2**62 + 12345])
def test_extreme_seeds_build(seed: int) -> None:
    assert build_spec(seed).seed == seed
