"""A design's level table sets where each level sits, and a bound may hold values (generator version 12).

Designers of issue 24 found that a level's magnitude drifted between repositories (a single NV centre's noise floor, a
technology's open-circuit voltage): the effects were scaled by a share drawn per repository and the offset recentred
the levels a repository held. Now a level table is exact (an effect of 1 is one spread) and left where the design
puts it. ``clip`` sets values beyond a bound to the bound (no rain is 0 mm) instead of folding them back inside."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from generators import expr
from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import SpecError, from_json, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design, with_changed_column

_TABLE = {"a1": 1.5, "a2": 0.0, "a3": -1.5}  # yield_mpa: center 300, spread 40 -> 360, 300, 240 MPa


def _with_table(**outcome: Any) -> dict[str, Any]:
    data = fixture_file()
    yield_mpa = data["designs"][0]["outcomes"][1]
    # the alloy alone: what a file fixes, so the level's place is what the files show
    yield_mpa |= {"parents": {"alloy": _TABLE}, "residual": 2} | outcome
    data["designs"][0]["outcomes"][2]["parents"]["anneal_c"] = -1  # every factor still causes some response
    return data


def _level_means(spec: Any, column: str = "yield_mpa") -> dict[str, float]:
    repo = Repository(spec)
    means: dict[str, list[float]] = {}
    for path in repo.data_paths():
        level = str(repo.tree.placeholder_values(repo.tree.file_index(path.split("/")) or 0)["alloy"])
        means.setdefault(level, []).append(float(np.mean(repo.table(path).column(column).values)))
    return {level: float(np.mean(values)) for level, values in means.items()}


def test_a_level_sits_where_the_design_puts_it_in_every_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = [s for s in specs_with_design(monkeypatch, load_fixture(_with_table()), 40) if _varies_alloy(s)]
    assert len(specs) >= 8
    subsets = set()
    for spec in specs:
        subsets.add(tuple(spec.path_variable("alloy").values))
        for level, mean in _level_means(spec).items():
            assert abs(mean - (300 + 40 * _TABLE[level])) < 3, (spec.seed, level, mean)
    assert len(subsets) >= 2, "every repository held the same levels: the test would not see a recentring"


def _varies_alloy(spec: Any) -> bool:
    """The repository varies the alloy and records the yield without a confounder (a researcher's or a date's effect,
    which the builder adds to some repositories and which moves a level's mean over the files that hold it)."""
    varied = any(pv.column == "alloy" for pv in spec.path_variables)
    recorded = next((v for v in spec.variables if v.column == "yield_mpa"), None)
    if not varied or recorded is None or recorded.expression is None:
        return False
    return not expr.names_used(expr.parse(recorded.expression)) & {"researcher", "date", "seq_number"}


def test_a_bound_that_clips_holds_many_records_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A response centred near its minimum: folded, values pile near the bound but none sits on it; clipped,
    those beyond sit exactly on it, as a dry day's rain or a reading under a detection limit does."""
    near_zero = {"center": 5, "spread": 5, "min": 0, "max": None, "residual": 5, "decimals": 1}
    folded = specs_with_design(monkeypatch, load_fixture(_with_table(**near_zero)), 1)[0]
    clipped = specs_with_design(monkeypatch, load_fixture(_with_table(**near_zero, clip=True)), 1)[0]
    assert clipped.variable("yield_mpa").clip and not folded.variable("yield_mpa").clip

    def share_at_zero(spec: Any) -> float:
        repo = Repository(spec)
        values = np.concatenate([repo.table(p).column("yield_mpa").values for p in repo.data_paths()[:20]])
        assert values.min() >= 0
        return float(np.mean(values == 0))

    # clipped: about 0.7 of an a3 file's records (centre -2.5), 0.16 of an a2 file's, few of an a1 file's
    assert share_at_zero(folded) < 0.02 < 0.05 < share_at_zero(clipped)


def test_a_clipped_formula_holds_records_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    def at_zero(clip: bool) -> float:
        data = fixture_file()
        area = data["designs"][0]["outcomes"][0]  # area_mm2 = width x thickness, about 20 mm^2
        area |= {"formula": "width_mm * thickness_mm - 20", "min": 0, "max": None, "noise": 0.5} | (
            {"clip": True} if clip else {}
        )
        design = load_fixture(data)
        assert design.outcomes[0].clip is clip
        specs = [s for s in specs_with_design(monkeypatch, design, 12) if "area_mm2" in [v.column for v in s.variables]]
        assert specs, "no repository records the formula"
        repo = Repository(specs[0])
        values = np.concatenate([repo.table(p).column("area_mm2").values for p in repo.data_paths()[:10]])
        assert values.min() >= 0
        return float(np.mean(values == 0))

    assert at_zero(clip=False) < 0.05 < 0.3 < at_zero(clip=True)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clip": "yes"}, r"outcomes\[1\]\.clip: expected true or false"),
        ({"clip": True, "min": None, "max": None}, r"outcomes\[1\]\.clip: needs a min or a max"),
    ],
)
def test_a_bad_clip_is_refused_in_one_line(change: dict[str, Any], message: str) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_with_table(**change))
    assert "\n" not in str(caught.value)


