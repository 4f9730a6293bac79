"""What the benchmarks say to each graph: one turn = (input, context), per graph id.

Shared by `bench.turns` (latency) and `bench.checkpoint_growth` (bytes), so both
hold the same conversations. Every text is one the graph answers on the offline
model (the campus questions are those of tests/fixtures/campus_events/).
"""

from __future__ import annotations

from itertools import cycle, islice
from typing import Any

GRAPHS = ("ticket_triage", "campus_supervisor", "fan_room", "recycling_guide")
"""The deployment's four graphs, in the order every benchmark reports them."""

Turn = tuple[dict[str, Any], dict[str, Any] | None]
"""(run input, run context)."""

TICKETS = [
    "요금이 두 번 청구됐어요. 환불해 주세요",
    "The export button crashes the app, please fix it",
    "비밀번호를 바꾸고 싶어요",
]
"""ticket_triage: every ticket is a new thread that runs intake -> triage and pauses."""

CAMPUS_TURNS = [
    "3층 좌석 남았어?",
    "오늘 학식 메뉴 뭐야?",
    "스터디룸 B 15시에 예약해줘",
    "Show me all LMS materials",
    "자료구조 과제 마감 언제야?",
]
"""campus_supervisor: transferred (library, LMS), answered directly (menu), pre-routed."""

FAN_ROOM_TURNS = [
    ("LG", "LG 트윈스 역사 알려줘"),
    ("삼성", "삼성은 어때?"),
    ("LG", "둘 중에 어디가 더 좋아?"),
    ("KIA", "KIA 팬은 무슨 말을 할까?"),
    ("두산", "잠실 라이벌 얘기 해줘"),
]
"""fan_room: (context team_name, message); the persona changes within the thread."""

RECYCLING_TURNS = [
    "페트병 어떻게 버려?",
    "라벨은 어떻게 해?",
    "뚜껑도 분리해야 해?",
    "유색 페트병은 다르게 버려?",
    "지금까지 알려준 거 정리해줘",
    "How do I recycle cans?",
    "유리병은?",
]
"""recycling_guide: follow-ups on the topic of earlier turns, then a recap."""

NEW_THREAD_PER_TURN = frozenset({"ticket_triage", "bench_pause"})
"""Graphs whose measured turn is a new thread's first run (start -> interrupt)."""


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def turns(graph_id: str, count: int) -> list[Turn]:
    """The first ``count`` turns of the conversation held with ``graph_id``.

    Variants of a graph (``fan_room__add_messages``) hold the graph's conversation;
    any other graph id (the floor graph) gets ``{"value": i}``.
    """
    base = graph_id.split("__", 1)[0]
    if base == "fan_room":
        return [(_user(text), {"team_name": team}) for team, text in islice(cycle(FAN_ROOM_TURNS), count)]
    if base == "recycling_guide":
        return [(_user(text), None) for text in islice(cycle(RECYCLING_TURNS), count)]
    if base == "campus_supervisor":
        return [(_user(text), None) for text in islice(cycle(CAMPUS_TURNS), count)]
    if base == "ticket_triage":
        return [(_user(text), None) for text in islice(cycle(TICKETS), count)]
    return [({"value": number}, None) for number in range(count)]
