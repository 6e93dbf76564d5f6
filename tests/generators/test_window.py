"""When records may be taken (a timestamp's window: months, hours of the day, weekdays; generator version 11):
maize stage V12 is not imaged in October, a call centre's half-hours stop at closing time, a day shift's stoppages
are not at 02:00 (issue 24, reviewers' calendar faults)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from generators import clock
from generators.builders import procedural
from generators.designs import DesignError
from generators.llm.draft import assemble, draft_of
from generators.repository import Repository
from generators.rng import Stream
from generators.spec import SpecError, from_dict, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design, with_changed_column

_MARCH_2ND_2020 = (date(2020, 3, 2) - date(1970, 1, 1)).days  # a Monday
_WINDOWS = [
    ("interval", 1800, clock.Window(hours=(8, 20))),
    ("interval", 900, clock.Window(months=(6, 7, 8), hours=(9, 17), weekdays=True)),
    ("interval", 86_400, clock.Window(months=(5, 6, 7, 8, 9))),
    ("interval", 86_400, clock.Window(weekdays=True, hours=(6, 7))),
    ("interval", 604_800, clock.Window(months=(9, 10, 11, 12))),
    ("events", 600, clock.Window(hours=(6, 14))),
    ("events", 3600, clock.Window(months=(4, 5), weekdays=True)),
    ("session", 2700, clock.Window(months=(3, 4, 5))),
    ("session", 1200, clock.Window(hours=(13, 17))),
    ("session", 3 * 86_400, clock.Window(months=(1, 11, 12))),
    ("interval", 1800, clock.Window(hours=(22, 6))),  # a night shift, past midnight
    ("interval", 86_400, clock.Window(hours=(20, 4), months=(1, 2, 11, 12))),
    ("events", 600, clock.Window(hours=(19, 7), months=(4, 5, 6))),
    ("session", 1800, clock.Window(hours=(22, 6))),  # a winter season, written in increasing order
]


def _calendar(times: np.ndarray) -> list[datetime]:
    return [datetime.fromtimestamp(int(t), tz=UTC) for t in times]


def _assert_in(window: clock.Window, times: np.ndarray, *, working: bool) -> None:
    start, end = window.hours or (0, 24)
    for moment in _calendar(times):
        if start < end:
            assert start <= moment.hour < end, moment
            opened = moment
        else:  # a night's window: its months and weekdays are those of the evening it opened
            assert moment.hour >= start or moment.hour < end, moment
            opened = moment - timedelta(hours=start) if moment.hour < end else moment
        if window.months:
            assert opened.month in window.months, moment
        if window.weekdays or working:
            assert opened.weekday() < 5, moment


@pytest.mark.parametrize(("name", "every", "window"), _WINDOWS)
@pytest.mark.parametrize("first_day", [_MARCH_2ND_2020, _MARCH_2ND_2020 + 250])
def test_every_record_falls_in_its_window(name: str, every: int, window: clock.Window, first_day: int) -> None:
    assert clock.window_problem(window, name, every, "datetime") is None
    times = clock.record_times(name, every, first_day, Stream("window", name, every), 300, dated=False, window=window)
    assert times.size == 300 and bool(np.all(np.diff(times) >= 0))
    _assert_in(window, times, working=name == "session")
    assert (times[-1] - times[0]) / clock.DAY <= clock.span_days(name, every, 300, window)
    again = clock.record_times(name, every, first_day, Stream("window", name, every), 300, dated=False, window=window)
    assert np.array_equal(times, again)


def test_an_interval_keeps_its_grid_and_resumes_the_next_open_day() -> None:
    window = clock.Window(hours=(8, 20), weekdays=True)
    times = clock.record_times("interval", 1800, _MARCH_2ND_2020, Stream("grid"), 200, dated=False, window=window)
    assert set((times % 1800).tolist()) == {0}
    steps = np.diff(times)
    assert set(steps.tolist()) <= {1800, 12 * 3600 + 1800, 2 * 86_400 + 12 * 3600 + 1800}
    assert (steps > 1800).any()  # closing time came and the series went on the next open day
    assert max(m.hour for m in _calendar(times)) == 19 and min(m.hour for m in _calendar(times)) == 8


@pytest.mark.parametrize(("hours", "rows"), [((18, 7), 28), ((8, 20), 144), ((22, 6), 5)])
def test_an_interval_series_that_fits_in_one_opening_is_not_split(hours: tuple[int, int], rows: int) -> None:
    """A storm cell scanned every 5 min for 28 scans is one track in one night's window, never 8 scans before the
    window shuts and 20 more 14 h later (a reviewer's fault); a series as long as the opening fills it exactly."""
    window = clock.Window(hours=hours)
    every = 300
    for k in range(40):
        times = clock.record_times(
            "interval", every, _MARCH_2ND_2020, Stream("track", k), rows, dated=False, window=window
        )
        assert set(np.diff(times).tolist()) == {every}, (k, _calendar(times[:1]), _calendar(times[-1:]))
        _assert_in(window, times, working=False)


def test_events_stay_poisson_inside_the_open_hours() -> None:
    # Gaps counted in open seconds are exponential with the mean `every`: the window thins the calendar, not the rate.
    window = clock.Window(hours=(6, 14))
    times = clock.record_times("events", 600, _MARCH_2ND_2020, Stream("poisson"), 4000, dated=False, window=window)
    seconds = times % clock.DAY - 6 * 3600
    open_time = (times // clock.DAY - times[0] // clock.DAY) * 8 * 3600 + seconds
    gaps = np.diff(open_time)
    assert abs(gaps.mean() / 600 - 1) < 0.06
    assert abs(np.median(gaps) / (600 * np.log(2)) - 1) < 0.1


def test_a_session_window_replaces_the_working_day() -> None:
    window = clock.Window(hours=(13, 17))
    times = clock.record_times("session", 1200, _MARCH_2ND_2020, Stream("afternoon"), 60, dated=False, window=window)
    hours = {m.hour for m in _calendar(times)}
    assert min(hours) == 13 and max(hours) <= 16


def test_a_dated_session_starts_on_its_date_even_when_closed() -> None:
    saturday = _MARCH_2ND_2020 + 5
    window = clock.Window(months=(3,))
    times = clock.record_times("session", 3600, saturday, Stream("sat"), 30, dated=True, window=window)
    assert times[0] // clock.DAY == saturday
    assert all(m.weekday() < 5 for m in _calendar(times[times // clock.DAY != saturday]))


@pytest.mark.parametrize(
    ("name", "every", "window", "resolution", "message"),
    [
        ("random", 0, clock.Window(months=(6,)), "datetime", "a window needs a clock"),
        ("session", 2700, clock.Window(), "datetime", "an empty window"),
        ("session", 2700, clock.Window(months=(6, 5)), "datetime", "distinct increasing numbers from 1 to 12"),
        ("session", 2700, clock.Window(months=(0, 5)), "datetime", "distinct increasing numbers from 1 to 12"),
        ("session", 2700, clock.Window(months=tuple(range(1, 13))), "datetime", "leave months out"),
        ("session", 2700, clock.Window(hours=(8, 8)), "datetime", "whole hours from 0 to 24 that differ"),
        ("session", 2700, clock.Window(hours=(8,)), "datetime", "whole hours from 0 to 24 that differ"),
        ("session", 2700, clock.Window(hours=(20, 25)), "datetime", "whole hours from 0 to 24 that differ"),
        ("session", 86_400, clock.Window(hours=(8, 18)), "date", "resolution is 'date'"),
        ("run", 1200, clock.Window(hours=(8, 18)), "datetime", "a run goes on day and night"),
        ("interval", 6 * 3600, clock.Window(hours=(1, 5)), "datetime", "no 6h interval falls between 1:00 and 5:00"),
        ("interval", 6 * 3600, clock.Window(hours=(19, 23)), "datetime", "no 6h interval falls between 19:00"),
        ("session", 2700, clock.Window(weekdays=True), "datetime", "on working days already"),
    ],
)
def test_a_window_that_cannot_be_is_named(
    name: str, every: int, window: clock.Window, resolution: str, message: str
) -> None:
    problem = clock.window_problem(window, name, every, resolution)
    assert problem is not None and re.search(message, problem), problem


# -- designs and repositories ------------------------------------------------------------------------------------


def _fixture(**window: Any) -> dict[str, Any]:
    data = fixture_file()
    data["designs"][0]["timestamp"] |= {"clock": "session", "every": "30min", "resolution": "datetime"} | window
    return data


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"months": "summer"}, r"timestamp\.months: expected a list of whole numbers"),
        ({"hours": [8.5, 17]}, r"timestamp\.hours: expected a list of whole numbers"),
        ({"weekdays": "yes"}, r"timestamp\.weekdays: expected true or false"),
        ({"months": [13]}, r"timestamp: months are distinct increasing numbers"),
        ({"hours": [20, 20]}, r"timestamp: hours are \[start, end\], whole hours from 0 to 24 that differ"),
    ],
)
def test_a_design_with_a_bad_window_is_refused_in_one_line(window: dict[str, Any], message: str) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_fixture(**window))
    assert "\n" not in str(caught.value)


