"""A formula's noise may multiply its value (``"scale": "log"`` on a derived outcome, generator version 12): a solve
time jitters by about 15 % whether it is 0.1 s or 500 s, where an absolute noise swamps the small values and vanishes
in the large ones. Designers had faked it with ``sin(evaluated_at * 146880)`` terms."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from generators.designs import DesignError
from generators.repository import Repository
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design

_LOAD = {
    "column": "peak_load_kn",
    "name": "peak load",
    "unit": "kN",
    "description": "Peak load: tensile strength times cross-section, read off a load cell good to about 5 %.",
    "formula": "uts_mpa * area_mm2 / 1000",
    "min": 0.01,
    "max": None,
    "decimals": 5,
    "noise": 0.02,
    "scale": "log",
}


def _with(outcome: dict[str, Any]) -> dict[str, Any]:
    data = fixture_file()
    data["designs"][0]["outcomes"].append(outcome)
    return data


def test_the_noise_of_a_log_scale_formula_multiplies_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    design = load_fixture(_with(_LOAD))
    assert design.outcomes[-1].scale == "log" and design.outcomes[-1].derived
    residuals = []
    specs = [s for s in specs_with_design(monkeypatch, design, 6) if "peak_load_kn" in {v.column for v in s.variables}]
    assert len(specs) >= 2  # a repository holds a draw of the design's columns
    for spec in specs:
        variable = spec.variable("peak_load_kn")
        assert variable.scale == "log" and math.isclose(variable.noise_sd, 0.02 * math.log(10))
        repo = Repository(spec)
        for path in repo.data_paths()[:10]:
            table = repo.table(path)
            load = np.asarray(table.column("peak_load_kn").values, dtype=float)
            exact = np.asarray(table.column("uts_mpa").values, dtype=float) * np.asarray(
                table.column("area_mm2").values, dtype=float
            )
            residuals.append(np.log10(load / (exact / 1000)))
    pooled = np.concatenate(residuals)
    assert pooled.size > 100
    assert abs(float(pooled.mean())) < 0.005  # centred on the formula: its typical value, not a drift
    assert abs(float(pooled.std()) / 0.02 - 1) < 0.2  # in decades, as the design says


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min": 0}, "a log-scale formula needs a positive min"),
        ({"min": None}, "a log-scale formula needs a positive min"),
        ({"noise": 0}, "a log-scale formula's noise is in decades"),
        ({"scale": "cubic"}, "scale: expected one of linear, log"),
    ],
)
def test_a_log_scale_formula_that_cannot_be_is_refused_in_one_line(change: dict[str, Any], message: str) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_with(_LOAD | change))
    assert "\n" not in str(caught.value)
