"""12-hour and 24-hour clock times in Korean and English (graphs/campus_supervisor/times.py)."""

from __future__ import annotations

import pytest

from graphs.campus_supervisor.times import ClockTime, spoken_time, twelve_hour


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("스터디룸 A 오후 3시 예약해줘", ClockTime(15), id="ko-ohu"),
        pytest.param("오전 10시", ClockTime(10), id="ko-ojeon"),
        pytest.param("오전 12시", ClockTime(0), id="ko-ojeon-12-is-midnight"),
        pytest.param("오후 12시", ClockTime(12), id="ko-ohu-12-is-noon"),
        pytest.param("정오에 예약", ClockTime(12), id="ko-jeongo"),
        pytest.param("자정", ClockTime(0), id="ko-jajeong"),
        pytest.param("저녁 7시", ClockTime(19), id="ko-evening"),
        pytest.param("밤 9시", ClockTime(21), id="ko-night"),
        pytest.param("밤 12시", ClockTime(0), id="ko-night-12"),
        pytest.param("낮 2시", ClockTime(14), id="ko-daytime"),
        pytest.param("낮 12시", ClockTime(12), id="ko-daytime-12"),
        pytest.param("오후 3시 반", ClockTime(15, 30), id="ko-half"),
        pytest.param("오후 3시 15분", ClockTime(15, 15), id="ko-minutes"),
        pytest.param("스터디룸 B 15시에 예약해줘", ClockTime(15), id="ko-24h"),
        pytest.param("오후 15시", ClockTime(15), id="ko-24h-with-redundant-ohu"),
        pytest.param("3시", ClockTime(3), id="ko-bare-hour-is-24h"),
        pytest.param("Book study room A at 3pm", ClockTime(15), id="en-pm"),
        pytest.param("at 3 p.m. please", ClockTime(15), id="en-p.m."),
        pytest.param("3:30 PM", ClockTime(15, 30), id="en-minutes-pm"),
        pytest.param("10 am", ClockTime(10), id="en-am"),
        pytest.param("12am", ClockTime(0), id="en-12am-is-midnight"),
        pytest.param("12pm", ClockTime(12), id="en-12pm-is-noon"),
        pytest.param("noon", ClockTime(12), id="en-noon"),
        pytest.param("midnight", ClockTime(0), id="en-midnight"),
        pytest.param("at 15:00", ClockTime(15), id="en-24h"),
        pytest.param("at 15", ClockTime(15), id="en-at-hour"),
        pytest.param("3 o'clock", ClockTime(3), id="en-oclock"),
        pytest.param("오후 3시 or 4pm", ClockTime(15), id="first-time-wins"),
    ],
)
def test_a_spoken_time_is_read_on_the_24_hour_clock(text: str, expected: ClockTime) -> None:
    assert spoken_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("스터디룸 A 예약해줘", id="no-time"),
        pytest.param("3층 좌석 남았어?", id="a-floor-is-not-a-time"),
        pytest.param("15pm", id="pm-above-12"),
        pytest.param("오전 15시", id="ojeon-above-12"),
        pytest.param("0am", id="am-zero"),
        pytest.param("25시", id="hour-above-23"),
        pytest.param("I am 20", id="am-as-a-word"),
    ],
)
def test_text_without_a_valid_time_gives_none(text: str) -> None:
    assert spoken_time(text) is None


@pytest.mark.parametrize(
    ("hour", "afternoon", "expected"),
    [(12, False, 0), (12, True, 12), (1, False, 1), (1, True, 13), (11, True, 23), (0, True, None), (13, False, None)],
)
def test_twelve_hour_edge_cases(hour: int, afternoon: bool, expected: int | None) -> None:
    assert twelve_hour(hour, afternoon=afternoon) == expected
