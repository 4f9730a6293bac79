"""The offline model is a real chat model: streaming, tools, decisions from the conversation."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from graphs.common.messages import detect_language
from graphs.common.models import ModelConfigurationError, load_chat_model, load_structured_model
from graphs.common.offline import OfflineChatModel
from graphs.ticket_triage.prompts import TicketClassification


@tool
def seat_status(floor: int) -> str:
    """Seat availability for one library floor.

    Keywords: 좌석, 자리, seat, seats
    """
    return f"{floor}층 좌석 12석 남음"


@tool
def today_menu() -> str:
    """Today's cafeteria menu.

    Keywords: 메뉴, 학식, menu, lunch
    """
    return "비빔밥"


class Mood(BaseModel):
    """Say how the user feels."""

    mood: Literal["neutral", "happy", "sad"] = Field(default="neutral", description="happy (좋아, 기뻐, glad); sad (슬퍼, sad)")
    reason: str = Field(description="why")


def test_language_detection() -> None:
    assert detect_language("3층 좌석 있어?") == "ko"
    assert detect_language("any seats on floor 3?") == "en"


@pytest.mark.parametrize(
    ("text", "tool_name", "args"),
    [
        pytest.param("3층 좌석 있어?", "seat_status", {"floor": 3}, id="korean-seat"),
        pytest.param("any seats on floor 5?", "seat_status", {"floor": 5}, id="english-seat"),
        pytest.param("오늘 학식 메뉴 뭐야", "today_menu", {}, id="korean-menu"),
    ],
)
def test_picks_tool_by_declared_keywords(text: str, tool_name: str, args: dict) -> None:
    model = OfflineChatModel().bind_tools([seat_status, today_menu])
    message = model.invoke([HumanMessage(text)])
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [(tool_name, args)]


def test_answers_without_tool_when_no_keyword_matches() -> None:
    message = OfflineChatModel().bind_tools([seat_status]).invoke([HumanMessage("hello there")])
    assert message.tool_calls == []
    assert "hello there" in message.content


def test_answers_from_tool_results_after_a_tool_call() -> None:
    model = OfflineChatModel().bind_tools([seat_status])
    call = model.invoke([HumanMessage("3층 좌석")])
    result = ToolMessage("3층 좌석 12석 남음", tool_call_id=call.tool_calls[0]["id"])
    answer = model.invoke([HumanMessage("3층 좌석"), call, result])
    assert answer.tool_calls == []
    assert answer.content == "3층 좌석 12석 남음"


def test_stream_carries_tool_call_chunks_and_text_tokens() -> None:
    model = OfflineChatModel().bind_tools([seat_status])
    chunks = list(model.stream([HumanMessage("3층 좌석 있어?")]))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert len([c for c in chunks if c.content]) >= 2, "text must arrive as several tokens"
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.content == "확인해 보겠습니다. "
    assert [(c["name"], c["args"]) for c in merged.tool_calls] == [("seat_status", {"floor": 3})]


def test_structured_output_fills_enums_from_description_keywords() -> None:
    structured = OfflineChatModel().with_structured_output(Mood)
    assert structured.invoke([HumanMessage("오늘 너무 슬퍼")]).mood == "sad"
    assert structured.invoke([HumanMessage("I am glad")]).mood == "happy"
    assert structured.invoke([HumanMessage("hmm")]).mood == "neutral"


def test_free_text_answer_uses_system_facts() -> None:
    answer = OfflineChatModel().invoke(
        [SystemMessage("Use these facts:\n- The refund was approved.\n- It takes 3 days."), HumanMessage("환불?")]
    )
    assert isinstance(answer, AIMessage)
    assert answer.content == "The refund was approved. It takes 3 days."


def test_offline_is_the_default_and_is_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODEL", raising=False)
    assert isinstance(load_chat_model(), OfflineChatModel)
    assert load_chat_model("offline") is load_chat_model("offline")


def test_openai_without_key_is_a_clear_error_not_an_import_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        load_chat_model("openai:gpt-4o-mini")
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        load_structured_model("openai:gpt-4o-mini", TicketClassification)


def test_a_structured_model_is_built_once_per_spec_and_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODEL", raising=False)
    classifier = load_structured_model("offline", TicketClassification)
    assert load_structured_model(None, TicketClassification) is classifier
    assert load_structured_model(" offline ", TicketClassification) is classifier
    result = classifier.invoke("요금이 두 번 청구됐어요. 환불해 주세요")
    assert isinstance(result, TicketClassification)


def test_a_structured_model_traces_the_same_schema_without_converting_it_per_call() -> None:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.utils.function_calling import convert_to_json_schema

    from graphs.common.models import _load

    traced: list[object] = []

    class Metadata(BaseCallbackHandler):
        def on_chat_model_start(
            self, serialized: object, messages: object, *, metadata: dict | None = None, **kw: object
        ) -> None:
            traced.append((metadata or {}).get("ls_structured_output_format"))

    ticket = [SystemMessage("Classify."), HumanMessage("요금이 두 번 청구됐어요. 환불해 주세요")]
    classifier = load_structured_model("offline", TicketClassification)
    as_built = _load("offline").with_structured_output(TicketClassification)
    assert classifier.first.kwargs["ls_structured_output_format"]["schema"] == convert_to_json_schema(TicketClassification)
    assert classifier.invoke(ticket, {"callbacks": [Metadata()]}) == as_built.invoke(ticket, {"callbacks": [Metadata()]})
    assert traced[0] == traced[1]


async def test_a_structured_models_parser_parses_on_the_loop_with_the_same_answer_and_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """langchain's default ``aparse_result`` hops to a worker thread per call; ours parses inline."""
    from langchain_core.output_parsers import base

    from graphs.common.models import _load

    ticket = [SystemMessage("Classify."), HumanMessage("요금이 두 번 청구됐어요. 환불해 주세요")]
    classifier = load_structured_model("offline", TicketClassification)
    as_built = _load("offline").with_structured_output(TicketClassification)
    expected = await as_built.ainvoke(ticket)  # the default parser, through the executor

    def no_thread_hop(*args: object, **kwargs: object) -> object:
        raise AssertionError("the parser ran in a worker thread")

    monkeypatch.setattr(base, "run_in_executor", no_thread_hop)
    assert await classifier.ainvoke(ticket) == expected
    assert classifier.last.get_name() == as_built.last.get_name() == "PydanticToolsParser"
    assert isinstance(classifier.last, type(as_built.last))


