"""What one file holds, as a design says it (generator version 11): how many records (a crash-test campaign's few
tests, a chamber's members, not 300 of each) and whether its records share one id (the specimen of a time sweep,
the cell of a cycling log) - faults reviewers found in issue 24."""

from __future__ import annotations

from typing import Any

import pytest

from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import SpecError, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design, with_changed_column


def _with(**change: Any) -> dict[str, Any]:
    data = fixture_file()
    data["designs"][0] |= change
    return data


def test_a_design_sets_how_many_records_a_file_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    design = load_fixture(_with(rows=[6, 40]))
    assert design.rows == (6, 40)
    counts = []
    for spec in specs_with_design(monkeypatch, design, 4):
        assert (spec.params.rows_min, spec.params.rows_max) == (6, 40)
        repo = Repository(spec)
        counts += [repo.table(path).n_rows for path in repo.data_paths()[:10]]
    assert min(counts) >= 6 and max(counts) <= 40 and len(set(counts)) > 5, counts


def test_without_rows_a_file_follows_the_papers_law(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = specs_with_design(monkeypatch, load_fixture(fixture_file()), 1)[0]
    assert (spec.params.rows_min, spec.params.rows_max, spec.params.rows_mean) == (20, 300, 160.0)


@pytest.mark.parametrize("rows", [[3, 10], [50, 10], [10, 301], [10], "many", [10.5, 20], [True, 20]])
def test_a_bad_row_range_is_refused_in_one_line(rows: Any) -> None:
    with pytest.raises(DesignError, match=r"designs\[0\]\.rows: expected \[fewest, most\] records per file") as e:
        load_fixture(_with(rows=rows))
    assert "\n" not in str(e.value)


def test_fewer_records_let_a_slow_clock_end_before_the_present() -> None:
    slow = {"clock": "events", "every": "4wk", "resolution": "datetime"}
    data = _with()
    data["designs"][0]["timestamp"] |= slow
    with pytest.raises(DesignError, match=r"300 records every 4wk span"):
        load_fixture(data)
    data["designs"][0]["rows"] = [5, 20]  # twenty storms a file, a month apart: under two years
    assert load_fixture(data).rows == (5, 20)


def _one_specimen() -> dict[str, Any]:
    data = fixture_file()
    for identifier in data["designs"][0]["identifiers"]:
        identifier["per"] = "file"
    return data


def test_an_identifier_per_file_names_the_files_one_specimen(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = specs_with_design(monkeypatch, load_fixture(_one_specimen()), 4)
    ids = []
    for spec in specs:
        variable = next(v for v in spec.variables if v.role == "identifier")
        assert variable.per_file
        repo = Repository(spec)
        for path in repo.data_paths()[:6]:
            column = repo.table(path).column(variable.column).text
            assert len(set(column)) == 1 and column[0].startswith(variable.prefix), path
            ids.append(column[0])
    assert len(set(ids)) > len(ids) // 2  # files record different specimens


def test_an_identifier_per_row_is_new_in_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = specs_with_design(monkeypatch, load_fixture(fixture_file()), 1)[0]
    variable = next(v for v in spec.variables if v.role == "identifier")
    repo = Repository(spec)
    column = repo.table(repo.data_paths()[0]).column(variable.column).text
    assert not variable.per_file and len(set(column)) == len(column)


def test_an_identifier_scope_must_be_row_or_file(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _one_specimen()
    data["designs"][0]["identifiers"][0]["per"] = "batch"
    with pytest.raises(DesignError, match=r"identifiers\[0\]\.per: expected one of row, file"):
        load_fixture(data)
    spec = specs_with_design(monkeypatch, load_fixture(fixture_file()), 1)[0]
    validate(with_changed_column(spec, "identifier", per_file=True))
    with pytest.raises(SpecError, match="only an independent, identifier or datetime column is one per file"):
        validate(with_changed_column(spec, "dependent", per_file=True))


def test_a_files_records_may_share_one_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nuclei of one droplet capture, the wells of one plate read (generator version 12): a timestamp with
    ``"per": "file"`` gives every record the file's first time by its clock; another file keeps its own time."""
    data = fixture_file()
    data["designs"][0]["timestamp"] = {
        "column": "tested_at", "name": "capture time", "description": "When the plate was read.",
        "clock": "session", "every": "30min", "per": "file",
    }  # fmt: skip
    spec = specs_with_design(monkeypatch, load_fixture(data), 1)[0]
    variable = spec.variable("tested_at")
    assert variable.per_file and variable.clock == "session"
    repo = Repository(spec)
    firsts = set()
    for path in repo.data_paths()[:8]:
        text = repo.table(path).column("tested_at").text
        assert len(set(text)) == 1, path
        firsts.add(text[0])
    assert len(firsts) > 1  # files are read at different times
    validate(spec)
    with pytest.raises(SpecError, match=r"per_file: only an independent, identifier or datetime column"):
        validate(with_changed_column(spec, "dependent", per_file=True))
