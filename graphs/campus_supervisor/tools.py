"""Tools of the campus agents, over the in-repo dataset (`data.py`).

Each tool answers in the language of the user's latest message (read from the
agent's state, not from the model). A tool that is missing a required detail
asks for it: its artifact names the missing slot (`CLARIFICATION_KEY`), which
is how `routing` recognises a reply to that question.

The ``Keywords:`` lines and the ``value (keyword, ...)`` lists in argument
descriptions tell a hosted model what the tool is for; the offline model
chooses tools and arguments from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.prebuilt import InjectedState

from graphs.campus_supervisor.data import (
    COURSES,
    OPENING_HOURS,
    READING_ROOM_SEATS,
    STUDY_ROOMS,
    TODAY_MENU,
)
from graphs.campus_supervisor.history import CLARIFICATION_KEY
from graphs.campus_supervisor.routing import CAFETERIA, DOMAIN_SIGNALS
from graphs.campus_supervisor.state import ACADEMIC, LIBRARY
from graphs.campus_supervisor.times import spoken_time
from graphs.common.messages import detect_language, message_text
from graphs.common.visible import route_tool_name

Messages = Annotated[list[AnyMessage], InjectedState("messages")]
Artifact = dict[str, Any]

AGENT_LABELS: dict[str, dict[str, str]] = {
    LIBRARY: {"ko": "도서관 에이전트", "en": "the library agent"},
    ACADEMIC: {"ko": "학사 에이전트", "en": "the academic agent"},
}


def latest_human_text(messages: Sequence[AnyMessage]) -> str:
    """The text of the latest human message ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return ""


def user_language(messages: Sequence[AnyMessage]) -> str:
    """``"ko"`` or ``"en"``: the language of the latest human message."""
    text = latest_human_text(messages)
    return detect_language(text) if text else "en"


def _ask(slot: str, text: str) -> tuple[str, Artifact]:
    return text, {CLARIFICATION_KEY: slot}


def _won(amount: int, lang: str) -> str:
    return f"{amount:,}원" if lang == "ko" else f"{amount:,} won"


# -- library -----------------------------------------------------------------


@tool(response_format="content_and_artifact")
def seat_status(
    messages: Messages,
    floor: Annotated[
        Literal[2, 3, 4, 5] | None,
        "Library floor: 2 (2층, second, 2nd); 3 (3층, third, 3rd); "
        "4 (4층, fourth, 4th); 5 (5층, fifth, 5th). Leave empty when the user did not say.",
    ] = None,
) -> tuple[str, Artifact]:
    """Free reading-room seats on one library floor.

    Keywords: 좌석, 자리, 열람실, 층, seat, seats, floor, reading room
    """
    lang = user_language(messages)
    if floor is None:
        floors = list(READING_ROOM_SEATS)
        if lang == "ko":
            return _ask("floor", f"몇 층 좌석을 확인할까요? ({', '.join(f'{f}층' for f in floors)})")
        return _ask("floor", f"Which floor should I check? ({', '.join(map(str, floors))})")
    seats = READING_ROOM_SEATS[floor]
    total, free = seats.total, seats.free
    if lang == "ko":
        text = (
            f"{floor}층 열람실에는 {total}석 중 {free}석이 남아 있습니다."
            if free
            else f"{floor}층 열람실은 {total}석이 모두 찼습니다."
        )
    else:
        text = (
            f"Floor {floor} reading room: {free} of {total} seats are free."
            if free
            else f"Floor {floor} reading room is full ({total} seats)."
        )
    return text, {"floor": floor, "free": free}


@tool(response_format="content_and_artifact")
def reserve_room(
    messages: Messages,
    room: Annotated[
        Literal["room_a", "room_b"] | None,
        "Study room: room_a (스터디룸 A, A룸, room A); room_b (스터디룸 B, B룸, room B).",
    ] = None,
    hour: Annotated[int | None, "Start hour on a 24-hour clock (9 to 21): 오후 3시 and 3pm are 15."] = None,
) -> tuple[str, Artifact]:
    """Book a group study room for one hour today.

    Keywords: 예약, 스터디룸, 스터디 룸, reserve, book, study room
    """
    lang = user_language(messages)
    if room is None:
        labels = ", ".join(r.label for r in STUDY_ROOMS.values())
        return _ask(
            "room", f"어느 스터디룸을 예약할까요? ({labels})" if lang == "ko" else f"Which study room should I book? ({labels})"
        )
    said = spoken_time(latest_human_text(messages))
    if said is not None:  # the user's own words win over the model's reading ("오후 3시" is 15, not 3)
        if said.minute:
            after = (said.hour + 1) % 24
            text = (
                f"예약은 정시에 한 시간 단위로 시작합니다. {said.hour}시 또는 {after}시 중에서 골라 주세요."
                if lang == "ko"
                else f"Bookings start on the hour, for one hour: pick {said.hour}:00 or {after}:00."
            )
            return text, {"room": room, "hour": said.hour, "minute": said.minute, "booked": False}
        hour = said.hour
    if hour is None:
        return _ask("hour", "몇 시에 예약할까요? (9시~21시)" if lang == "ko" else "What time should I book it for? (9 to 21)")
    label, capacity = STUDY_ROOMS[room].label, STUDY_ROOMS[room].capacity
    if hour not in OPENING_HOURS:
        text = (
            f"{hour}시는 예약할 수 없습니다. 예약은 9시부터 21시까지 가능합니다."
            if lang == "ko"
            else f"{hour}:00 cannot be booked; bookings run from 9:00 to 21:00."
        )
        return text, {"room": room, "hour": hour, "booked": False}
    if hour in STUDY_ROOMS[room].booked:
        text = (
            f"스터디룸 {label}는 {hour}시에 이미 예약되어 있습니다."
            if lang == "ko"
            else f"Study room {label} is already booked at {hour}:00."
        )
        return text, {"room": room, "hour": hour, "booked": False}
    text = (
        f"스터디룸 {label}를 {hour}시에 예약했습니다 (최대 {capacity}명)."
        if lang == "ko"
        else f"Booked study room {label} at {hour}:00 (up to {capacity} people)."
    )
    return text, {"room": room, "hour": hour, "booked": True}


