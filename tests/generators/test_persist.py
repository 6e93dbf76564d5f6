"""Records that follow the previous one (generator version 12): a design's ``persist`` on a normal measure or on a
response makes neighbouring records of a file correlated (an AR(1) process) instead of independent draws. Reviewers of
issue 24 rejected a monitor's air temperature jumping 24 -> 13.6 -> 24.1 C within minutes, a tool's wear going up and
down hour by hour and a GNSS station's velocity changing sign from one day to the next."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from generators.designs import DesignError
from generators.repository import Repository
from generators.rng import root_stream
from generators.spec import Distribution, SpecError, from_json, validate
from generators.synth import persistent_normal
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design, with_changed_column


def _with(measure: dict[str, Any] | None = None, outcome: dict[str, Any] | None = None) -> dict[str, Any]:
    data = fixture_file()
    design = data["designs"][0]
    design["measures"][0] |= measure or {}  # width_mm: normal, mean 10 mm, sd 0.1 mm
    design["outcomes"][1] |= outcome or {}  # yield_mpa: a response
    return data


def _lag_one(values: np.ndarray) -> float:
    return float(np.corrcoef(values[:-1], values[1:])[0, 1])


def _files(spec: Any, column: str, count: int = 12) -> list[np.ndarray]:
    repo = Repository(spec)
    return [np.asarray(repo.table(p).column(column).values) for p in repo.data_paths()[:count]]


def test_the_scan_is_the_recursion_and_keeps_the_normal_law() -> None:
    for persist in (0.3, 0.9, 0.99):
        drawn = persistent_normal(root_stream(7, "", "persist"), 300, persist)
        innovations = root_stream(7, "", "persist").normal(0.0, 1.0, 300)
        expected = np.empty(300)
        expected[0] = innovations[0]
        for t in range(1, 300):  # the recursion, one record at a time
            expected[t] = persist * expected[t - 1] + np.sqrt(1 - persist**2) * innovations[t]
        np.testing.assert_allclose(drawn, expected, rtol=0, atol=1e-12)
    many = np.array([persistent_normal(root_stream(k, "", "law"), 200, 0.9) for k in range(500)])
    assert abs(many.mean()) < 0.05 and abs(many.std() - 1.0) < 0.05  # every record keeps N(0, 1)
    assert abs(float(np.mean([_lag_one(z) for z in many])) - 0.9) < 0.05


def test_a_persistent_measure_follows_the_previous_record(monkeypatch: pytest.MonkeyPatch) -> None:
    steady = specs_with_design(monkeypatch, load_fixture(_with({"persist": 0.95})), 2)
    jumpy = specs_with_design(monkeypatch, load_fixture(_with()), 2)
    for spec in steady:
        assert spec.variable("width_mm").persist == 0.95
    follows = [_lag_one(v) for s in steady for v in _files(s, "width_mm")]
    independent = [_lag_one(v) for s in jumpy for v in _files(s, "width_mm")]
    assert np.median(follows) > 0.7 and abs(np.median(independent)) < 0.2, (follows, independent)
    pooled = np.concatenate([v for s in steady for v in _files(s, "width_mm", 40)])
    assert abs(pooled.mean() - 10.0) < 0.05 and 0.05 < pooled.std() < 0.15  # the measure's law, N(10, 0.1)


def test_a_persistent_response_drifts_around_what_its_causes_give(monkeypatch: pytest.MonkeyPatch) -> None:
    # causes that a file fixes, so what varies within a file is the scatter alone
    design = load_fixture(_with(outcome={"persist": 0.9, "residual": 20, "parents": {"alloy": 0, "anneal_c": -1}}))
    spec = specs_with_design(monkeypatch, design, 1)[0]
    variable = spec.variable("yield_mpa")
    assert variable.persist == 0.9
    plain = dataclasses.replace(spec, variables=tuple(dataclasses.replace(v, persist=0.0) for v in spec.variables))
    for path in Repository(spec).data_paths()[:8]:
        drifting = np.asarray(Repository(spec).table(path).column("yield_mpa").values, dtype=float)
        independent = np.asarray(Repository(plain).table(path).column("yield_mpa").values, dtype=float)
        # the same conditions and measures (the noise draws from its own stream): only the scatter differs
        assert np.abs(np.diff(drifting)).mean() < 0.6 * np.abs(np.diff(independent)).mean(), path
        assert _lag_one(drifting) > 0.6 and abs(_lag_one(independent)) < 0.4, path


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ({"persist": 1.0}, r"measures\[0\]\.persist: expected a correlation above 0 and at most 0\.99"),
        ({"persist": 0}, r"measures\[0\]\.persist: expected a correlation above 0"),
        ({"persist": True}, r"measures\[0\]\.persist: expected a correlation"),
        (
            {"persist": 0.5, "type": "integer", "dist": "poisson", "params": {"lam": 4}, "decimals": None},
            r"only a continuous measure follows the previous record",
        ),
        ({"persist": 0.5, "per": "file"}, r"a per-file measure has one value per file"),
    ],
)
def test_a_bad_persistence_is_refused_in_one_line(measure: dict[str, Any], message: str) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_with(measure))
    assert "\n" not in str(caught.value)


def test_the_spec_file_keeps_persistence_and_refuses_what_cannot_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = specs_with_design(monkeypatch, load_fixture(_with({"persist": 0.8}, {"persist": 0.5})), 1)[0]
    assert from_json(spec.to_json()) == spec
    data = json.loads(spec.to_json())
    for variable in data["variables"]:
        variable.pop("persist")  # a version-11 spec file has no such field: its columns are independent draws
    assert all(v.persist == 0.0 for v in from_json(json.dumps(data)).variables)
    bad = {
        "above the bound": ("independent", {"persist": 0.995}, r"persist: from 0 to 0\.99"),
        "an identifier": (
            "identifier",
            {"persist": 0.5},
            r"persist: only a continuous or categorical column drawn per",
        ),
        "a per-file column": (
            "independent",
            {"persist": 0.5, "per_file": True},
            r"persist: only a continuous or categorical column",
        ),
    }
    for what, (role, change, message) in bad.items():
        with pytest.raises(SpecError, match=message):
            validate(with_changed_column(spec, role, **change))
        assert what
    width = next(v for v in spec.variables if v.column == "width_mm")
    counts = dataclasses.replace(
        width, type="integer", decimals=None, distribution=Distribution("poisson", {"lam": 4.0})
    )
    changed = tuple(counts if v is width else v for v in spec.variables)
    with pytest.raises(SpecError, match=r"persist: only a continuous or categorical column drawn per row follows"):
        validate(dataclasses.replace(spec, variables=changed))


@pytest.mark.parametrize(
    ("dist", "params", "moments"),
    [
        ("uniform", {"low": 9, "high": 11}, (10.0, 2 / 12**0.5)),
        ("exponential", {"scale": 2}, (2.0, 2.0)),
        ("beta", {"a": 2, "b": 5, "low": 0, "high": 1}, (2 / 7, (10 / (49 * 8)) ** 0.5)),
    ],
)
def test_a_series_of_any_continuous_law_follows_the_previous_record_and_keeps_its_law(
    monkeypatch: pytest.MonkeyPatch, dist: str, params: dict[str, float], moments: tuple[float, float]
) -> None:
    """A wind speed (exponential), a mixing height (uniform) or a cloud fraction (beta) over a day: each record
    carried from a persistent normal draw by the law's quantile function (a Gaussian copula)."""
    design = load_fixture(_with({"persist": 0.9, "dist": dist, "params": params, "decimals": 4}))
    spec = specs_with_design(monkeypatch, design, 1)[0]
    files = _files(spec, "width_mm", 40)
    pooled = np.concatenate(files)
    mean, sd = moments
    assert abs(pooled.mean() - mean) < 0.15 * sd and abs(pooled.std() - sd) < 0.15 * sd
    assert np.median([_lag_one(v) for v in files]) > 0.7


