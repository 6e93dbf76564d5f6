"""Structure between columns (generator version 6): derived columns, day-resolution dates, responses folded at
their bounds. Each test reads what a reader of the files would see."""

from __future__ import annotations

import dataclasses
import functools
import re
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from generators import expr
from generators.builders.procedural import build_spec
from generators.designs import DesignError, designs
from generators.repository import Repository
from generators.spec import ROW_NAME, Spec, SpecError, Variable, World, validate
from generators.synth import fold, placeholder_env
from tests.generators.design_fixture import fixture_file, load_fixture

SEEDS = range(1, 401)


@functools.cache
def _specs() -> list[Spec]:
    return [build_spec(seed) for seed in SEEDS]


def _derived_columns(spec: Spec) -> list[Variable]:
    """The spec's dependent columns that are a design formula (a definition, not a hypothesis)."""
    design = designs()[(spec.context.field, spec.context.subdomain)]
    formulas = {o.column: o.formula for o in design.outcomes if o.derived}
    return [v for v in spec.variables if v.role == "dependent" and formulas.get(v.column) == v.expression]


# -- design schema ----------------------------------------------------------------------------------
_minimal = fixture_file
_load = load_fixture


def test_a_derived_outcome_is_parsed_with_its_inputs_as_parents() -> None:
    design = _load(_minimal())
    area = design.outcomes[0]
    assert area.derived and area.formula == "width_mm * thickness_mm" and area.noise == 0.0
    assert area.parents == (("thickness_mm", 0), ("width_mm", 0))
    assert design.timestamp is not None and design.timestamp.resolution == "date"
    assert not design.outcomes[1].derived


def _outcome(data: dict[str, Any], column: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in data["designs"][0]["outcomes"] if o["column"] == column)
    return found


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: _outcome(d, "area_mm2").update(formula="width_mm * depth_mm"), "formula of 'area_mm2'"),
        (lambda d: _outcome(d, "area_mm2").update(formula="width_mm *"), "formula"),
        (lambda d: _outcome(d, "area_mm2").update(formula="batch * 2"), "formula of 'area_mm2'"),
        (lambda d: _outcome(d, "area_mm2").update(formula="uts_mpa / 2"), "formula of 'area_mm2'"),  # a later one
        (lambda d: _outcome(d, "area_mm2").update(formula="__import__('os')"), "formula"),
        (lambda d: _outcome(d, "area_mm2").update(formula="3.5"), "uses no column"),
        (lambda d: _outcome(d, "area_mm2").update(noise=-1), "noise: must not be negative"),
        (lambda d: _outcome(d, "area_mm2").update(center=5), "unknown field"),
        (lambda d: _outcome(d, "area_mm2").update(min=5, max=1), "min must be below max"),
        (
            lambda d: (
                _outcome(d, "uts_mpa").update(formula="yield_mpa * 1.4", min=0, max=None)
                or [_outcome(d, "uts_mpa").pop(k) for k in ("center", "spread", "parents")]
            ),
            "at least two outcomes",
        ),
        (lambda d: d["designs"][0]["timestamp"].update(resolution="hour"), "resolution: expected one of"),
    ],
)
def test_bad_derived_outcomes_are_refused(mutate: Any, message: str) -> None:
    data = _minimal()
    mutate(data)
    with pytest.raises(DesignError, match=message):
        _load(data)


def test_a_factor_used_only_by_a_formula_is_refused() -> None:
    data = _minimal()
    _outcome(data, "uts_mpa")["parents"] = {"yield_mpa": 1, "batch": 0}  # strain_rate now drives nothing...
    _outcome(data, "area_mm2")["formula"] = "width_mm * thickness_mm * (1 + 0 * strain_rate)"  # ...but a formula
    with pytest.raises(DesignError, match="factor 'strain_rate' is a parent of no response"):
        _load(data)


# -- the data ---------------------------------------------------------------------------------------
def test_derived_columns_hold_their_definition_in_the_written_files() -> None:
    """A noise-free derived column, recomputed from the columns as written, equals what is written (up to the
    column's precision): earnings are wage x hours x weeks in every row of every file, not only on average."""
    checked = 0
    for spec in _specs():
        exact = [v for v in _derived_columns(spec) if v.noise_sd == 0]
        if not exact:
            continue
        repo = Repository(spec)
        for path in repo.data_paths()[:2]:
            table = repo.table(path)
            env = _env(repo, path, table)
            for variable in exact:
                written = np.asarray(table.column(variable.column).values, dtype=np.float64)
                recomputed = expr.evaluate(variable.expression or "", env, table.n_rows)
                low, high = variable.bounds
                recomputed = fold(recomputed, -1e15 if low is None else low, 1e15 if high is None else high)
                if variable.step is not None:  # a policy rate moved in 25 bp steps: the nearest step is written
                    recomputed = np.round(recomputed / variable.step) * variable.step
                step = 0.5 * 10.0 ** -(variable.decimals if variable.decimals is not None else 12)
                tolerance = step + 1e-5 * np.abs(recomputed) + 1e-12
                inside = np.abs(written - recomputed) <= tolerance
                assert inside.all(), (spec.seed, path, variable.column, variable.expression)
                checked += 1
    assert checked >= 50, f"only {checked} derived columns in seeds {SEEDS.start}-{SEEDS.stop - 1}"


