"""A record's calendar in formulas (generator version 11): ``day_of_year`` for seasons (a greenhouse's outside
temperature in January is not July's), ``day_of_week`` for weekends and ``elapsed_days`` for what accumulates
within a file (days a sample has been stored); each read from the file's own times (issue 24)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pytest

from generators import clock
from generators.builders import procedural
from generators.designs import DesignError
from generators.repository import Repository
from generators.spec import SpecError, validate
from tests.generators.design_fixture import (
    fixture_file,
    load_fixture,
    specs_with_design,
    timed_fixture,
    with_changed_column,
)


def _epoch_seconds(text: str) -> int:
    return int((np.datetime64(text, "s") - np.datetime64("1970-01-01T00:00:00", "s")).astype(np.int64))


def test_the_calendar_of_known_moments() -> None:
    moments = ["2020-01-01T12:00:00", "2020-12-31T00:00:00", "2021-03-01T06:00:00", "2021-03-07T18:00:00"]
    seconds = np.array([_epoch_seconds(m) for m in moments], dtype=np.int64)
    found = clock.calendar(seconds, ("day_of_year", "day_of_week", "elapsed_days"))
    assert found["day_of_year"].tolist() == [1.5, 366.0, 60.25, 66.75]  # 2020 is a leap year
    assert found["day_of_week"].tolist() == [2.0, 3.0, 0.0, 6.0]  # Wednesday, Thursday, Monday, Sunday
    assert found["elapsed_days"][0] == 0 and found["elapsed_days"][1] == pytest.approx(364.5)
    assert clock.calendar(np.zeros(0, dtype=np.int64), ("elapsed_days",))["elapsed_days"].size == 0


def _seasonal_fixture() -> dict[str, Any]:
    """The fixture read daily the year round, with formulas of the season, the weekday and the days stored."""
    return timed_fixture("interval", "1d", [
        {
            "column": "outside_c", "name": "outside temperature", "unit": "°C", "description": "Season.",
            "formula": "10 - 12 * cos(2 * pi * (day_of_year - 20) / 365.25)", "min": -40, "max": 50, "decimals": 4,
        },
        {
            "column": "weekend", "name": "weekend", "unit": "", "description": "Saturday or Sunday.",
            "formula": "day_of_week >= 5", "min": 0, "max": 1, "decimals": 0,
        },
        {
            "column": "stored_d", "name": "days stored", "unit": "d", "description": "Since the first test.",
            "formula": "elapsed_days", "min": 0, "max": None, "decimals": 4,
        },
    ])  # fmt: skip


def test_formulas_read_the_calendar_of_each_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each calendar name equals what a reader computes from the file's own time text, in every file."""
    specs = specs_with_design(monkeypatch, load_fixture(_seasonal_fixture()), 6)
    checked = {"outside_c": 0, "weekend": 0, "stored_d": 0}
    for spec in specs:
        repo = Repository(spec)
        for path in repo.data_paths()[:4]:
            table = repo.table(path)
            moments = [datetime.fromisoformat(t) for t in table.column("tested_at").text]
            day_of_year = np.array([m.timetuple().tm_yday + (m.hour * 3600 + m.minute * 60) / 86_400 for m in moments])
            expected = {
                "outside_c": 10 - 12 * np.cos(2 * np.pi * (day_of_year - 20) / 365.25),
                "weekend": np.array([float(m.weekday() >= 5) for m in moments]),
                "stored_d": np.array([(m - moments[0]).total_seconds() / 86_400 for m in moments]),
            }
            for column, values in expected.items():
                if column in table.names:
                    written = np.asarray(table.column(column).values, dtype=np.float64)
                    assert np.allclose(written, values, atol=1e-4), (path, column)
                    checked[column] += table.n_rows
    assert min(checked.values()) > 100, checked
    # a year-round daily series shows the season: January is colder than July
    assert any(np.ptp(np.asarray(Repository(s).table(p).column("outside_c").values)) > 20
               for s in specs if "outside_c" in {v.column for v in s.variables}
               for p in Repository(s).data_paths()[:2])  # fmt: skip


@pytest.mark.parametrize("name", ["day_of_year", "day_of_week", "elapsed_days"])
def test_a_calendar_name_is_no_cause_and_no_column(name: str) -> None:
    caused = _seasonal_fixture()
    next(o for o in caused["designs"][0]["outcomes"] if o["column"] == "yield_mpa")["parents"][name] = 1
    with pytest.raises(DesignError, match=f"has '{name}' as a cause: the time and the calendar"):
        load_fixture(caused)
    named = fixture_file()
    named["designs"][0]["measures"][0]["column"] = name
    with pytest.raises(DesignError, match=f"column '{name}' is a reserved name"):
        load_fixture(named)
    with pytest.raises(SpecError, match=f"'{name}' is a reserved or path name"):
        validate(with_changed_column(procedural.build_spec(118), "independent", column=name))


def test_a_design_without_a_timestamp_has_no_calendar() -> None:
    data = _seasonal_fixture()
    del data["designs"][0]["timestamp"]
    with pytest.raises(DesignError, match=r"formula of 'outside_c'.*with a timestamp, the timestamp, day_of_year"):
        load_fixture(data)
