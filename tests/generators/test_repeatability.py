"""How records of one condition repeat (a design outcome's ``residual``), and formulas that read the time of day and
a record's position in its file (issue 24): a lift coefficient at a fixed angle repeats to 0.01, sunlight is zero at
night, a cell's cycles climb through its file."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from generators.builders import procedural
from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import Params, Spec, SpecError, validate
from tests.generators.design_fixture import (
    fixture_file,
    load_fixture,
    seeds_of,
    specs_with_design,
    timed_fixture,
    with_changed_column,
)

_RESIDUAL = 1.5  # MPa: the yield strength of one alloy and anneal repeats to this


def _outcome(data: dict[str, Any], column: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in data["designs"][0]["outcomes"] if o["column"] == column)
    return found


def _conditions_only(residual: float | None = _RESIDUAL) -> dict[str, Any]:
    """The fixture with a yield strength caused only by the conditions a file fixes, repeating to ``residual``."""
    data = fixture_file()
    yield_mpa = _outcome(data, "yield_mpa")
    yield_mpa["parents"] = {"alloy": 0, "anneal_c": -1}
    if residual is not None:
        yield_mpa["residual"] = residual
    return data


def _within_file_sd(specs: list[Spec], column: str) -> list[float]:
    """The standard deviation of ``column`` within each data file of 20 rows or more."""
    found = []
    for spec in specs:
        if column not in {v.column for v in spec.variables}:
            continue
        repo = Repository(spec)
        for path in repo.data_paths()[:6]:
            table = repo.table(path)
            if table.n_rows >= 20:
                found.append(float(np.std(np.asarray(table.column(column).values, dtype=np.float64))))
    return found


@pytest.mark.parametrize(
    ("residual", "message"),
    [
        (0, "residual: the scatter between repeat records must be positive and at most the spread"),
        (-1, "residual: the scatter between repeat records must be positive"),
        (41, r"at most the spread \(40\)"),
        ("small", "expected a number"),
    ],
)
def test_a_residual_outside_the_spread_is_refused_in_one_line(residual: object, message: str) -> None:
    data = fixture_file()
    _outcome(data, "yield_mpa")["residual"] = residual
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(data)
    assert "\n" not in str(caught.value)


def test_the_design_residual_is_the_noise_of_the_spec() -> None:
    design = load_fixture(_conditions_only())
    assert next(o for o in design.outcomes if o.column == "yield_mpa").residual == _RESIDUAL
    logged = _conditions_only(None)
    _outcome(logged, "yield_mpa").update({"scale": "log", "center": 300, "spread": 0.1, "residual": 0.02})
    assert next(o for o in load_fixture(logged).outcomes if o.column == "yield_mpa").residual == 0.02


def test_records_of_one_condition_repeat_to_the_design_residual(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a file every condition is fixed, so the yield strength scatters by the design's residual only; without
    one it scatters by the builder's default share (half) of the 40 MPa spread."""
    specs = specs_with_design(monkeypatch, load_fixture(_conditions_only()), 6)
    noise = [v.noise_sd for s in specs for v in s.variables if v.column == "yield_mpa"]
    assert noise and all(n == _RESIDUAL for n in noise)
    scatter = _within_file_sd(specs, "yield_mpa")
    assert len(scatter) >= 5
    assert 0.6 * _RESIDUAL < float(np.median(scatter)) < 1.4 * _RESIDUAL
    default = _within_file_sd(specs_with_design(monkeypatch, load_fixture(_conditions_only(None)), 6), "yield_mpa")
    assert float(np.median(default)) > 8 * _RESIDUAL


