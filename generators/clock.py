"""When the records of one file were taken: the time model of a datetime column (issue 24, generator version 9).

A study design names how its records follow one another in time (``timestamp.clock`` and ``timestamp.every``);
the spec keeps both on its datetime column, and synthesis asks :func:`record_times` for a file's times.

- ``interval``: a logger or a schedule. Records exactly ``every`` apart on the clock's grid (5-minute detector
  intervals at :00, :05, ...; hourly readings on the hour; daily at one fixed hour; weekly on Mondays).
- ``session``: records that people take one after another in working hours (08:00-18:00, Monday to Friday), each
  taking about ``every`` (0.8-1.25 times it), several a day, then on the next working day; times to the minute.
- ``run``: an instrument's sequence started in working hours (on a working day, unless the path dates it) and then
  running around the clock, each run taking
  ``every`` plus a few seconds of overhead (an LC-MS injection every 20 min, a simulation every 2 h).
- ``events``: arrivals that nobody schedules (emergency visits, police stops, particle or air-shower events, job
  submissions, posts): a Poisson process around the clock, gaps exponential with mean ``every``, to the second.
- ``random``: times drawn uniformly in the working day of the file's day, sorted (generator versions 4-8, kept
  for spec files written by them and for columns whose design names no clock).

A design may also say *when* records can be taken (a :class:`Window`, generator version 11): in some months of
the year only (a growing season, a school term), between some hours of the day (a call centre's opening hours, a
day shift), on weekdays only. Records keep their clock inside the window and skip what lies outside it: a
half-hourly interval runs 08:00-20:00 and resumes the next open day, a Poisson stream of events is thinned to the
open hours (still Poisson there), a session's working day becomes the window's hours, and a run, which goes on day
and night once started, only starts in an open month.

At ``date`` resolution the same times are cut to their day. Everything is whole seconds since 1970-01-01 (UTC:
no local time anywhere), and every draw comes from the file's stream of the column, so times are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from dateutil.easter import easter

from generators.rng import FloatArray, IntArray, Stream

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
# Days nobody records in working hours (generator version 12):
# - the winter break, 24 December to 1 January: closed almost everywhere that people record data (schools, clinics'
#   elective lists, laboratories); reviewers rejected a class tested on 31 December and unit tests on 27 December
#   (design pass 18; before, only 1 January, 25 and 26 December);
# - the public holidays that the countries most studies come from keep on fixed rules: Good Friday and Easter Monday,
#   1 May, the last Monday of May (Memorial Day, the spring bank holiday), 4 July, the last Monday of August, the
#   first Monday of September (Labor Day) and Thanksgiving (fourth Thursday of November) with the Friday after; 4 July
#   and 1 January on a weekend are kept on the Friday before or the Monday after (2 January 2017).
#   Reviewers rejected interviews on Thanksgiving and sessions on Memorial Day, Good Friday and 4 July (pass 27).
#   A study of one country loses a few days it could have worked; none records on a holiday it keeps.
_BREAK_FROM = 24  # December
_CLOSED_WEEKDAYS_A_YEAR = 17  # at most 7 weekdays of the winter break and the 10 holidays
_THURSDAY = 3  # 1970-01-01 was a Thursday: weekday (Monday 0) of epoch day d is (d + 3) % 7
_TABLE_FIRST_DAY = 0  # the closed days are tabled from 1970-01-01 ...
_TABLE_LAST_YEAR = 2100  # ... to the end of 2100


@dataclass(frozen=True)
class Window:
    """When a file's records may be taken: ``months`` of the year (1-12, increasing; empty: every month),
    ``hours`` of the day as ``(start, end)`` whole hours from 0 to 24 (empty: the clock's own day, 08-18 for a
    session and the whole day otherwise; ``end < start`` runs past midnight, a night shift ``(22, 6)``, and belongs
    to the day it starts on), ``weekdays``: Monday to Friday only."""

    months: tuple[int, ...] = ()
    hours: tuple[int, ...] = ()
    weekdays: bool = False
    # Closed periods, ISO (first day, last day) inclusive: fieldwork paused (face-to-face interviews stopped in the
    # spring-2020 lockdowns), a laboratory shut for a move
    closed: tuple[tuple[str, str], ...] = ()


def window_problem(window: Window, clock: str, every: int, resolution: str) -> str | None:
    """Why ``window`` cannot time the records of (``clock``, ``every``) at ``resolution``, or None."""
    if clock == "random":
        return "a window needs a clock (interval, session, run or events)"
    if not (window.months or window.hours or window.weekdays or window.closed):
        return "an empty window: name months, hours, weekdays or closed periods"
    for period in window.closed:
        problem = _period_problem(period)
        if problem is not None:
            return problem
    months = window.months
    if any(not 1 <= m <= 12 for m in months) or list(months) != sorted(set(months)):
        return f"months are distinct increasing numbers from 1 to 12, got {list(months)}"
    if len(months) == 12:
        return "all twelve months: leave months out"
    if window.hours:
        if len(window.hours) != 2 or window.hours[0] == window.hours[1] or not all(0 <= h <= 24 for h in window.hours):
            return f"hours are [start, end], whole hours from 0 to 24 that differ, got {list(window.hours)}"
        if resolution == "date":
            return "hours need a time of day: the column's resolution is 'date'"
        if clock == "run":
            return "a run goes on day and night once started: it takes months, not hours"
        if clock == "interval" and every < DAY and not _slots(window, every).size:
            return f"no {format_every(every)} interval falls between {window.hours[0]}:00 and {window.hours[1]}:00"
    if window.weekdays and clock == "session":
        return "a session's records are on working days already: leave weekdays out"
    return None


def _period_problem(period: tuple[str, ...]) -> str | None:
    """Why ``period`` is no closed period (two ISO dates, first <= last, within 2000-2099), or None."""
    try:
        first, last = (date.fromisoformat(d) for d in period)
    except (TypeError, ValueError):
        return f"a closed period is [first day, last day] as ISO dates, got {list(period)}"
    if not date(2000, 1, 1) <= first <= last <= date(2099, 12, 31):
        return f"a closed period runs forward within 2000-2099, got {list(period)}"
    return None


def _epoch_day(text: str) -> int:
    return (date.fromisoformat(text) - date(1970, 1, 1)).days


def in_window(epoch_days: IntArray, window: Window, *, working: bool = False) -> np.ndarray:
    """Which of ``epoch_days`` are open days of ``window`` (Monday to Friday too where ``working``)."""
    open_day = np.ones(epoch_days.shape, dtype=bool)
    for first, last in window.closed:
        open_day &= (epoch_days < _epoch_day(first)) | (epoch_days > _epoch_day(last))
    if window.months:
        month = epoch_days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12 + 1
        open_day &= np.isin(month, window.months)
    if window.weekdays or working:
        open_day &= weekdays(epoch_days) < 5
    if working:  # nobody works in the winter break nor on a public holiday (generator version 12)
        open_day &= ~_holidays(epoch_days)
    return open_day


def _holidays(epoch_days: IntArray) -> np.ndarray:
    """Which of ``epoch_days`` nobody works: the winter break, 24 December to 1 January, and the public holidays of
    :func:`_public_holidays` (the days :func:`is_working_day` closes). One lookup in a table of the years studies
    are dated in; a day outside it is reckoned directly."""
    table = _closed_table()
    offset = epoch_days - _TABLE_FIRST_DAY
    inside = (offset >= 0) & (offset < table.size)
    if inside.all():
        return np.asarray(table[offset])
    closed = _closed_days(epoch_days)
    closed[inside] = table[offset[inside]]
    return closed


@lru_cache(maxsize=1)
def _closed_table() -> np.ndarray:
    """:func:`_closed_days` of every day from 1970 to 2100, built once per process (about 2 ms)."""
    days = np.arange(_TABLE_FIRST_DAY, (date(_TABLE_LAST_YEAR + 1, 1, 1) - date(1970, 1, 1)).days, dtype=np.int64)
    table = _closed_days(days)
    table.setflags(write=False)  # cached: shared by every caller
    return table


def _closed_days(epoch_days: IntArray) -> np.ndarray:
    """:func:`_holidays`, reckoned from the calendar."""
    stamps = epoch_days.astype("datetime64[D]")
    month = stamps.astype("datetime64[M]")
    day_of_month = (stamps - month).astype(np.int64) + 1
    month_of_year = month.astype(np.int64) % 12 + 1
    closed: np.ndarray = _in_winter_break(month_of_year, day_of_month)
    if epoch_days.size:
        years = stamps.astype("datetime64[Y]").astype(np.int64) + 1970
        holidays = np.concatenate([_public_holidays(int(y)) for y in range(int(years.min()), int(years.max()) + 1)])
        closed |= np.isin(epoch_days, holidays)
    return closed


def _in_winter_break(month: Any, day: Any) -> Any:
    """Whether (``month``, ``day``), numbers or arrays of them, fall from 24 December to 1 January."""
    return ((month == 12) & (day >= _BREAK_FROM)) | ((month == 1) & (day == 1))


@lru_cache(maxsize=256)
def _public_holidays(year: int) -> IntArray:
    """The epoch days of ``year``'s public holidays outside the winter break (see ``_CLOSED_WEEKDAYS_A_YEAR``)."""
    easter_sunday = easter(year)  # the Gregorian computus (dateutil): Good Friday and Easter Monday move with it
    days = [
        easter_sunday - timedelta(days=2),
        easter_sunday + timedelta(days=1),
        date(year, 5, 1),
        _nth_weekday(year, 5, 0, -1),  # last Monday of May
        _observed(date(year, 7, 4)),
        _observed(date(year, 1, 1)),  # a New Year's Day on a weekend is kept on the Friday before or Monday after
        _nth_weekday(year, 8, 0, -1),  # last Monday of August
        _nth_weekday(year, 9, 0, 1),  # first Monday of September
        _nth_weekday(year, 11, 3, 4),  # fourth Thursday of November
        _nth_weekday(year, 11, 3, 4) + timedelta(days=1),
    ]
    found = np.array([(d - date(1970, 1, 1)).days for d in days], dtype=np.int64)
    found.setflags(write=False)  # cached: shared by every caller
    return found


