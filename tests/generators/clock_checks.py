"""What a reader of one file can check of its record times, given the datetime column's clock (generators.clock):
shared by the clock tests and the realism tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from generators import clock
from generators.spec import Variable


def _seconds(texts: list[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Seconds since the epoch of ISO times or days, as a reader parses them."""
    return np.array(
        [int((datetime.fromisoformat(t) - datetime(1970, 1, 1)).total_seconds()) for t in texts], dtype=np.int64
    )


def assert_follows_clock(variable: Variable, texts: list[str], first_day: int | None = None) -> None:
    """What a reader of one file can check of its times, given the column's clock (``first_day``: the epoch day of
    the file's path date, when it has one)."""
    times = _seconds(texts)
    every, by_day = variable.every, variable.type == "date"
    gaps = np.diff(times)
    assert (gaps >= 0).all(), "times must be sorted"
    if variable.per_file:  # every record taken at once: the file's one time is its first record's by the clock
        assert (gaps == 0).all(), "records of a file taken at once share one time"
        times, texts = times[:1], texts[:1]
        gaps = np.diff(times)
    days = times // clock.DAY
    of_day = times % clock.DAY
    weekly = variable.clock == "interval" and every % clock.WEEK == 0
    window = variable.window
    # A window's day opens at its first hour (a session's at 08:00 without one) and may run past midnight: a record
    # belongs to the day its window opened on, and lies within the window's length after that opening.
    if window is not None and window.hours:
        opening, length = window.hours[0] * 3600, ((window.hours[1] - window.hours[0]) % 24 or 24) * 3600
    elif variable.clock == "session":
        opening, length = clock.WORKDAY_START, clock.WORKDAY_SECONDS
    else:
        opening, length = 0, clock.DAY
    opened = (times - opening) // clock.DAY
    offset = times - opening - opened * clock.DAY
    if window is not None:
        kept = 1 if variable.clock == "run" else len(times)  # a run only starts in the window, then runs through
        checked = (days if by_day else opened)[:kept]
        _assert_in_window(window, checked, offset[:kept], length, by_day=by_day, dated_first=first_day)
    if first_day is not None:
        start = first_day - clock.weekday(first_day) if weekly else first_day
        assert days[0] == start, "a file's first record is on its path's date (weekly: that week's Monday)"
    if variable.clock == "interval":
        if window is None:
            assert (gaps == every).all(), f"an interval of {every} s between every two records"
        else:  # on the clock's grid, skipping what the window closes
            assert (gaps >= every).all() and (gaps % every == 0).all(), gaps[:10]
        if every < clock.DAY:
            assert (times % every == 0).all(), "sub-day intervals fall on the clock's grid"
        elif not by_day:
            assert len(set(of_day.tolist())) == 1 and of_day[0] % 3600 == 0, "daily records at one full hour"
        if weekly:
            assert {clock.weekday(int(d)) for d in days} == {0}, "weekly records start the week (Monday)"
    elif variable.clock == "session":
        working = opened if not by_day else days
        later = working[days != first_day] if first_day is not None else working
        assert all(clock.weekday(int(d)) < 5 for d in later), "sessions run Monday to Friday"
        if not by_day:
            assert (offset < length).all(), "within the working day (08:00-18:00, or the window's hours)"
            if every >= 300:
                assert (times % 60 == 0).all(), "records people time are written to the minute"
            same_day = opened[1:] == opened[:-1]
            took = gaps[same_day]
            assert (took >= 0.8 * every - 60).all() and (took <= 1.25 * every + 60).all(), took[:10]
            # the day's records end by its close (where a record fits in a working day at all)
            last = np.append(~same_day, True)
            assert every * 1.25 > length or (offset[last] + 0.8 * every - 60 <= length).all()
        else:
            slack = min(90 * 60, length // 4 // 60 * 60)
            per_day = max(1, int((length - slack) // (every * 1.25)))
            assert max(np.unique(days, return_counts=True)[1]) <= per_day
    elif variable.clock == "run":
        assert not by_day
        assert clock.WORKDAY_START <= of_day[0] < clock.WORKDAY_START + clock.WORKDAY_SECONDS, "started at work"
        assert first_day is not None or clock.weekday(int(days[0])) < 5, "started on a working day"
        assert (gaps >= every).all() and (gaps <= every + max(1, every // 50)).all(), gaps[:10]
    elif variable.clock == "events":
        if by_day:  # arrivals dated by their day: several may share one, and the days follow the process's rate
            span = float(days[-1] - days[0] + 1)
            if len(times) >= 150 and span >= 20:
                rate = len(times) / span
                assert 0.5 * clock.DAY / every < rate < 2 * clock.DAY / every, rate
            return
        if window is not None:  # gaps within one open period only, where the period is long beside them
            gaps = gaps[opened[1:] == opened[:-1]] if length >= 20 * every else gaps[:0]
        if len(gaps) >= 150:  # a Poisson process: gaps average `every` and are as irregular as they are long
            mean = float(gaps.mean())
            assert 0.6 * every < mean < 1.5 * every, mean
            assert 0.6 < float(gaps.std()) / mean < 1.5, "arrivals are irregular, not a queue"
    elif variable.clock == "random":  # versions 4-8: uniform times in one working day; by day, the path's date
        if not by_day:
            assert len(set(days.tolist())) == 1
            assert (of_day >= clock.WORKDAY_START).all()
            assert (of_day < clock.WORKDAY_START + clock.WORKDAY_SECONDS).all()
        elif first_day is not None:
            assert set(days.tolist()) == {first_day}
    else:
        raise AssertionError(f"no checks for clock {variable.clock!r}")


def _assert_in_window(
    window: clock.Window,
    opened: np.ndarray[Any, np.dtype[np.int64]],
    offset: np.ndarray[Any, np.dtype[np.int64]],
    length: int,
    *,
    by_day: bool,
    dated_first: int | None,
) -> None:
    """Every record within the window: in its hours (measured from the day the window opened on, ``opened``; by
    day, the record's day), on an open day (the path's date excepted: a dated file starts on its date)."""
    if window.hours and not by_day:
        assert (offset < length).all(), f"records between {window.hours[0]}:00 and {window.hours[1]}:00"
    checked = opened
    if dated_first is not None:
        checked = checked[checked != dated_first]
    if window.months:
        months = checked.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12 + 1
        assert np.isin(months, window.months).all(), f"records only in months {list(window.months)}"
    if window.weekdays:
        assert (clock.weekdays(checked) < 5).all(), "records on weekdays only"