async def test_a_json_schema_structured_model_also_parses_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only the pydantic shape: a JSON-schema dict (whose trace metadata needs no conversion)."""
    from langchain_core.output_parsers import base

    from graphs.common.models import _load, _parsed_on_the_loop

    schema = {"title": "Pick", "type": "object", "properties": {"kind": {"type": "string", "enum": ["billing", "bug"]}}}
    as_built = _load("offline").with_structured_output(schema)
    expected = await as_built.ainvoke("the app crashes: a bug")

    def no_thread_hop(*args: object, **kwargs: object) -> object:
        raise AssertionError("the parser ran in a worker thread")

    monkeypatch.setattr(base, "run_in_executor", no_thread_hop)
    assert await _parsed_on_the_loop(as_built).ainvoke("the app crashes: a bug") == expected


def test_enum_keywords_are_read_once_per_value_and_description() -> None:
    from graphs.common.offline import enum_keywords

    description = "Intent: waste (버려, 분리수거), summary (정리)"
    first = enum_keywords("waste", description)
    assert first == ("waste", "버려", "분리수거")
    assert enum_keywords("waste", description) is first


def test_unknown_model_spec_is_rejected() -> None:
    with pytest.raises(ModelConfigurationError, match="unknown model spec"):
        load_chat_model("llama:7b")


@pytest.mark.parametrize(
    ("history", "expected_start"),
    [
        pytest.param([], "The fan says hi.", id="no-history"),
        pytest.param([AIMessage("[LG 팬] 잠실!")], "[LG 팬] The fan says hi.", id="copies-latest-tag"),
        pytest.param([AIMessage("[LG 팬] [LG 팬]: 잠실!")], "[LG 팬] [LG 팬]: The fan", id="copies-repeated-tags"),
        pytest.param([AIMessage("[LG 팬] a"), AIMessage("plain")], "The fan says hi.", id="latest-is-untagged"),
    ],
)
def test_fact_answer_copies_the_latest_ai_speaker_tag(history: list, expected_start: str) -> None:
    """Seed 001: models imitate a tagged history; graphs must strip what they copy."""
    answer = OfflineChatModel().invoke([SystemMessage("Facts:\n- The fan says hi."), *history, HumanMessage("hello")])
    assert answer.content.startswith(expected_start)


class CourseQuery(BaseModel):
    """Assignments of one course.

    Keywords: 과제, assignment
    """

    course: Literal["data_structures", "operating_systems"] | None = Field(
        default=None, description="data_structures (자료구조); operating_systems (운영체제)"
    )


@pytest.mark.parametrize(
    ("before", "reply", "expected_calls"),
    [
        pytest.param(
            "어느 과목인가요? (자료구조, 운영체제)",
            "자료구조",
            [("CourseQuery", {"course": "data_structures"})],
            id="answers-the-question",
        ),
        pytest.param("과제는 없습니다.", "자료구조", [], id="no-question-asked"),
    ],
)
def test_reply_to_a_question_completes_the_earlier_request(before: str, reply: str, expected_calls: list) -> None:
    model = OfflineChatModel().bind_tools([CourseQuery])
    message = model.invoke([HumanMessage("과제 마감 언제야?"), AIMessage(before), HumanMessage(reply)])
    assert [(c["name"], c["args"]) for c in message.tool_calls] == expected_calls


def test_pacing_waits_before_every_streamed_chunk_and_changes_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """OFFLINE_TOKEN_DELAY_MS: a pause before each text token and each tool-call chunk; same chunks."""
    import graphs.common.offline as offline

    waits: list[float] = []
    monkeypatch.setattr(offline.time, "sleep", waits.append)
    question = [HumanMessage("3층 좌석 있어?")]
    plain = list(OfflineChatModel().bind_tools([seat_status]).stream(question))
    assert waits == []  # off by default
    paced = list(OfflineChatModel(token_delay_ms=20).bind_tools([seat_status]).stream(question))
    assert [(c.content, c.tool_call_chunks) for c in paced] == [(c.content, c.tool_call_chunks) for c in plain]
    streamed = [c for c in paced if c.content or c.tool_call_chunks]
    assert waits == [0.02] * len(streamed) and len(streamed) > 1


@pytest.mark.parametrize(("raw", "expected"), [("", 0.0), ("0", 0.0), ("20", 20.0), (" 2.5 ", 2.5)])
def test_pacing_setting_is_read_from_the_environment(raw: str, expected: float) -> None:
    from graphs.common.models import offline_token_delay_ms

    assert offline_token_delay_ms({"OFFLINE_TOKEN_DELAY_MS": raw}) == expected


@pytest.mark.parametrize("raw", ["fast", "-5"])
def test_a_bad_pacing_setting_is_a_clear_error(raw: str) -> None:
    from graphs.common.models import offline_token_delay_ms

    with pytest.raises(ModelConfigurationError, match="OFFLINE_TOKEN_DELAY_MS"):
        offline_token_delay_ms({"OFFLINE_TOKEN_DELAY_MS": raw})


READY = {
    "type": "function",
    "function": {"name": "ready", "description": "Call when you can answer.", "parameters": {"type": "object", "properties": {}}},
}
"""A keyword-less tool: what the offline model calls when it must call a tool and none fits."""


@pytest.mark.parametrize(
    ("conversation", "expected"),
    [
        pytest.param([HumanMessage("3층 좌석 있어?")], ("seat_status", {"floor": 3}), id="a-tool-fits"),
        pytest.param([HumanMessage("안녕?")], ("ready", {}), id="nothing-fits"),
        pytest.param(
            [
                HumanMessage("3층 좌석 있어?"),
                AIMessage("", tool_calls=[{"name": "seat_status", "args": {"floor": 3}, "id": "c1"}]),
                ToolMessage("3층 좌석 12석 남음", tool_call_id="c1"),
            ],
            ("ready", {}),
            id="results-already-in",
        ),
    ],
)
def test_forced_to_call_one_of_several_tools_it_falls_back_to_the_keywordless_one(conversation, expected) -> None:
    for choice in ("required", "any"):
        model = OfflineChatModel().bind_tools([seat_status, today_menu, READY], tool_choice=choice)
        message = model.invoke(conversation)
        assert message.content == "", "a forced call says nothing before it"
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [expected]


def test_forced_choice_without_a_keywordless_tool_keeps_the_unforced_rules() -> None:
    model = OfflineChatModel().bind_tools([seat_status, today_menu], tool_choice="required")
    assert model.invoke([HumanMessage("안녕?")]).tool_calls == []
