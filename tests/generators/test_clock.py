"""Generator version 9 (issue 24): the time model of a datetime column. Records of a logger fall on the clock's grid,
records that people take follow one another in working hours on working days, an instrument's runs follow one
another day and night. Each test reads the times as the files write them."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from generators import clock
from generators.builders import procedural
from generators.designs import DATA_END, FILE_START_DAYS, ROWS_MAX, DesignError, designs
from generators.llm.draft import assemble, draft_of
from generators.repository import Repository
from generators.rng import Stream
from generators.spec import Spec, SpecError, Variable, from_dict, from_json, validate
from tests.generators.clock_checks import assert_follows_clock
from tests.generators.design_fixture import fixture_file, load_fixture, seeds_of, specs_with_design, with_changed_column
from tests.helpers import repo as repository_of

_EPOCH = date(1970, 1, 1)


# -- the time models themselves ---------------------------------------------------------------------------------

_MODELS = [
    ("interval", "datetime", "5min"), ("interval", "datetime", "1h"), ("interval", "datetime", "1d"),
    ("interval", "date", "1d"), ("interval", "date", "1wk"), ("interval", "datetime", "1wk"),
    ("session", "datetime", "45min"), ("session", "datetime", "10min"), ("session", "datetime", "30s"),
    ("session", "datetime", "9h"), ("session", "date", "1h"), ("session", "date", "2d"),
    ("run", "datetime", "20min"), ("run", "datetime", "2h"), ("run", "datetime", "40s"),
    ("events", "datetime", "15min"), ("events", "datetime", "3d"), ("events", "datetime", "5s"),
    ("events", "date", "3d"), ("events", "date", "2h"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "resolution", "every"), _MODELS)
@pytest.mark.parametrize("dated", [False, True])
def test_each_model_gives_times_a_reader_accepts(name: str, resolution: str, every: str, dated: bool) -> None:
    seconds = clock.parse_every(every)
    variable = Variable("t", "t", "datetime", resolution, "", clock=name, every=seconds)
    for k in range(12):  # first days over two weeks: every weekday, weekends too
        first_day = 19_000 + k
        n = [20, 160, 300][k % 3]
        times = clock.record_times(name, seconds, first_day, Stream("clock test", k), n, dated=dated)
        assert times.dtype == np.int64 and times.shape == (n,)
        if resolution == "date":
            times = times // clock.DAY * clock.DAY
        texts = np.datetime_as_string(times.astype("datetime64[s]"), unit="D" if resolution == "date" else "s")
        assert_follows_clock(variable, texts.tolist(), first_day if dated else None)
        if not dated and name == "session":
            assert clock.weekday(int(times[0] // clock.DAY)) < 5, "a batch drawn for a file starts on a working day"


def test_a_session_dated_on_a_saturday_starts_then_and_goes_on_monday() -> None:
    saturday = (date(2022, 1, 1) - _EPOCH).days
    assert clock.weekday(saturday) == 5
    times = clock.record_times("session", 3600, saturday, Stream("sat"), 40, dated=True)
    days = sorted(set((times // clock.DAY).tolist()))
    assert days[0] == saturday and days[1] == saturday + 2  # Monday 3 January
    assert all(clock.weekday(d) < 5 for d in days[1:])


def test_a_queue_start_is_logged_to_the_second_as_its_runs_are() -> None:
    """An instrument queue's first record is stamped as precisely as the runs after it: a first time always on the
    whole minute, before times with seconds, read as typed in by hand (a reviewer's fault)."""
    starts = [
        int(clock.record_times("run", 1200, 19_100 + k, Stream("queue", k), 5, dated=False)[0]) for k in range(200)
    ]
    assert sum(start % 60 != 0 for start in starts) >= 150  # about 59 in 60 off the minute
    workday = [(start % clock.DAY) / 3600 for start in starts]
    assert min(workday) >= 8 and max(workday) < 18  # still started in working hours


def test_the_same_stream_gives_the_same_times() -> None:
    for name, every in (("interval", 300), ("session", 2700), ("run", 1200), ("events", 600)):
        a = clock.record_times(name, every, 19_100, Stream("same", name), 160, dated=False)
        b = clock.record_times(name, every, 19_100, Stream("same", name), 160, dated=False)
        assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("45min", 2700), ("2h", 7200), ("1d", 86_400), ("1wk", 604_800)]
)
def test_durations_parse_and_print_back(text: str, seconds: int) -> None:
    assert clock.parse_every(text) == seconds
    assert clock.format_every(seconds) == text


