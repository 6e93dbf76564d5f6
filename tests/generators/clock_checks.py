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
    days = times // clock.DAY
    of_day = times % clock.DAY
    weekly = variable.clock == "interval" and every % clock.WEEK == 0
    if first_day is not None:
        start = first_day - clock.weekday(first_day) if weekly else first_day
        assert days[0] == start, "a file's first record is on its path's date (weekly: that week's Monday)"
    if variable.clock == "interval":
        assert (gaps == every).all(), f"an interval of {every} s between every two records"
        if every < clock.DAY:
            assert (times % every == 0).all(), "sub-day intervals fall on the clock's grid"
        elif not by_day:
            assert len(set(of_day.tolist())) == 1 and of_day[0] % 3600 == 0, "daily records at one full hour"
        if weekly:
            assert {clock.weekday(int(d)) for d in days} == {0}, "weekly records start the week (Monday)"
    elif variable.clock == "session":
        later = days[days != first_day] if first_day is not None else days
        assert all(clock.weekday(int(d)) < 5 for d in later), "sessions run Monday to Friday"
        if not by_day:
            assert (of_day >= clock.WORKDAY_START).all()
            assert (of_day < clock.WORKDAY_START + clock.WORKDAY_SECONDS).all()
            if every >= 300:
                assert (times % 60 == 0).all(), "records people time are written to the minute"
            same_day = days[1:] == days[:-1]
            took = gaps[same_day]
            assert (took >= 0.8 * every - 60).all() and (took <= 1.25 * every + 60).all(), took[:10]
            # the day's records end by 18:00 (where a record fits in a working day at all)
            last = np.append(~same_day, True)
            assert (
                every * 1.25 > clock.WORKDAY_SECONDS
                or (of_day[last] + 0.8 * every - 60 <= clock.WORKDAY_START + clock.WORKDAY_SECONDS).all()
            )
        else:
            per_day = max(1, int((clock.WORKDAY_SECONDS - 90 * 60) // (every * 1.25)))
            assert max(np.unique(days, return_counts=True)[1]) <= per_day
    elif variable.clock == "run":
        assert not by_day
        assert clock.WORKDAY_START <= of_day[0] < clock.WORKDAY_START + clock.WORKDAY_SECONDS, "started at work"
        assert (gaps >= every).all() and (gaps <= every + max(1, every // 50)).all(), gaps[:10]
    elif variable.clock == "events":
        assert not by_day
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
