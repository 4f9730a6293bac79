"""The campus dataset: small, in-repo, so every answer is checkable.

Nothing here is fetched; the tools in `tools.py` read these tables and format
answers in the user's language (``ko`` or ``en``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

Localized = dict[str, str]
"""A text per language: ``{"ko": ..., "en": ...}``."""


@dataclass(frozen=True)
class Seats:
    total: int
    free: int


@dataclass(frozen=True)
class StudyRoom:
    label: str
    capacity: int
    booked: tuple[int, ...]
    """Hours (24h clock) already booked today."""


@dataclass(frozen=True)
class Assignment:
    title: Localized
    due: str
    """Due date, ``MM-DD``."""


@dataclass(frozen=True)
class Course:
    name: Localized
    materials: tuple[Localized, ...]
    assignments: tuple[Assignment, ...]


@dataclass(frozen=True)
class Meal:
    dishes: Localized
    price: int
    """In won."""


READING_ROOM_SEATS: Final[dict[int, Seats]] = {
    2: Seats(total=120, free=34),
    3: Seats(total=80, free=12),
    4: Seats(total=60, free=0),
    5: Seats(total=40, free=7),
}
"""Reading-room seats per library floor (the library agent's `seat_status`)."""

STUDY_ROOMS: Final[dict[str, StudyRoom]] = {
    "room_a": StudyRoom(label="A", capacity=4, booked=(13, 15)),
    "room_b": StudyRoom(label="B", capacity=6, booked=(10,)),
}
"""Group study rooms (the library agent's `reserve_room`)."""

OPENING_HOURS: Final[range] = range(9, 22)
"""Hours a study room can be booked for, one hour each."""

COURSES: Final[dict[str, Course]] = {
    "data_structures": Course(
        name={"ko": "자료구조", "en": "Data Structures"},
        materials=(
            {"ko": "1주차 강의노트", "en": "Week 1 lecture notes"},
            {"ko": "2주차 연결 리스트 슬라이드", "en": "Week 2 linked-list slides"},
        ),
        assignments=(Assignment(title={"ko": "과제 1: 스택 구현", "en": "Assignment 1: implement a stack"}, due="03-14"),),
    ),
    "operating_systems": Course(
        name={"ko": "운영체제", "en": "Operating Systems"},
        materials=({"ko": "1주차 프로세스 개요", "en": "Week 1 process overview"},),
        assignments=(
            Assignment(title={"ko": "과제 1: 스케줄러 시뮬레이션", "en": "Assignment 1: scheduler simulation"}, due="03-21"),
        ),
    ),
}
"""LMS courses with their materials and assignments (the academic agent's tools)."""

TODAY_MENU: Final[dict[str, Meal]] = {
    "lunch": Meal(dishes={"ko": "제육볶음, 된장국, 계란말이", "en": "spicy pork, soybean soup, rolled omelette"}, price=5500),
    "dinner": Meal(dishes={"ko": "김치볶음밥, 미역국", "en": "kimchi fried rice, seaweed soup"}, price=5000),
}
"""Today's student-cafeteria menu (the supervisor's own `today_menu` tool)."""
