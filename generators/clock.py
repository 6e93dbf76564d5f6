"""When the records of one file were taken: the time model of a datetime column (issue 24, generator version 9).

A study design names how its records follow one another in time (``timestamp.clock`` and ``timestamp.every``);
the spec keeps both on its datetime column, and synthesis asks :func:`record_times` for a file's times.

- ``interval``: a logger or a schedule. Records exactly ``every`` apart on the clock's grid (5-minute detector
  intervals at :00, :05, ...; hourly readings on the hour; daily at one fixed hour; weekly on Mondays).
- ``session``: records that people take one after another in working hours (08:00-18:00, Monday to Friday), each
  taking about ``every`` (0.8-1.25 times it), several a day, then on the next working day; times to the minute.
- ``run``: an instrument's sequence started in working hours and then running around the clock, each run taking
  ``every`` plus a few seconds of overhead (an LC-MS injection every 20 min, a simulation every 2 h).
- ``events``: arrivals that nobody schedules (emergency visits, police stops, particle or air-shower events, job
  submissions, posts): a Poisson process around the clock, gaps exponential with mean ``every``, to the second.
- ``random``: times drawn uniformly in the working day of the file's day, sorted (generator versions 4-8, kept
  for spec files written by them and for columns whose design names no clock).

At ``date`` resolution the same times are cut to their day. Everything is whole seconds since 1970-01-01 (UTC:
no local time anywhere), and every draw comes from the file's stream of the column, so times are deterministic.
"""

from __future__ import annotations

import re
from datetime import date

import numpy as np

from generators.rng import IntArray, Stream

CLOCKS = ("random", "interval", "session", "run", "events")
DAY = 86_400
WEEK = 7 * DAY
WORKDAY_START = 8 * 3600  # 08:00
WORKDAY_SECONDS = 10 * 3600  # until 18:00
MAX_EVERY = 4 * WEEK  # a record or a period longer than four weeks is no time model for one file
_SESSION_SPREAD = (0.8, 1.25)  # a session's record takes this share of ``every``
_FIRST_START_SLACK = 90 * 60  # a working day's first record starts within 90 min of 08:00
_UNITS = {"s": 1, "min": 60, "h": 3600, "d": DAY, "wk": WEEK}
_EVERY_RE = re.compile(r"([1-9][0-9]*)(s|min|h|d|wk)\Z")
_CLOSED = ((1, 1), (12, 25), (12, 26))
_THURSDAY = 3  # 1970-01-01 was a Thursday: weekday (Monday 0) of epoch day d is (d + 3) % 7


def parse_every(text: str) -> int:
    """``"45min"`` -> 2700: a whole number of s, min, h, d or wk, as seconds; ValueError names the problem."""
    match = _EVERY_RE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 30s, 45min, 2h, 1d or 1wk")
    return int(match.group(1)) * _UNITS[match.group(2)]


def format_every(seconds: int) -> str:
    """The shortest :func:`parse_every` text of ``seconds`` (2700 -> ``"45min"``)."""
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    raise AssertionError("every whole number of seconds has a text")


def cadence_problem(clock: str, every: int, resolution: str) -> str | None:
    """Why (``clock``, ``every`` seconds) is no time model for a column of ``resolution`` ("datetime"/"date"), or
    None when it is one."""
    if clock not in CLOCKS:
        return f"clock {clock!r} is not one of {', '.join(CLOCKS)}"
    if clock == "random":
        return None if every == 0 else "a random clock takes no 'every'"
    if not 1 <= every <= MAX_EVERY:
        return f"every must lie between 1 s and {MAX_EVERY // WEEK} weeks, got {every} s"
    if clock == "interval":
        if every < DAY and DAY % every:
            return f"an interval under a day must divide the day into whole periods, got {format_every(every)}"
        if every >= DAY and every % DAY:
            return f"an interval of a day or more is a whole number of days, got {format_every(every)}"
        if resolution == "date" and every % DAY:
            return f"a column dated by day records at most one interval a day, got {format_every(every)}"
    if clock in ("run", "events") and resolution == "date":
        return f"a {clock} clock times records to the second: its column has resolution 'datetime'"
    return None


