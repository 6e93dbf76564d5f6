"""Data a specialist would accept row by row (generator version 7): expected effects of categorical causes,
scale steps, responses that vary between the records of one file, times of day within working hours. Each test
reads what a reader of the files would see."""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import datetime
from typing import Any

import numpy as np
import pytest

from generators.builders.procedural import build_spec
from generators.designs import DesignError, Outcome, designs
from generators.repository import Repository
from generators.spec import Params, Spec, SpecError, from_json, validate
from generators.synth import to_steps
from tests.generators.clock_checks import assert_follows_clock
from tests.generators.design_fixture import fixture_file, load_fixture

SEEDS = range(1, 201)


@functools.cache
def _specs() -> list[Spec]:
    return [build_spec(seed) for seed in SEEDS]


def _design_outcome(spec: Spec, column: str) -> Outcome:
    design = designs()[(spec.context.field, spec.context.subdomain)]
    return next(o for o in design.outcomes if o.column == column)


# -- design schema ----------------------------------------------------------------------------------
_fixture = fixture_file
_load = load_fixture


def _item(data: dict[str, Any], kind: str, column: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in data["designs"][0][kind] if o["column"] == column)
    return found


def test_level_effects_and_steps_are_parsed() -> None:
    data = _fixture()
    _item(data, "outcomes", "yield_mpa")["parents"]["alloy"] = {"a1": 1, "a2": 0, "a3": -0.5}
    _item(data, "outcomes", "yield_mpa")["step"] = 0.5
    _item(data, "measures", "width_mm")["step"] = 0.05
    design = _load(data)
    yield_mpa = next(o for o in design.outcomes if o.column == "yield_mpa")
    assert yield_mpa.level_effects("alloy") == {"a1": 1.0, "a2": 0.0, "a3": -0.5}
    assert ("alloy", 0) in yield_mpa.parents  # a categorical cause keeps direction 0 (no "higher")
    assert yield_mpa.level_effects("anneal_c") is None
    assert yield_mpa.step == 0.5
    assert next(m for m in design.measures if m.column == "width_mm").step == 0.05


def _numeric_effects(data: dict[str, Any]) -> None:
    _item(data, "outcomes", "yield_mpa")["parents"]["anneal_c"] = {"300": 1, "400": 0, "500": -1}


def _effects(table: object) -> Any:
    return lambda d: _item(d, "outcomes", "yield_mpa")["parents"].update(alloy=table)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_effects({"a1": 1, "a2": 0}), "must name each of its levels once"),
        (_effects({"a1": 1, "a2": 0, "a3": -1, "a4": 2}), "must name each of its levels once"),
        (_effects({"a1": 1, "a2": 1, "a3": 1}), "must not all be equal"),
        (_effects({"a1": 4, "a2": 0, "a3": -1}), r"in \[-3, 3\]"),
        (_effects({"a1": True, "a2": 0, "a3": -1}), r"in \[-3, 3\]"),
        (_effects({"a1": "high", "a2": 0, "a3": -1}), r"in \[-3, 3\]"),
        (_numeric_effects, "not categorical"),
        # 2 is a direction with a strength (version 11), which a categorical cause cannot have
        (
            lambda d: _item(d, "outcomes", "yield_mpa")["parents"].update(alloy=2),
            "categorical parent 'alloy' needs direction 0",
        ),
        (lambda d: _item(d, "outcomes", "yield_mpa")["parents"].update(alloy=5), "expected a direction 1 or -1"),
        (lambda d: _item(d, "outcomes", "yield_mpa").update(step=0), "step: expected a positive number"),
        (lambda d: _item(d, "outcomes", "yield_mpa").update(step=-0.5), "step: expected a positive number"),
        (lambda d: _item(d, "outcomes", "area_mm2").update(step="1"), "step: expected a positive number"),
        (lambda d: _item(d, "measures", "width_mm").update(step=True), "step: expected a positive number"),
        (lambda d: _item(d, "outcomes", "yield_mpa").update(step=0.25, decimals=0), "coarser than the step 0.25"),
    ],
)
def test_bad_level_effects_and_steps_are_refused(mutate: Any, message: str) -> None:
    data = _fixture()
    mutate(data)
    with pytest.raises(DesignError, match=message):
        _load(data)


def test_an_integer_measure_has_no_step() -> None:
    data = _fixture()
    data["designs"][0]["measures"].append(
        {"column": "grains", "name": "grain count", "unit": "", "description": "Grains.", "type": "integer",
         "dist": "poisson", "params": {"lam": 40}, "step": 2}
    )  # fmt: skip
    with pytest.raises(DesignError, match="only a continuous measure has a step"):
        _load(data)


