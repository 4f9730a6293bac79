"""Deterministic routing before the supervisor model: narrow and explainable.

Two kinds of rule run before the supervisor's model, in this order:

1. **Follow-up.** A short reply ("2층", "the second floor") continues with the
   agent whose own clarification question is the message right before it
   (`history.pending_clarification`). Another agent's question ("어느
   과목인가요?") is answered to that agent, never captured by the library.
2. **Pre-route.** A few high-confidence phrases (a clear study-room
   reservation, a request for all LMS materials) go straight to their agent.

Either rule gives way to the supervisor when the message carries a strong
signal of another domain ("스터디룸 예약하고 학식 메뉴도"). Everything else is
the supervisor model's decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, cast

from langchain_core.messages import AnyMessage

from graphs.campus_supervisor.history import latest_human_index, pending_clarification
from graphs.campus_supervisor.state import ACADEMIC, LIBRARY, AgentName, DomainAgent, Routing
from graphs.common.messages import message_text

CAFETERIA = "cafeteria"
"""The domain the supervisor answers itself (no agent of its own)."""

DOMAIN_SIGNALS: Final[dict[str, tuple[str, ...]]] = {
    LIBRARY: (
        "도서관",
        "열람실",
        "좌석",
        "자리",
        "스터디룸",
        "스터디 룸",
        "층",
        "library",
        "reading room",
        "seat",
        "study room",
        "floor",
    ),
    ACADEMIC: (
        "LMS",
        "강의",
        "과목",
        "과제",
        "숙제",
        "수업",
        "자료",
        "마감",
        "course",
        "lecture",
        "assignment",
        "homework",
        "materials",
        "syllabus",
    ),
    CAFETERIA: ("학식", "식당", "메뉴", "점심", "저녁", "cafeteria", "menu", "lunch", "dinner"),
}
"""Strong keywords per domain (case-insensitive substrings). Also the
``Keywords:`` lines of the supervisor's tools, so both read the same list."""

FOLLOW_UP_MAX_CHARS: Final = 20
FOLLOW_UP_MAX_WORDS: Final = 3


@dataclass(frozen=True)
class PreRoute:
    """A high-confidence phrase: every group must have a hit."""

    rule: str
    agent: DomainAgent
    groups: tuple[tuple[str, ...], ...]


PRE_ROUTES: Final[tuple[PreRoute, ...]] = (
    PreRoute(
        rule="library_reservation",
        agent=LIBRARY,
        groups=(("스터디룸", "스터디 룸", "study room"), ("예약", "reserve", "book")),
    ),
    PreRoute(
        rule="lms_all_materials",
        agent=ACADEMIC,
        groups=(
            ("LMS", "강의자료", "강의 자료", "course materials"),
            ("전체", "모든", "전부", "all", "every"),
            ("자료", "materials"),
        ),
    ),
)


def domains_in(text: str) -> set[str]:
    """The domains whose strong signals occur in ``text``."""
    lowered = text.lower()
    return {d for d, words in DOMAIN_SIGNALS.items() if any(w.lower() in lowered for w in words)}


def is_short_reply(text: str) -> bool:
    """A reply short enough to be an answer to a question, not a new request."""
    stripped = text.strip()
    return 0 < len(stripped) <= FOLLOW_UP_MAX_CHARS and len(stripped.split()) <= FOLLOW_UP_MAX_WORDS


def _matches(rule: PreRoute, lowered: str) -> bool:
    return all(any(word.lower() in lowered for word in group) for group in rule.groups)


def route_before_model(messages: Sequence[AnyMessage]) -> Routing | None:
    """The deterministic route for the latest human message, or None (the supervisor decides)."""
    index = latest_human_index(messages)
    if index is None:
        raise ValueError("campus_supervisor needs a human message in 'messages'")
    text = message_text(messages[index])
    others = domains_in(text)
    pending = pending_clarification(messages)
    if pending is not None:
        agent, slot = pending
        if is_short_reply(text) and others <= {agent}:
            # The asking agent's own name (build_react_agent stamps it on its messages): cast, not
            # checked, so that the routing stays exactly as it was.
            return Routing(agent=cast(AgentName, agent), by="follow_up", rule=f"clarification:{slot}")
    lowered = text.lower()
    for rule in PRE_ROUTES:
        if _matches(rule, lowered) and others <= {rule.agent}:
            return Routing(agent=rule.agent, by="pre_route", rule=rule.rule)
    return None