@pytest.mark.parametrize("text", ["45 min", "0min", "1.5h", "3m", "h", "", "-5s", "05min"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        clock.parse_every(text)


@pytest.mark.parametrize(
    ("name", "every", "resolution", "message"),
    [
        ("hourly", 3600, "datetime", "is not one of random, interval, session, run, events"),
        ("random", 60, "datetime", "takes no 'every'"),
        ("session", 0, "datetime", "between 1 s and 4 weeks"),
        ("session", 5 * clock.WEEK, "datetime", "between 1 s and 4 weeks"),
        ("interval", 7 * 60, "datetime", "divide the day"),
        ("interval", clock.DAY + 3600, "datetime", "whole number of days"),
        ("interval", 3600, "date", "at most one interval a day"),
        ("run", 1200, "date", "resolution 'datetime'"),
    ],
)
def test_time_models_that_cannot_be_are_named(name: str, every: int, resolution: str, message: str) -> None:
    problem = clock.cadence_problem(name, every, resolution)
    assert problem is not None and message in problem


def test_record_times_refuses_the_random_clock() -> None:
    with pytest.raises(ValueError, match="no model for clock 'random'"):
        clock.record_times("random", 0, 19_000, Stream("x"), 5, dated=False)


# -- designs ---------------------------------------------------------------------------------------------------


def _fixture_v9(clock_name: str = "session", every: str = "45min", resolution: str = "datetime") -> dict[str, Any]:
    data = fixture_file()
    data["designs"][0]["timestamp"] |= {"clock": clock_name, "every": every, "resolution": resolution}
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clock": "session"}, "'clock' and 'every' come together"),
        ({"every": "45min"}, "'clock' and 'every' come together"),
        ({"clock": "random", "every": "1h"}, "leave both keys out for random times"),
        ({"clock": "session", "every": "45 minutes"}, r"timestamp\.every: '45 minutes' is not a duration"),
        ({"clock": "interval", "every": "7min"}, "divide the day into whole periods"),
        ({"clock": "run", "every": "20min", "resolution": "date"}, "resolution 'datetime'"),
        ({"clock": "session", "every": 45}, r"timestamp\.every"),
        ({"clock": "sometimes", "every": "1h"}, "is not one of random, interval, session, run, events"),
    ],
)
def test_a_design_with_a_bad_time_model_is_refused_in_one_line(change: dict[str, Any], message: str) -> None:
    data = fixture_file()
    data["designs"][0]["timestamp"] |= change
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(data)
    assert "\n" not in str(caught.value)


def test_a_design_parses_its_time_model() -> None:
    design = load_fixture(_fixture_v9("interval", "15min"))
    assert design.timestamp is not None
    assert (design.timestamp.clock, design.timestamp.every) == ("interval", 900)
    plain = load_fixture(fixture_file())
    assert plain.timestamp is not None and (plain.timestamp.clock, plain.timestamp.every) == ("random", 0)


def test_every_shipped_design_with_a_timestamp_names_its_time_model() -> None:
    missing = [
        f"{design.field} / {design.subdomain}"
        for design in designs().values()
        if design.timestamp is not None and design.timestamp.clock == "random"
    ]
    assert not missing, f"{len(missing)} designs name no clock, e.g. {missing[:5]}"
    clocks = {design.timestamp.clock for design in designs().values() if design.timestamp is not None}
    assert clocks == {"interval", "session", "run", "events"}


