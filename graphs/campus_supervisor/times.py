"""Clock times in a user's message, Korean or English, as an hour on a 24-hour clock.

A study room is booked by the hour, so the reservation tool needs the start hour.
A model filling ``hour`` from "오후 3시" or "3pm" often writes 3; `spoken_time`
reads the user's own words instead:

* Korean: ``15시``, ``3시`` (as said: a bare hour is taken on the 24-hour clock),
  ``오전 10시``, ``오후 3시``, ``오후 3시 30분``, ``오후 3시 반``, ``저녁 7시``,
  ``밤 9시``, ``낮 1시``, ``아침 9시``, ``새벽 2시``, ``정오`` (12), ``자정`` (0);
* English: ``3pm``, ``3 p.m.``, ``3:30 PM``, ``10 am``, ``15:00``, ``at 15``,
  ``3 o'clock``, ``noon`` (12), ``midnight`` (0).

12-hour edge cases: ``12am`` and ``오전 12시`` are midnight (0), ``12pm`` and
``오후 12시`` are noon (12); an hour above 12 with am/pm or 오전/오후 (``15pm``)
is not a time. Pure functions, unit tested (tests/unit/test_campus_times.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ClockTime:
    """A time of day the user said."""

    hour: int
    """0 to 23."""
    minute: int = 0
    """0 to 59."""


_AFTERNOON_KO = ("오후", "저녁", "밤", "낮")
"""Korean day parts after noon (``밤`` and ``낮`` with the exceptions in `_korean`);
``오전``, ``아침`` and ``새벽`` are before noon."""

_KO = re.compile(
    r"(?P<part>오전|오후|아침|낮|저녁|밤|새벽)?\s*(?P<hour>\d{1,2})\s*시"
    r"(?:\s*(?P<half>반)|\s*(?P<minute>\d{1,2})\s*분)?"
)
_KO_WORDS = {"정오": ClockTime(12), "자정": ClockTime(0)}

_EN_MERIDIEM = re.compile(r"\b(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<meridiem>[ap])\.?\s*m\b\.?", re.IGNORECASE)
_EN_24H = re.compile(r"\b(?P<hour>\d{1,2}):(?P<minute>\d{2})\b")
_EN_AT = re.compile(r"\b(?:at|for|from)\s+(?P<hour>\d{1,2})(?:\s*o'?clock)?\b(?![:\d])", re.IGNORECASE)
_EN_OCLOCK = re.compile(r"\b(?P<hour>\d{1,2})\s*o'?clock\b", re.IGNORECASE)
_EN_WORDS = {"noon": ClockTime(12), "midday": ClockTime(12), "midnight": ClockTime(0)}


def twelve_hour(hour: int, *, afternoon: bool) -> int | None:
    """A 12-hour clock reading (1 to 12) on the 24-hour clock, or None when out of range."""
    if not 1 <= hour <= 12:
        return None
    if afternoon:
        return 12 if hour == 12 else hour + 12
    return 0 if hour == 12 else hour


def _valid(hour: int | None, minute: int) -> ClockTime | None:
    if hour is None or not 0 <= hour <= 23 or not 0 <= minute <= 59:
        return None
    return ClockTime(hour, minute)


def _korean(match: re.Match[str]) -> ClockTime | None:
    hour, part = int(match["hour"]), match["part"]
    minute = 30 if match["half"] else int(match["minute"] or 0)
    if part is None:
        return _valid(hour, minute)
    if hour > 12:  # "오후 15시": a 24-hour reading with a redundant day part; "오전 15시" is none
        return _valid(hour, minute) if part in _AFTERNOON_KO else None
    if part == "밤":  # 밤 9시 = 21, 밤 12시 = midnight, 밤 1시 = 1 (late night)
        afternoon = hour >= 5 and hour != 12
    elif part == "낮":  # 낮 12시 = noon, 낮 2시 = 14, 낮 11시 = 11
        afternoon = hour <= 5
    else:
        afternoon = part in _AFTERNOON_KO
    if part == "낮" and hour == 12:
        return _valid(12, minute)
    return _valid(twelve_hour(hour, afternoon=afternoon), minute)


def _first(found: list[tuple[int, ClockTime | None]]) -> ClockTime | None:
    valid = [(start, time) for start, time in found if time is not None]
    return min(valid, key=lambda pair: pair[0])[1] if valid else None


def spoken_time(text: str) -> ClockTime | None:
    """The first clock time in ``text``, or None when it names none."""
    found: list[tuple[int, ClockTime | None]] = []
    for word, time in {**_KO_WORDS, **_EN_WORDS}.items():
        for match in re.finditer(re.escape(word), text, re.IGNORECASE):
            found.append((match.start(), time))
    found += [(m.start(), _korean(m)) for m in _KO.finditer(text)]
    meridiem = list(_EN_MERIDIEM.finditer(text))
    found += [
        (m.start(), _valid(twelve_hour(int(m["hour"]), afternoon=m["meridiem"].lower() == "p"), int(m["minute"] or 0)))
        for m in meridiem
    ]
    taken = [range(m.start(), m.end()) for m in meridiem]
    for pattern in (_EN_24H, _EN_AT, _EN_OCLOCK):
        for m in pattern.finditer(text):
            if not any(m.start("hour") in span for span in taken):
                found.append((m.start(), _valid(int(m["hour"]), int(m.groupdict().get("minute") or 0))))
    return _first(found)
