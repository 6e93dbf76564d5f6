"""A measure whose law depends on a factor's level (generator version 12): household income by sample, a station's
elevation by region, children by age group. Every designer of issue 24's passes 9 and 10 asked for it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import LevelLaw, SpecError, from_json, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design

# width_mm: normal, 10 +- 0.1 mm; batch: B1/B2 at 0.5 each
_WIDTH_BY_ALLOY = {"factor": "alloy", "params": {"a1": {"mean": 8, "sd": 0.1}, "a3": {"mean": 12, "sd": 0.2}}}
_BATCH_BY_ANNEAL = {"factor": "anneal_c", "probs": {"300": [0.9, 0.1], "500.0": [0.1, 0.9]}}


def _with(width: dict[str, Any] | None = None, batch: dict[str, Any] | None = None) -> dict[str, Any]:
    data = fixture_file()
    measures = data["designs"][0]["measures"]
    if width is not None:
        measures[0]["by"] = width
    if batch is not None:
        measures[2]["by"] = batch
    return data


def test_a_design_gives_a_measure_a_law_per_level() -> None:
    design = load_fixture(_with(_WIDTH_BY_ALLOY, _BATCH_BY_ANNEAL))
    width, batch = design.measures[0], design.measures[2]
    assert width.by_level == LevelLaw("alloy", {"a1": {"mean": 8.0, "sd": 0.1}, "a3": {"mean": 12.0, "sd": 0.2}})
    assert batch.by_level == LevelLaw("anneal_c", probs={"300": (0.9, 0.1), "500": (0.1, 0.9)})  # keys as paths print


def _files_by_level(spec: Any, factor: str, column: str) -> dict[str, list[np.ndarray]]:
    repo = Repository(spec)
    found: dict[str, list[np.ndarray]] = {}
    for path in repo.data_paths():
        level = repo.tree.placeholder_values(repo.tree.file_index(path.split("/")) or 0)[factor]
        key = level if isinstance(level, str) else str(int(level))
        found.setdefault(key, []).append(np.asarray(repo.table(path).column(column).values))
    return found


def test_each_files_measure_follows_its_levels_law(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = specs_with_design(monkeypatch, load_fixture(_with(_WIDTH_BY_ALLOY, _BATCH_BY_ANNEAL)), 40)
    widths = batches = 0
    for spec in specs:
        varied = {pv.column for pv in spec.path_variables}
        width = next((v for v in spec.variables if v.column == "width_mm"), None)
        if width is not None and "alloy" in varied:
            assert width.by_level is not None and width.by_level.column == "alloy"
            expected = {"a1": 8.0, "a2": 10.0, "a3": 12.0}  # a2 keeps the measure's own law
            for level, files in _files_by_level(spec, "alloy", "width_mm").items():
                assert abs(float(np.mean(np.concatenate(files))) - expected[level]) < 0.1, (spec.seed, level)
            widths += 1
        elif width is not None:
            assert width.by_level is None  # the repository does not vary the alloy: one law
        batch = next((v for v in spec.variables if v.column == "batch"), None)
        if batch is not None and "anneal_c" in varied:
            for level, files in _files_by_level(spec, "anneal_c", "batch").items():
                share = float(np.mean(np.concatenate(files) == "B1"))
                expected_share = {"300": 0.9, "400": 0.5, "500": 0.1}[level]
                assert abs(share - expected_share) < 0.15, (spec.seed, level, share)
            batches += 1
    assert widths >= 3 and batches >= 3, (widths, batches)


def test_a_level_may_rule_a_category_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """THP-1 cells are male-derived: a level's probabilities may give a category 0, and no file of that level holds
    it (0.999 had left a chance of a female THP-1 file). The measure's own probabilities stay positive."""
    ruled_out = {"factor": "anneal_c", "probs": {"300": [1.0, 0.0], "500": [0.0, 1.0]}}
    specs = specs_with_design(monkeypatch, load_fixture(_with(batch=ruled_out)), 40)
    checked = 0
    for spec in specs:
        if "anneal_c" not in {pv.column for pv in spec.path_variables} or "batch" not in {
            v.column for v in spec.variables
        }:
            continue
        for level, files in _files_by_level(spec, "anneal_c", "batch").items():
            values = set(np.concatenate(files).tolist())
            if level in ("300", "500"):
                assert values == {"B1" if level == "300" else "B2"}, (spec.seed, level, values)
        checked += 1
    assert checked >= 3
    data = _with()
    data["designs"][0]["measures"][2]["probs"] = [1.0, 0.0]
    with pytest.raises(DesignError, match="one positive probability per category"):
        load_fixture(data)