def test_a_design_without_a_clock_takes_no_window() -> None:
    data = fixture_file()
    data["designs"][0]["timestamp"]["months"] = [6, 7]
    with pytest.raises(DesignError, match="a window needs a clock"):
        load_fixture(data)


@pytest.fixture
def windowed_specs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    design = load_fixture(_fixture(months=[3, 4, 5], hours=[9, 15]))
    assert design.timestamp is not None and design.timestamp.window == clock.Window((3, 4, 5), (9, 15), False)
    return specs_with_design(monkeypatch, design, 6)


def test_repositories_of_a_windowed_design_take_records_only_in_it(windowed_specs: list[Any]) -> None:
    checked = 0
    for spec in windowed_specs:
        repo = Repository(spec)
        variable = next(v for v in spec.variables if v.role == "datetime")
        assert variable.window == clock.Window((3, 4, 5), (9, 15), False)
        assert all(date.fromisoformat(d).month in (3, 4, 5) for d in spec.dates)  # path dates in open months
        for path in repo.data_paths()[:8]:
            text = repo.table(path).column(variable.column).text
            moments = [datetime.fromisoformat(t) for t in text]
            assert all(m.month in (3, 4, 5) and 9 <= m.hour < 15 and m.weekday() < 5 for m in moments), path
            checked += 1
    assert checked >= 20