def test_a_categorical_series_keeps_its_category_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """A traffic incident flag, a weather state: each record keeps the previous record's category with probability
    ``persist``, else draws afresh (a Markov chain whose stationary law is the column's probabilities)."""
    data = fixture_file()
    data["designs"][0]["measures"][2] |= {"persist": 0.9, "probs": [0.3, 0.7]}  # batch: B1 / B2
    steady = specs_with_design(monkeypatch, load_fixture(data), 3)
    plain = fixture_file()
    plain["designs"][0]["measures"][2] |= {"probs": [0.3, 0.7]}
    jumpy = specs_with_design(monkeypatch, load_fixture(plain), 3)

    def changes_and_share(specs: list[Any]) -> tuple[float, float]:
        changes, shares = [], []
        for spec in specs:
            if "batch" not in [v.column for v in spec.variables]:
                continue
            for labels in _files(spec, "batch", 20):
                changes.append(float(np.mean(labels[1:] != labels[:-1])))
                shares.append(float(np.mean(labels == "B1")))
        assert changes, "no repository records the batch"
        return float(np.mean(changes)), float(np.mean(shares))

    steady_changes, steady_share = changes_and_share(steady)
    jumpy_changes, jumpy_share = changes_and_share(jumpy)
    assert steady_changes < 0.1 < 0.3 < jumpy_changes  # 0.1 * 2 * 0.3 * 0.7 = 0.042 against 0.42
    assert abs(steady_share - 0.3) < 0.12 and abs(jumpy_share - 0.3) < 0.06
    with pytest.raises(DesignError, match=r"measures\[2\]\.persist: a per-file measure has one value per file"):
        per_file = fixture_file()
        per_file["designs"][0]["measures"][2] |= {"persist": 0.9, "per": "file"}
        load_fixture(per_file)