# -- repositories ----------------------------------------------------------------------------------------------


@pytest.fixture(params=[("session", "45min", "datetime"), ("interval", "1d", "date"), ("run", "20min", "datetime")])
def clocked_specs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Spec]]:
    yield specs_with_design(monkeypatch, load_fixture(_fixture_v9(*request.param)), 4)


def _check_repository(spec: Spec, files: int) -> int:
    """Checks the times of up to ``files`` data files of ``spec`` against its clock; the number checked."""
    repo = Repository(spec)
    variable = next(v for v in spec.variables if v.role == "datetime")
    checked = 0
    for path in repo.data_paths()[:files]:
        number = repo.tree.file_index(path.split("/"))
        assert number is not None
        path_date = repo.tree.placeholder_values(number).get("date")
        first_day = None if path_date is None else (date.fromisoformat(str(path_date)) - _EPOCH).days
        assert_follows_clock(variable, repo.table(path).column(variable.column).text, first_day)
        checked += 1
    return checked


def test_a_repository_writes_its_design_clock(clocked_specs: list[Spec]) -> None:
    for spec in clocked_specs:
        variable = next(v for v in spec.variables if v.role == "datetime")
        assert variable.clock != "random"
        assert _check_repository(spec, 6) > 0


def test_every_repository_follows_its_clock_over_seeds() -> None:
    counts: dict[str, int] = {}
    for seed in range(1, 121):
        spec = procedural.build_spec(seed)
        variable = next(v for v in spec.variables if v.role == "datetime")
        counts[variable.clock] = counts.get(variable.clock, 0) + 1
        _check_repository(spec, 3)
    assert counts.get("random", 0) <= 12, counts  # only repositories whose design has no timestamp (15 of 780)
    assert min(counts.get(name, 0) for name in ("interval", "session", "run")) >= 5, counts
    assert counts.get("events", 0) >= 1, counts


def test_the_clock_round_trips_through_the_spec_file(clocked_specs: list[Spec]) -> None:
    spec = clocked_specs[0]
    data = json.loads(spec.to_json())
    again = from_dict(data)
    assert again == spec
    variable = next(v for v in data["variables"] if v["role"] == "datetime")
    assert variable["clock"] != "random" and variable["every"] > 0
    # a spec file of generator version 8 has no clock: its times are drawn as version 8 drew them
    for v in data["variables"]:
        v.pop("clock"), v.pop("every")
    old = from_dict(data)
    assert next(v for v in old.variables if v.role == "datetime").clock == "random"