def test_a_log_scale_residual_is_in_decades(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _conditions_only(None)
    _outcome(data, "yield_mpa").update({"scale": "log", "center": 300, "spread": 0.1, "residual": 0.02})
    specs = specs_with_design(monkeypatch, load_fixture(data), 4)
    noise = [v.noise_sd for s in specs for v in s.variables if v.column == "yield_mpa"]
    # the spec keeps 4 significant digits
    assert noise and all(n == pytest.approx(0.02 * math.log(10.0), rel=1e-3) for n in noise)


def test_params_without_residual_keep_the_papers_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """``residual_fraction = 0`` gives the paper's law back, design residual or not."""
    design = load_fixture(_conditions_only())
    specs_with_design(monkeypatch, design, 1)  # puts the design in place
    seed = seeds_of(design.field, design.subdomain, 1)[0]
    spec = procedural.build_spec(seed, Params(residual_fraction=0.0))
    assert all(v.noise_sd != _RESIDUAL for v in spec.variables if v.column == "yield_mpa")


def _daylight_fixture() -> dict[str, Any]:
    """The fixture timed by an instrument's queue around the clock, with formulas for the hour and the sunlight."""
    # 1e-6: a whole hour in days times 24 may fall a hair below the integer
    return timed_fixture("run", "20min", [
        {
            "column": "irradiance_w_m2", "name": "irradiance", "unit": "W/m^2", "description": "Sunlight.",
            "formula": "max(0, 900 * sin(pi * ((tested_at % 1) * 24 - 6) / 12))", "min": 0, "max": 1400,
            "decimals": 1,
        },
        {
            "column": "hour_of_day", "name": "hour", "unit": "h", "description": "Hour of the test.",
            "formula": "floor((tested_at % 1) * 24 + 1e-6)", "min": 0, "max": 23, "decimals": 0,
        },
    ])  # fmt: skip


def test_a_formula_reads_the_time_of_day_from_the_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    """``t % 1`` is the time of day as the file writes it: the hour a formula computes is the hour of the row's
    timestamp, and the sunlight formula is zero at night and positive by day."""
    specs = specs_with_design(monkeypatch, load_fixture(_daylight_fixture()), 8)
    checked = {"hour_of_day": 0, "irradiance_w_m2": 0}
    for spec in specs:
        repo = Repository(spec)
        for path in repo.data_paths()[:4]:
            table = repo.table(path)
            hours = np.array([int(t[11:13]) for t in table.column("tested_at").text])
            if "hour_of_day" in table.names:
                assert np.array_equal(np.asarray(table.column("hour_of_day").values, dtype=np.int64), hours)
                checked["hour_of_day"] += table.n_rows
            if "irradiance_w_m2" in table.names:
                light = np.asarray(table.column("irradiance_w_m2").values, dtype=np.float64)
                assert np.all(light[(hours < 6) | (hours >= 18)] == 0)
                assert np.all(light[(hours >= 7) & (hours < 17)] > 0)
                checked["irradiance_w_m2"] += table.n_rows
    assert min(checked.values()) > 100, checked


def test_the_timestamp_is_no_cause_of_a_response() -> None:
    data = _daylight_fixture()
    _outcome(data, "yield_mpa")["parents"] = {"alloy": 0, "tested_at": 1}
    with pytest.raises(
        DesignError,
        match="has 'tested_at' as a cause: the time and the calendar are read by formulas only",
    ):
        load_fixture(data)
    unknown = _daylight_fixture()
    _outcome(unknown, "hour_of_day")["formula"] = "floor((tested_on % 1) * 24)"
    with pytest.raises(DesignError, match=r"formula of 'hour_of_day'.*row and, with a timestamp, the timestamp"):
        load_fixture(unknown)


def test_a_response_may_trend_over_a_files_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """``row`` as a response's cause with a direction (version 12): contributions falling round by round. The
    response falls through each file while its records under one condition stay otherwise alike."""
    data = fixture_file()
    _outcome(data, "yield_mpa").update(parents={"alloy": 0, "anneal_c": -1, "row": -2}, residual=3)
    specs = specs_with_design(monkeypatch, load_fixture(data), 6)
    correlations = []
    for spec in specs:
        variable = next((v for v in spec.variables if v.column == "yield_mpa"), None)
        if variable is None:
            continue
        assert variable.expression is not None and "row" in variable.expression
        repo = Repository(spec)
        for path in repo.data_paths()[:4]:
            table = repo.table(path)
            if table.n_rows >= 30:
                strength = np.asarray(table.column("yield_mpa").values, dtype=np.float64)
                correlations.append(float(np.corrcoef(np.arange(table.n_rows), strength)[0, 1]))
    assert len(correlations) >= 5 and float(np.median(correlations)) < -0.5, correlations
    # A trend over records is smooth: never a step at the middle record, the same in every file (a reviewer read
    # tumours tripling at the 8th measurement in both files as a templated switch).
    trended = specs_with_design(monkeypatch, load_fixture(data), 40)
    expressions = [v.expression or "" for spec in trended for v in spec.variables if v.column == "yield_mpa"]
    assert len(expressions) >= 20 and not any("where(row" in e for e in expressions)
    flat = fixture_file()
    _outcome(flat, "yield_mpa").update(parents={"alloy": 0, "anneal_c": -1, "row": 0})
    with pytest.raises(DesignError, match=r"'row' as a cause is a trend over a file's records and needs a direction"):
        load_fixture(flat)


def _counted_fixture() -> dict[str, Any]:
    """The fixture with a cycle count that climbs through each file and a strength that falls with it."""
    data = fixture_file()
    outcomes = data["designs"][0]["outcomes"]
    outcomes[:0] = [
        {
            "column": "cycles_run", "name": "cycles run", "unit": "count", "description": "Cycles before the test.",
            "formula": "row * 25", "min": 0, "max": None, "decimals": 0,
        }
    ]  # fmt: skip
    _outcome(data, "yield_mpa").update(parents={"alloy": 0, "anneal_c": -1, "cycles_run": -1}, residual=5)
    return data


def test_a_formula_reads_the_records_position_in_its_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """``row`` is 0 for a file's first record and climbs by one per record, in every file and format; a response
    caused by what it counts follows it."""
    specs = specs_with_design(monkeypatch, load_fixture(_counted_fixture()), 6)
    files = 0
    correlations = []
    for spec in specs:
        repo = Repository(spec)
        for path in repo.data_paths()[:4]:
            table = repo.table(path)
            if "cycles_run" not in table.names:
                continue  # a repository that records neither the count nor what it causes
            cycles = np.asarray(table.column("cycles_run").values, dtype=np.float64)
            assert np.array_equal(cycles, 25.0 * np.arange(table.n_rows))
            if "yield_mpa" in table.names and table.n_rows >= 30:
                strength = np.asarray(table.column("yield_mpa").values, dtype=np.float64)
                correlations.append(float(np.corrcoef(cycles, strength)[0, 1]))
            files += 1
    # most files: a threshold shape drawn at a count that a short file never reaches leaves that file flat
    assert files >= 10 and len(correlations) >= 5
    assert float(np.median(correlations)) < -0.3, correlations
    assert any("row" in (v.expression or "") for v in specs[0].variables)


def test_row_is_no_name_for_a_column() -> None:
    data = fixture_file()
    data["designs"][0]["measures"][0]["column"] = "row"
    with pytest.raises(DesignError, match="column 'row' is a reserved name"):
        load_fixture(data)


def test_a_spec_refuses_row_as_a_column_or_path_variable_name() -> None:
    spec = procedural.build_spec(118)
    with pytest.raises(SpecError, match="'row' is a reserved or path name"):
        validate(with_changed_column(spec, "independent", column="row"))
    renamed = dataclasses.replace(
        spec, path_variables=(dataclasses.replace(spec.path_variables[0], column="row"), *spec.path_variables[1:])
    )
    with pytest.raises(SpecError, match="'row' is a reserved name"):
        validate(renamed)


def _nuisance_sds(monkeypatch: pytest.MonkeyPatch, residual: float | None) -> list[float]:
    """The standard deviation, over the reference sample, of every researcher, date or run-number effect the builder
    adds to the yield strength in 300 draws of one repository of the fixture."""
    design = load_fixture(_conditions_only(residual))
    spec = specs_with_design(monkeypatch, design, 1)[0]
    outcome = next(o for o in design.outcomes if o.column == "yield_mpa")
    reference = procedural._Reference(spec, procedural.root_stream(spec.seed, "", "test-nuisance"))
    for variable in spec.variables:
        if variable.column != "yield_mpa":
            reference.add(variable)
    found = []
    for draw in range(300):
        _, terms = procedural._dependent(outcome, reference, spec, {}, procedural.root_stream(draw, "", "nuisance"))
        found += [float(np.std(reference.evaluate("0" + t.code))) for t in terms if t.nuisance]
    return found


def test_a_researcher_or_date_effect_is_of_the_order_of_the_repeat_scatter(monkeypatch: pytest.MonkeyPatch) -> None:
    """An analyst's bias or an instrument's drift moves a value by about how records repeat, not by how conditions
    differ (a Deccan basalt's SiO2 moved 15 % with the researcher): half the stated residual; without a residual,
    half the spread as before."""
    stated = _nuisance_sds(monkeypatch, _RESIDUAL)
    default = _nuisance_sds(monkeypatch, None)
    assert len(stated) >= 30 and len(default) >= 30  # the nuisance is drawn a quarter of the time
    assert max(stated) <= 1.5 * _RESIDUAL
    assert float(np.median(default)) > 4 * _RESIDUAL