def test_the_spec_file_keeps_clip_and_refuses_it_off_a_dependent_column(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = specs_with_design(monkeypatch, load_fixture(_with_table(clip=True)), 1)[0]
    assert from_json(spec.to_json()) == spec
    data = json.loads(spec.to_json())
    for variable in data["variables"]:
        variable.pop("clip")  # a version-11 spec file: every dependent column folds
    assert not any(v.clip for v in from_json(json.dumps(data)).variables)
    with pytest.raises(SpecError, match=r"clip: only a dependent column is clipped"):
        validate(with_changed_column(spec, "independent", clip=True))


def test_a_measure_with_a_min_piles_records_on_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A day's rain: a law centred near 0 with a min of 0 gives dry days at exactly 0 mm (and needs no "signed")."""
    data = fixture_file()
    data["designs"][0]["measures"][0] |= {"params": {"mean": 0.5, "sd": 2}, "min": 0, "decimals": 1}
    design = load_fixture(data)
    assert (design.measures[0].low, design.measures[0].high) == (0.0, None)
    spec = specs_with_design(monkeypatch, design, 1)[0]
    assert spec.variable("width_mm").bounds == (0.0, None)
    repo = Repository(spec)
    values = np.concatenate([repo.table(p).column("width_mm").values for p in repo.data_paths()[:10]])
    assert values.min() == 0 and 0.3 < float(np.mean(values == 0)) < 0.6  # P(N(0.5, 2) < 0) = 0.40
    for change, message in [
        ({"min": 5, "max": 1}, r"measures\[0\]: min must be below max"),
        ({"params": {"mean": 0.5, "sd": 2}}, r"a normal law with mean < 4 sd gives negative values"),
    ]:
        bad = fixture_file()
        bad["designs"][0]["measures"][0] |= change
        with pytest.raises(DesignError, match=message):
            load_fixture(bad)
    counts = fixture_file()
    counts["designs"][0]["measures"].append(
        {"column": "grains", "name": "grains", "unit": "", "description": "Grains.", "type": "integer",
         "dist": "poisson", "params": {"lam": 4}, "min": 1}
    )  # fmt: skip
    with pytest.raises(DesignError, match=r"only a continuous measure has a min or a max"):
        load_fixture(counts)


def test_a_clipped_response_may_centre_below_its_bound() -> None:
    """A hurdle: most people owe nothing. Folded, a typical range below the bound is refused; clipped, it is the
    share of records that sit on the bound."""
    hurdle = {"center": 2, "spread": 10, "min": 0, "max": None, "residual": 5}
    with pytest.raises(DesignError, match=r"center - spread falls below min"):
        load_fixture(_with_table(**hurdle))
    assert load_fixture(_with_table(**hurdle, clip=True)).outcomes[1].clip


def test_a_formulas_noise_may_follow_the_previous_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weather part of a daily temperature: a formula's noise that drifts instead of scattering afresh."""
    data = fixture_file()
    data["designs"][0]["outcomes"][0] |= {"noise": 2, "persist": 0.95, "decimals": 2}
    design = load_fixture(data)
    assert design.outcomes[0].persist == 0.95
    specs = [s for s in specs_with_design(monkeypatch, design, 12) if "area_mm2" in [v.column for v in s.variables]]
    assert specs and specs[0].variable("area_mm2").persist == 0.95
    repo = Repository(specs[0])
    lags = []
    for path in repo.data_paths()[:8]:
        table = repo.table(path)
        noise = np.asarray(table.column("area_mm2").values, dtype=float) - np.asarray(
            table.column("width_mm").values, dtype=float
        ) * np.asarray(table.column("thickness_mm").values, dtype=float)
        lags.append(float(np.corrcoef(noise[:-1], noise[1:])[0, 1]))
    assert float(np.median(lags)) > 0.7, lags
    exact = fixture_file()
    exact["designs"][0]["outcomes"][0] |= {"persist": 0.9}
    with pytest.raises(DesignError, match=r"an exact formula has no scatter to follow"):
        load_fixture(exact)