@pytest.mark.parametrize(
    ("role", "change", "message"),
    [
        ("dependent", {"clock": "session", "every": 60}, "only a datetime column has a clock"),
        ("datetime", {"clock": "run", "every": 0}, "between 1 s and 4 weeks"),
        ("datetime", {"clock": "interval", "every": 420}, "divide the day"),
        ("datetime", {"clock": "weekly", "every": 604_800}, "is not one of random, interval, session, run, events"),
    ],
)
def test_a_spec_refuses_a_clock_that_cannot_be(
    clocked_specs: list[Spec], role: str, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        validate(with_changed_column(clocked_specs[0], role, **change))


def test_a_model_drafted_timestamp_takes_the_design_clock_where_it_fits() -> None:
    for seed in range(1, 40):
        base = procedural.build_spec(seed)
        timed = next(v for v in base.variables if v.role == "datetime")
        if timed.clock == "random":
            continue
        data = draft_of(base)
        drafted = next(v for v in data["variables"] if v["role"] == "datetime")
        del drafted["clock"], drafted["every"]  # a model's draft names no time model
        spec = assemble(base, json.dumps(data))
        assert next(v for v in spec.variables if v.role == "datetime").clock == timed.clock
        if timed.clock == "run":  # a draft that dates records by day cannot hold an instrument's run clock
            drafted["type"] = "date"
            if base.extension != "log":
                spec = assemble(base, json.dumps(data))
                assert next(v for v in spec.variables if v.role == "datetime").clock == "random"


def test_a_version_8_spec_file_gives_its_version_8_bytes() -> None:
    """A spec file written by generator version 8 (no clock) loads with the random clock and gives the bytes it
    gave then (digest taken with version 8's code); today's build of the same seed names a session clock."""
    spec = from_json((Path(__file__).with_name("spec_v8_8519.json")).read_text("utf-8"))
    assert spec.generator_version == 8
    assert next(v for v in spec.variables if v.role == "datetime").clock == "random"
    assert Repository(spec).digest() == "d7475208a006801c38aa1cc32d320cdd277042d071f944035b0397a90dcc06c9"
    today = procedural.build_spec(8519)
    assert next(v for v in today.variables if v.role == "datetime").clock == "session"
    assert Repository(today).digest() != Repository(spec).digest()


def test_path_dates_are_working_days() -> None:
    """A file named by a date is named by the day its work began: never a weekend, nor in the winter break (24
    December to 1 January), nor a public holiday."""
    seen = 0
    for seed in range(1, 400):
        spec = procedural.build_spec(seed)
        for text in spec.dates:
            day = date.fromisoformat(text)
            assert clock.is_working_day(day), (seed, text)
            assert day.weekday() < 5 and (day.month, day.day) != (1, 1) and (day.month, day.day) < (12, 24)
            assert (day.month, day.day) not in ((5, 1), (7, 4)), (seed, text)
            seen += 1
    assert seen > 500
    assert not clock.is_working_day(date(2022, 12, 26)) and not clock.is_working_day(date(2022, 1, 1))
    assert not clock.is_working_day(date(2022, 12, 27)) and not clock.is_working_day(date(2023, 12, 29))
    assert clock.is_working_day(date(2022, 12, 23)) and clock.is_working_day(date(2024, 1, 2))


@pytest.mark.parametrize(
    ("every", "window"),
    [(1800, None), (6 * 3600, None), (2 * 86400, None), (3600, clock.Window(months=(11, 12, 1, 2)))],
)
def test_sessions_skip_the_winter_break(every: int, window: clock.Window | None) -> None:
    """People record no sessions from 24 December to 1 January (generator version 12; 1 January, 25 and 26 December
    before design pass 18): a session that runs across the break (seven weekdays in 2019-20) resumes after it, with
    or without a window; a plain weekday window still opens on them."""
    first = (date(2019, 12, 16) - date(1970, 1, 1)).days
    times = clock.record_times("session", every, first, Stream(f"holidays-{every}"), 300, dated=True, window=window)
    days = {date(1970, 1, 1) + timedelta(days=int(d)) for d in times // clock.DAY}
    assert max(days) > date(2020, 1, 3), "the series must run past the holidays for the test to mean anything"
    assert not days & {date(2019, 12, 24) + timedelta(days=k) for k in range(9)}
    assert all(clock.is_working_day(d) for d in days), sorted(days)
    weekday_window = clock.open_days(first, 12, clock.Window(weekdays=True))
    assert (date(2019, 12, 25) - date(1970, 1, 1)).days in weekday_window  # a logger's weekdays are not working days


# Public holidays a reviewer named, each a weekday, with the working day beside it (pass 27)
_HOLIDAYS = {
    date(2016, 11, 24): date(2016, 11, 23),  # Thanksgiving (interviews in a US panel)
    date(2016, 11, 25): date(2016, 11, 28),  # the Friday after it
    date(2022, 5, 30): date(2022, 5, 31),  # Memorial Day, the spring bank holiday
    date(2023, 4, 7): date(2023, 4, 6),  # Good Friday
    date(2019, 4, 22): date(2019, 4, 23),  # Easter Monday
    date(2023, 7, 4): date(2023, 7, 5),  # 4 July
    date(2024, 5, 1): date(2024, 5, 2),  # 1 May
    date(2021, 8, 30): date(2021, 8, 31),  # the last Monday of August
    date(2021, 9, 6): date(2021, 9, 7),  # Labor Day
    date(2017, 1, 2): date(2017, 1, 3),  # New Year's Day (a Sunday) kept on the Monday after
    date(2020, 7, 3): date(2020, 7, 2),  # 4 July (a Saturday) kept on the Friday before
}


def test_public_holidays_are_not_working_days() -> None:
    """Nobody runs a session, starts a queue or begins a dated file on a public holiday (generator version 12,
    pass 27): the day itself is closed, the working day beside it is open."""
    for holiday, neighbour in _HOLIDAYS.items():
        assert holiday.weekday() < 5, holiday
        assert not clock.is_working_day(holiday), holiday
        assert clock.is_working_day(neighbour), neighbour
    epoch = np.array([(d - date(1970, 1, 1)).days for d in _HOLIDAYS], dtype=np.int64)
    assert not clock.working_days(epoch).any()
    # days beyond the table of 1970-2100 are reckoned from the calendar the same way
    beyond = [date(1969, 12, 25), date(2101, 7, 4), date(1969, 11, 27), date(2101, 7, 5), date(1969, 12, 22)]
    epoch = np.array([(d - date(1970, 1, 1)).days for d in beyond], dtype=np.int64)
    assert clock.working_days(epoch).tolist() == [False, False, False, True, True]
    assert [clock.is_working_day(d) for d in beyond] == [False, False, False, True, True]


def test_sessions_and_runs_skip_public_holidays() -> None:
    """A year of daily sessions never falls on a holiday of ``_HOLIDAYS``'s kinds, and a queue that would start on
    Easter Monday starts on the Tuesday after it."""
    first = (date(2022, 1, 3) - date(1970, 1, 1)).days
    times = clock.record_times("session", 6 * 3600, first, Stream("holiday-year"), 300, dated=True)
    days = {date(1970, 1, 1) + timedelta(days=int(d)) for d in times // clock.DAY}
    assert max(days) > date(2022, 12, 1), "the series must cover the year's holidays"
    closed = {date(2022, 4, 15), date(2022, 4, 18), date(2022, 5, 30), date(2022, 7, 4), date(2022, 9, 5)}
    closed |= {date(2022, 11, 24), date(2022, 11, 25), date(2022, 8, 29)}
    assert not days & closed, sorted(days & closed)
    easter_monday = (date(2019, 4, 22) - date(1970, 1, 1)).days
    runs = clock.record_times("run", 3600, easter_monday, Stream("queue"), 5, dated=False)
    assert date(1970, 1, 1) + timedelta(days=int(runs[0] // clock.DAY)) == date(2019, 4, 23)
    dated = clock.record_times("run", 3600, easter_monday, Stream("queue"), 5, dated=True)
    assert date(1970, 1, 1) + timedelta(days=int(dated[0] // clock.DAY)) == date(2019, 4, 22)  # the path says so


def test_a_full_day_of_sessions_still_starts_at_varied_times() -> None:
    """Short records fill the day, yet each working day's first record starts within 90 minutes of 08:00, not
    at 08:00:00 every day (a reviewer's tell of generated data)."""
    times = clock.record_times("session", 600, 19_003, Stream("varied"), 300, dated=True)
    days = times // clock.DAY
    firsts = times[np.r_[True, days[1:] != days[:-1]]] % clock.DAY
    assert len(firsts) >= 3 and len(set(firsts.tolist())) >= 3
    assert (firsts >= clock.WORKDAY_START).all() and (firsts <= clock.WORKDAY_START + 90 * 60).all()


class _LatestStream:
    """A stream whose integer draws are the largest allowed: the latest start a design can get."""

    def randint(self, low: int, high: int) -> int:
        return high


def test_no_design_can_date_a_record_after_the_present() -> None:
    """The latest start a design allows, plus a year before its last file begins, plus its longest file, ends by
    DATA_END (a weekly series of 300 records runs almost six years: data dated in 2030 would give the study away)."""
    for design in designs().values():
        if design.timestamp is None:
            continue
        start = procedural._start_date(design, _LatestStream(), ROWS_MAX)  # type: ignore[arg-type]
        longest = design.rows[1] if design.rows else ROWS_MAX  # a design may hold fewer records per file
        span = clock.span_days(design.timestamp.clock, design.timestamp.every, longest, design.timestamp.window)
        assert start + timedelta(days=FILE_START_DAYS + math.ceil(span)) <= DATA_END, design.subdomain


def test_the_longest_series_end_before_the_present() -> None:
    """In the repositories of the designs whose files span longest, no record is dated after DATA_END."""

    def span(design: Any) -> float:
        longest = design.rows[1] if design.rows else ROWS_MAX
        return clock.span_days(design.timestamp.clock, design.timestamp.every, longest, design.timestamp.window)

    longest = sorted((d for d in designs().values() if d.timestamp is not None), key=span)[-4:]
    assert span(longest[-1]) > 3 * 365  # the check reaches series of years
    for design in longest:
        for seed in seeds_of(design.field, design.subdomain, 2):
            spec = procedural.build_spec(seed)
            repo = Repository(spec)
            variable = next(v for v in spec.variables if v.role == "datetime")
            for path in repo.data_paths():
                last = repo.table(path).column(variable.column).text[-1]
                assert date.fromisoformat(last[:10]) <= DATA_END, (seed, design.subdomain, path, last)


def test_a_design_whose_longest_file_cannot_end_by_the_present_is_refused() -> None:
    data = _fixture_v9("events", "4wk")
    with pytest.raises(DesignError, match=r"300 records every 4wk span .* years, which cannot end by 2025-12-31") as e:
        load_fixture(data)
    assert "\n" not in str(e.value)
    load_fixture(_fixture_v9("events", "1wk"))  # 7 years fit from 2015
    data = _fixture_v9("events", "1wk")
    data["designs"][0]["since"] = 2021  # ...but not from 2021
    with pytest.raises(DesignError, match="for a study started in 2021 or later"):
        load_fixture(data)


def test_a_weekly_series_named_by_date_starts_on_its_path_date() -> None:
    """Weekly records fall on Mondays; a path date naming the file's first record is a Monday, so a folder dated
    Friday 14 October over a first reading on Monday 10 October (a reviewer's fault) cannot occur."""
    checked = 0
    for seed in range(1, 1200):
        repository = repository_of(seed)
        spec = repository.spec
        timed = next((v for v in spec.variables if v.role == "datetime"), None)
        if not spec.dates or timed is None or timed.clock != "interval" or timed.every % clock.WEEK:
            continue
        assert all(date.fromisoformat(d).weekday() == 0 for d in spec.dates), (seed, spec.dates)
        for path in repository.data_paths()[:3]:
            number = repository.tree.file_index(path.split("/"))
            assert number is not None
            named = str(repository.tree.placeholder_values(number)["date"])
            first = str(repository.table(path).column(timed.column).text[0])[:10]
            assert first == named, (seed, path, first)
        checked += 1
    assert checked >= 5, f"only {checked} weekly series named by date"


def test_sessions_timed_to_the_second_start_each_day_to_the_second() -> None:
    """Short sessions (under 5 min) are written to the second, the day's first record too: a first time always on the
    whole minute before times with seconds read as typed in (the README's own demo, repository 118, showed it)."""
    firsts = []
    for k in range(60):
        times = clock.record_times("session", 150, 19_100 + k, Stream("short sessions", k), 80, dated=False)
        days = times // clock.DAY
        firsts += times[np.append(True, days[1:] != days[:-1])].tolist()
    assert sum(t % 60 != 0 for t in firsts) >= 0.8 * len(firsts)
    long = clock.record_times("session", 2700, 19_100, Stream("long sessions", 0), 40, dated=False)
    assert (long % 60 == 0).all()  # sessions of 5 min or more stay written to the minute