def test_the_window_round_trips_through_the_spec_file(windowed_specs: list[Any]) -> None:
    spec = windowed_specs[0]
    data = json.loads(spec.to_json())
    assert next(v for v in data["variables"] if v["role"] == "datetime")["window"] == {
        "months": [3, 4, 5],
        "hours": [9, 15],
        "weekdays": False,
        "closed": [],
    }
    assert from_dict(data) == spec
    for v in data["variables"]:  # a version-10 spec file has no window
        v.pop("window")
    assert next(v for v in from_dict(data).variables if v.role == "datetime").window is None


def test_a_spec_refuses_a_window_that_cannot_be(windowed_specs: list[Any]) -> None:
    spec = windowed_specs[0]
    with pytest.raises(SpecError, match="only a datetime column has one"):
        validate(with_changed_column(spec, "dependent", window=clock.Window(months=(3,))))
    with pytest.raises(SpecError, match="a run goes on day and night"):
        validate(with_changed_column(spec, "datetime", clock="run", every=1200))
    data = json.loads(spec.to_json())
    next(v for v in data["variables"] if v["role"] == "datetime")["window"]["hours"] = [9, 25]
    with pytest.raises(SpecError, match=r"hours\[1\]: 25 is outside \[0, 24\]"):
        from_dict(data)


def test_a_spec_refuses_a_path_date_outside_its_window(windowed_specs: list[Any]) -> None:
    dated = [s for s in windowed_specs if s.dates]
    assert dated, "the fixture's seeds include a repository whose files are named by date"
    spec = dated[0]
    data = json.loads(spec.to_json())
    data["dates"][0] = "2021-07-14"
    with pytest.raises(SpecError, match="a path date lies outside the months or weekdays it allows"):
        from_dict(data)


def test_a_model_drafted_timestamp_takes_the_design_window(windowed_specs: list[Any]) -> None:
    base = next(s for s in windowed_specs if s.extension != "log")  # a log line needs a time of day
    data = draft_of(base)
    drafted = next(v for v in data["variables"] if v["role"] == "datetime")
    for key in ("clock", "every", "window"):
        drafted.pop(key, None)  # a model's draft names no time model
    timed = next(v for v in assemble(base, json.dumps(data)).variables if v.role == "datetime")
    assert (timed.clock, timed.window) == ("session", clock.Window((3, 4, 5), (9, 15), False))
    drafted["type"] = "date"  # hours need a time of day: a draft dated by day keeps the clock, not the window
    timed = next(v for v in assemble(base, json.dumps(data)).variables if v.role == "datetime")
    assert (timed.clock, timed.window) == ("session", None)