@pytest.mark.parametrize(
    ("width", "batch", "message"),
    [
        ({"factor": "grain", "params": {"a1": {"mean": 8, "sd": 0.1}}}, None, r"by 'grain', which is not a factor"),
        ({"factor": "alloy", "params": {"a9": {"mean": 8, "sd": 0.1}}}, None, r"'a9' is not a level of 'alloy'"),
        ({"factor": "alloy", "params": {"a1": {"mean": 8}}}, None, r"by\.params\.a1\.sd: missing"),
        ({"factor": "alloy", "params": {"a1": {"mean": 0.1, "sd": 0.1}}}, None, r"a normal law with mean < 4 sd"),
        ({"factor": "alloy", "params": {}}, None, r"by\.params: expected an object of levels"),
        ({"factor": "alloy", "probs": {"a1": [1.0]}}, None, r"by\.params: missing"),
        (None, {"factor": "anneal_c", "probs": {"300": [0.5, 0.6]}}, r"summing to 1"),
        (None, {"factor": "anneal_c", "probs": {"350": [0.5, 0.5]}}, r"'350' is not a level of 'anneal_c'"),
        (None, {"factor": "anneal_c", "probs": {"300": [1.1, -0.1]}}, r"one probability per category \(0 or more\)"),
    ],
)
def test_a_bad_law_per_level_is_refused_in_one_line(
    width: dict[str, Any] | None, batch: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_with(width, batch))
    assert "\n" not in str(caught.value)


def test_the_spec_file_keeps_laws_per_level_and_refuses_bad_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = specs_with_design(monkeypatch, load_fixture(_with(_WIDTH_BY_ALLOY, _BATCH_BY_ANNEAL)), 40)
    spec = next(s for s in specs if any(v.by_level is not None for v in s.variables))
    assert from_json(spec.to_json()) == spec
    data = json.loads(spec.to_json())
    for variable in data["variables"]:
        variable.pop("by_level")  # a version-11 spec file: every column has one law
    assert all(v.by_level is None for v in from_json(json.dumps(data)).variables)
    index = next(i for i, v in enumerate(spec.variables) if v.by_level is not None)
    law = spec.variables[index].by_level
    assert law is not None
    level = next(iter({**law.params, **law.probs}))
    broken = {
        "not a path variable": dataclasses.replace(law, column="width_mm"),
        "a level it lacks": dataclasses.replace(
            law,
            params={"nope": next(iter(law.params.values()))} if law.params else {},
            probs={"nope": next(iter(law.probs.values()))} if law.probs else {},
        ),
        "a wrong law": dataclasses.replace(
            law, params={level: {"mean": 1.0}} if law.params else {}, probs={level: (0.2, 0.2)} if law.probs else {}
        ),
    }
    for what, bad in broken.items():
        columns = tuple(dataclasses.replace(v, by_level=bad) if i == index else v for i, v in enumerate(spec.variables))
        with pytest.raises(SpecError, match=r"by_level") as caught:
            validate(dataclasses.replace(spec, variables=columns))
        assert "\n" not in str(caught.value), what
    dependent = next(i for i, v in enumerate(spec.variables) if v.role == "dependent")
    columns = tuple(dataclasses.replace(v, by_level=law) if i == dependent else v for i, v in enumerate(spec.variables))
    with pytest.raises(SpecError, match=r"by_level: only an independent column has a law per level"):
        validate(dataclasses.replace(spec, variables=columns))
