"""campus_supervisor compiled with InMemorySaver: routing, per-turn history cleanup, agent inputs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs.campus_supervisor.graph import builder
from graphs.campus_supervisor.history import current_route, routing_artifact_ids, split_turns
from graphs.campus_supervisor.routing import route_before_model
from graphs.campus_supervisor.state import CURRENT_FLOW_VERSION

MENU_KO = "오늘 학생식당 점심은 제육볶음, 된장국, 계란말이(5,500원), 저녁은 김치볶음밥, 미역국(5,000원)입니다."
NARRATION = ("에이전트에게 전달했습니다", "Transferred to")


class ModelInputs(BaseCallbackHandler):
    """Records what each chat model was asked, keyed by the tools bound to it."""

    def __init__(self) -> None:
        self.calls: list[tuple[frozenset[str], list[BaseMessage]]] = []

    def on_chat_model_start(self, serialized: dict, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        tools = (kwargs.get("invocation_params") or {}).get("tools") or []
        self.calls.append((frozenset(t["function"]["name"] for t in tools), messages[0]))

    def inputs_of(self, tool_name: str) -> list[list[BaseMessage]]:
        return [messages for tools, messages in self.calls if tool_name in tools]


@pytest.fixture
def graph():
    return builder.compile(checkpointer=InMemorySaver())


class Conversation:
    def __init__(self, graph) -> None:
        self.graph = graph
        self.config: dict[str, Any] = {"configurable": {"thread_id": str(uuid.uuid4())}}
        self.models = ModelInputs()

    def say(self, text: str) -> dict[str, Any]:
        return self.graph.invoke(
            {"messages": [{"role": "user", "content": text}]},
            {**self.config, "callbacks": [self.models]},
        )


def _texts(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages]


def _is_narration(message: BaseMessage) -> bool:
    return any(n in str(message.content) for n in NARRATION)


def _transfer_ids(messages: list[BaseMessage]) -> list[str]:
    ids = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"].startswith("transfer_to_")]
    ids += [m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.name.startswith("transfer_to_")]
    return ids


def test_three_turns_keep_direct_answers_and_drop_routing_narration(graph) -> None:
    chat = Conversation(graph)

    first = chat.say("오늘 학식 메뉴 뭐야?")
    assert first["messages"][-1].content == MENU_KO
    assert first["routing"] == {"agent": "supervisor", "by": "supervisor", "rule": "direct"}
    assert [(type(m).__name__, m.name) for m in first["messages"]] == [
        ("HumanMessage", None),
        ("AIMessage", "supervisor"),
        ("ToolMessage", "today_menu"),
        ("AIMessage", "supervisor"),
    ], "the supervisor's direct answer keeps its tool pair"

    second = chat.say("3층 좌석 남았어?")
    assert second["messages"][-1].content == "3층 열람실에는 80석 중 12석이 남아 있습니다."
    assert second["routing"] == {"agent": "library", "by": "supervisor", "rule": "transfer_to_library"}

    third = chat.say("자료구조 과제 마감 언제야?")
    assert third["messages"][-1].content == "자료구조 과제: 과제 1: 스택 구현 (마감 03-14)."
    assert third["routing"] == {"agent": "academic", "by": "supervisor", "rule": "transfer_to_academic"}

    for state in (first, second, third):
        messages = state["messages"]
        assert not [m for m in messages if _is_narration(m)]
        assert _transfer_ids(messages) == []
        assert messages[:4] == first["messages"], "the cafeteria turn survives every later cleanup"
        assert state["flow_version"] == CURRENT_FLOW_VERSION
    assert [len(turn) for turn in split_turns(third["messages"])] == [4, 4, 4]

    (academic_first_call, academic_second_call) = chat.models.inputs_of("assignments")
    for messages in (academic_first_call, academic_second_call):
        assert not [m for m in messages if _is_narration(m)], "the academic agent never reads narration"
        assert "3층 열람실에는 80석 중 12석이 남아 있습니다." in _texts(messages), "it reads the turn before"
        assert MENU_KO not in _texts(messages), "but not two turns back (CONTEXT_TURNS)"
    (library_first_call, _) = chat.models.inputs_of("seat_status")
    assert not [m for m in library_first_call if _is_narration(m)]
    assert _texts(library_first_call)[-1] == "3층 좌석 남았어?", "the library reads the question, not the hand-off"


def test_narration_is_stored_during_the_turn_and_removed_when_it_ends(graph) -> None:
    chat = Conversation(graph)
    chat.say("3층 좌석 남았어?")
    history = list(graph.get_state_history(chat.config))
    before_end = next(s for s in history if s.next == ("end_turn",))
    narration = [m for m in before_end.values["messages"] if _is_narration(m)]
    assert [m.name for m in narration] == ["transfer_to_library"], "flow 2: the supervisor never narrates, only the tool says it"
    assert len(_transfer_ids(before_end.values["messages"])) == 2
    after = graph.get_state(chat.config).values["messages"]
    assert {m.id for m in narration}.isdisjoint({m.id for m in after})


def test_every_model_call_reads_at_most_the_two_latest_turns_however_long_the_conversation(graph) -> None:
    """Turn 8 costs what turn 2 does: each agent reads the turn it answers and the one before."""
    chat = Conversation(graph)
    questions = ["오늘 학식 메뉴 뭐야?", "3층 좌석 남았어?", "자료구조 과제 마감 언제야?", "5층 좌석 있어?"]
    for number in range(8):
        state = chat.say(questions[number % len(questions)])
    assert len(split_turns(state["messages"])) == 8
    calls = [messages for _, messages in chat.models.calls]
    assert len(calls) > 8
    for messages in calls:
        assert sum(isinstance(m, HumanMessage) for m in messages) <= 2
    sizes = [len(messages) for messages in calls[len(calls) // 2 :]]
    assert max(sizes) <= 12, f"bounded by two turns, not by the history: {sizes}"


def test_a_model_that_answers_in_text_in_the_tool_step_is_taken_at_its_word(graph, monkeypatch) -> None:
    """A hosted model may ignore tool_choice="required" and answer: kept as the answer, no second answer."""
    from graphs.common.offline import OfflineChatModel

    real = OfflineChatModel.decide

    def ignores_tool_choice(self, messages, tools=(), tool_choice=None):
        return real(self, messages, [t for t in tools if t["function"]["name"] != "ready_to_answer"], None)

    monkeypatch.setattr(OfflineChatModel, "decide", ignores_tool_choice)
    state = Conversation(graph).say("오늘 학식 메뉴 뭐야?")
    assert state["messages"][-1].content == MENU_KO
    answers = [m for m in state["messages"] if isinstance(m, AIMessage) and not m.tool_calls]
    assert len(answers) == 1


FOLLOW_UPS = [
    pytest.param(
        "도서관 좌석 남았어?",
        "몇 층 좌석을 확인할까요? (2층, 3층, 4층, 5층)",
        "2층",
        {"agent": "library", "by": "follow_up", "rule": "clarification:floor"},
        "2층 열람실에는 120석 중 34석이 남아 있습니다.",
        id="library-clarification-ko",
    ),
    pytest.param(
        "Any free seats in the library?",
        "Which floor should I check? (2, 3, 4, 5)",
        "the second floor",
        {"agent": "library", "by": "follow_up", "rule": "clarification:floor"},
        "Floor 2 reading room: 34 of 120 seats are free.",
        id="library-clarification-en",
    ),
    pytest.param(
        "과제 마감 언제야?",
        "어느 과목인가요? (자료구조, 운영체제)",
        "자료구조",
        {"agent": "academic", "by": "follow_up", "rule": "clarification:course"},
        "자료구조 과제: 과제 1: 스택 구현 (마감 03-14).",
        id="other-agent-clarification-is-not-captured-by-library-ko",
    ),
    pytest.param(
        "When is the assignment due?",
        "Which course? (Data Structures, Operating Systems)",
        "Data Structures",
        {"agent": "academic", "by": "follow_up", "rule": "clarification:course"},
        "Data Structures assignments: Assignment 1: implement a stack (due 03-14).",
        id="other-agent-clarification-is-not-captured-by-library-en",
    ),
    pytest.param(
        "3층 좌석 남았어?",
        "3층 열람실에는 80석 중 12석이 남아 있습니다.",
        "2층",
        {"agent": "library", "by": "supervisor", "rule": "transfer_to_library"},
        "2층 열람실에는 120석 중 34석이 남아 있습니다.",
        id="after-an-answer-a-short-reply-goes-to-the-supervisor-ko",
    ),
    pytest.param(
        "도서관 좌석 남았어?",
        "몇 층 좌석을 확인할까요? (2층, 3층, 4층, 5층)",
        "오늘 학식 메뉴 뭐야?",
        {"agent": "supervisor", "by": "supervisor", "rule": "direct"},
        MENU_KO,
        id="another-domain-after-a-clarification-goes-to-the-supervisor-ko",
    ),
    pytest.param(
        "Any free seats in the library?",
        "Which floor should I check? (2, 3, 4, 5)",
        "What's for lunch?",
        {"agent": "supervisor", "by": "supervisor", "rule": "direct"},
        "Today's cafeteria lunch: spicy pork, soybean soup, rolled omelette (5,500 won).",
        id="another-domain-after-a-clarification-goes-to-the-supervisor-en",
    ),
]


@pytest.mark.parametrize(("first", "question", "reply", "routing", "answer"), FOLLOW_UPS)
def test_short_reply_continues_only_with_the_agent_that_asked(graph, first, question, reply, routing, answer) -> None:
    chat = Conversation(graph)
    assert chat.say(first)["messages"][-1].content == question
    result = chat.say(reply)
    assert result["routing"] == routing
    assert result["messages"][-1].content == answer


@pytest.mark.parametrize(
    ("text", "routing"),
    [
        pytest.param(
            "스터디룸 B 15시에 예약해줘",
            {"agent": "library", "by": "pre_route", "rule": "library_reservation"},
            id="reservation-ko",
        ),
        pytest.param(
            "Please reserve study room B at 15",
            {"agent": "library", "by": "pre_route", "rule": "library_reservation"},
            id="reservation-en",
        ),
        pytest.param(
            "LMS 전체 자료 보여줘", {"agent": "academic", "by": "pre_route", "rule": "lms_all_materials"}, id="all-materials-ko"
        ),
        pytest.param(
            "Show me all LMS materials",
            {"agent": "academic", "by": "pre_route", "rule": "lms_all_materials"},
            id="all-materials-en",
        ),
        pytest.param("스터디룸 A 15시에 예약하고 학식 메뉴도 알려줘", None, id="reservation-with-cafeteria-signal-ko"),
        pytest.param("Show me all LMS materials and the free seats on floor 3", None, id="materials-with-library-signal-en"),
        pytest.param("3층 좌석 남았어?", None, id="ordinary-library-question-is-the-models-call"),
    ],
)
def test_pre_routing_takes_only_high_confidence_phrases(text: str, routing: dict | None) -> None:
    assert route_before_model([HumanMessage(text)]) == routing


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        pytest.param("스터디룸 B 15시에 예약해줘", "스터디룸 B를 15시에 예약했습니다 (최대 6명).", id="ko"),
        pytest.param("Please reserve study room A at 15", "Study room A is already booked at 15:00.", id="en-booked"),
        pytest.param("스터디룸 B 오후 3시 예약해줘", "스터디룸 B를 15시에 예약했습니다 (최대 6명).", id="ko-12-hour"),
        pytest.param("Book study room B at 3pm", "Booked study room B at 15:00 (up to 6 people).", id="en-12-hour"),
        pytest.param("Book study room B at 12am", "0:00 cannot be booked; bookings run from 9:00 to 21:00.", id="en-12am"),
        pytest.param(
            "스터디룸 B 오후 3시 반 예약해줘",
            "예약은 정시에 한 시간 단위로 시작합니다. 15시 또는 16시 중에서 골라 주세요.",
            id="ko-half-hour",
        ),
    ],
)
def test_pre_routed_turn_never_runs_the_supervisor(graph, text: str, answer: str) -> None:
    chat = Conversation(graph)
    result = chat.say(text)
    assert result["messages"][-1].content == answer
    assert [m.name for m in result["messages"] if isinstance(m, AIMessage)] == ["library", "library"]
    assert chat.models.inputs_of("transfer_to_library") == []


def test_route_search_stops_at_the_latest_human_message() -> None:
    old_transfer = AIMessage("", name="supervisor", tool_calls=[{"name": "transfer_to_library", "args": {}, "id": "t1"}])
    messages = [HumanMessage("3층 좌석?"), old_transfer, ToolMessage("ok", tool_call_id="t1"), HumanMessage("학식?")]
    assert current_route(messages) is None
    assert current_route(messages[:3]) == "library"


def test_cleanup_is_per_turn_and_keeps_supervisor_answers_in_turns_without_transfer() -> None:
    """Seed 000: deleting every supervisor-named message also deleted the direct cafeteria answer."""
    menu_call = AIMessage("", name="supervisor", id="a1", tool_calls=[{"name": "today_menu", "args": {}, "id": "m1"}])
    transfer = AIMessage(
        "잠시만요", name="supervisor", id="a3", tool_calls=[{"name": "transfer_to_library", "args": {}, "id": "t1"}]
    )
    messages = [
        HumanMessage("학식?", id="h1"),
        menu_call,
        ToolMessage("비빔밥", tool_call_id="m1", id="r1"),
        AIMessage("비빔밥입니다.", name="supervisor", id="a2"),
        HumanMessage("3층 좌석?", id="h2"),
        transfer,
        ToolMessage("전달했습니다.", tool_call_id="t1", id="r2"),
        AIMessage("도서관 에이전트에게 전달했습니다.", name="supervisor", id="a4"),
        AIMessage("3층은 12석 남았습니다.", name="library", id="a5"),
    ]
    assert routing_artifact_ids(messages) == ["a3", "r2", "a4"]