def test_a_run_starts_in_an_open_month_and_runs_through(monkeypatch: pytest.MonkeyPatch) -> None:
    data = fixture_file()
    data["designs"][0]["timestamp"] |= {"clock": "run", "every": "20min", "resolution": "datetime", "months": [6, 7]}
    specs = specs_with_design(monkeypatch, load_fixture(data), 4)
    starts = 0
    for spec in specs:
        repo = Repository(spec)
        variable = next(v for v in spec.variables if v.role == "datetime")
        assert variable.window == clock.Window(months=(6, 7))
        for path in repo.data_paths()[:6]:
            text = repo.table(path).column(variable.column).text
            assert datetime.fromisoformat(text[0]).month in (6, 7), path
            gaps = np.diff([datetime.fromisoformat(t).timestamp() for t in text])
            assert (gaps >= 1200).all() and (gaps <= 1200 + 24).all()  # back to back, day and night
            starts += 1
    assert starts >= 12


# -- closed periods ---------------------------------------------------------------------------------------------

_LOCKDOWN = clock.Window(closed=(("2020-03-16", "2020-06-30"),))


@pytest.mark.parametrize(("name", "every"), [("session", 2700), ("interval", 86_400), ("events", 2 * 86_400)])
def test_no_record_falls_in_a_closed_period(name: str, every: int) -> None:
    times = clock.record_times(name, every, _MARCH_2ND_2020, Stream("closed", name), 200, dated=False, window=_LOCKDOWN)
    days = [m.date() for m in _calendar(times)]
    assert not [d for d in days if date(2020, 3, 16) <= d <= date(2020, 6, 30)]
    assert days[0] < date(2020, 3, 16) < date(2020, 7, 1) <= days[-1]  # before the closure, then resumed after it
    assert (times[-1] - times[0]) / clock.DAY <= clock.span_days(name, every, 200, _LOCKDOWN)


@pytest.mark.parametrize(
    ("closed", "message"),
    [
        ((("2020-06-30", "2020-03-16"),), "runs forward"),
        ((("2020-03-16", "June"),), r"\[first day, last day\] as ISO dates"),
        ((("1999-12-01", "2000-01-31"),), "within 2000-2099"),
    ],
)
def test_a_closed_period_that_cannot_be_is_named(closed: tuple[tuple[str, str], ...], message: str) -> None:
    problem = clock.window_problem(clock.Window(closed=closed), "session", 2700, "datetime")
    assert problem is not None and re.search(message, problem), problem


def test_a_design_closes_a_period_and_the_spec_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DesignError, match=r"timestamp\.closed: expected a list of \[first day, last day\]"):
        load_fixture(_fixture(closed=["2020-03-16", "2020-06-30"]))
    design = load_fixture(_fixture(closed=[["2020-03-16", "2020-06-30"]]))
    assert design.timestamp is not None and design.timestamp.window == _LOCKDOWN
    spec = specs_with_design(monkeypatch, design, 1)[0]
    data = json.loads(spec.to_json())
    window = next(v for v in data["variables"] if v["role"] == "datetime")["window"]
    assert window["closed"] == [["2020-03-16", "2020-06-30"]]
    assert from_dict(data) == spec
    window["closed"] = [["2020-03-16"]]
    with pytest.raises(SpecError, match=r"closed\[0\]: expected \[first day, last day\]"):
        from_dict(data)


def test_a_year_mostly_closed_still_dates_its_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spring testing (March-May) in a study that starts in 2020, when the lockdown closed all but two weeks of
    it: path dates and records fall on the few open days or in a later spring, never in a closed one (the builder
    used to ask for more dates than the year held)."""
    design = load_fixture(_fixture(months=[3, 4, 5], closed=[["2020-03-16", "2020-06-30"]]))
    monkeypatch.setattr(procedural, "_start_date", lambda *args: date(2020, 1, 1))
    specs = specs_with_design(monkeypatch, design, 6)
    assert any(spec.dates for spec in specs)
    for spec in specs:
        assert spec.start_date == "2020-01-01"
        for day in map(date.fromisoformat, spec.dates):
            assert day.month in (3, 4, 5) and not date(2020, 3, 16) <= day <= date(2020, 6, 30)
        repo = Repository(spec)
        variable = next(v for v in spec.variables if v.role == "datetime")
        for path in repo.data_paths()[:4]:
            for text in repo.table(path).column(variable.column).text:
                moment = datetime.fromisoformat(text)
                assert moment.month in (3, 4, 5) and not date(2020, 3, 16) <= moment.date() <= date(2020, 6, 30)