def _observed(day: date) -> date:
    """The weekday a holiday is kept on: a Saturday's on the Friday before, a Sunday's on the Monday after."""
    return day + timedelta(days={5: -1, 6: 1}.get(day.weekday(), 0))


def _nth_weekday(year: int, month: int, weekday_number: int, nth: int) -> date:
    """The ``nth`` (1, 2, ...; -1 the last) ``weekday_number`` (Monday 0) of ``month``."""
    if nth > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday_number - first.weekday()) % 7 + 7 * (nth - 1))
    last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday_number) % 7)


def is_open(epoch_day: int, window: Window, *, working: bool = False) -> bool:
    """:func:`in_window` of one day."""
    return bool(in_window(np.array([epoch_day], dtype=np.int64), window, working=working)[0])


def open_days(first_day: int, count: int, window: Window, *, working: bool = False, step: int = 1) -> IntArray:
    """The first ``count`` open days (epoch days) among ``first_day``, ``first_day + step``, ... (``first_day`` itself
    where it is open)."""
    if step == 1 and not window.months and not window.closed:  # at most the weekend closes a day: count them
        if working or window.weekdays:
            start = first_day + (7 - weekday(first_day) if weekday(first_day) >= 5 else 0)
            if not working:
                return _working_day(start, np.arange(count, dtype=np.int64))
            # weekdays, less the holidays: at most 17 of every 261 weekdays, so count // 15 + 17 spare days suffice
            spare = count // 15 + _CLOSED_WEEKDAYS_A_YEAR
            days = _working_day(start, np.arange(count + spare, dtype=np.int64))
            found = days[~_holidays(days)]
            if found.size >= count:
                return np.asarray(found[:count], dtype=np.int64)
        else:
            return first_day + np.arange(count, dtype=np.int64)
    length = int(count / open_share(window, working=working) * 1.1) + 400
    while True:
        days = first_day + np.arange(length, dtype=np.int64) * step
        found = days[in_window(days, window, working=working)]
        if found.size >= count:
            return np.asarray(found[:count], dtype=np.int64)
        length *= 2


