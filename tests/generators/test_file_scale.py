"""Generator version 8 (issue 24): measures fixed per file, responses on a log scale, studies that start no earlier
than their methods exist. Each test reads what a reader of the files would see, on the fixture design put in place
of a real subdomain's design."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import date
from typing import Any

import numpy as np
import pytest

from generators.designs import Design, DesignError
from generators.repository import Repository
from generators.spec import Spec, SpecError, from_dict, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design, with_changed_column


def _item(data: dict[str, Any], kind: str, column: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in data["designs"][0][kind] if o["column"] == column)
    return found


def _fixture_v8() -> dict[str, Any]:
    """The fixture with a per-file measure (the heat batch) and a log-scale response (a defect density)."""
    data = fixture_file()
    _item(data, "measures", "thickness_mm")["per"] = "file"
    _item(data, "measures", "batch")["per"] = "file"
    data["designs"][0]["outcomes"].append(
        {"column": "defects_cm2", "name": "defect density", "unit": "cm^-2", "description": "Voids per area.",
         "center": 200, "spread": 1.0, "min": 0, "max": None, "decimals": 2, "scale": "log",
         "parents": {"anneal_c": -1, "alloy": {"a1": 1, "a2": 0, "a3": -1}}}
    )  # fmt: skip
    data["designs"][0]["since"] = 2022
    return data


@pytest.fixture
def fixture_specs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Spec]]:
    """Specs of 6 repositories of the fixture's subdomain, built from the version-8 fixture design."""
    yield specs_with_design(monkeypatch, load_fixture(_fixture_v8()), 6)


def _files(spec: Spec, count: int = 4) -> list[Any]:
    repo = Repository(spec)
    return [repo.table(path) for path in repo.data_paths()[:count]]


def test_a_per_file_measure_is_one_value_in_every_row_of_a_file(fixture_specs: list[Spec]) -> None:
    per_file: dict[str, set[str]] = {"thickness_mm": set(), "batch": set()}
    for spec in fixture_specs:
        kinds = {v.column: v.per_file for v in spec.variables}
        assert not kinds.get("width_mm", False)
        for table in _files(spec):
            for column in per_file.keys() & set(table.names):
                assert kinds[column]
                values = set(table.column(column).text)
                assert len(values) == 1, f"{column} varies within one file: {sorted(values)[:5]}"
                per_file[column] |= values
            if "width_mm" in table.names:  # a per-row measure still varies
                assert len(set(table.column("width_mm").text)) > 1
    assert len(per_file["thickness_mm"]) > 3, "a per-file measure must differ between files"
    assert per_file["batch"] == {"B1", "B2"}


def test_a_log_scale_response_spans_its_decades_and_stays_positive(fixture_specs: list[Spec]) -> None:
    logs = []
    for spec in fixture_specs:
        variable = spec.variable("defects_cm2") if "defects_cm2" in {v.column for v in spec.variables} else None
        if variable is None:
            continue
        assert variable.scale == "log"
        for table in _files(spec, 8):
            values = np.asarray(table.column("defects_cm2").values, dtype=float)
            assert (values > 0).all()
            logs.append(np.log10(values))
    assert logs, "the fixture's log-scale response is in none of the repositories"
    pooled = np.concatenate(logs)
    # center 200 (geometric mean), spread one decade: causes and residual move log10 by about a decade
    assert abs(float(np.median(pooled)) - math.log10(200)) < 0.6
    assert 0.4 < float(pooled.std()) < 2.0
    assert float(pooled.max() - pooled.min()) > 2.0, "a log-scale response must span decades"


def test_a_log_scale_level_effect_multiplies_the_response(fixture_specs: list[Spec]) -> None:
    by_alloy: dict[str, list[float]] = {"a1": [], "a3": []}
    for spec in fixture_specs:
        repo = Repository(spec)
        if "defects_cm2" not in {v.column for v in spec.variables} or "alloy" not in spec.template.placeholders:
            continue
        for path in repo.data_paths():
            number = repo.tree.file_index(path.split("/"))
            assert number is not None
            alloy = repo.tree.placeholder_values(number).get("alloy")
            if alloy in by_alloy:
                by_alloy[str(alloy)] += np.log10(repo.table(path).column("defects_cm2").values).tolist()
    assert by_alloy["a1"] and by_alloy["a3"]
    assert np.median(by_alloy["a1"]) > np.median(by_alloy["a3"]) + 0.3  # a1 expected highest: at least x2


def test_a_study_starts_no_earlier_than_its_design_allows(fixture_specs: list[Spec]) -> None:
    for spec in fixture_specs:
        assert date.fromisoformat(spec.start_date).year >= 2022
        assert date.fromisoformat(spec.start_date) <= date(2024, 12, 31)


def test_per_file_and_log_scale_round_trip_through_the_spec_file(fixture_specs: list[Spec]) -> None:
    spec = fixture_specs[0]
    again = from_dict(json.loads(spec.to_json()))
    assert again == spec
    assert any(v.per_file for v in again.variables)


@pytest.mark.parametrize(
    ("role", "change", "message"),
    [
        ("dependent", {"per_file": True}, "only an independent, identifier or datetime column is one per file"),
        ("independent", {"scale": "log"}, "only a continuous dependent column has a log scale"),
        ("dependent", {"scale": "cubic"}, "is not one of linear, log"),
    ],
)
def test_a_spec_refuses_per_file_and_scale_where_they_mean_nothing(
    fixture_specs: list[Spec], role: str, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        validate(with_changed_column(fixture_specs[0], role, **change))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: _item(d, "measures", "width_mm").update(per="site"), "per: expected one of row, file"),
        (lambda d: _item(d, "outcomes", "yield_mpa").update(scale="sqrt"), "scale: expected one of linear, log"),
        (lambda d: _item(d, "outcomes", "defects_cm2").update(center=0), "log-scale outcome needs a positive"),
        (lambda d: _item(d, "outcomes", "defects_cm2").update(spread=4), "at most 3"),
        (lambda d: _item(d, "outcomes", "defects_cm2").update(min=50), r"center / 10\^spread"),
        (lambda d: _item(d, "outcomes", "defects_cm2").update(max=1000), r"center \* 10\^spread"),
        (lambda d: _item(d, "outcomes", "yield_mpa").update(step=100), "coarser than the typical range"),
        (lambda d: _item(d, "outcomes", "area_mm2").update(step=5, min=1, max=8), "fewer than two multiples"),
        (lambda d: d["designs"][0].update(since=2030), "since: expected a year from 2016 to 2024"),
        (lambda d: d["designs"][0].update(since=2015), "since: expected a year from 2016 to 2024"),
        (lambda d: d["designs"][0].update(since="2020"), "since: expected a year"),
    ],
)
def test_bad_per_file_scale_and_since_are_refused(mutate: Any, message: str) -> None:
    data = _fixture_v8()
    load_fixture(data)  # the version-8 fixture itself is valid
    mutate(data)
    with pytest.raises(DesignError, match=message):
        load_fixture(data)


def test_the_fixture_design_parses_the_new_keys() -> None:
    design: Design = load_fixture(_fixture_v8())
    measures = {m.column: m for m in design.measures}
    assert measures["thickness_mm"].per_file and measures["batch"].per_file and not measures["width_mm"].per_file
    outcome = next(o for o in design.outcomes if o.column == "defects_cm2")
    assert (outcome.scale, outcome.center, outcome.spread) == ("log", 200.0, 1.0)
    assert design.since == 2022