def record_times(clock: str, every: int, first_day: int, stream: Stream, n: int, *, dated: bool) -> IntArray:
    """``n`` sorted record times (seconds since the epoch) of one file whose records start on the epoch day
    ``first_day`` (the path's date, or a day drawn for the file); ``dated``: the file's date came from its path,
    so the first record is on that day even where it is a weekend."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if clock == "interval":
        return _interval(every, first_day, stream, n)
    if clock == "session":
        return _session(every, first_day, stream, n, dated=dated)
    if clock == "run":
        return _run(every, first_day, stream, n)
    if clock == "events":
        return _events(every, first_day, stream, n)
    raise ValueError(f"record_times has no model for clock {clock!r}")


def span_days(clock: str, every: int, rows: int) -> float:
    """At most how many days a file of ``rows`` records spans under this clock (the builder keeps a study's files
    before the present: a weekly series of 300 records runs almost six years)."""
    if clock in ("interval", "run"):
        return rows * every * 1.02 / DAY + 1  # a run's overhead is at most 2 %
    if clock == "events":
        return rows * every * 1.25 / DAY + 1  # exponential gaps: their sum stays far below 1.25 x the mean
    if clock == "session":
        longest = every * _SESSION_SPREAD[1]
        if longest <= WORKDAY_SECONDS - _FIRST_START_SLACK:
            work_days = -(-rows // int((WORKDAY_SECONDS - _FIRST_START_SLACK) // longest))
        else:
            work_days = rows * max(1, round(longest / DAY))
        return work_days * 7 / 5 + 3  # weekends, and a first day that falls on one
    return 1.0  # random: one working day


def is_working_day(day: date) -> bool:
    """Monday to Friday, and not 1 January, 25 or 26 December (closed almost everywhere that records data)."""
    return day.weekday() < 5 and (day.month, day.day) not in _CLOSED


def weekday(epoch_day: int) -> int:
    """Monday 0 ... Sunday 6."""
    return (epoch_day + _THURSDAY) % 7


def _interval(every: int, first_day: int, stream: Stream, n: int) -> IntArray:
    steps = np.arange(n, dtype=np.int64) * every
    if every < DAY:  # a logger started at some period boundary of the day
        start = first_day * DAY + every * stream.randint(0, DAY // every - 1)
    elif every % WEEK == 0:  # weekly records fall on the Monday that starts the week
        start = (first_day - weekday(first_day)) * DAY + _hour_of_work(stream)
    else:  # daily (or every k days) at one fixed hour of the working day
        start = first_day * DAY + _hour_of_work(stream)
    return start + steps


def _hour_of_work(stream: Stream) -> int:
    return 3600 * stream.randint(8, 17)


def _session(every: int, first_day: int, stream: Stream, n: int, *, dated: bool) -> IntArray:
    takes = np.round(every * stream.uniform_range(*_SESSION_SPREAD, n)).astype(np.int64)
    if not dated and weekday(first_day) >= 5:  # nobody starts a batch of records on a weekend they were not told of
        first_day += 7 - weekday(first_day)
    longest = every * _SESSION_SPREAD[1]
    if longest <= WORKDAY_SECONDS - _FIRST_START_SLACK:
        # Several records a day, one after another from a first start within 90 minutes of 08:00; per_day is
        # chosen so that the day's last record ends by 18:00 whatever the draws and the start.
        per_day = int((WORKDAY_SECONDS - _FIRST_START_SLACK) // longest)
        work_days = day_of = np.arange(n, dtype=np.int64) // per_day
        before = np.cumsum(takes) - takes  # time taken by the file's earlier records
        offsets = before - before[day_of * per_day]  # ... by the earlier records of the same day
    else:  # a record takes a working day or more: it starts in the morning, the next one when it is done
        days_taken = np.maximum(1, np.round(takes / DAY)).astype(np.int64)
        work_days = np.concatenate(([0], np.cumsum(days_taken)[:-1]))
        day_of = np.arange(n, dtype=np.int64)
        offsets = np.zeros(n, dtype=np.int64)
    day_starts = stream.integers(0, _FIRST_START_SLACK // 60 + 1, int(day_of[-1]) + 1) * 60
    times = _working_day(first_day, work_days) * DAY + WORKDAY_START + day_starts[day_of] + offsets
    if every >= 300:  # records that people time, to the minute
        times = times // 60 * 60
    return np.asarray(times, dtype=np.int64)


def _working_day(first_day: int, offsets: IntArray) -> IntArray:
    """The epoch day of each working-day offset from ``first_day`` (offset 0 is ``first_day`` itself, a weekend
    day too when a path's date says so; later offsets skip Saturdays and Sundays)."""
    day = weekday(first_day)
    if day >= 5:  # offsets from 1 count from the next Monday
        monday = first_day + 7 - day
        later = np.maximum(offsets - 1, 0)
        return np.where(offsets == 0, first_day, monday + later // 5 * 7 + later % 5)
    total = day + offsets
    return first_day + total // 5 * 7 + total % 5 - day


def _run(every: int, first_day: int, stream: Stream, n: int) -> IntArray:
    # Started by someone in working hours, then back to back day and night; each run takes `every` plus an
    # overhead of up to 2 % of it (at least a second): autosampler wash, a queue's scheduling delay.
    start = first_day * DAY + WORKDAY_START + 60 * stream.randint(0, WORKDAY_SECONDS // 60 - 1)
    overhead = stream.integers(0, max(1, every // 50) + 1, n)
    takes = every + overhead
    return start + np.concatenate(([0], np.cumsum(takes)[:-1])).astype(np.int64)


def _events(every: int, first_day: int, stream: Stream, n: int) -> IntArray:
    # Unscheduled arrivals from a moment of the first day: exponential gaps (mean `every`) to the second; two
    # arrivals in the same second are written in the order they came.
    start = first_day * DAY + stream.randint(0, DAY - 1)
    gaps = np.floor(stream.exponential(float(every), n)).astype(np.int64)
    gaps[0] = 0
    return start + np.cumsum(gaps)