def _slots(window: Window, every: int) -> IntArray:
    """Seconds after midnight of the ``every`` grid that fall within the window's hours."""
    low, length = _hours(window, "interval")
    return np.arange(-(-low // every) * every, low + length, every, dtype=np.int64)


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
    if clock == "run" and resolution == "date":  # events may be dated by day: an onset, a dispute, a diagnosis
        return "a run clock times records to the second: its column has resolution 'datetime'"
    return None


def record_times(
    clock: str, every: int, first_day: int, stream: Stream, n: int, *, dated: bool, window: Window | None = None
) -> IntArray:
    """``n`` sorted record times (seconds since the epoch) of one file whose records start on the epoch day
    ``first_day`` (the path's date, or a day drawn for the file); ``dated``: the file's date came from its path,
    so the first record is on that day even where it is a weekend; ``window``: when records may be taken (a run
    ignores it: its first day is an open one, chosen by the caller)."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if clock == "session":
        return _session(every, first_day, stream, n, dated=dated, window=window or Window())
    if window is not None and clock != "run":
        if clock == "interval":
            return _interval_in(window, every, first_day, stream, n)
        if clock == "events":
            return _events_in(window, every, first_day, stream, n)
    if clock == "interval":
        return _interval(every, first_day, stream, n)
    if clock == "run":
        if not dated:  # someone starts the queue on a working day (version 11; not a holiday, version 12)
            first_day = int(open_days(first_day, 1, Window(), working=True)[0])
        return _run(every, first_day, stream, n)
    if clock == "events":
        return _events(every, first_day, stream, n)
    raise ValueError(f"record_times has no model for clock {clock!r}")


def span_days(clock: str, every: int, rows: int, window: Window | None = None) -> float:
    """At most how many days a file of ``rows`` records spans under this clock (the builder keeps a study's files
    before the present: a weekly series of 300 records runs almost six years)."""
    if window is not None and clock != "run":
        return _span_in(window, clock, every, rows)
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
        return work_days / open_share(Window(), working=True) + 3  # weekends and holidays, a first day on one
    return 1.0  # random: one working day


def is_working_day(day: date) -> bool:
    """Monday to Friday, not in the winter break (24 December to 1 January) nor a public holiday."""
    return bool(working_days(np.array([(day - date(1970, 1, 1)).days], dtype=np.int64))[0])


def working_days(epoch_days: IntArray) -> np.ndarray:
    """Which of ``epoch_days`` are working days (:func:`is_working_day` of each)."""
    return np.asarray((weekdays(epoch_days) < 5) & ~_holidays(epoch_days))


def weekday(epoch_day: int) -> int:
    """Monday 0 ... Sunday 6."""
    return (epoch_day + _THURSDAY) % 7


def weekdays(epoch_days: IntArray) -> IntArray:
    """:func:`weekday` of every day."""
    return (epoch_days + _THURSDAY) % 7


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
    # The start is logged to the second, as every later one is (a whole-minute first time read as typed in).
    start = first_day * DAY + WORKDAY_START + stream.randint(0, WORKDAY_SECONDS - 1)
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


def open_share(window: Window, *, working: bool = False) -> float:
    """The share of calendar days that are open: what ``in_window`` finds over whole years, or a little under where
    only working days count (the winter break and the public holidays close up to 17 weekdays a year)."""
    working_share = 5 / 7 * (1 - _CLOSED_WEEKDAYS_A_YEAR / 261) if working else 5 / 7
    return (len(window.months) or 12) / 12 * (working_share if window.weekdays or working else 1)


def _hours(window: Window, clock: str) -> tuple[int, int]:
    """The window's day as (first second, length in seconds): its hours, else the clock's own day. A night's
    window runs past midnight: its seconds go on beyond the day's 86 400."""
    if window.hours:
        start, end = window.hours
        return start * 3600, ((end - start) % 24 or 24) * 3600
    return (WORKDAY_START, WORKDAY_SECONDS) if clock == "session" else (0, DAY)


def _span_in(window: Window, clock: str, every: int, rows: int) -> float:
    """span_days inside a window: the open days the records need, spread over the calendar's open share, plus a
    year where some months are closed (a season can end a day after the file starts; the next is a year away) or
    a week otherwise."""
    length = _hours(window, clock)[1]
    if clock == "interval" and every < DAY:
        needed = rows / _slots(window, every).size + 1
    elif clock == "interval":
        needed = rows * every / DAY
    elif clock == "events":
        needed = rows * every * 1.25 / length + 1
    else:  # session
        slack = _session_slack(length)
        longest = every * _SESSION_SPREAD[1]
        if longest <= length - slack:
            needed = -(-rows // int((length - slack) // longest))
        else:
            needed = rows * max(1, round(longest / DAY))
    share = open_share(window, working=clock == "session")
    closed = sum(_epoch_day(last) - _epoch_day(first) + 1 for first, last in window.closed)
    return needed / share * 1.1 + (366 if window.months else 7) + closed


def _session_slack(length: int) -> int:
    """How late a session day's first record may start: 90 min, or a quarter of a short window (whole minutes)."""
    return min(_FIRST_START_SLACK, length // 4 // 60 * 60)


def _interval_in(window: Window, every: int, first_day: int, stream: Stream, n: int) -> IntArray:
    if every < DAY:  # the logger's grid within the open hours, from some period of the first day
        slots = _slots(window, every)
        # A series that fits in one opening of the window's hours starts where it can end within it (version 12):
        # a storm cell scanned every 5 min for 2 h is not resumed 14 h later, after the window shut (a reviewer's)
        last_start = slots.size - n if window.hours and n <= slots.size else slots.size - 1
        index = stream.randint(0, last_start) + np.arange(n, dtype=np.int64)
        days = open_days(first_day, int(index[-1] // slots.size) + 1, window)
        return days[index // slots.size] * DAY + slots[index % slots.size]
    first = first_day - weekday(first_day) if every % WEEK == 0 else first_day
    if window.hours:  # one of the window's whole hours (after midnight, counted on the day the window opened)
        start, length = _hours(window, "interval")
        hour = start + 3600 * stream.randint(0, length // 3600 - 1)
    else:
        hour = _hour_of_work(stream)
    return open_days(first, n, window, step=every // DAY) * DAY + hour  # every k days, the open ones


def _events_in(window: Window, every: int, first_day: int, stream: Stream, n: int) -> IntArray:
    # A Poisson process over the open time only: arrivals counted in open seconds, then laid on the calendar's
    # open hours of open days (thinning a Poisson process by a fixed window leaves it Poisson inside).
    start, length = _hours(window, "events")
    first = stream.randint(0, length - 1)
    gaps = np.floor(stream.exponential(float(every), n)).astype(np.int64)
    gaps[0] = 0
    open_at = first + np.cumsum(gaps)
    days = open_days(first_day, int(open_at[-1] // length) + 1, window)
    return days[open_at // length] * DAY + start + open_at % length


def _session(every: int, first_day: int, stream: Stream, n: int, *, dated: bool, window: Window = Window()) -> IntArray:
    # Several records a day, one after another from a first start within 90 minutes of the day's opening (08:00
    # without a window), per_day chosen so that the day's last record ends by its close whatever the draws; a record
    # that takes a day or more starts in the morning, the next when it is done. A path's date is the first day even
    # where it is closed (a weekend); nobody starts an undated batch on a closed day.
    takes = np.round(every * stream.uniform_range(*_SESSION_SPREAD, n)).astype(np.int64)
    start, length = _hours(window, "session")
    slack = _session_slack(length)
    longest = every * _SESSION_SPREAD[1]
    if longest <= length - slack:
        per_day = int((length - slack) // longest)
        work_days = day_of = np.arange(n, dtype=np.int64) // per_day
        before = np.cumsum(takes) - takes
        offsets = before - before[day_of * per_day]
    else:
        work_days = np.concatenate(([0], np.cumsum(np.maximum(1, np.round(takes / DAY)).astype(np.int64))[:-1]))
        day_of = np.arange(n, dtype=np.int64)
        offsets = np.zeros(n, dtype=np.int64)
    day_starts = stream.integers(0, slack // 60 + 1, int(day_of[-1]) + 1) * 60
    if every < 300:  # records timed to the second: the day's first as well (a whole-minute first read as typed in)
        day_starts = np.minimum(day_starts + stream.integers(0, 60, day_starts.size), slack)
    count = int(work_days[-1]) + 1
    if dated and not is_open(first_day, window, working=True):
        days = np.concatenate(([first_day], open_days(first_day + 1, count - 1, window, working=True)))
    else:  # the path's date, or the first open day from the drawn one
        days = open_days(first_day, count, window, working=True)
    times = days[work_days] * DAY + start + day_starts[day_of] + offsets
    if every >= 300:
        times = times // 60 * 60
    return np.asarray(times, dtype=np.int64)


def calendar(seconds: IntArray, names: Iterable[str]) -> dict[str, FloatArray]:
    """The calendar names an expression reads (generators.spec.CALENDAR_NAMES) of a file's record times:
    ``day_of_year`` (1.0 at 1 January 00:00, 1.5 at its noon), ``day_of_week`` (0 Monday ... 6 Sunday) and
    ``elapsed_days`` (days since the file's first record)."""
    days = seconds // DAY
    found: dict[str, FloatArray] = {}
    for name in names:
        if name == "day_of_year":
            stamps = days.astype("datetime64[D]")
            new_year = stamps.astype("datetime64[Y]").astype("datetime64[D]")
            found[name] = (stamps - new_year).astype(np.float64) + 1 + (seconds % DAY) / DAY
        elif name == "day_of_week":
            found[name] = weekdays(days).astype(np.float64)
        elif name == "elapsed_days":
            found[name] = (seconds - (seconds.min() if seconds.size else 0)) / DAY
    return found
