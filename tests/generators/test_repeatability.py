"""How records of one condition repeat (a design outcome's ``residual``) and formulas that read the time of day
(issue 24): a lift coefficient at a fixed angle repeats to 0.01, sunlight is zero at night."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from generators.builders import procedural
from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import Params, Spec
from tests.generators.design_fixture import fixture_file, load_fixture, seeds_of, specs_with_design

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
    data = fixture_file()
    design = data["designs"][0]
    design["timestamp"] = {
        "column": "tested_at", "name": "test time", "description": "Time of the test.", "clock": "run",
        "every": "20min",
    }  # fmt: skip
    # 1e-6: a whole hour in days times 24 may fall a hair below the integer
    design["outcomes"][:0] = [
        {
            "column": "irradiance_w_m2", "name": "irradiance", "unit": "W/m^2", "description": "Sunlight.",
            "formula": "max(0, 900 * sin(pi * ((tested_at % 1) * 24 - 6) / 12))", "min": 0, "max": 1400,
            "decimals": 1,
        },
        {
            "column": "hour_of_day", "name": "hour", "unit": "h", "description": "Hour of the test.",
            "formula": "floor((tested_at % 1) * 24 + 1e-6)", "min": 0, "max": 23, "decimals": 0,
        },
    ]  # fmt: skip
    return data


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
    with pytest.raises(DesignError, match="has the timestamp 'tested_at' as a cause: use it in a formula"):
        load_fixture(data)
    unknown = _daylight_fixture()
    _outcome(unknown, "hour_of_day")["formula"] = "floor((tested_on % 1) * 24)"
    with pytest.raises(DesignError, match=r"formula of 'hour_of_day'.*and the timestamp"):
        load_fixture(unknown)