def test_a_spec_file_states_steps_and_refuses_bad_ones() -> None:
    spec = _specs()[0]
    data = json.loads(spec.to_json())
    index = next(i for i, v in enumerate(spec.variables) if v.role == "dependent")
    data["variables"][index]["step"] = 0.25
    assert from_json(json.dumps(data)).variables[index].step == 0.25
    data["variables"][index]["step"] = -1
    with pytest.raises(SpecError, match="step: expected a positive number"):
        from_json(json.dumps(data))
    identifier = dataclasses.replace(spec.variables[0], step=1.0)
    with pytest.raises(SpecError, match="only a continuous column has a step"):
        validate(dataclasses.replace(spec, variables=(identifier, *spec.variables[1:])))
    # A spec file written before residual_fraction existed loads with the default (its noise is in noise_sd).
    del data["params"]["residual_fraction"]
    data["variables"][index]["step"] = None
    assert from_json(json.dumps(data)).params.residual_fraction == Params().residual_fraction


# -- the data ---------------------------------------------------------------------------------------
def test_to_steps_rounds_to_multiples_inside_the_bounds() -> None:
    raw = np.array([0.2, 0.3, 6.74, 9.9, -1.0])
    assert to_steps(raw, 0.5, 0.0, 9.7).tolist() == [0.0, 0.5, 6.5, 9.5, 0.0]


def test_a_stepped_column_holds_only_whole_steps_within_its_bounds() -> None:
    """A response read in half points (EDSS) shows only multiples of 0.5 in the files, and never leaves its bounds."""
    spec = next(s for s in _specs() if any(v.role == "dependent" and v.type == "continuous" for v in s.variables))
    variable = next(v for v in spec.variables if v.role == "dependent")
    values = _column(spec, variable.column)
    low, high = float(np.quantile(values, 0.1)), float(np.quantile(values, 0.9))
    step = float(10.0 ** np.floor(np.log10(max(high - low, 1e-9)))) / 10  # 10 to 100 whole steps in [low, high]
    stepped = dataclasses.replace(variable, step=step, bounds=(low, high), decimals=None)
    changed = dataclasses.replace(spec, variables=tuple(stepped if v is variable else v for v in spec.variables))
    validate(changed)
    written = _column(changed, variable.column)
    multiples = written / step
    assert np.allclose(multiples, np.round(multiples), atol=1e-6)
    assert written.min() >= low - 1e-9 and written.max() <= high + 1e-9
    assert len(np.unique(written)) >= 3


def test_a_step_of_thirds_is_written_to_the_columns_decimals() -> None:
    """Grade points in thirds with two decimals read 2.67 and 3.33, never 2.66666 (a reviewer's fault): the step
    is taken first, then the column's decimals."""
    spec = next(s for s in _specs() if any(v.role == "dependent" and v.type == "continuous" for v in s.variables))
    variable = next(v for v in spec.variables if v.role == "dependent")
    values = _column(spec, variable.column)
    low, high = float(np.quantile(values, 0.05)), float(np.quantile(values, 0.95))
    third = round((high - low) / 12, 6) or 0.333333  # about a dozen steps of an inexact width
    stepped = dataclasses.replace(variable, step=third, bounds=(low, high), decimals=2)
    changed = dataclasses.replace(spec, variables=tuple(stepped if v is variable else v for v in spec.variables))
    validate(changed)
    values = _column(changed, variable.column)  # as the file writes them
    assert np.array_equal(values, np.round(values, 2))
    assert np.allclose(values, np.round(np.round(values / third) * third, 2), rtol=0, atol=1e-9)
    assert len(np.unique(values)) >= 3


def test_stepped_design_columns_are_written_in_their_steps() -> None:
    """Every column a design gives a step shows only whole steps in the files (over the repositories that hold one)."""
    checked = 0
    for spec in _specs():
        for variable in spec.variables:
            if variable.step is None:
                continue
            values = _column(spec, variable.column)
            steps = np.round(values / variable.step) * variable.step
            if variable.decimals is not None:  # thirds are written 2.67
                steps = np.round(steps, variable.decimals)
            assert np.allclose(values, steps, rtol=0, atol=1e-9), (spec.seed, variable.column)
            checked += 1
    assert checked >= 3, f"only {checked} stepped columns in seeds {SEEDS.start}-{SEEDS.stop - 1}"


def _column(spec: Spec, column: str, file: int = 0) -> np.ndarray[Any, Any]:
    repo = Repository(spec)
    return np.asarray(repo.table(repo.data_paths()[file]).column(column).values, dtype=np.float64)