def _calendar(texts: list[str]) -> dict[str, expr.Column]:
    """The calendar names of records, from their time text by the standard library (not the generator's code)."""
    moments = [datetime.fromisoformat(t) for t in texts]
    first = min(moments)
    return {
        "day_of_year": np.array(
            [m.timetuple().tm_yday + (m.hour * 3600 + m.minute * 60 + m.second) / 86_400 for m in moments]
        ),
        "day_of_week": np.array([float(m.weekday()) for m in moments]),
        "elapsed_days": np.array([(m - first).total_seconds() / 86_400 for m in moments]),
    }


def _env(repo: Repository, path: str, table: Any) -> dict[str, expr.Column]:
    """The table's columns, and the file's conditions, as expression inputs: a time as days since the study start
    and the record's calendar read from its text, ``row`` as the record's position in the file."""
    spec = repo.spec
    env: dict[str, expr.Column] = {ROW_NAME: np.arange(table.n_rows, dtype=np.float64)}
    for column in table.columns:
        variable = spec.variable(column.name)
        if variable.role == "identifier":
            continue
        if variable.role == "datetime":
            elapsed = np.array(column.text, dtype="datetime64[s]") - np.datetime64(spec.start_date, "s")
            env[column.name] = elapsed.astype(np.float64) / 86_400
            env |= _calendar(column.text)
            continue
        if column.type == "categorical":
            codes = np.array([variable.categories.index(v) for v in column.values], dtype=np.int64)
            env[column.name] = expr.Categorical(codes, variable.categories)
        else:
            env[column.name] = np.asarray(column.values, dtype=np.float64)
    number = repo.tree.file_index(path.split("/"))
    assert number is not None, path
    values = repo.tree.placeholder_values(number)
    return env | placeholder_env(spec, values, table.n_rows)


def test_responses_thin_out_towards_a_bound_instead_of_piling_up_on_it() -> None:
    """With the lower bound of a response set at its median, clipping would put half the rows on the bound;
    folding puts (almost) none there."""
    spec, variable, path, values = next(_wide_responses())
    median = float(np.median(values))
    bounded = dataclasses.replace(variable, bounds=(median, None))
    changed = dataclasses.replace(spec, variables=tuple(bounded if v is variable else v for v in spec.variables))
    validate(changed)
    folded = _values(changed, path, variable.column)
    assert folded.min() >= median
    assert np.mean(folded == median) < 0.05
    assert np.mean(values < median) > 0.4  # the bound really cut into the response


def _wide_responses() -> Any:
    """(spec, variable, path, values) of noisy responses whose spread is wide against their precision."""
    for spec in _specs():
        for variable in spec.variables:
            if variable.role != "dependent" or variable.noise_sd == 0:
                continue
            path = Repository(spec).data_paths()[0]
            values = _values(spec, path, variable.column)
            step = 10.0 ** -(variable.decimals if variable.decimals is not None else 6)
            if values.std() > 200 * step:
                yield spec, variable, path, values


def _values(spec: Spec, path: str, column: str) -> np.ndarray[Any, Any]:
    repo = Repository(spec)
    return np.asarray(repo.table(path).column(column).values, dtype=np.float64)


def test_fold_reflects_at_each_bound_and_clips_what_stays_outside() -> None:
    raw = np.array([-1.0, 0.0, 0.5, 2.5, 3.0, -10.0])
    assert fold(raw, 0.0, 2.0).tolist() == [1.0, 0.0, 0.5, 1.5, 1.0, 0.0]
    assert fold(raw, -1e15, 1e15).tolist() == raw.tolist()


def test_records_dated_by_day_start_on_the_day_of_their_path() -> None:
    """A design whose records take longer than minutes (interviews, scans) writes the day only; in a path with a
    date, the file's first record is on that date (a weekly series: on that week's Monday) and the others follow it
    (generator version 9: records follow their design's clock, several sessions a day, then the next working day)."""
    dated = [s for s in _specs() if any(v.role == "datetime" and v.type == "date" for v in s.variables)]
    assert len(dated) >= 40
    with_date = [s for s in dated if "date" in s.template.placeholders]
    assert with_date
    for spec in with_date[:10]:
        repo = Repository(spec)
        path = repo.data_paths()[0]
        variable = next(v for v in spec.variables if v.role == "datetime")
        column = repo.table(path).column(variable.column)
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", t) for t in column.text)
        assert column.text == sorted(column.text)
        first = date.fromisoformat(column.text[0])
        number = repo.tree.file_index(path.split("/"))
        assert number is not None
        path_day = date.fromisoformat(str(repo.tree.placeholder_values(number)["date"]))
        weekly = variable.clock == "interval" and variable.every % (7 * 86_400) == 0
        assert first == (path_day - timedelta(days=path_day.weekday()) if weekly else path_day), (spec.seed, path)
    for spec in dated:
        assert spec.extension != "log"  # a log line starts with a time of day


def test_a_log_spec_with_a_day_resolution_column_is_refused() -> None:
    spec = next(s for s in _specs() if s.extension == "log")
    stamped = tuple(dataclasses.replace(v, type="date") if v.role == "datetime" else v for v in spec.variables)
    with pytest.raises(SpecError, match="time of day"):
        validate(dataclasses.replace(spec, variables=stamped))
    other = next(s for s in _specs() if s.extension == "csv")
    validate(dataclasses.replace(other, variables=tuple(
        dataclasses.replace(v, type="date", clock="random", every=0) if v.role == "datetime" else v
        for v in other.variables)))  # fmt: skip


def test_derived_columns_are_never_turned_around() -> None:
    for seed in range(1, 120):
        spec = build_spec(seed, world=_counterfactual())
        derived = {v.column for v in _derived_columns(spec)}
        assert not derived & {f.outcome for f in spec.counterfactual}, seed


def _counterfactual() -> World:
    return World(counterfactual=True)