# -- academic ----------------------------------------------------------------

CourseArg = Annotated[
    Literal["data_structures", "operating_systems"] | None,
    "Course: data_structures (자료구조, data structures); "
    "operating_systems (운영체제, operating systems). Leave empty for every course.",
]


def _course_name(course: str, lang: str) -> str:
    return COURSES[course].name[lang]


def _materials(course: str, lang: str) -> str:
    return ", ".join(m[lang] for m in COURSES[course].materials)


@tool(response_format="content_and_artifact")
def course_materials(messages: Messages, course: CourseArg = None) -> tuple[str, Artifact]:
    """LMS course materials (lecture notes, slides) of one course, or of every course.

    Keywords: 강의자료, 강의 자료, LMS, materials, slides, lecture notes
    """
    lang = user_language(messages)
    courses = [course] if course else list(COURSES)
    listing = "; ".join(f"{_course_name(c, lang)} - {_materials(c, lang)}" for c in courses)
    if course is None:
        text = f"LMS 전체 강의자료: {listing}." if lang == "ko" else f"All LMS materials: {listing}."
    else:
        text = (
            f"{_course_name(course, lang)} 강의자료: {_materials(course, lang)}."
            if lang == "ko"
            else f"{_course_name(course, lang)} materials: {_materials(course, lang)}."
        )
    return text, {"courses": courses}


@tool(response_format="content_and_artifact")
def assignments(messages: Messages, course: CourseArg = None) -> tuple[str, Artifact]:
    """Assignments and due dates of one LMS course.

    Keywords: 과제, 숙제, 마감, assignment, assignments, homework, due
    """
    lang = user_language(messages)
    if course is None:
        names = ", ".join(_course_name(c, lang) for c in COURSES)
        return _ask("course", f"어느 과목인가요? ({names})" if lang == "ko" else f"Which course? ({names})")
    due = "마감" if lang == "ko" else "due"
    listing = "; ".join(f"{a.title[lang]} ({due} {a.due})" for a in COURSES[course].assignments)
    text = (
        f"{_course_name(course, lang)} 과제: {listing}."
        if lang == "ko"
        else f"{_course_name(course, lang)} assignments: {listing}."
    )
    return text, {"course": course}


# -- supervisor --------------------------------------------------------------


def _meal(meal: str, lang: str) -> str:
    item = TODAY_MENU[meal]
    space = "" if lang == "ko" else " "
    return f"{item.dishes[lang]}{space}({_won(item.price, lang)})"


@tool(
    response_format="content_and_artifact",
    description=f"Today's student-cafeteria menu and prices.\n\nKeywords: {', '.join(DOMAIN_SIGNALS[CAFETERIA])}",
)
def today_menu(
    messages: Messages,
    meal: Annotated[
        Literal["lunch", "dinner"] | None,
        "Meal: lunch (점심, 중식, lunch); dinner (저녁, 석식, dinner, supper). Empty for both.",
    ] = None,
) -> tuple[str, Artifact]:
    """Today's student-cafeteria menu (the description above carries the keywords)."""
    lang = user_language(messages)
    if meal is None:
        text = (
            f"오늘 학생식당 점심은 {_meal('lunch', lang)}, 저녁은 {_meal('dinner', lang)}입니다."
            if lang == "ko"
            else f"Today's cafeteria: lunch is {_meal('lunch', lang)}; dinner is {_meal('dinner', lang)}."
        )
    else:
        word = {"lunch": ("점심", "lunch"), "dinner": ("저녁", "dinner")}[meal]
        text = (
            f"오늘 학생식당 {word[0]}은 {_meal(meal, lang)}입니다."
            if lang == "ko"
            else f"Today's cafeteria {word[1]}: {_meal(meal, lang)}."
        )
    return text, {"meals": [meal] if meal else list(TODAY_MENU)}


def transfer_tool(agent: str) -> BaseTool:
    """The supervisor's routing tool for ``agent`` (``transfer_to_<agent>``)."""

    def transfer(messages: Messages) -> str:
        lang = user_language(messages)
        label = AGENT_LABELS[agent][lang]
        return f"{label}에게 전달했습니다." if lang == "ko" else f"Transferred to {label}."

    return StructuredTool.from_function(
        transfer,
        name=route_tool_name(agent),
        description=(
            f"Hand the user's question over to {AGENT_LABELS[agent]['en']}.\n\nKeywords: {', '.join(DOMAIN_SIGNALS[agent])}"
        ),
    )


LIBRARY_TOOLS: tuple[BaseTool, ...] = (seat_status, reserve_room)
ACADEMIC_TOOLS: tuple[BaseTool, ...] = (course_materials, assignments)
SUPERVISOR_TOOLS: tuple[BaseTool, ...] = (transfer_tool(LIBRARY), transfer_tool(ACADEMIC), today_menu)