def test_categorical_causes_follow_the_designs_expected_level_effects() -> None:
    """Where the design gives the expected effect of each level, the repository's lookup table orders the levels
    as the design does, and so do the files: over the repositories, the mean response at the level with the
    highest expected effect exceeds that at the lowest."""
    checked = agreed = 0
    for spec in _specs():
        for variable in spec.variables:
            if variable.role != "dependent" or variable.expression is None or "lookup(" not in variable.expression:
                continue
            outcome = _design_outcome(spec, variable.column)
            for cause, table in outcome.effects:
                if f"lookup({cause}, " not in variable.expression:
                    continue
                effects = _lookup(variable.expression, cause)
                expected = dict(table)
                present = [level for level in expected if level in effects]
                ordered = sorted(present, key=lambda level: expected[level])
                written = [effects[level] for level in ordered]
                assert written == sorted(written), (spec.seed, variable.column, cause)
                if expected[ordered[0]] < expected[ordered[-1]] and spec.template.placeholders.count(cause) == 0:
                    checked += 1
                    agreed += _data_agrees(spec, variable.column, cause, ordered[0], ordered[-1])
    assert checked >= 5, f"only {checked} measured categorical causes with expected effects"
    assert agreed >= 0.8 * checked, (agreed, checked)


def _lookup(expression: str, cause: str) -> dict[str, float]:
    """The level effects of ``lookup(cause, {...})`` in an expression."""
    start = expression.index(f"lookup({cause}, ") + len(f"lookup({cause}, ")
    body = expression[start : expression.index("}", start) + 1]
    return {k: float(v) for k, v in json.loads(body).items()}


def _data_agrees(spec: Spec, column: str, cause: str, low_level: str, high_level: str) -> bool:
    """Whether, pooled over up to four files, the response is higher at ``high_level`` of a measured cause."""
    repo = Repository(spec)
    response: list[float] = []
    levels: list[str] = []
    for path in repo.data_paths()[:4]:
        table = repo.table(path)
        response += np.asarray(table.column(column).values, dtype=np.float64).tolist()
        levels += [str(v) for v in table.column(cause).values]
    y, x = np.array(response), np.array(levels)
    if not ((x == low_level).any() and (x == high_level).any()):
        return True
    return bool(y[x == high_level].mean() > y[x == low_level].mean())


def test_responses_vary_between_the_records_of_one_file() -> None:
    """A file fixes its conditions; its records still differ (individual differences): the within-file standard
    deviation of a response is about half the design's spread or more, as in a real sample, where the paper's law
    alone (residual_fraction 0) leaves a response caused by the conditions nearly constant."""
    ratios: list[float] = []
    paper: list[float] = []
    for spec in _specs()[:60]:
        plain = build_spec(spec.seed, params=Params(residual_fraction=0.0))
        for variable, before in zip(spec.variables, plain.variables, strict=True):
            if variable.role != "dependent" or variable.expression is None:
                continue
            outcome = _design_outcome(spec, variable.column)
            if outcome.derived or (variable.decimals is not None and 10.0**-variable.decimals > 0.2 * outcome.spread):
                continue
            ratios.append(float(_column(spec, variable.column).std()) / outcome.spread)
            paper.append(float(_column(plain, before.column).std()) / outcome.spread)
    assert len(ratios) >= 60
    assert float(np.median(ratios)) >= 0.45, np.median(ratios)
    assert float(np.median(paper)) < 0.8 * float(np.median(ratios))


def _timed(spec: Spec) -> bool:
    return any(v.role == "datetime" and v.type == "datetime" for v in spec.variables)


def test_undated_files_start_on_days_drawn_per_file_and_follow_their_clock() -> None:
    """A file without a date in its path starts on a day of the study drawn for it (different files, different
    days), and its records follow the design's clock from there (tests/generators/test_clock.py has each clock's
    rules: sessions in working hours on working days, intervals on the grid, runs back to back)."""
    undated = [s for s in _specs() if "date" not in s.template.placeholders and _timed(s)]
    assert len(undated) >= 10
    for spec in undated[:15]:
        repo = Repository(spec)
        variable = next(v for v in spec.variables if v.role == "datetime")
        days = set()
        for path in repo.data_paths()[:6]:
            texts = repo.table(path).column(variable.column).text
            assert_follows_clock(variable, texts)
            days.add(datetime.fromisoformat(texts[0]).date())
        assert len(days) >= min(3, len(repo.data_paths()[:6])), spec.seed
